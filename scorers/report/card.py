"""The report card: one metric judged every way it can be from scores alone -- TS2 meta-metrics, agreement with each
human rating set, paired tests against a baseline metric, one verdict line per set -- written as Markdown,
self-contained HTML and JSON with provenance.

The card never scores images: it reads score files. TS2 numbers come from :func:`scorers.table_meta.meta_from_tables`
(exactly what ``ts2 meta`` computes), rating-set numbers from :func:`scorers.ratings.correlate_frame` (exactly what
``ts2 correlate`` computes), paired tests from :func:`scorers.meta.compare` (TS2, over SEGs) and
:func:`scorers.agreement.compare_agreement` (rating sets). A set that was asked for but cannot be evaluated (no file,
offline without a cache, no column for the metric) is kept in the card as ``"not evaluated"`` with its reason.
"""
from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

__all__ = ["HEADLINES", "RATINGS_COLUMNS", "RatingSet", "build_cards", "card_figure", "card_html", "card_markdown",
           "write_card"]

#: each human set's own headline convention (the coefficient and grouping its paper reports), with where it comes from
HEADLINES = {
    "tifa160": ("spearman", "none", "Spearman's rho over all images pooled (TIFA, Hu et al. 2023, reports Spearman's "
                                    "rho and Kendall's tau against the averaged Likert ratings)"),
    "genai_bench": ("pairwise_acc", "none", "pairwise accuracy with tie calibration (GenAI-Bench / VQAScore, Lin et al. "
                                            "2024, following Deutsch et al. 2023)"),
}
DEFAULT_HEADLINE = ("spearman", "none", "Spearman's rho over all items pooled (no set-specific convention known)")

#: a release (TS2) column name -> its column in a rating set's file, used when no --ratings-column says otherwise
RATINGS_COLUMNS = {
    "tifa160": {"clipscore": "clipscore_vitb32", "mplug_tifa": "tifa_mplug-large"},
}

#: sets the card knows by name; those without a reader here need a scores file (the card never scores images)
KNOWN_SETS = ("ts2", "tifa160", "genai_bench", "evalmuse", "gecko2k", "pickapic_v2", "hpdv2", "imagerewarddb",
              "mj_bench")


@dataclass
class RatingSet:
    """A human rating set as the card reads it: ``name``, ``source`` (a path, or ``tifa160`` for the pinned
    download), the ``human`` rater columns (default: every ``human_<k>`` column) and ``columns``, metric name ->
    column of the file holding that metric's per-item scores."""

    name: str
    source: str
    human: Sequence[str] = ()
    columns: Mapping[str, str] = field(default_factory=dict)


def _sha(path) -> str | None:
    from ..release import sha256_file

    try:
        return sha256_file(path)
    except OSError:
        return None


def _score_column(table, name: str, source: str) -> str:
    from ..table_readers import score_columns

    available = score_columns(table)
    if name in available:
        return name
    if len(available) == 1:
        return available[0]
    raise ValueError(f"--scores {name}={source}: the file has {len(available)} score columns and none is named "
                     f"{name!r}; available: {', '.join(available[:10])}")


def _ts2_result(source, column, metadata, *, clean_quotes, segs, n_bootstrap, confidence, seed, lower_is_better=()):
    from ..table_meta import meta_from_tables
    from ..table_readers import read_score_table

    table = read_score_table(source, [column])
    return meta_from_tables([(str(source), table)], metadata, columns=[column], seg_subset=segs,
                            n_bootstrap=n_bootstrap, confidence=confidence, seed=seed, clean_quotes=clean_quotes,
                            lower_is_better=[column] if lower_is_better else ())


def _verdict(comparison: dict | None) -> str:
    if comparison is None:
        return "no comparison"
    low, high = comparison.get("ci_low"), comparison.get("ci_high")
    if low is None or high is None:
        return "no interval"
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "no clear difference"


def _ts2_section(name, column, source, baseline, metadata, data_dir, opts, cache, *, clean_quotes=False,
                 lower_is_better=False) -> dict:
    from ..meta import META_METRICS, compare

    evaluated = _ts2_result(source, column, metadata, clean_quotes=clean_quotes, lower_is_better=lower_is_better,
                            **opts)
    result = evaluated.results[column]
    section = {"status": "evaluated", "headline": "rank (avg over SEGs), with sep and delta; values are fractions",
               "column": column, "source": str(source), "meta": evaluated.to_dict()[column], "notes": evaluated.notes}
    published = cache.get("published")
    if published is not None:
        values = {c: r.rank.summary.get("avg") for c, r in published.results.items()}
        ours = result.rank.summary.get("avg")
        better = sorted((c for c, v in values.items() if v is not None and v > ours and c != name),
                        key=lambda c: -values[c])
        section["published"] = {
            "rank_avg": {c: (None if v is None or np.isnan(v) else float(v)) for c, v in values.items()},
            "place": len(better) + 1, "of": len([c for c in values if c != name]) + 1,
            "above": better,
        }
    else:
        section["published"] = None
        section["notes"] = section["notes"] + [cache.get("published_reason", "the published rows are not available")]
    if baseline is not None and baseline["name"] != name:
        base = baseline["ts2"]
        comparisons = [compare(result, base, meta_metric=m, n_resamples=opts["n_bootstrap"] or 1000,
                               confidence=opts["confidence"], seed=opts["seed"]).to_dict() for m in META_METRICS]
        as_dict = base.to_dict()
        section["baseline_meta"] = {"column": baseline["ts2_column"], "source": baseline["ts2_source"],
                                    "summary": {m: as_dict[m]["summary"] for m in META_METRICS},
                                    "ci": {m: as_dict[m].get("ci") for m in META_METRICS}}
        section["comparison"] = comparisons
        section["verdict"] = _verdict(comparisons[0])
    return section


def _rating_frame(rating: RatingSet, offline):
    from ..ratings import read_ratings

    return read_ratings(rating.source, offline=offline)


def _rating_column(rating: RatingSet, name: str, frame) -> str | None:
    column = rating.columns.get(name) or RATINGS_COLUMNS.get(rating.name, {}).get(name) or name
    return column if column in frame.columns else None


def _rating_section(rating: RatingSet, name: str, baseline_name: str | None, frame, opts,
                    lower_is_better: Sequence[str] = ()) -> dict:
    from ..agreement import COEFFICIENTS, compare_agreement
    from ..meta import as_scores
    from ..orientation import resolve_orientation
    from ..ratings import correlate_frame

    column = _rating_column(rating, name, frame)
    if column is None:
        wanted = rating.columns.get(name) or RATINGS_COLUMNS.get(rating.name, {}).get(name) or name
        return {"status": "not evaluated",
                "reason": f"{rating.source} has no column {wanted!r} with {name}'s scores (name it with "
                          f"--ratings-column {name}=COL)"}
    human = list(rating.human) or [c for c in frame.columns if str(c).startswith("human_") and c != "human_avg"]
    if not human:
        return {"status": "not evaluated", "reason": f"{rating.source} has no human_<k> rating columns (--human)"}
    coefficient, grouping, convention = HEADLINES.get(rating.name, DEFAULT_HEADLINE)
    flipped = [column] if name in lower_is_better else []
    table = correlate_frame(frame, human=human, metrics=[column], coefficients=COEFFICIENTS, grouping="none",
                            n_bootstrap=opts["n_bootstrap"], confidence=opts["confidence"], seed=opts["seed"],
                            lower_is_better=flipped)
    rows = table.to_dict()["rows"]
    own = [r for r in rows if r["metric"] == column]
    head = next(r for r in own if r["coefficient"] == coefficient)
    n_total = len(frame)
    section = {"status": "evaluated", "source": str(rating.source), "column": column, "human": human,
               "headline": convention, "headline_coefficient": coefficient, "headline_value": head["value"],
               "rows": rows, "n_scored": head["n_items"], "n_skipped": n_total - head["n_items"],
               "notes": table.notes}
    base_col = _rating_column(rating, baseline_name, frame) if baseline_name and baseline_name != name else None
    if baseline_name and baseline_name != name and base_col is None:
        section["notes"] = section["notes"] + [f"no baseline column for {baseline_name}: no paired test"]
    if base_col is not None:
        orient = resolve_orientation([column, base_col], lower_is_better=flipped + (
            [base_col] if baseline_name in lower_is_better else []))
        a = as_scores(frame[column].tolist(), name=column)
        b = as_scores(frame[base_col].tolist(), name=base_col)
        a, b = (a if orient[column] else -a), (b if orient[base_col] else -b)
        with np.errstate(invalid="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                h = np.nanmean(np.vstack([as_scores(frame[c].tolist(), name=c) for c in human]), axis=0)
        base = correlate_frame(frame, human=human, metrics=[base_col], coefficients=(coefficient,), grouping="none",
                               n_bootstrap=opts["n_bootstrap"], confidence=opts["confidence"], seed=opts["seed"],
                               lower_is_better=[base_col] if baseline_name in lower_is_better else [])
        section["baseline_row"] = next(r for r in base.to_dict()["rows"] if r["metric"] == base_col)
        comparison = compare_agreement(h, a, b, coefficient=coefficient, grouping=grouping,
                                       n_resamples=opts["n_bootstrap"] or 1000, confidence=opts["confidence"],
                                       seed=opts["seed"]).to_dict()
        section["baseline_column"] = base_col
        section["comparison"] = [comparison]
        section["verdict"] = _verdict(comparison)
    return section


def build_cards(
    scores: Mapping[str, str | Path],
    *,
    metadata,
    baseline: str | None = "clipscore",
    ratings: Sequence[RatingSet] = (),
    sets: Sequence[str] | None = None,
    data_dir: str | None = None,
    segs="default",
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    offline: bool | None = None,
    command: str = "",
    clean_quotes: bool = False,
    lower_is_better: Sequence[str] = (),
) -> dict[str, dict]:
    """``{metric: card}`` for every metric of ``scores`` (name -> per-image TS2 scores file).

    ``baseline``: a name among ``scores`` or a column of the release's ``released_scores.csv`` (default the release's
    ``clipscore``; None: no paired tests). ``ratings``: the human rating sets. ``sets``: names asked for; one that is
    neither ``ts2`` nor given in ``ratings`` is listed as not evaluated with the reason. ``clean_quotes`` strips stray
    quote characters from the ``scores`` files' cells (as ``ts2 meta --clean-quotes``); ``lower_is_better`` names the
    metrics (of ``scores`` or the baseline) whose lower scores are better; others follow
    :func:`scorers.orientation.resolve_orientation`.
    """
    from .. import __version__
    from ..table_readers import read_metadata, read_score_table

    opts = {"segs": segs, "n_bootstrap": n_bootstrap, "confidence": confidence, "seed": seed}
    meta_frame = read_metadata(metadata)
    columns = {name: _score_column(read_score_table(src), name, str(src)) for name, src in scores.items()}
    cache: dict = {}
    try:
        from ..reproduce import released_reproduction

        cache["published"] = released_reproduction(data_dir, seg_subset=segs, progress=False)
    except (FileNotFoundError, ValueError) as error:  # ReleaseFileUnavailable is a FileNotFoundError
        cache["published_reason"] = f"the published rows are not available: {str(error).splitlines()[0]}"
    base = None
    inputs = {f"scores:{n}": str(s) for n, s in scores.items()}
    inputs["metadata"] = str(metadata)
    baseline_note = None
    if baseline:
        if baseline in scores:
            src, col, quotes = scores[baseline], columns[baseline], clean_quotes
        else:
            from ..release import path

            try:
                src = path("released_scores.csv", data_dir, progress=False)
            except FileNotFoundError as error:
                src = None
                baseline_note = f"baseline {baseline}: the release's scores are not available ({error})"
            col, quotes = baseline, True
            if src is not None:
                from ..table_readers import score_columns

                if baseline not in score_columns(read_score_table(src)):
                    raise ValueError(f"--baseline {baseline}: not one of the --scores names nor a column of the "
                                     f"release's released_scores.csv")
                inputs["baseline"] = str(src)
        if src is not None:
            evaluated = _ts2_result(src, col, meta_frame, clean_quotes=quotes,
                                    lower_is_better=baseline in lower_is_better, **opts)
            base = {"name": baseline, "ts2": evaluated.results[col], "ts2_column": col, "ts2_source": str(src)}
    frames, unavailable = {}, {}
    for rating in ratings:
        try:
            frames[rating.name] = _rating_frame(rating, offline)
            src = rating.source
            if str(src).lower() == "tifa160":
                from ..ratings import fetch_tifa160

                src = fetch_tifa160(offline=offline)
            inputs[f"ratings:{rating.name}"] = str(src)
        except (FileNotFoundError, ValueError) as error:
            unavailable[rating.name] = f"{rating.source}: " + " ".join(
                line.strip() for line in str(error).splitlines() if line.strip())
    asked = list(dict.fromkeys(["ts2"] + [r.name for r in ratings] + list(sets or ())))
    provenance = {
        "command": command, "ts2_evaluate_version": __version__, "segs": None,
        "n_bootstrap": n_bootstrap, "confidence": confidence, "seed": seed,
        "inputs": {role: {"path": str(Path(p).resolve()), "sha256": _sha(p)} for role, p in inputs.items()},
    }
    if any(r.name == "tifa160" for r in ratings):
        from ..ratings import TIFA160

        provenance["tifa160_revision"] = TIFA160.revision  # the pinned file's; matches_pinned says if it was read
        given = provenance["inputs"].get("ratings:tifa160")
        if given:
            given["matches_pinned"] = given["sha256"] == TIFA160.sha256
    cards = {}
    for name, src in scores.items():
        card_sets = {}
        for set_name in asked:
            if set_name == "ts2":
                card_sets["ts2"] = _ts2_section(name, columns[name], src, base, meta_frame, data_dir, opts, cache,
                                                clean_quotes=clean_quotes, lower_is_better=name in lower_is_better)
                provenance["segs"] = card_sets["ts2"]["meta"]["segs"]
            elif set_name in unavailable:
                card_sets[set_name] = {"status": "not evaluated", "reason": unavailable[set_name]}
            elif set_name in frames:
                rating = next(r for r in ratings if r.name == set_name)
                try:
                    card_sets[set_name] = _rating_section(rating, name, baseline, frames[set_name], opts,
                                                          lower_is_better)
                except ValueError as error:  # e.g. a pooled bootstrap too large, a constant column: say so, go on
                    card_sets[set_name] = {"status": "not evaluated", "reason": f"{rating.source}: {error}"}
            else:
                known = "" if set_name in KNOWN_SETS else f" ({set_name!r} is not a set the card knows by name: " \
                                                          f"{', '.join(KNOWN_SETS)})"
                card_sets[set_name] = {"status": "not evaluated",
                                       "reason": f"no ratings file with {name}'s scores was given (--ratings "
                                                 f"{set_name}=FILE); the card reads scores and never scores "
                                                 f"images{known}"}
        judged = [s for s in card_sets.values() if s.get("verdict") in ("better", "worse", "no clear difference")]
        better = sum(s["verdict"] == "better" for s in judged)
        worse = sum(s["verdict"] == "worse" for s in judged)
        level = f"{confidence:.0%}"
        if base is None and not baseline_note and baseline in (None, ""):
            summary = "no baseline: no paired tests"
        elif name == baseline:
            summary = f"{name} is the baseline"
        else:
            summary = (f"better than {baseline} on {better} of {len(judged)} sets, worse on {worse}, "
                       f"{level} paired intervals")
        notes = [baseline_note] if baseline_note else []
        cards[name] = {"metric": name, "baseline": baseline, "verdict": summary, "sets": card_sets,
                       "not_evaluated": {k: v["reason"] for k, v in card_sets.items()
                                         if v["status"] == "not evaluated"},
                       "notes": notes, "provenance": provenance, "unit": "fraction"}
    return cards


# ----------------------------------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------------------------------


def _fmt(value, digits: int = 3) -> str:
    from ..formatting import format_number

    return format_number(value, digits)


def _interval(low, high) -> str:
    return "" if low is None or high is None else f"[{_fmt(low)}, {_fmt(high)}]"


def _set_lines(card: dict) -> list[tuple[str, list[list[str]], list[str]]]:
    """``(title, table rows, text lines)`` per set: the shared content of Markdown and HTML."""
    out = []
    base = card["baseline"]
    for set_name, section in card["sets"].items():
        if section["status"] != "evaluated":
            out.append((set_name, [], [f"not evaluated: {section['reason']}"]))
            continue
        text = [f"headline: {section['headline']}"]
        rows = []
        if set_name == "ts2":
            rows.append(["meta-metric", "partition", card["metric"], "CI", base or "", "CI"])
            meta = section["meta"]
            bm = section.get("baseline_meta")
            for m in ("rank", "sep", "delta"):
                for part, value in meta[m]["summary"].items():
                    ci = (meta[m].get("ci") or {}).get(part) or (None, None)
                    bv = bci = ""
                    if bm is not None:
                        bv = _fmt(bm["summary"][m].get(part))
                        bc = (bm["ci"].get(m) or {}).get(part) if bm["ci"].get(m) else None
                        bci = _interval(*bc) if bc else ""
                    rows.append([m, part, _fmt(value), _interval(*ci), bv, bci])
            pub = section.get("published")
            if pub:
                text.append(f"place among the published rows (rank avg): {pub['place']} of {pub['of']}")
            text.append(f"SEGs {meta['segs']} ({meta['n_segs']})")
        else:
            rows.append(["coefficient", "value", "CI", "items", "NaN dropped"])
            for r in section["rows"]:
                if r["metric"] == section["column"]:
                    rows.append([r["coefficient"], _fmt(r["value"]), _interval(r["ci_low"], r["ci_high"]),
                                 str(r["n_items"]), str(r["n_nan_dropped"])])
            text.append(f"items scored {section['n_scored']}, skipped {section['n_skipped']}; "
                        f"column {section['column']}, human = mean of {', '.join(section['human'])}")
        for comparison in section.get("comparison", []):
            what = comparison.get("meta_metric") or comparison.get("coefficient")
            text.append(f"paired vs {base} ({what}): difference {_fmt(comparison['statistic'])} "
                        f"{_interval(comparison['ci_low'], comparison['ci_high'])}, p = {_fmt(comparison['pvalue'])}, "
                        f"{comparison['n_units']} {comparison['unit']}s, {comparison['method']}")
        if "verdict" in section:
            text.append(f"verdict: {section['verdict']}")
        text += [f"note: {n}" for n in section.get("notes", [])]
        out.append((set_name, rows, text))
    return out


def card_markdown(card: dict, figure: str | None = None) -> str:
    lines = [f"# Report card: {card['metric']}", "", f"**{card['verdict']}**", ""]
    lines += [f"- note: {n}" for n in card.get("notes", [])] + ([""] if card.get("notes") else [])
    for title, rows, text in _set_lines(card):
        lines += [f"## {title}", ""]
        if rows:
            lines.append("| " + " | ".join(rows[0]) + " |")
            lines.append("|" + "---|" * len(rows[0]))
            lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
            lines.append("")
        lines += [f"- {t}" for t in text] + [""]
    if figure:
        lines += [f"![{card['metric']} vs {card['baseline']}]({figure})", ""]
    prov = card["provenance"]
    lines += ["## Provenance", "", f"- command: `{prov['command']}`", f"- ts2-evaluate {prov['ts2_evaluate_version']}",
              f"- SEGs: {prov['segs']}, bootstrap {prov['n_bootstrap']}, seed {prov['seed']}"]
    lines += [f"- {role}: `{v['path']}` sha256 {v['sha256']}" for role, v in prov["inputs"].items()]
    return "\n".join(lines) + "\n"


def card_html(card: dict, png: bytes | None = None) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
             f"<title>Report card: {e(card['metric'])}</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.2em .6em;"
             "text-align:right}th{background:#eee}.verdict{font-size:1.2em;font-weight:bold}"
             ".missing{color:#a33}</style></head><body>",
             f"<h1>Report card: {e(card['metric'])}</h1>", f"<p class='verdict'>{e(card['verdict'])}</p>"]
    if card.get("notes"):
        parts.append("<ul>" + "".join(f"<li>note: {e(n)}</li>" for n in card["notes"]) + "</ul>")
    for title, rows, text in _set_lines(card):
        parts.append(f"<h2>{e(title)}</h2>")
        if rows:
            parts.append("<table><tr>" + "".join(f"<th>{e(c)}</th>" for c in rows[0]) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows[1:]]
            parts.append("</table>")
        cls = " class='missing'" if not rows else ""
        parts.append(f"<ul{cls}>" + "".join(f"<li>{e(t)}</li>" for t in text) + "</ul>")
    if png:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<h2>Figure</h2><img alt='dot plot' src='data:image/png;base64,{data}' style='max-width:100%'>")
    prov = card["provenance"]
    parts.append("<h2>Provenance</h2><ul>" + "".join(
        f"<li>{e(t)}</li>" for t in [f"command: {prov['command']}", f"ts2-evaluate {prov['ts2_evaluate_version']}",
                                     f"SEGs: {prov['segs']}, bootstrap {prov['n_bootstrap']}, seed {prov['seed']}"]
        + [f"{role}: {v['path']} sha256 {v['sha256']}" for role, v in prov["inputs"].items()]) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def card_figure(card: dict, path: Path) -> Path | None:
    """One dot plot per evaluated set: this metric and the baseline (and, on TS2, the published rows in grey) with
    their intervals. TS2 shows rank (avg); a rating set its headline coefficient."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(k, s) for k, s in card["sets"].items() if s["status"] == "evaluated"]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    fig.suptitle(f"{card['metric']} vs {card['baseline']}: {card['verdict']}", fontsize=9)
    for ax, (set_name, section) in zip(axes[0], panels):
        dots = []  # (label, value, low, high, colour)
        if set_name == "ts2":
            rank = section["meta"]["rank"]
            ci = (rank.get("ci") or {}).get("avg") or (None, None)
            dots.append((card["metric"], rank["summary"]["avg"], *ci, "C0"))
            bm = section.get("baseline_meta")
            if bm:
                bci = (bm["ci"].get("rank") or {}).get("avg") if bm["ci"].get("rank") else None
                dots.append((card["baseline"], bm["summary"]["rank"]["avg"], *(bci or (None, None)), "C1"))
            for col, value in sorted(((section.get("published") or {}).get("rank_avg") or {}).items(),
                                     key=lambda kv: -kv[1] if kv[1] is not None else 9):
                if value is not None and col not in (card["metric"], card["baseline"]):
                    dots.append((col, value, None, None, "0.6"))
            ax.set_xlabel("rank (avg over SEGs)")
        else:
            head = next(r for r in section["rows"]
                        if r["metric"] == section["column"] and r["coefficient"] == section["headline_coefficient"])
            dots.append((card["metric"], head["value"], head["ci_low"], head["ci_high"], "C0"))
            br = section.get("baseline_row")
            if br:
                dots.append((card["baseline"], br["value"], br["ci_low"], br["ci_high"], "C1"))
            ax.set_xlabel(section["headline_coefficient"])
        for y, (label, value, low, high, colour) in enumerate(reversed(dots)):
            if value is None:
                continue
            if low is not None and high is not None:
                ax.errorbar(value, y, xerr=[[value - low], [high - value]], fmt="o", color=colour, capsize=3)
            else:
                ax.plot(value, y, "o", color=colour, markersize=4)
        ax.set_ylim(-0.7, len(dots) - 0.3)
        ax.set_yticks(range(len(dots)))
        ax.set_yticklabels([d[0] for d in reversed(dots)], fontsize=7)
        ax.set_title(set_name)
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_card(card: dict, out_dir: str | Path) -> dict[str, Path]:
    """``<metric>.md``, ``<metric>.html`` (figure inlined), ``<metric>.json`` and ``<metric>.png`` in ``out_dir``."""
    from ..atomic import write_text_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in card["metric"])
    paths = {}
    try:
        png_path = card_figure(card, out / f"{stem}.png")
    except ModuleNotFoundError as missing:  # matplotlib is the report extra: the card's numbers stand without it
        if missing.name != "matplotlib":
            raise
        png_path = None
        card["notes"] = card.get("notes", []) + ["no figure: matplotlib is not installed "
                                                 "(pip install 'ts2-evaluate[report]')"]
    png = png_path.read_bytes() if png_path else None
    if png_path:
        paths["png"] = png_path
    for kind, text in (("md", card_markdown(card, png_path.name if png_path else None)), ("html", card_html(card, png)),
                       ("json", json.dumps(card, indent=1, default=_json_default))):
        target = out / f"{stem}.{kind}"
        write_text_atomic(target, text)
        paths[kind] = target
    return paths


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
