"""UnifiedReward-2.0 pointwise (Wang et al., 2025) as a TS2 judge: a Qwen-VL fine-tune rates an image against its
caption on three 1-5 axes -- Alignment (content matches the caption), Coherence (no glitches or distortions) and
Style (aesthetics) -- in the fixed format ``Alignment Score (1-5): X`` / ``Coherence Score (1-5): Y`` /
``Style Score (1-5): Z``. The TS2 score is the Alignment score (the prompt-faithfulness axis); the other two, and a
``Final Score`` when the reply has one, go into the records.

:data:`UNIFIEDREWARD_PROMPT` is our wording of the published pointwise instruction (its structure, axes, 1-5 scale
and output lines; the exact published text could not be read from its official repository here, see the evaluate
module's card): pass ``template=`` (``{prompt}`` placeholder) to use the authors' text verbatim. A reply without a
readable 1-5 Alignment score gives NaN and says why, never a number.
"""
from __future__ import annotations

import math
import re
from typing import Any, Sequence

import numpy as np

__all__ = ["DEFAULT_UNIFIEDREWARD_MODEL", "DEFAULT_UNIFIEDREWARD_REVISION", "UNIFIEDREWARD_PROMPT", "UnifiedRewardScorer", "parse_unifiedreward"]

#: the UnifiedReward-2.0 Qwen-VL checkpoint used by default (served with vLLM by its authors; loads locally as a chat
#: VLM). Revision: the Hub commit in a public vLLM launch script of a Pref-GRPO setup, which serves the HF cache
#: folder ``models--CodeGoat24--UnifiedReward-2.0-qwen3vl-8b/snapshots/4175e6b7...`` (a snapshot folder is named by
#: its commit); one source only, read with code search; this machine cannot reach the Hub to confirm it
DEFAULT_UNIFIEDREWARD_MODEL = "CodeGoat24/UnifiedReward-2.0-qwen3vl-8b"
DEFAULT_UNIFIEDREWARD_REVISION = "4175e6b78d62f639282797d05ccea35d3be823cf"
AXES = ("alignment", "coherence", "style")

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
                 **served):
        from scorers.models.text_backends import load_free_text_vlm

        if "{prompt}" not in template:
            raise ValueError("unifiedreward: template must contain '{prompt}'")
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

    def instruction(self, prompt: str) -> str:
        return self.template.replace("{prompt}", " ".join(str(prompt).split()))

    def score_with_records(self, images: Sequence, prompts: Sequence[str]) -> tuple[np.ndarray, list[dict]]:
        if len(images) != len(prompts):
            raise ValueError(f"got {len(images)} images but {len(prompts)} prompts")
        replies = self.backend.answer(list(images), [self.instruction(p) for p in prompts])
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
