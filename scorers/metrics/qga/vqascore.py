"""VQAScore: the VQA model's probability that the image shows the prompt, P("Yes" | image, question).

The question is ``Does this figure show "{prompt}"? Please answer yes or no.``. A backend that returns the first
answer token's ``top_logprobs`` (``first_token_logprobs(images, questions)``: served models) is read by the rule
:func:`yes_probability_from_logprobs`, defined here once; the local backends' ``yes_probability(images, questions)``
teacher-force the whole answer word (the same number when it is one token).

``prompt_style`` says how the question reaches a chat model:

* ``"short_answer"`` (default): as every VQA question of this toolkit (TIFA and DSG too): LLaVA-1.5 gets its
  short-answer suffix (``Answer the question using a single word or phrase.``, the format it was trained on for short
  answers) and no system message; other chat VLMs, local or served, get a short-answer system prompt
  (``scorers.models.chat_vlm.CONCISE_SYSTEM_PROMPT``).
* ``"t2v_metrics"``: as the VQAScore reference code (``linzhiqiu/t2v_metrics``) sends it: LLaVA-1.5 gets LLaVA's
  Vicuna system message and no suffix (``scorers.models.llava.T2V_METRICS_PROMPT``); other chat VLMs get no system
  prompt. For comparing with published VQAScore numbers. It changes the prompt only: t2v_metrics also pads LLaVA's
  images to a square (the ``llava-hf`` processor crops the centre) and scores LLaVA's answer as ``Yes</s>`` (the
  geometric mean of both tokens' probabilities; here the probability of ``Yes``). BLIP VQA and InstructBLIP have
  no chat prompt, so the style does not apply to them (an error says so).

The backend passed in is not changed: the scorer works on a shallow copy with the style set (same weights).

Reference: Lin et al., "Evaluating Text-to-Visual Generation with Image-to-Text Generation", ECCV 2024.
"""
from __future__ import annotations

import copy
import math
from typing import Any, Sequence

import numpy as np

from scorers.checks import check_choice, check_pairs
from scorers.metrics.qga.question_scorers import resolve_backend

__all__ = ["PROMPT_STYLES", "VQASCORE_TEMPLATE", "VQAScorer", "styled_backend", "vqascore_question",
           "yes_probability_from_logprobs", "backend_yes_probability"]

VQASCORE_TEMPLATE = 'Does this figure show "{prompt}"? Please answer yes or no.'
#: ``prompt_style=`` values (see the module docstring); the first is the default
PROMPT_STYLES = ("short_answer", "t2v_metrics")


def vqascore_question(prompt: str, template: str = VQASCORE_TEMPLATE) -> str:
    """The yes/no question VQAScore asks about ``prompt``."""
    return template.format(prompt=str(prompt).strip())


def yes_probability_from_logprobs(top_logprobs: Sequence[dict], yes_word: str = "Yes") -> float:
    """P(first answer token is ``yes_word``) from that token position's ``top_logprobs`` (``{"token", "logprob"}``):
    the probabilities of every listed token equal to ``yes_word`` once surrounding whitespace is stripped ("Yes",
    " Yes", "Yes\\n"), added by log-sum-exp and clipped to [0, 1]; a yes token not listed counts as probability 0."""
    logprobs = [float(t["logprob"]) for t in top_logprobs if str(t.get("token", "")).strip() == yes_word]
    if not logprobs or max(logprobs) == -math.inf:
        return 0.0
    peak = max(logprobs)
    mass = math.exp(peak + math.log(math.fsum(math.exp(lp - peak) for lp in logprobs)))
    return min(1.0, max(0.0, mass))


def backend_yes_probability(backend: Any, images: Sequence, questions: Sequence[str]) -> np.ndarray:
    """P(answer "yes") to ``questions[i]`` about ``images[i]`` from any VQA backend: a served model's first-token
    ``top_logprobs`` read by :func:`yes_probability_from_logprobs` (the rule lives here, not in the model file), a
    local backend's own ``yes_probability``."""
    if hasattr(backend, "first_token_logprobs"):  # token logprobs in, the rule here makes P(yes)
        yes_word = getattr(backend, "yes_word", "Yes")
        return np.array([yes_probability_from_logprobs(top, yes_word)
                         for top in backend.first_token_logprobs(list(images), list(questions))], dtype=np.float64)
    return np.asarray(backend.yes_probability(list(images), list(questions)), dtype=np.float64)


def styled_backend(backend: Any, prompt_style: str) -> Any:
    """``backend`` itself for the default style; for ``"t2v_metrics"`` a shallow copy (same model) that renders the
    t2v_metrics prompt: LLaVA's (backends with a ``prompt_style``), else no system prompt (backends with a
    ``system_prompt``: local chat VLMs, served models)."""
    check_choice("prompt_style", prompt_style, PROMPT_STYLES)
    if prompt_style == "short_answer":
        return backend
    styled = copy.copy(backend)
    if hasattr(backend, "prompt_style"):
        styled.prompt_style = prompt_style
    elif hasattr(backend, "system_prompt"):
        styled.system_prompt = None
    else:
        raise ValueError(f"prompt_style={prompt_style!r}: {type(backend).__name__} has no chat prompt to style (it "
                         "applies to LLaVA and chat VLMs, local or served)")
    return styled


class VQAScorer:
    """Runner scorer: ``score(images, prompts)`` -> P("Yes") per image."""

    def __init__(self, *, backend: Any = None, model: str | None = None, vqa_backend: str = "auto",
                 device: Any = None, precision: str | None = None, batch_size: int | None = None,
                 template: str = VQASCORE_TEMPLATE, name: str = "vqa_score", prompt_style: str = "short_answer"):
        check_choice("prompt_style", prompt_style, PROMPT_STYLES)
        self.backend = styled_backend(resolve_backend(backend, model, device, precision, batch_size, vqa_backend),
                                      prompt_style)
        if not hasattr(self.backend, "yes_probability") and not hasattr(self.backend, "first_token_logprobs"):
            raise ValueError(f"VQA backend {type(self.backend).__name__} has no yes_probability(images, questions) "
                             "and no first_token_logprobs(images, questions)")
        self.template = template
        self.name = name
        self.prompt_style = prompt_style
        self.config = {"scorer": name, "backend": type(self.backend).__name__,
                       "model": getattr(self.backend, "name", model), "template": template}
        if prompt_style != "short_answer":  # the default keeps earlier caches' fingerprint
            self.config["prompt_style"] = prompt_style

    def score(self, images: Sequence, prompts: Sequence[str]) -> np.ndarray:
        check_pairs(images, prompts)
        questions = [vqascore_question(p, self.template) for p in prompts]
        return backend_yes_probability(self.backend, list(images), questions)
