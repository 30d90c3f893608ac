"""The Gradio Blocks of the demo: five tabs wired to ``leaderboard``, ``explorer``, ``scoring``, ``report_card_tab`` and
``seg_builder.tab``.

Handlers never raise into Gradio: a ValueError becomes its message in a status box, anything else a one-line
"unexpected error" (the traceback goes to the server log only), so the app keeps serving after bad input.
"""
from __future__ import annotations

import logging
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402
import pandas as pd  # noqa: E402

from scorers.stats.meta import META_METRICS  # noqa: E402
from scorers.ts2.reproduce import DELTA_SWAP_NOTE  # noqa: E402
from scorers.tables.join import ROW_POSITION_NOTE  # noqa: E402

from scorers.formatting import MISSING, format_number  # noqa: E402
from scorers.demo.config import AppConfig  # noqa: E402
from scorers.demo.explorer import SegExplorer  # noqa: E402
from scorers.demo.leaderboard_tab import (  # noqa: E402
    MAX_UPLOAD_COLUMNS,
    PARTITION_CHOICES,
    UPLOAD_FORMAT,
    UploadedMetric,
    community_board,
    community_view,
    evaluate_upload,
    is_uploaded,
    leaderboard_view,
    published_reproduction,
    rejected_view,
)
from scorers.demo.report_card_tab import build_report_card_tab  # noqa: E402
from scorers.demo.seg_builder.tab import build_seg_builder_tab  # noqa: E402
from scorers.demo.upload_scoring import LazyScorer, score_image, scorer_specs  # noqa: E402
from scorers.demo.sources import ImageSource, load_tables  # noqa: E402

__all__ = ["build_app", "launch_kwargs"]

log = logging.getLogger(__name__)

HIGHLIGHT = "background-color: #fff1b8; font-weight: 600"
#: SEG gallery layout: tiles per row, pixels per row of tiles, rows shown before it scrolls, frame padding
GALLERY_COLUMNS, GALLERY_ROW_PX, GALLERY_MAX_ROWS, GALLERY_PADDING_PX = 6, 190, 4, 24

INTRO = """\
# T2IScoreScore (TS2): who evaluates the text-to-image evaluators?

TS2 scores a text-to-image faithfulness metric by how well it **ranks** (rank), **separates** (sep) and **spaces**
(delta) images of *semantic error graphs* (SEGs): sets of images of one prompt with 0, 1, 2... known errors.
Values are in %, higher is better; computed live by the `scorers` library from the per-image scores.
"""


def launch_kwargs(config: AppConfig, *, port: int | None = None, local: bool = True) -> dict:
    """Arguments for ``Blocks.launch``: loopback by default, upload size capped at the configured limit."""
    kwargs = {"max_file_size": config.max_upload_bytes, "show_error": False}
    if local:
        kwargs["server_name"] = "127.0.0.1"
    if port is not None:
        kwargs["server_port"] = int(port)
    return kwargs


class UploadedImage(gr.Image):
    """``gr.Image`` that hands the handler the uploaded file's path without opening it: gradio's own preprocessing
    decodes the whole image (a 97 KB PNG of 100 megapixels took 2 GB) and turns an unreadable file into "The upstream
    Gradio app has raised an exception"; :func:`scorers.demo.upload_scoring.open_upload` checks both and says what is wrong."""

    is_template = True  # drawn by gradio's own Image front end

    def preprocess(self, payload):
        if payload is not None and payload.path and not (payload.url or "").startswith("data:"):
            return str(payload.path)
        return super().preprocess(payload)


def _error(message: str) -> str:
    return f"**Error:** {message}"


def _unexpected(error: Exception) -> str:
    log.exception("unexpected error in a demo handler")
    return _error(f"unexpected {type(error).__name__}: {error}")


def _styled(frame: pd.DataFrame):
    """Highlight the user's own rows (a pandas Styler, which gr.Dataframe renders with its styles)."""
    marks = is_uploaded(frame).tolist()
    return frame.style.apply(lambda row: [HIGHLIGHT if marks[row.name] else ""] * len(row), axis=1).format(
        precision=1, na_rep="-", subset=list(META_METRICS)
    )


def build_app(config: AppConfig) -> gr.Blocks:
    """The demo for ``config``: tables are read and the leaderboard computed now; models load on first use."""
    tables = load_tables(config)
    problems = list(tables.problems)
    published = None
    if tables.metadata is not None and tables.scores is not None:
        try:
            published = published_reproduction(tables, config)
        except ValueError as error:  # e.g. scores and metadata of different lengths
            problems.append(str(error))
    images = ImageSource(config)
    explorer = None
    if tables.metadata is not None:
        try:
            explorer = SegExplorer(tables, published, images)
        except ValueError as error:
            problems.append(str(error))
    specs = scorer_specs(config)
    slots = {name: LazyScorer(spec) for name, spec in specs.items()}

    with gr.Blocks(title="TS2: T2IScoreScore demo", analytics_enabled=False) as demo:
        gr.Markdown(INTRO)
        if problems:
            gr.Markdown(_error("<br>".join(problems).replace("\n", "<br>")), elem_id="load-problems")
        with gr.Tabs():
            # ---------------------------------------------------------------------------------- leaderboard
            with gr.Tab("Leaderboard", id="leaderboard-tab"):
                _leaderboard_tab(config, tables, published)
                _community_section(community_board(config, published))

            # ---------------------------------------------------------------------------------- SEG explorer
            with gr.Tab("SEG explorer", id="explorer-tab"):
                _explorer_tab(explorer, images)

            # ---------------------------------------------------------------------------------- score your image
            with gr.Tab("Score your image", id="score-tab"):
                _score_tab(specs, slots)

            # ---------------------------------------------------------------------------------- report card
            with gr.Tab("Report card", id="card-tab"):
                build_report_card_tab(config, tables, error=_error, unexpected=_unexpected)

            # ---------------------------------------------------------------------------------- build a SEG
            # its children render at page load: the browser-stored upload key (gr.BrowserState) is read then
            with gr.Tab("Build a SEG", id="seg-builder-tab", render_children=True):
                build_seg_builder_tab(config, demo=demo, error=_error, unexpected=_unexpected)

        with gr.Accordion("Data sources", open=False):
            # where images come from *now* (read at each page load: the Hub may have failed since start-up)
            gr.Markdown(lambda: config.describe(tables.paths, images=images.describe()), elem_id="data-sources")
    return demo


def _leaderboard_tab(config: AppConfig, tables, published) -> None:
    """The Leaderboard tab: the published rows, partitions, sorting, and the user's uploaded metrics."""
    published_names = set(published.columns) if published is not None else set()

    def table_for(uploaded: list[UploadedMetric], partition: str, sort_by: str):
        return _styled(leaderboard_view(published, tables.paper, uploaded, partition=partition, sort_by=sort_by))

    if published is None:
        gr.Markdown("The leaderboard needs the release tables (metadata.csv, released_scores.csv).")
    else:
        uploaded_state = gr.State([])
        with gr.Row():
            partition = gr.Radio(list(PARTITION_CHOICES), value="avg", label="SEG partition")
            sort_by = gr.Radio(list(META_METRICS), value="rank", label="Sort by")
        board = gr.Dataframe(
            value=table_for([], "avg", "rank"), interactive=False, elem_id="leaderboard",
            label=f"{len(published.columns)} published metrics, SEGs "
                  f"{config.seg_subset[0]}-{config.seg_subset[1] - 1}", max_height=1100,
        )
        # the delta-swap note is about residuals against the paper, which this table does not show; how the release's
        # tables are paired (by row position) is the library's business, not the reader's
        notes = [n for n in published.notes if n != DELTA_SWAP_NOTE and ROW_POSITION_NOTE not in n]
        if notes:
            gr.Markdown("\n\n".join(f"*{n}*" for n in notes), elem_id="leaderboard-notes")
        gr.Markdown("### Add your metric")
        with gr.Row():
            with gr.Column(scale=2):
                gr.Markdown(UPLOAD_FORMAT.format(max_mb=config.max_upload_mb,
                                                 n_rows=len(tables.metadata),
                                                 max_cols=MAX_UPLOAD_COLUMNS))
            with gr.Column(scale=1):
                lower = gr.Checkbox(label="lower is better (error counts)", value=False)
                upload = gr.File(label="Your scores CSV", file_types=[".csv"], type="filepath",
                                 elem_id="upload-csv")
                clear = gr.Button("Remove my rows", size="sm")
        upload_status = gr.Markdown("", elem_id="upload-status")

        def on_upload(path, lower_is_better, uploaded, part, sort):
            if not path:
                return gr.update(), "", uploaded
            try:
                # a published name gets " (yours)"; the user's own earlier upload of a name is replaced
                new = evaluate_upload(path, tables, config, lower_is_better=bool(lower_is_better),
                                      taken=published_names)
            except ValueError as error:
                return gr.update(), _error(str(error)), uploaded
            except Exception as error:  # keep serving whatever the file holds
                return gr.update(), _unexpected(error), uploaded
            labels = {m.label for m in new}
            replaced = [m.label for m in uploaded if m.label in labels]
            uploaded = [m for m in uploaded if m.label not in labels] + new
            added = ", ".join(f"`{m.label}`" for m in new)
            verb = "Replaced" if replaced else "Added"
            message = f"**{verb}** {added} (highlighted): " + "; ".join(
                f"rank {_value(m, 'rank', part)} · sep {_value(m, 'sep', part)} · "
                f"delta {_value(m, 'delta', part)}" for m in new
            )
            return table_for(uploaded, part, sort), message, uploaded

        def on_view(uploaded, part, sort):
            return table_for(uploaded, part, sort)

        def on_clear(part, sort):
            return table_for([], part, sort), "", []

        upload.upload(on_upload, [upload, lower, uploaded_state, partition, sort_by],
                      [board, upload_status, uploaded_state])
        partition.change(on_view, [uploaded_state, partition, sort_by], board)
        sort_by.change(on_view, [uploaded_state, partition, sort_by], board)
        clear.click(on_clear, [partition, sort_by], [board, upload_status, uploaded_state])


COMMUNITY_INTRO = """\
### Community leaderboard

Every community row is recomputed by ts2-evaluate from the submission's per-image scores before it is listed
(`ts2 submit`, then a pull request to the submissions dataset); *verified by* names the version that checked it.
Rows on another delta variant or SEG set are in their own group and never ranked with the default one.
"""


def _community_section(community) -> None:
    """The verified community rows beside the published ones, and the rejected submissions with their reasons."""
    gr.Markdown(COMMUNITY_INTRO)
    if not community.configured:
        gr.Markdown("No submissions source is configured: set `TS2_SUBMISSIONS` (a folder, or a Hub dataset "
                    "`OWNER/NAME@REVISION`) on a Space, or pass `ts2 demo --submissions ...`.",
                    elem_id="community-status")
        return
    if community.board is None:
        gr.Markdown(_error(community.problem), elem_id="community-status")
        return
    board = community.board
    verified = sum(1 for row in board.rows if row["source"] == "community")
    gr.Markdown(f"Submissions: {board.source}: **{verified} verified**, **{len(board.rejected)} rejected**.",
                elem_id="community-status")
    frame = community_view(board)
    marks = (frame["source"] == "community").tolist()
    styled = frame.style.apply(lambda row: [HIGHLIGHT if marks[row.name] else ""] * len(row), axis=1).format(
        precision=1, na_rep="-", subset=list(META_METRICS))
    gr.Dataframe(value=styled, interactive=False, elem_id="community-board", max_height=1100,
                 label="published and verified community metrics, grouped by variant and SEG set (values in %)")
    if board.notes:
        gr.Markdown("\n\n".join(f"*{n}*" for n in board.notes), elem_id="community-notes")
    if board.rejected:
        gr.Dataframe(value=rejected_view(board), interactive=False, elem_id="community-rejected", wrap=True,
                     label=f"rejected submissions ({len(board.rejected)}), each with the first problem found")
    else:
        gr.Markdown("No submission was rejected.", elem_id="community-rejected")


def _explorer_tab(explorer, images) -> None:
    """The SEG explorer tab: one SEG's error graph, gallery and per-image scores."""
    if explorer is None:
        gr.Markdown("The SEG explorer needs the release metadata.")
    else:
        choices = explorer.choices()
        first = choices[0][1]
        metric_choices = explorer.columns
        default_metric = "clipscore" if "clipscore" in metric_choices else (
            metric_choices[0] if metric_choices else None)
        with gr.Row():
            seg_pick = gr.Dropdown(choices, value=first, label="SEG", elem_id="seg-pick", scale=3)
            metric_pick = gr.Dropdown(metric_choices, value=default_metric, label="Metric", scale=1)
        seg_summary = gr.Markdown(explorer.summary_markdown(first, default_metric), elem_id="seg-summary")
        seg_plot = gr.Plot(explorer.figure(first), label="Error graph")
        first_items = explorer.gallery(first, default_metric)
        # why tiles are grey placeholders and what to do (offline Hub, no --data-dir, missing files)
        images_note = gr.Markdown(images.note() or "", elem_id="images-note")
        seg_gallery = gr.Gallery(first_items, label=explorer.gallery_label(default_metric),
                                 columns=GALLERY_COLUMNS, height=gallery_height(len(first_items)),
                                 elem_id="seg-gallery")
        seg_table = gr.Dataframe(explorer.image_table(first), interactive=False,
                                 label="Every metric's score per image", elem_id="seg-table")

        def on_seg(seg_id, metric):
            try:
                items = explorer.gallery(seg_id, metric)
                return (explorer.summary_markdown(seg_id, metric), explorer.figure(seg_id),
                        gr.update(value=items, height=gallery_height(len(items)),
                                  label=explorer.gallery_label(metric)),
                        explorer.image_table(seg_id), images.note() or "")
            except ValueError as error:
                return _error(str(error)), gr.update(), gr.update(), gr.update(), gr.update()
            except Exception as error:
                return _unexpected(error), gr.update(), gr.update(), gr.update(), gr.update()

        for trigger in (seg_pick.change, metric_pick.change):
            trigger(on_seg, [seg_pick, metric_pick],
                    [seg_summary, seg_plot, seg_gallery, seg_table, images_note])


def _score_tab(specs, slots) -> None:
    """The Score-your-image tab: one image and prompt through a lazily loaded scorer."""
    gr.Markdown(
        "Upload an image and the prompt it should show, pick a scorer, press **Score**. Models load on "
        "first use (once) from the configured paths; no network is needed when they are local."
    )
    with gr.Row():
        with gr.Column():
            image_in = UploadedImage(type="filepath", image_mode=None, label="Image",
                                     elem_id="score-image", height=320, sources=["upload", "clipboard"])
            prompt_in = gr.Textbox(label="Prompt", lines=2, elem_id="score-prompt",
                                   max_length=1000)
            scorer_pick = gr.Dropdown(list(specs), value="CLIPScore", label="Scorer",
                                      elem_id="scorer-pick")
            score_button = gr.Button("Score", variant="primary", elem_id="score-button")
        with gr.Column():
            model_status = gr.Markdown(slots["CLIPScore"].status(), elem_id="model-status")
            score_out = gr.Textbox(label="Score", interactive=False, elem_id="score-value")
            score_detail = gr.Markdown("", elem_id="score-detail")
            answers_out = gr.Dataframe(label="Per-question answers (TIFA/DSG)", visible=False,
                                       interactive=False, elem_id="score-answers")

    def on_scorer(name):
        return slots[name].status(), "", ""

    def on_input_change(name):  # a new image or prompt: earlier errors and scores are stale
        slot = slots.get(name)
        return (slot.status() if slot is not None else ""), "", ""

    idle = gr.update(interactive=True)

    def on_score(image, prompt, name):
        hidden = gr.update(visible=False)
        slot = slots.get(name)
        if slot is None:
            yield _error(f"unknown scorer {name!r}"), "", "", hidden, idle
            return
        # every click starts clean (no stale error or score) with the button disabled until done
        working = (f"**Loading** {name} model `{slot.spec.model}` (first use, once)..."
                   if not slot.loaded and not slot.spec.unavailable else f"**Scoring** with {name}...")
        yield working, "", "", hidden, gr.update(interactive=False)
        try:
            scorer = slot.get()
        except RuntimeError:
            yield slot.status(), "", "", hidden, idle
            return
        try:
            result = score_image(scorer, image, prompt)
        except ValueError as error:
            yield slot.status() + "\n\n" + _error(str(error)), "", "", hidden, idle
            return
        except Exception as error:
            yield slot.status() + "\n\n" + _unexpected(error), "", "", hidden, idle
            return
        answers = result.answers
        table = gr.update(value=answers, visible=True) if answers is not None else hidden
        yield slot.status(), f"{result.score:.4f}", result.detail(), table, idle

    scorer_pick.change(on_scorer, scorer_pick, [model_status, score_out, score_detail])
    for change in (image_in.change, prompt_in.change):
        change(on_input_change, scorer_pick, [model_status, score_out, score_detail])
    score_button.click(on_score, [image_in, prompt_in, scorer_pick],
                       [model_status, score_out, score_detail, answers_out, score_button])


def gallery_height(n_images: int, columns: int | None = None) -> int:
    """Pixel height of the SEG gallery for ``n_images`` tiles: just its rows (a single row leaves no empty block)."""
    rows = max(1, -(-n_images // (columns or GALLERY_COLUMNS)))
    return min(rows, GALLERY_MAX_ROWS) * GALLERY_ROW_PX + GALLERY_PADDING_PX


def _value(metric: UploadedMetric, meta: str, partition: str) -> str:
    for row in metric.rows:
        if row["meta_metric"] == meta and row["partition"] == partition:
            return format_number(row["ours"], 1)
    return MISSING
