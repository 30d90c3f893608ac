"""VIEScore (Ku et al., 2023) for text-to-image: a VLM rates the image and explains why, in two prompts.

* **SC**, semantic consistency: how well the image follows the prompt, 0 (not at all) to 10 (perfectly).
* **PQ**, perceptual quality: two sub-scores from 0 to 10, *naturalness* (0 = the scene looks unnatural: wrong sense
  of distance, wrong shadows or lighting) and *artifacts* (0 = large distortions, watermarks, scratches, blurred
  faces, malformed body parts, subjects that do not fit together; 10 = none); PQ = min(naturalness, artifacts).
* **Overall** = sqrt(SC x PQ), the paper's score (``VIEScore.evaluate`` in ``TIGER-AI-Lab/VIEScore``,
  ``viescore/__init__.py``: the minimum of each reply's score list, then the geometric mean).

``output="sc"`` (default): one column ``viescore`` = SC / 10, one prompt per image. That is what TS2 ran (0-shot,
LLaVA-1.5) and released (its ``viescore`` column holds SC as integers 0-10), so it is the default. ``output="overall"``:
columns ``viescore_overall`` = sqrt(SC x PQ) / 10, ``viescore_sc`` = SC / 10 and ``viescore_pq`` = PQ / 10 (all in
[0, 1]; x 10 gives the paper's 0-10 numbers), two prompts per image.

The prompts are our wording of the paper's protocol: a context saying the images (and any people in them) are
AI-generated and asking for ``{"score": [...], "reasoning": "..."}``, then the text-to-image rule. ``prompt``
names the SC wording: ``"paper"`` (default, :data:`VIESCORE_PROMPT`) states the paper's rule only;
``"detailed"`` (:data:`VIESCORE_PROMPT_DETAILED`, this module's wording before it had a choice) adds "(every object,
count, attribute and relation is right)" to what a 10 means, which the paper's rule does not say. :data:`PQ_PROMPT`
is the PQ rule. :func:`parse_viescore` reads a rating robustly (JSON anywhere, code fences, lists -> their minimum as
in the paper, "Score: 7/10"); a reply without a readable 0-10 rating gives NaN and says why, never 0.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scorers.metrics.judges.parsing import find_json_objects, labelled_number, lookup, number_from

__all__ = ["DEFAULT_VIESCORE_MODEL", "OUTPUTS", "PQ_PROMPT", "PROMPTS", "VIESCORE_PROMPT", "VIESCORE_PROMPT_DETAILED",
           "VIEScorer", "Rating", "parse_viescore", "parse_viescore_pq", "viescore_prompt"]

DEFAULT_VIESCORE_MODEL = "llava-hf/llava-1.5-7b-hf"
SC_MAX = 10.0
#: ``output=``: ``"sc"`` (SC / 10, TS2's column) or ``"overall"`` (sqrt(SC x PQ) / 10 with SC and PQ columns)
OUTPUTS = ("sc", "overall")

_CONTEXT = """You are an expert judge of AI-generated images. Every image and every person in it is \
AI-generated, so there are no privacy concerns."""

#: the output format (a ``str.format`` template: doubled braces are literal braces)
_SC_ANSWER = """Answer with JSON only, exactly in this form, keeping the reasoning short:
{{"score": [<rating from 0 to 10>], "reasoning": "<one or two sentences>"}}"""

#: SC, the paper's rule in our words (``prompt="paper"``, the default); ``{prompt}`` is the text prompt
VIESCORE_PROMPT = _CONTEXT + """

Rate, on a scale from 0 to 10, how well the image follows the text prompt below: 0 means the image does not follow \
the prompt at all, 10 means it follows the prompt perfectly.

Text prompt: {prompt}

""" + _SC_ANSWER

#: SC with a stricter reading of 10 (``prompt="detailed"``): not in the paper's rule
VIESCORE_PROMPT_DETAILED = _CONTEXT + """

Rate, on a scale from 0 to 10, how well the image follows the text prompt below: 0 means the image does not follow \
the prompt at all, 10 means it follows the prompt perfectly (every object, count, attribute and relation is right).

Text prompt: {prompt}

""" + _SC_ANSWER

#: named SC wordings (``prompt=``)
PROMPTS = {"paper": VIESCORE_PROMPT, "detailed": VIESCORE_PROMPT_DETAILED}

#: PQ, the paper's rule in our words: two sub-scores, PQ = their minimum. The text prompt is not part of it, so this
#: is sent as it is (no ``str.format``).
PQ_PROMPT = _CONTEXT + """

Rate the visual quality of the image with two scores, each on a scale from 0 to 10:
1. naturalness: 0 means the scene does not look natural at all or feels wrong, for example a wrong sense of \
distance, wrong shadows or wrong lighting; 10 means the image looks natural;
2. artifacts: 0 means a large part of the image is distorted or shows watermarks, scratches, blurred faces, \
malformed body parts or subjects that do not fit together; 10 means the image has no artifacts.

Answer with JSON only, exactly in this form, keeping the reasoning short:
{"score": [<naturalness>, <artifacts>], "reasoning": "<one or two sentences>"}"""


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


def parse_viescore_pq(reply: str) -> Rating:
    """PQ = min(naturalness, artifacts) from a reply to :data:`PQ_PROMPT` (``{"score": [n, a]}``, or the two named
    fields); NaN with ``error`` when there is no readable 0-10 rating. A single score is taken as it is."""
    objects = find_json_objects(str(reply or ""))
    named = [number_from(lookup(objects, (key,)), SC_MAX) for key in ("naturalness", "artifacts")]
    if not any(math.isnan(v) for v in named):
        rationale = lookup(objects, ("reasoning", "rationale", "explanation", "reason"))
        value = min(named)
        rationale = str(rationale) if rationale is not None else str(reply or "").strip()
        outside = [v for v in named if not 0 <= v <= SC_MAX]
        if outside:
            return Rating(math.nan, rationale, f"rating {outside[0]:g} is outside 0-10")
        return Rating(value, rationale)
    return parse_viescore(reply)


class VIEScorer:
    """Runner scorer ``viescore``: per image SC / 10 (``output="sc"``, default), or sqrt(SC x PQ) / 10 with SC / 10
    and PQ / 10 columns (``output="overall"``); NaN when a needed reply has no readable rating.

    ``model``: a local instruction-following VLM (default LLaVA-1.5-7B, loaded as a chat VLM) or ``openai:MODEL``
    (served; options ``api_base``, ``max_concurrency``... as in ``scorers.models.openai_compat``). ``prompt``: the SC
    wording (``"paper"`` or ``"detailed"``, see the module docstring); ``template`` replaces it with your own
    (``{prompt}`` = the text prompt), ``pq_template`` the PQ instruction. Records per image: the details under
    ``judge`` (``sc``, ``rationale``, ``reply``, ``error``; with ``output="overall"`` also ``pq``, ``pq_rationale``,
    ``pq_reply``, ``pq_error``) and, with ``output="overall"``, the ``viescore_sc`` / ``viescore_pq`` columns.
    """

    def __init__(self, *, backend: Any = None, model: str | None = None, vqa_backend: str = "chat_vlm",
                 device: Any = None, precision: str | None = None, batch_size: int | None = None,
                 max_new_tokens: int = 256, output: str = "sc", prompt: str = "paper", template: str | None = None,
                 pq_template: str | None = None, name: str | None = None, api_base: str | None = None, **served):
        from scorers.models.text_backends import load_free_text_vlm

        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
        if prompt not in PROMPTS:
            raise ValueError(f"prompt must be one of {sorted(PROMPTS)}, got {prompt!r}")
        if pq_template is not None and output != "overall":
            raise ValueError("pq_template is only used with output='overall' (PQ is not asked for SC alone)")
        if api_base is not None:
            served["api_base"] = api_base
        model = model or DEFAULT_VIESCORE_MODEL
        self.backend = backend if backend is not None else load_free_text_vlm(
            model, vqa_backend, max_new_tokens=max_new_tokens, device=device, precision=precision,
            batch_size=batch_size, served=served)
        self.backends = (self.backend,)
        self.output = output
        self.template = template if template is not None else PROMPTS[prompt]
        self.pq_template = (pq_template if pq_template is not None else PQ_PROMPT) if output == "overall" else None
        self.name = name or ("viescore" if output == "sc" else "viescore_overall")
        self.config = {"scorer": self.name, "backend": type(self.backend).__name__,
                       "model": getattr(self.backend, "name", model), "template": self.template,
                       "max_new_tokens": max_new_tokens}
        if output == "overall":  # output="sc" adds no key: prompt="detailed" resumes caches made before these options
            self.config.update(output=output, pq_template=self.pq_template)

    def score_with_records(self, images: Sequence, prompts: Sequence[str]) -> tuple[np.ndarray, list[dict]]:
        if len(images) != len(prompts):
            raise ValueError(f"got {len(images)} images but {len(prompts)} prompts")
        images = list(images)
        instructions = [viescore_prompt(p, self.template) for p in prompts]
        if self.output == "overall":  # SC and PQ of every image in one batched call
            replies = self.backend.answer(images + images, instructions + [self.pq_template] * len(images))
            sc_replies, pq_replies = replies[:len(images)], replies[len(images):]
        else:
            sc_replies, pq_replies = self.backend.answer(images, instructions), None
        ratings = [parse_viescore(r) for r in sc_replies]
        if pq_replies is None:
            scores = np.array([r.value / SC_MAX for r in ratings], dtype=np.float64)
            records = [{"judge": _judge(r, reply)} for r, reply in zip(ratings, sc_replies)]
            return scores, records
        quality = [parse_viescore_pq(r) for r in pq_replies]
        scores = np.array([math.sqrt(sc.value * pq.value) / SC_MAX for sc, pq in zip(ratings, quality)],
                          dtype=np.float64)  # NaN when either is NaN
        records = []
        for sc, pq, sc_reply, pq_reply in zip(ratings, quality, sc_replies, pq_replies):
            judge = _judge(sc, sc_reply)
            judge.update(pq=None if math.isnan(pq.value) else pq.value, pq_rationale=pq.rationale, pq_reply=pq_reply,
                         pq_error=pq.error)
            records.append({"viescore_sc": _unit(sc.value), "viescore_pq": _unit(pq.value), "judge": judge})
        return scores, records

    def score(self, images: Sequence, prompts: Sequence[str]) -> np.ndarray:
        return self.score_with_records(images, prompts)[0]


def _judge(rating: Rating, reply: str) -> dict:
    return {"sc": None if math.isnan(rating.value) else rating.value, "rationale": rating.rationale, "reply": reply,
            "error": rating.error}


def _unit(value: float) -> float | None:
    """A 0-10 rating as a 0-1 column value (None, an empty cell, when unreadable)."""
    return None if math.isnan(value) else value / SC_MAX
