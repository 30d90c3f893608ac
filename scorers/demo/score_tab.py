"""The demo's Score your image tab: one image and prompt through a lazily loaded scorer
(:mod:`scorers.demo.upload_scoring` decides the scorers, builds each once and scores). ``ui.build_app`` calls
:func:`build_score_tab`; the module imports gradio for :class:`UploadedImage`, its image input.
"""
from __future__ import annotations

from typing import Callable

import gradio as gr

from scorers.demo.config import AppConfig
from scorers.demo.upload_scoring import LazyScorer, score_image, scorer_specs

__all__ = ["UploadedImage", "build_score_tab"]


class UploadedImage(gr.Image):
    """``gr.Image`` that hands the handler the uploaded file's path without opening it: gradio's own preprocessing
    decodes the whole image (a 97 KB PNG of 100 megapixels took 2 GB) and turns an unreadable file into "The upstream
    Gradio app has raised an exception"; :func:`scorers.demo.upload_scoring.open_upload` checks both and says what is wrong."""

    is_template = True  # drawn by gradio's own Image front end

    def preprocess(self, payload):
        if payload is not None and payload.path and not (payload.url or "").startswith("data:"):
            return str(payload.path)
        return super().preprocess(payload)


def build_score_tab(config: AppConfig, *, error: Callable[[str], str],
                    unexpected: Callable[[Exception], str]) -> None:
    """The Score-your-image tab's widgets (inside ``gr.Tab``): one image and prompt through a scorer of
    :func:`scorers.demo.upload_scoring.scorer_specs`, each built on first use (once). Handlers never raise into
    gradio."""
    specs = scorer_specs(config)
    slots = {name: LazyScorer(spec) for name, spec in specs.items()}
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
            yield error(f"unknown scorer {name!r}"), "", "", hidden, idle
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
        except ValueError as problem:
            yield slot.status() + "\n\n" + error(str(problem)), "", "", hidden, idle
            return
        except Exception as problem:
            yield slot.status() + "\n\n" + unexpected(problem), "", "", hidden, idle
            return
        answers = result.answers
        table = gr.update(value=answers, visible=True) if answers is not None else hidden
        yield slot.status(), f"{result.score:.4f}", result.detail(), table, idle

    scorer_pick.change(on_scorer, scorer_pick, [model_status, score_out, score_detail])
    for change in (image_in.change, prompt_in.change):
        change(on_input_change, scorer_pick, [model_status, score_out, score_detail])
    score_button.click(on_score, [image_in, prompt_in, scorer_pick],
                       [model_status, score_out, score_detail, answers_out, score_button])
