"""The Gradio Blocks of the demo: the tables read once, then five tabs, each built by its own module's
``build_<name>_tab(config, *, ..., error, unexpected)`` inside its ``gr.Tab``: ``leaderboard_tab``, ``explorer_tab``,
``score_tab``, ``report_card_tab`` and ``seg_builder.tab``. This module only composes them.

Handlers never raise into Gradio: a ValueError becomes its message in a status box (:func:`_error`, handed to every
tab), anything else a one-line "unexpected error" (:func:`_unexpected`: the traceback goes to the server log only), so
the app keeps serving after bad input.
"""
from __future__ import annotations

import logging
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr  # noqa: E402

from scorers.demo.config import AppConfig  # noqa: E402
from scorers.demo.explorer import SegExplorer  # noqa: E402
from scorers.demo.explorer_tab import build_explorer_tab  # noqa: E402
from scorers.demo.leaderboard_tab import build_leaderboard_tab, published_reproduction  # noqa: E402
from scorers.demo.report_card_tab import build_report_card_tab  # noqa: E402
from scorers.demo.score_tab import build_score_tab  # noqa: E402
from scorers.demo.seg_builder.tab import build_seg_builder_tab  # noqa: E402
from scorers.demo.sources import ImageSource, load_tables  # noqa: E402

__all__ = ["build_app", "launch_kwargs"]

log = logging.getLogger(__name__)

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


def _error(message: str) -> str:
    return f"**Error:** {message}"


def _unexpected(error: Exception) -> str:
    log.exception("unexpected error in a demo handler")
    return _error(f"unexpected {type(error).__name__}: {error}")


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

    with gr.Blocks(title="TS2: T2IScoreScore demo", analytics_enabled=False) as demo:
        gr.Markdown(INTRO)
        if problems:
            gr.Markdown(_error("<br>".join(problems).replace("\n", "<br>")), elem_id="load-problems")
        with gr.Tabs():
            # ---------------------------------------------------------------------------------- leaderboard
            with gr.Tab("Leaderboard", id="leaderboard-tab"):
                build_leaderboard_tab(config, tables=tables, published=published, error=_error, unexpected=_unexpected)

            # ---------------------------------------------------------------------------------- SEG explorer
            with gr.Tab("SEG explorer", id="explorer-tab"):
                build_explorer_tab(config, explorer=explorer, images=images, error=_error, unexpected=_unexpected)

            # ---------------------------------------------------------------------------------- score your image
            with gr.Tab("Score your image", id="score-tab"):
                build_score_tab(config, error=_error, unexpected=_unexpected)

            # ---------------------------------------------------------------------------------- report card
            with gr.Tab("Report card", id="card-tab"):
                build_report_card_tab(config, tables=tables, error=_error, unexpected=_unexpected)

            # ---------------------------------------------------------------------------------- build a SEG
            # its children render at page load: the browser-stored upload key (gr.BrowserState) is read then
            with gr.Tab("Build a SEG", id="seg-builder-tab", render_children=True):
                build_seg_builder_tab(config, demo=demo, error=_error, unexpected=_unexpected)

        with gr.Accordion("Data sources", open=False):
            # where images come from *now* (read at each page load: the Hub may have failed since start-up)
            gr.Markdown(lambda: config.describe(tables.paths, images=images.describe()), elem_id="data-sources")
    return demo
