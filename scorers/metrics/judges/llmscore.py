"""LLMScore (Lu et al., 2023): a captioner VLM describes the image, a text-only LLM compares the description with the
prompt and returns an overall rating and an error count, each with a rationale.

The paper (public repository ``YujieLu10/LLMScore``) describes the image with a global caption (BLIP-2) and local
object descriptions (GRiT dense captions), then asks GPT-4 for: X1 the overall quality (1-100) of the description as a
match for the prompt; X2 the number of composition errors (wrong count, colour, location, shape, size, material,
relation; a missing object category counts as 4 errors); Z1, Z2 their rationales. Here one VLM writes both
descriptions (:data:`GLOBAL_PROMPT`, :data:`LOCAL_PROMPT`) and the judge instruction (:data:`JUDGE_PROMPT`) is our
wording of the paper's, asking for JSON; :func:`parse_llmscore` also reads the paper's bare ``X1\\nX2\\nZ1\\nZ2`` lines
and labelled prose. A missing field is NaN (with a reason), never 0.

Two differences from the official pipeline: it first has an LLM merge the global and dense descriptions into one
paragraph (``llm_descriptor/visual_descriptor.py``), which the judge then reads; here the judge reads the two
descriptions separately, with no merging step. Its instruction asks for an error count on a 0-9 scale; ours sets no
cap (the TS2 release's ``llmscore_ec`` has 105 of 2,840 values above 9, up to 36).

Scores: ``llmscore_ec`` = error count, **lower is better** (as the TS2 release's ``llmscore_ec``), the scorer's main
column; ``llmscore_overall`` = the 1-100 rating, higher is better (named apart from the release's ``llmscore_over``,
which is on another scale and lower-is-better in TS2's table). Both stages are cached per request by the runner, so
a crash in the LLM stage does not redo the captions.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from scorers.json_safe import content_key
from scorers.metrics.judges.parsing import find_json_objects, labelled_number, lookup, number_from

__all__ = ["DEFAULT_CAPTIONER", "DEFAULT_LLM", "GLOBAL_PROMPT", "JUDGE_PROMPT", "LOCAL_PROMPT", "LLMScorer",
           "Judgement", "judge_prompt", "parse_llmscore"]

DEFAULT_CAPTIONER = "llava-hf/llava-1.5-7b-hf"
DEFAULT_LLM = "meta-llama/Llama-3.1-8B-Instruct"

GLOBAL_PROMPT = ("Describe this image in one detailed paragraph: the scene, the main objects and people, what they "
                 "are doing and how they are arranged.")
LOCAL_PROMPT = ("List every distinct object in this image, one per line, in the form `object: count, colour, shape, "
                "size, material, position relative to the other objects`.")
JUDGE_PROMPT = """Text prompt: {prompt}
Image description (global): {global_description}
Image description (objects):
{local_description}

Compare the image description with the text prompt ("a" in the prompt means exactly one) and give:
1. overall: how well the described image matches the text prompt, an integer from 1 (not at all) to 100 (perfectly);
2. error_count: the number of composition errors of the described image against the prompt, an integer. Count one \
error for each wrong number of an object, wrong colour, location, shape, size or material of an object, and wrong \
relation between objects. Count 4 errors for each object category of the prompt that is missing from the description;
3. overall_rationale and error_rationale: one short paragraph each explaining the two numbers.

Answer with JSON only, in this form:
{{"overall": <1-100>, "error_count": <integer>, "overall_rationale": "...", "error_rationale": "..."}}"""

def judge_prompt(prompt: str, global_description: str, local_description: str, template: str = JUDGE_PROMPT) -> str:
    """The text LLM's instruction for one image."""
    return template.format(prompt=" ".join(str(prompt).split()), global_description=str(global_description).strip(),
                           local_description=str(local_description).strip())


@dataclass
class Judgement:
    """A parsed LLMScore reply: ``error_count`` and ``overall`` (NaN when missing), rationales, problems found."""

    error_count: float
    overall: float
    error_rationale: str = ""
    overall_rationale: str = ""
    errors: list[str] = field(default_factory=list)


_OVERALL = ("overall_score", "overall_rating", "overall", "rating", "x1")
_ERRORS = ("error_count", "error_counting", "errors", "composition_errors", "num_errors", "ec", "x2")


def parse_llmscore(reply: str) -> Judgement:
    """Error count and overall rating (with rationales) from the LLM's reply: JSON, labelled prose
    (``Overall: 80/100``, ``Error count: 2``) or the paper's bare lines ``X1\\nX2\\nZ1\\nZ2``."""
    text = str(reply or "")
    objects = find_json_objects(text)
    overall = number_from(lookup(objects, _OVERALL), 100.0)
    errors = number_from(lookup(objects, _ERRORS))
    overall_why = lookup(objects, ("overall_rationale", "rationale_overall", "z1", "rationale"))
    errors_why = lookup(objects, ("error_rationale", "error_count_rationale", "errors_rationale", "z2"))
    if not objects:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if len(lines) >= 2 and all(re.fullmatch(r"[-+]?\d+(?:\.\d+)?", line) for line in lines[:2]):
            overall, errors = float(lines[0]), float(lines[1])  # the paper's output format
            overall_why = overall_why or (lines[2] if len(lines) > 2 else None)
            errors_why = errors_why or (lines[3] if len(lines) > 3 else None)
        else:
            if math.isnan(overall):
                overall = labelled_number(text, (r"overall(?:\s+(?:score|rating|quality))?", r"rating"), 100.0)
            if math.isnan(errors):
                errors = labelled_number(text, (r"error[\s_]*count(?:ing)?", r"(?:composition\s+)?errors",
                                                r"number of (?:composition )?errors"))
    problems = []
    if math.isnan(errors):
        problems.append("no error count found")
    elif errors < 0 or errors != int(errors):
        problems.append(f"error count {errors:g} is not a whole number >= 0")
        errors = math.nan
    if math.isnan(overall):
        problems.append("no overall rating found")
    elif not 0 <= overall <= 100:
        problems.append(f"overall rating {overall:g} is outside 1-100")
        overall = math.nan
    return Judgement(errors, overall, str(errors_why or ""), str(overall_why or ""), problems)


class LLMScorer:
    """Runner scorer ``llmscore``: ``llmscore_ec`` per image (lower is better) plus the ``llmscore_overall`` column.

    ``model`` is the captioner VLM (local chat VLM, default LLaVA-1.5-7B, or ``openai:MODEL``), ``llm`` the text judge
    (local causal LM or ``openai:MODEL``); served options (``api_base``...) apply to whichever is served. Each stage's
    outputs are cached per request in the runner's cache (served backends cache their own requests), so a rerun
    after a crash in the LLM stage sends no caption request again.
    """

    higher_is_better = {"llmscore_ec": False}

    def __init__(self, *, backend: Any = None, llm: Any = None, model: str | None = None,
                 vqa_backend: str = "chat_vlm", device: Any = None, precision: str | None = None,
                 batch_size: int | None = None, caption_max_new_tokens: int = 256, judge_max_new_tokens: int = 384,
                 name: str = "llmscore_ec", api_base: str | None = None, **served):
        from scorers.models.text_backends import load_free_text_vlm, load_text_lm

        if api_base is not None:
            served["api_base"] = api_base
        model = model or DEFAULT_CAPTIONER
        llm = llm if llm is not None else DEFAULT_LLM
        from scorers.models.openai_compat import is_served

        self.captioner = backend if backend is not None else load_free_text_vlm(
            model, vqa_backend, max_new_tokens=caption_max_new_tokens, device=device, precision=precision,
            batch_size=batch_size, served=served if is_served(model) else None)
        self.llm = llm if not isinstance(llm, str) else load_text_lm(
            llm, max_new_tokens=judge_max_new_tokens, device=device, precision=precision, batch_size=batch_size,
            served=served if is_served(llm) else None)
        self.backends = (self.captioner, self.llm)
        self.name = name
        self._cache = None
        self.config = {"scorer": "llmscore", "captioner": getattr(self.captioner, "name", model),
                       "llm": getattr(self.llm, "name", str(llm)), "global_prompt": GLOBAL_PROMPT,
                       "local_prompt": LOCAL_PROMPT, "judge_prompt": JUDGE_PROMPT,
                       "max_new_tokens": [caption_max_new_tokens, judge_max_new_tokens]}

    def use_request_cache(self, cache) -> None:
        """Stage cache for local backends (served ones get the same cache from the runner through
        ``scorers.scoring.usage.MeteredScorer`` and store each request themselves)."""
        self._cache = cache

    def _stage(self, backend, stage: str, inputs: list, call) -> list[str]:
        """``call(positions)`` through the stage cache when ``backend`` does not cache its own requests."""
        if self._cache is None or hasattr(backend, "use_request_cache"):
            return list(call(list(range(len(inputs)))))
        keys = [content_key("llmscore", stage, getattr(backend, "name", ""), item) for item in inputs]
        return self._cache.map(keys, call)

    def score_with_records(self, images: Sequence, prompts: Sequence[str]) -> tuple[np.ndarray, list[dict]]:
        if len(images) != len(prompts):
            raise ValueError(f"got {len(images)} images but {len(prompts)} prompts")
        images = list(images)
        n = len(images)
        digests = [_image_digest(image) for image in images]
        caption_inputs = [(d, GLOBAL_PROMPT) for d in digests] + [(d, LOCAL_PROMPT) for d in digests]
        caption_images = images + images
        captions = self._stage(self.captioner, "caption", caption_inputs, lambda positions: self.captioner.answer(
            [caption_images[i] for i in positions], [caption_inputs[i][1] for i in positions]))
        judge_prompts = [judge_prompt(p, captions[i], captions[n + i]) for i, p in enumerate(prompts)]
        served_llm = hasattr(self.llm, "record")  # attribute its requests to the items' images in the records
        replies = self._stage(self.llm, "judge", judge_prompts, lambda positions: self.llm.generate(
            [judge_prompts[i] for i in positions], **({"refs": [images[i] for i in positions]} if served_llm else {})))
        scores = np.empty(n, dtype=np.float64)
        records = []
        for i, reply in enumerate(replies):
            judgement = parse_llmscore(reply)
            scores[i] = judgement.error_count
            records.append({
                "llmscore_overall": None if math.isnan(judgement.overall) else judgement.overall,
                "judge": {"global_description": captions[i], "local_description": captions[n + i], "reply": reply,
                          "error_rationale": judgement.error_rationale,
                          "overall_rationale": judgement.overall_rationale,
                          "errors": judgement.errors},
            })
        return scores, records

    def score(self, images: Sequence, prompts: Sequence[str]) -> np.ndarray:
        return self.score_with_records(images, prompts)[0]


def _image_digest(image) -> str:
    """Content hash of an image (pixels, size, mode) or of a file path's bytes: the captions' cache key."""
    import hashlib

    from PIL import Image

    if isinstance(image, Image.Image):
        return hashlib.sha256(f"{image.mode}{image.size}".encode() + image.tobytes()).hexdigest()
    with open(image, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()
