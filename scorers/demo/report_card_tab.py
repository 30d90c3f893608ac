"""Report card tab logic: show a card as ``ts2 card`` writes it (uploaded JSON), or build one for a published metric.

Every number comes from :mod:`scorers.report.card` (``build_cards`` for a published metric; ``card_markdown`` and
``card_figure`` render any card); this module checks uploads, picks the card to show and summarises its sets in one
table. A published metric's card has TS2 (the release's per-image scores) and TIFA160 (the pinned ratings file, when
it is cached or can be downloaded; else the set is listed as not evaluated and the tab says why). Nothing here
imports gradio: the tab's widgets are built by :func:`build_report_card_tab`, which ``ui.build_app`` calls.
"""
from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Callable

import pandas as pd

from scorers.formatting import MISSING, format_number
from scorers.demo.config import AppConfig, check_upload_size
from scorers.demo.sources import Tables
from scorers.report.card import CARD_FIELDS, Card, display_unit, set_headline

__all__ = [
    "CARD_INTRO",
    "FIGURE_LABEL",
    "SUMMARY_COLUMNS",
    "TIFA160_NEEDS_FILE",
    "PublishedCards",
    "card_figure_image",
    "card_summary_frame",
    "card_view",
    "read_card_upload",
    "validate_cards",
]

log = logging.getLogger(__name__)

SUMMARY_COLUMNS = ["set", "status", "headline", "value", "baseline", "paired difference", "95% interval",
                   "verdict / reason"]
#: the caption above the card's dot plot (not the image's own label, which gradio draws over the figure)
FIGURE_LABEL = "Dot plot per set (this metric, the baseline, published rows)"
#: bootstrap resamples and seed of a published metric's card (``ts2 card``'s defaults)
N_BOOTSTRAP, SEED = 1000, 0

CARD_INTRO = """\
A **report card** judges one metric every way its scores allow: **TS2** (rank / sep / delta over SEGs, with
intervals, and its place among the published metrics) and **human rating sets** (the set's own headline coefficient
and the usual ones), each with a **paired test against a baseline** (CLIPScore) and a one-line verdict. TS2 values
and preference accuracies are in % (differences in percentage points, pp); rating coefficients run from -1 to 1; the
card's JSON holds fractions. Make one for your metric with `ts2 card --scores NAME=FILE --ratings tifa160=tifa160 --out card/`
and upload its `NAME.json` (or the whole `--json` output) here, or pick a published metric: its card is built from the
release's scores on TS2 and, for `clipscore` and `mplug_tifa` (the two with scores in the TIFA160 file), TIFA160.
"""

#: shown when a published metric's TIFA160 part could not be evaluated because the ratings file is not here
TIFA160_NEEDS_FILE = (
    "*The TIFA160 part needs the ratings file (TIFA's `human_annotations_with_scores.json`), which is not cached "
    "here: run `ts2 card --scores mplug_tifa=released_scores.csv --ratings tifa160=tifa160 --out card/` once with "
    "network access to cache it (or set `HF_HOME` to a cache that has it), then pick the metric again. This card "
    "shows TS2 alone.*"
)


# ----------------------------------------------------------------------------------------------------------------------
# Uploaded cards
# ----------------------------------------------------------------------------------------------------------------------



def _not_a_card(detail: str) -> ValueError:
    return ValueError(f"not a report card as `ts2 card --json` writes it: {detail}")


def _what(error: Exception) -> str:
    if isinstance(error, KeyError) and error.args:
        return f"field {error.args[0]!r} is missing"
    return f"{type(error).__name__}: {error}".splitlines()[0]


def _check_card(name: str, card) -> Card:
    """One card's shape: its fields, its sets' statuses, and that it renders (the renderer reads every number)."""
    from dataclasses import replace

    from scorers.report.card import card_markdown

    if not isinstance(card, dict):
        raise _not_a_card(f"{name!r} is a JSON {type(card).__name__}, not an object")
    missing = [f for f in CARD_FIELDS if f not in card]
    if missing:
        raise _not_a_card(f"{name!r} has no field {missing[0]!r} (a card has {', '.join(CARD_FIELDS)})")
    if not isinstance(card["sets"], dict) or not card["sets"]:
        raise _not_a_card(f"{name!r}: 'sets' must be a non-empty object of set name -> section")
    checked = Card.from_dict(card)
    try:
        card_markdown(replace(checked, sets={}, notes=[]))
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        raise _not_a_card(f"{name!r}, provenance: {_what(error)}") from None
    for set_name, section in checked.sets.items():
        status = section.get("status") if isinstance(section, dict) else None
        if status not in ("evaluated", "not evaluated"):
            raise _not_a_card(f"{name!r}, set {set_name!r}: status {status!r} (expected 'evaluated' or "
                              "'not evaluated')")
        try:
            card_markdown(replace(checked, sets={set_name: section}, notes=[]))
        except (KeyError, TypeError, AttributeError, IndexError, ValueError, StopIteration) as error:
            raise _not_a_card(f"{name!r}, set {set_name!r}: {_what(error)}") from None
    return checked


def validate_cards(payload) -> dict[str, Card]:
    """``{metric: card}`` from a parsed JSON value: one card (``NAME.json``) or ``ts2 card --json``'s
    ``{NAME: card}``; raises ValueError with one line naming what is wrong."""
    if not isinstance(payload, dict):
        raise _not_a_card(f"expected a JSON object, got a JSON {type(payload).__name__}")
    if "sets" in payload or "metric" in payload:
        card = _check_card(str(payload.get("metric", "the card")), payload)
        return {str(payload["metric"]): card}
    if not payload:
        raise _not_a_card("the JSON object is empty")
    return {str(name): _check_card(name, card) for name, card in payload.items()}


def read_card_upload(path: str | Path, max_bytes: int) -> dict[str, Card]:
    """Read and check an uploaded card JSON; returns ``{metric: card}`` or raises ValueError (one line)."""
    path = Path(path)
    check_upload_size(path, max_bytes)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("not a JSON file: it is not UTF-8 text") from None
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a JSON file: {error.msg} at line {error.lineno}, column {error.colno}") from None
    return validate_cards(payload)


# ----------------------------------------------------------------------------------------------------------------------
# Published metrics
# ----------------------------------------------------------------------------------------------------------------------


class PublishedCards:
    """Cards of the release's published metrics on TS2 + TIFA160, built on first request and kept.

    TS2 numbers are ``ts2 card``'s on the loaded ``released_scores.csv`` (``--clean-quotes``, the leaderboard's SEGs,
    1,000 resamples, seed 0); the baseline is the same file's ``clipscore``. TIFA160 is the pinned ratings file
    (``--ratings tifa160=tifa160``): read from the cache, downloaded once when ``HF_HUB_OFFLINE`` allows, else listed
    as not evaluated with the reason.
    """

    def __init__(self, tables: Tables, config: AppConfig, *, n_bootstrap: int = N_BOOTSTRAP, seed: int = SEED,
                 offline: bool | None = None):
        self.tables, self.config = tables, config
        self.n_bootstrap, self.seed, self.offline = n_bootstrap, seed, offline
        self._cards: dict[str, Card] = {}

    @property
    def available(self) -> bool:
        return (self.tables.scores is not None and self.tables.metadata is not None
                and "scores" in self.tables.paths and "metadata" in self.tables.paths)

    @property
    def metrics(self) -> list[str]:
        """The release's score columns (the leaderboard's published metrics)."""
        if not self.available:
            return []
        from scorers.tables.pandas_tables import score_columns

        return list(score_columns(self.tables.scores))

    def card(self, metric: str) -> Card:
        if not self.available:
            raise ValueError("published cards need the release tables (metadata.csv, released_scores.csv)")
        if metric not in self.metrics:
            raise ValueError(f"{metric!r} is not a published metric (one of {', '.join(self.metrics)})")
        if metric not in self._cards:
            self._cards[metric] = self._build(metric)
        return self._cards[metric]

    def _build(self, metric: str) -> Card:
        from scorers.report.card import RatingSet, build_cards
        from scorers.ts2.options import MetaOptions

        scores_path, metadata_path = self.tables.paths["scores"], self.tables.paths["metadata"]
        # the published rows come from the same folder when it holds both tables, else from scorers.tables.release
        folder = scores_path.parent if (scores_path.parent / "metadata.csv").is_file() else None
        present = set(int(s) for s in self.tables.metadata["seg_id"])
        segs = [s for s in self.config.seg_range if s in present]
        scores = {metric: scores_path}
        if metric != "clipscore":
            scores["clipscore"] = scores_path  # the baseline from the same file, read the same way
        cards = build_cards(
            scores, metadata=metadata_path, baseline="clipscore", ratings=[RatingSet("tifa160", "tifa160")],
            data_dir=str(folder) if folder is not None else None,
            options=MetaOptions(seg_subset=segs, n_bootstrap=self.n_bootstrap, seed=self.seed, clean_quotes=True),
            offline=self.offline,
            command=f"ts2 card --scores {metric}={scores_path.name} --ratings tifa160=tifa160 --clean-quotes "
                    f"--n-bootstrap {self.n_bootstrap} --seed {self.seed} (demo)",
        )
        return cards[metric]


def tifa160_note(card: Card) -> str:
    """The tab's line about a published card's TIFA160 part when the ratings file was not available, else ''."""
    section = card.sets.get("tifa160")
    if not section or section.get("status") == "evaluated":
        return ""
    reason = str(section.get("reason", ""))
    if "not cached" in reason or "forbids downloading" in reason or "could not" in reason.lower():
        return TIFA160_NEEDS_FILE
    return ""


# ----------------------------------------------------------------------------------------------------------------------
# Showing a card
# ----------------------------------------------------------------------------------------------------------------------


def _number(value) -> str:
    try:
        return format_number(value, 3)
    except (TypeError, ValueError):
        return MISSING


def _shown(value, scale: float, unit: str) -> str:
    """A card number as the table shows it: 3 decimals as it is (a coefficient), or scaled with its unit, one decimal
    (a fraction in %: ``67.8 %``; a difference in percentage points: ``1.2 pp``)."""
    if scale == 1.0:
        return _number(value)
    try:
        return f"{format_number(value, 1, scale=scale)} {unit}" if value is not None else MISSING
    except (TypeError, ValueError):
        return MISSING


def _summary_row(set_name: str, section: dict) -> dict:
    row = dict.fromkeys(SUMMARY_COLUMNS, MISSING)
    row["set"], row["status"] = set_name, section.get("status", MISSING)
    if section.get("status") != "evaluated":
        row["verdict / reason"] = str(section.get("reason", MISSING))
        return row
    head = set_headline(set_name, section)
    scale, unit, diff_unit = display_unit(head.kind)
    row["headline"] = str(head.label or MISSING) + (f" ({unit})" if unit else "")
    row["value"] = _shown(head.value, scale, unit)
    if head.baseline is not None:
        row["baseline"] = _shown(head.baseline, scale, unit)
    if head.comparison:
        row["paired difference"] = _shown(head.comparison.get("statistic"), scale, diff_unit)
        low, high = head.comparison.get("ci_low"), head.comparison.get("ci_high")
        if low is not None and high is not None:
            if scale == 1.0:
                row["95% interval"] = f"[{_number(low)}, {_number(high)}]"
            else:
                row["95% interval"] = (f"[{format_number(low, 1, scale=scale)}, {format_number(high, 1, scale=scale)}]"
                                       f" {diff_unit}")
    row["verdict / reason"] = str(head.verdict or "no baseline comparison")
    return row


def card_summary_frame(card: Card) -> pd.DataFrame:
    """One row per set: its headline value, the baseline's, the paired difference with its interval, the verdict (or
    why the set was not evaluated). TS2 and preference accuracies in % with one decimal (``67.8 %``), their
    differences in percentage points (``pp``), as ``ts2 meta`` prints TS2; a rating set's coefficient as it is, 3
    decimals. The card itself (its JSON) holds fractions."""
    return pd.DataFrame([_summary_row(name, section) for name, section in card.sets.items()],
                        columns=SUMMARY_COLUMNS)


def card_view(card: Card) -> tuple[str, pd.DataFrame, str]:
    """``(headline markdown, summary table, full card markdown)`` of one card."""
    from scorers.report.card import card_markdown

    head = f"### {card.metric}: {card.verdict}"
    body = card_markdown(card).split("\n", 1)[1]  # without its "# Report card" title: the tab has the headline
    return head, card_summary_frame(card), body


def card_figure_image(card: Card):
    """The card's dot plot (``scorers.report.card.card_figure``) as a PIL image, or None (no evaluated set, no
    matplotlib, or a figure the card's numbers cannot draw: the table and text still show them)."""
    from PIL import Image

    from scorers.report.card import card_figure

    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "card.png"
        try:
            if card_figure(card, target) is None:
                return None
            with Image.open(target) as image:
                return image.convert("RGB")
        except Exception as error:  # the figure is an extra: never fail the tab for it
            log.warning("no card figure: %s", error)
            return None


def cards_choice(cards: dict[str, Card], preferred: str | None = None) -> str:
    """The card to show first: ``preferred`` when present, else the first that is not the baseline itself."""
    if preferred in cards:
        return preferred
    for name, card in cards.items():
        if name != card.baseline:
            return name
    return next(iter(cards))


def build_report_card_tab(config: AppConfig, *, tables: Tables, error: Callable[[str], str],
                          unexpected: Callable[[Exception], str], published: PublishedCards | None = None) -> None:
    """The Report card tab's widgets (inside ``gr.Tab``); handlers never raise into gradio."""
    import gradio as gr

    published = published or PublishedCards(tables, config)
    gr.Markdown(CARD_INTRO, elem_id="card-intro")
    with gr.Row():
        with gr.Column(scale=1):
            metric_pick = gr.Dropdown(published.metrics, value=None, label="Published metric (TS2 + TIFA160)",
                                      elem_id="card-metric-pick", interactive=published.available)
            if not published.available:
                gr.Markdown("Published cards need the release tables (metadata.csv, released_scores.csv).")
        with gr.Column(scale=1):
            upload = gr.File(label="...or your card JSON (ts2 card --json, or NAME.json)", file_types=[".json"],
                             type="filepath", elem_id="card-upload")
    status = gr.Markdown("", elem_id="card-status")
    cards_state = gr.State({})
    choice = gr.Dropdown([], value=None, label="Card", visible=False, elem_id="card-choice")
    headline = gr.Markdown("", elem_id="card-verdict")
    table = gr.Dataframe(pd.DataFrame(columns=SUMMARY_COLUMNS), interactive=False, elem_id="card-sets",
                         label="Sets: headline value, baseline, paired difference, verdict")
    # the image's own label would sit on the figure's top-left corner, over the start of its title: a caption
    # above it instead
    figure_label = gr.Markdown(f"**{FIGURE_LABEL}**", visible=False, elem_id="card-figure-label")
    figure = gr.Image(None, type="pil", label=FIGURE_LABEL, show_label=False, interactive=False, visible=False,
                      elem_id="card-figure")
    with gr.Accordion("The whole card", open=False):
        body = gr.Markdown("", elem_id="card-body")

    def show(cards: dict, name: str, note: str = "", pick: str | None = None, keep_pick: bool = False):
        """The outputs for card ``name`` of ``cards``; ``pick``: the published-metric picker's new value (None
        clears it when the card shown is an upload), unchanged with ``keep_pick``."""
        card = cards[name]
        head, frame, text = card_view(card)
        image = card_figure_image(card)
        picker = gr.update() if keep_pick else gr.update(value=pick)
        return (note, cards, gr.update(choices=list(cards), value=name, visible=len(cards) > 1), head, frame,
                gr.update(value=image, visible=image is not None), text, picker, gr.update(visible=image is not None))

    def failed(message: str, cards: dict):
        """An error line: the card shown before goes too (an error above an older card reads as that card's)."""
        if not message:  # nothing to say (an emptied upload box, a cleared pick): leave the view as it is
            return (message, cards, *([gr.update()] * 7))
        return (message, {}, gr.update(choices=[], value=None, visible=False), "",
                pd.DataFrame(columns=SUMMARY_COLUMNS), gr.update(value=None, visible=False), "", gr.update(value=None),
                gr.update(visible=False))

    def on_pick(metric, cards):
        if not metric:
            return failed("", cards)
        try:
            card = published.card(metric)
            return show({metric: card}, metric, tifa160_note(card), pick=metric)
        except ValueError as problem:
            return failed(error(str(problem)), cards)
        except Exception as problem:
            return failed(unexpected(problem), cards)

    def on_upload(path, cards):
        if not path:
            return failed("", cards)
        try:
            uploaded = read_card_upload(path, config.max_upload_bytes)
            name = cards_choice(uploaded)
            return show(uploaded, name, f"**Showing** your card `{name}`" + (
                f" ({len(uploaded)} cards in the file: pick one below)" if len(uploaded) > 1 else ""))
        except ValueError as problem:
            return failed(error(str(problem)), cards)
        except Exception as problem:
            return failed(unexpected(problem), cards)

    def on_choice(name, cards):
        if not name or name not in cards:
            return (gr.update(), cards, *([gr.update()] * 7))
        try:
            return show(cards, name, f"**Showing** `{name}`", keep_pick=True)
        except Exception as problem:
            return failed(unexpected(problem), cards)

    outputs = [status, cards_state, choice, headline, table, figure, body, metric_pick, figure_label]
    # .select: the user's choice only (a Dropdown's .input also fired when a handler set its value, running twice)
    metric_pick.select(on_pick, [metric_pick, cards_state], outputs)
    upload.upload(on_upload, [upload, cards_state], outputs)
    choice.select(on_choice, [choice, cards_state], outputs)
