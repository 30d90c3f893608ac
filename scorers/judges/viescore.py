"""VIEScore (Ku et al., 2023) for text-to-image faithfulness: a VLM rates the semantic consistency (SC) of the image
with its prompt from 0 to 10 and explains why; the score is SC / 10. TS2 ran it 0-shot with LLaVA-1.5.

The paper's protocol (public repository ``TIGER-AI-Lab/VIEScore``): a context saying the images are AI-generated and
asking for ``{"score": [...], "reasoning": "..."}``, then the text-to-image SC rule (0 = does not follow the prompt,
10 = follows it perfectly; ``score = [SC]``). :data:`VIESCORE_PROMPT` is our wording of that protocol; the output
format is the paper's. :func:`parse_viescore` reads the rating robustly (JSON anywhere, code fences, lists, "Score:
7/10"); a reply without a readable 0-10 rating gives NaN and says why, never 0.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .parsing import find_json_objects, labelled_number, lookup, number_from

__all__ = ["DEFAULT_VIESCORE_MODEL", "VIESCORE_PROMPT", "VIEScorer", "Rating", "parse_viescore", "viescore_prompt"]

DEFAULT_VIESCORE_MODEL = "llava-hf/llava-1.5-7b-hf"
SC_MAX = 10.0

VIESCORE_PROMPT = """You are an expert judge of AI-generated images. Every image and every person in it is \
AI-generated, so there are no privacy concerns.

Rate, on a scale from 0 to 10, how well the image follows the text prompt below: 0 means the image does not follow \
the prompt at all, 10 means it follows the prompt perfectly (every object, count, attribute and relation is right).

Text prompt: {prompt}

Answer with JSON only, exactly in this form, keeping the reasoning short:
{{"score": [<rating from 0 to 10>], "reasoning": "<one or two sentences>"}}"""


def viescore_prompt(prompt: str, template: str = VIESCORE_PROMPT) -> str:
    """The instruction sent with the image for ``prompt``."""
    return template.format(prompt=" ".join(str(prompt).split()))


@dataclass
class Rating:
    """A parsed judge rating: ``value`` (NaN when unreadable), the ``rationale`` and why it is unreadable."""

    value: float
    rationale: str
    error: str | None = None


def parse_viescore(reply: str) -> Rating:
    """The SC rating (0-10) and reasoning in a VLM reply; NaN with ``error`` when there is no readable rating."""
    text = str(reply or "")
    objects = find_json_objects(text)
    value = number_from(lookup(objects, ("score", "scores", "sc", "rating", "semantic_consistency")), SC_MAX)
    rationale = lookup(objects, ("reasoning", "rationale", "explanation", "reason"))
    if math.isnan(value):
        value = labelled_number(text, ("score", "rating", "semantic consistency"), SC_MAX)
    if math.isnan(value):
        value = number_from(text.strip(), SC_MAX) if _is_bare_number(text) else math.nan
    if math.isnan(value):  # "I would rate this image 4/10"
        fraction = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)\s*/\s*10(?![\d.])", text)
        value = float(fraction.group(1)) if fraction else math.nan
    rationale = str(rationale) if rationale is not None else text.strip()
    if math.isnan(value):
        return Rating(math.nan, rationale, "no 0-10 rating found in the reply")
    if not 0 <= value <= SC_MAX:
        return Rating(math.nan, rationale, f"rating {value:g} is outside 0-10")
    return Rating(value, rationale)


def _is_bare_number(text: str) -> bool:
    return re.fullmatch(r"\s*\[?\s*[-+]?\d+(?:\.\d+)?\s*(?:/\s*10)?\s*\]?\s*\.?\s*", text) is not None


class VIEScorer:
    """Runner scorer ``viescore``: per image SC / 10 (NaN when the reply has no readable rating).

    ``model``: a local instruction-following VLM (default LLaVA-1.5-7B, loaded as a chat VLM) or ``openai:MODEL``
    (served; options ``api_base``, ``max_concurrency``... as in ``scorers.models.openai_compat``). Records per image:
    ``viescore`` details under ``judge`` (``sc``, ``rationale``, ``reply``, ``error``).
    """

    def __init__(self, *, backend: Any = None, model: str | None = None, vqa_backend: str = "chat_vlm",
                 device: Any = None, precision: str | None = None, batch_size: int | None = None,
                 max_new_tokens: int = 256, template: str = VIESCORE_PROMPT, name: str = "viescore",
                 api_base: str | None = None, **served):
        from ..models.text_backends import load_free_text_vlm

        if api_base is not None:
            served["api_base"] = api_base
        model = model or DEFAULT_VIESCORE_MODEL
        self.backend = backend if backend is not None else load_free_text_vlm(
            model, vqa_backend, max_new_tokens=max_new_tokens, device=device, precision=precision,
            batch_size=batch_size, served=served)
        self.backends = (self.backend,)
        self.template = template
        self.name = name
        self.config = {"scorer": name, "backend": type(self.backend).__name__,
                       "model": getattr(self.backend, "name", model), "template": template,
                       "max_new_tokens": max_new_tokens}

    def score_with_records(self, images: Sequence, prompts: Sequence[str]) -> tuple[np.ndarray, list[dict]]:
        if len(images) != len(prompts):
            raise ValueError(f"got {len(images)} images but {len(prompts)} prompts")
        replies = self.backend.answer(list(images), [viescore_prompt(p, self.template) for p in prompts])
        ratings = [parse_viescore(r) for r in replies]
        scores = np.array([r.value / SC_MAX for r in ratings], dtype=np.float64)
        records = [{"judge": {"sc": None if math.isnan(r.value) else r.value, "rationale": r.rationale,
                              "reply": reply, "error": r.error}} for r, reply in zip(ratings, replies)]
        return scores, records

    def score(self, images: Sequence, prompts: Sequence[str]) -> np.ndarray:
        return self.score_with_records(images, prompts)[0]
