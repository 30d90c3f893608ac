"""VQAScore: the VQA model's probability that the image shows the prompt, P("Yes" | image, question).

The question is ``Does this figure show "{prompt}"? Please answer yes or no.``. A backend that returns the first
answer token's ``top_logprobs`` (``first_token_logprobs(images, questions)``: served models) is read by the rule
:func:`yes_probability_from_logprobs`, defined here once; the local backends' ``yes_probability(images, questions)``
teacher-force the whole answer word (the same number when it is one token).

Reference: Lin et al., "Evaluating Text-to-Visual Generation with Image-to-Text Generation", ECCV 2024.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..checks import check_pairs
from .scorers import resolve_backend

__all__ = ["VQASCORE_TEMPLATE", "VQAScorer", "vqascore_question", "yes_probability_from_logprobs"]

VQASCORE_TEMPLATE = 'Does this figure show "{prompt}"? Please answer yes or no.'


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


class VQAScorer:
    """Runner scorer: ``score(images, prompts)`` -> P("Yes") per image."""

    def __init__(self, *, backend: Any = None, model: str | None = None, vqa_backend: str = "auto",
                 device: Any = None, precision: str | None = None, batch_size: int | None = None,
                 template: str = VQASCORE_TEMPLATE, name: str = "vqa_score"):
        self.backend = resolve_backend(backend, model, device, precision, batch_size, vqa_backend)
        if not hasattr(self.backend, "yes_probability") and not hasattr(self.backend, "first_token_logprobs"):
            raise ValueError(f"VQA backend {type(self.backend).__name__} has no yes_probability(images, questions) "
                             "and no first_token_logprobs(images, questions)")
        self.template = template
        self.name = name
        self.config = {"scorer": name, "backend": type(self.backend).__name__,
                       "model": getattr(self.backend, "name", model), "template": template}

    def score(self, images: Sequence, prompts: Sequence[str]) -> np.ndarray:
        check_pairs(images, prompts)
        questions = [vqascore_question(p, self.template) for p in prompts]
        if hasattr(self.backend, "first_token_logprobs"):  # token logprobs in, the rule here makes P(yes)
            yes_word = getattr(self.backend, "yes_word", "Yes")
            return np.array([yes_probability_from_logprobs(top, yes_word)
                             for top in self.backend.first_token_logprobs(list(images), questions)], dtype=np.float64)
        return np.asarray(self.backend.yes_probability(list(images), questions), dtype=np.float64)
