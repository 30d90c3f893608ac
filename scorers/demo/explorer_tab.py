"""The demo's SEG explorer tab: one SEG's error graph, gallery and per-image scores, and for a chosen image each
question with the metric's answer marked right or wrong against the truth
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
        # which error did the metric see: one image's questions, each answer marked against the truth
        image_choices = explorer.image_choices(first)
        sources = list(explorer.answers)
        with gr.Row():
            image_pick = gr.Dropdown(image_choices, value=image_choices[0][1] if image_choices else None,
                                     label="Image", elem_id="question-image", scale=3)
            answers_pick = gr.Dropdown(sources, value=sources[0] if sources else None, label="Answers", scale=1)
        question_note = gr.Markdown("Choose an image and its answers: each question with the metric's answer, marked "
                                    "against the truth.", elem_id="question-note")
        question_table = gr.Dataframe(interactive=False, label="Each question: the metric's answer, marked against "
                                                               "the truth", elem_id="question-table")

        def on_image(file_name, source):
            if not file_name or not source:
                return "", gr.update()
            try:
                table = explorer.question_table(file_name, source)
                return explorer.question_summary(file_name, source, table), table
            except (ValueError, FileNotFoundError) as problem:
                return error(str(problem)), gr.update(value=None)
            except Exception as problem:
                return unexpected(problem), gr.update(value=None)

        def on_seg_images(seg_id):
            try:
                choices = explorer.image_choices(seg_id)
            except ValueError:
                return gr.update()
            return gr.update(choices=choices, value=choices[0][1] if choices else None)

        for trigger in (image_pick.change, answers_pick.change):
            trigger(on_image, [image_pick, answers_pick], [question_note, question_table])
        seg_pick.change(on_seg_images, [seg_pick], [image_pick])

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
