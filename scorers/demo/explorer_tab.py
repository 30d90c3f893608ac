"""The demo's SEG explorer tab: one SEG's error graph, gallery and per-image scores
(:class:`scorers.demo.explorer.SegExplorer` computes what it shows). Gradio is imported only inside
:func:`build_explorer_tab`, which ``ui.build_app`` calls.
"""
from __future__ import annotations

from typing import Callable

from scorers.demo.config import AppConfig
from scorers.demo.explorer import SegExplorer
from scorers.demo.sources import ImageSource

__all__ = ["GALLERY_COLUMNS", "build_explorer_tab", "gallery_height"]

#: SEG gallery layout: tiles per row, pixels per row of tiles, rows shown before it scrolls, frame padding
GALLERY_COLUMNS, GALLERY_ROW_PX, GALLERY_MAX_ROWS, GALLERY_PADDING_PX = 6, 190, 4, 24


def gallery_height(n_images: int, columns: int | None = None) -> int:
    """Pixel height of the SEG gallery for ``n_images`` tiles: just its rows (a single row leaves no empty block)."""
    rows = max(1, -(-n_images // (columns or GALLERY_COLUMNS)))
    return min(rows, GALLERY_MAX_ROWS) * GALLERY_ROW_PX + GALLERY_PADDING_PX


def build_explorer_tab(config: AppConfig, *, explorer: SegExplorer | None, images: ImageSource,
                       error: Callable[[str], str], unexpected: Callable[[Exception], str]) -> None:
    """The SEG explorer tab's widgets (inside ``gr.Tab``): one SEG's error graph, gallery and per-image scores.
    ``explorer``: None when the release metadata is not loaded (the tab says so); ``images``: where the tiles come
    from (its note says why tiles are placeholders). Handlers never raise into gradio."""
    import gradio as gr

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
            except ValueError as problem:
                return error(str(problem)), gr.update(), gr.update(), gr.update(), gr.update()
            except Exception as problem:
                return unexpected(problem), gr.update(), gr.update(), gr.update(), gr.update()

        for trigger in (seg_pick.change, metric_pick.change):
            trigger(on_seg, [seg_pick, metric_pick],
                    [seg_summary, seg_plot, seg_gallery, seg_table, images_note])
