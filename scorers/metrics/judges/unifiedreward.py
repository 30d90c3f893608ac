"""UnifiedReward-2.0 pointwise (Wang et al., 2025) as a TS2 judge: a Qwen-VL fine-tune rates an image against its
caption on three 1-5 axes -- Alignment (content matches the caption), Coherence (no glitches or distortions) and
Style (aesthetics) -- in the fixed format ``Alignment Score (1-5): X`` / ``Coherence Score (1-5): Y`` /
``Style Score (1-5): Z``. The TS2 score is the Alignment score (the prompt-faithfulness axis); the other two, and a
``Final Score`` when the reply has one, go into the records.

:data:`UNIFIEDREWARD_PROMPT` is our wording of the published pointwise instruction (its structure, axes, 1-5 scale
and output lines; the exact published text could not be read from its official repository here, see the evaluate
module's card): pass ``template=`` (``{prompt}`` placeholder) to use the authors' text verbatim. A reply without a
readable 1-5 Alignment score gives NaN and says why, never a number.

Two details of the official inference code are options (defaults: ours, unchanged):

* ``caption_whitespace``: ``"collapse"`` (default: runs of whitespace in the caption become one space) or
  ``"verbatim"`` (the caption inserted as given, as the official code does);
* ``jpeg_quality``: ``None`` (default: the image as given -- to a local model as decoded, to a served one as
  lossless PNG) or ``95`` (the official code's re-encoding: each image is saved as JPEG at that quality and decoded
  again before the judge sees it).
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

__all__ = ["CAPTION_WHITESPACE", "DEFAULT_UNIFIEDREWARD_MODEL", "DEFAULT_UNIFIEDREWARD_REVISION",
           "OFFICIAL_JPEG_QUALITY", "UNIFIEDREWARD_PROMPT", "UnifiedRewardScorer", "jpeg_roundtrip", "parse_unifiedreward"]

#: the UnifiedReward-2.0 Qwen-VL checkpoint used by default (served with vLLM by its authors; loads locally as a chat
#: VLM). Revision: the Hub commit in a public vLLM launch script of a Pref-GRPO setup, which serves the HF cache
#: folder ``models--CodeGoat24--UnifiedReward-2.0-qwen3vl-8b/snapshots/4175e6b7...`` (a snapshot folder is named by
#: its commit); one source only, read with code search; this machine cannot reach the Hub to confirm it
DEFAULT_UNIFIEDREWARD_MODEL = "CodeGoat24/UnifiedReward-2.0-qwen3vl-8b"
DEFAULT_UNIFIEDREWARD_REVISION = "4175e6b78d62f639282797d05ccea35d3be823cf"
AXES = ("alignment", "coherence", "style")
#: ``caption_whitespace`` choices: ours (collapse runs of whitespace) and the official code's (as given)
CAPTION_WHITESPACE = ("collapse", "verbatim")
#: the JPEG quality the official inference code re-encodes images with (``jpeg_quality=95`` follows it)
OFFICIAL_JPEG_QUALITY = 95

UNIFIEDREWARD_PROMPT = (
    "You are shown a generated image together with the text caption it was generated from. Analyse the image in "
    "relation to the caption along several dimensions.\n"
    "Give an overall rating from 1 to 5 for each of these axes:\n"
    "- Alignment Score: how well the content of the image matches the caption.\n"
    "- Coherence Score: how logically consistent the image is (no visual glitches, distorted objects, etc.).\n"
    "- Style Score: how aesthetically appealing the image is, whatever the caption says.\n\n"
    "Write your evaluation in exactly this format:\n\n"
    "Alignment Score (1-5): X\n"
    "Coherence Score (1-5): Y\n"
    "Style Score (1-5): Z\n\n"
    "Your task is provided as follows:\n"
    "Text Caption: [{prompt}]"
)

_NUMBER = r"([-+]?\d+(?:\.\d+)?)"


def _axis(text: str, label: str) -> float:
    """The number after ``<Label> Score (1-5):`` (or ``<Label> Score:`` / ``<Label>:``), NaN when absent."""
    pattern = rf"{label}(?:\s+score)?\s*(?:\(\s*1\s*-\s*5\s*\))?\s*[:=]\s*\**\s*{_NUMBER}"
    found = re.search(pattern, text, flags=re.IGNORECASE)
    return float(found.group(1)) if found else math.nan


def jpeg_roundtrip(image, quality: int = OFFICIAL_JPEG_QUALITY):
    """``image`` (PIL image or path) saved as JPEG at ``quality`` and decoded again: RGB PIL image."""
    import io

    from scorers.models.images import open_image, open_rgb

    buffer = io.BytesIO()
    open_image(image).save(buffer, format="JPEG", quality=int(quality))
    return open_rgb(buffer.getvalue())


def parse_unifiedreward(reply: str) -> dict:
    """``{"alignment", "coherence", "style", "final", "error"}`` from a reply; a missing or out-of-range (not 1-5)
    axis is NaN, and ``error`` says why the Alignment score (the TS2 score) is unreadable, else ``None``."""
    text = str(reply or "")
    out: dict[str, Any] = {axis: _axis(text, axis) for axis in AXES}
    out["final"] = _axis(text, "final")
    out["error"] = None
    for key in (*AXES, "final"):
        if not math.isnan(out[key]) and not 1 <= out[key] <= 5:
            if key == "alignment":
                out["error"] = f"alignment score {out[key]:g} is outside 1-5"
            out[key] = math.nan
    if out["error"] is None and math.isnan(out["alignment"]):
        out["error"] = "no 'Alignment Score (1-5): X' line in the reply"
    return out


class UnifiedRewardScorer:
    """Runner scorer ``unifiedreward``: per image the Alignment score (1-5; NaN when unreadable).

    ``model``: a local chat VLM (default UnifiedReward-2.0 on Qwen3-VL 8B) or ``openai:MODEL`` (served, e.g. by vLLM;
    options ``api_base``, ``max_concurrency``...). Records: ``unifiedreward_coherence``, ``unifiedreward_style``
    columns and ``judge`` details (all axes, the reply, the error).
    """

    name = "unifiedreward"

    def __init__(self, *, backend: Any = None, model: str | None = None, vqa_backend: str = "chat_vlm",
                 device: Any = None, precision: str | None = None, batch_size: int | None = None,
                 max_new_tokens: int = 256, template: str = UNIFIEDREWARD_PROMPT, api_base: str | None = None,
                 caption_whitespace: str = "collapse", jpeg_quality: int | None = None, **served):
        from scorers.models.text_backends import load_free_text_vlm

        if "{prompt}" not in template:
            raise ValueError("unifiedreward: template must contain '{prompt}'")
        if caption_whitespace not in CAPTION_WHITESPACE:
            raise ValueError(f"unifiedreward: caption_whitespace must be one of {CAPTION_WHITESPACE}, got "
                             f"{caption_whitespace!r}")
        if jpeg_quality is not None:
            if isinstance(jpeg_quality, bool) or not isinstance(jpeg_quality, int) or not 1 <= jpeg_quality <= 100:
                raise ValueError(f"unifiedreward: jpeg_quality must be an integer 1-100 (the official code uses "
                                 f"{OFFICIAL_JPEG_QUALITY}) or None, got {jpeg_quality!r}")
        self.caption_whitespace, self.jpeg_quality = caption_whitespace, jpeg_quality
        if api_base is not None:
            served["api_base"] = api_base
        model = model or DEFAULT_UNIFIEDREWARD_MODEL
        self.backend = backend if backend is not None else load_free_text_vlm(
            model, vqa_backend, max_new_tokens=max_new_tokens, device=device, precision=precision,
            batch_size=batch_size, served=served,
            revision=DEFAULT_UNIFIEDREWARD_REVISION if model == DEFAULT_UNIFIEDREWARD_MODEL else None)
        self.backends = (self.backend,)
        self.template = template
        self.config = {"scorer": self.name, "backend": type(self.backend).__name__,
                       "model": getattr(self.backend, "name", model), "template": template,
                       "max_new_tokens": max_new_tokens}
        # only when not the default: the cache fingerprint of default runs stays what it was
        if caption_whitespace != "collapse":
            self.config["caption_whitespace"] = caption_whitespace
        if jpeg_quality is not None:
            self.config["jpeg_quality"] = jpeg_quality

    def instruction(self, prompt: str) -> str:
        caption = str(prompt) if self.caption_whitespace == "verbatim" else " ".join(str(prompt).split())
        return self.template.replace("{prompt}", caption)

    def score_with_records(self, images: Sequence, prompts: Sequence[str]) -> tuple[np.ndarray, list[dict]]:
        if len(images) != len(prompts):
            raise ValueError(f"got {len(images)} images but {len(prompts)} prompts")
        images = list(images)
        if self.jpeg_quality is not None:
            images = [jpeg_roundtrip(image, self.jpeg_quality) for image in images]
        replies = self.backend.answer(images, [self.instruction(p) for p in prompts])
        parsed = [parse_unifiedreward(r) for r in replies]
        scores = np.array([p["alignment"] for p in parsed], dtype=np.float64)

        def num(value):
            return None if math.isnan(value) else value

        records = [{"unifiedreward_coherence": num(p["coherence"]), "unifiedreward_style": num(p["style"]),
                    "judge": {**{k: num(p[k]) for k in (*AXES, "final")}, "reply": reply, "error": p["error"]}}
                   for p, reply in zip(parsed, replies)]
        return scores, records

    def score(self, images: Sequence, prompts: Sequence[str]) -> np.ndarray:
        return self.score_with_records(images, prompts)[0]
