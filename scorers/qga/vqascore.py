"""VQAScore: the VQA model's probability that the image shows the prompt, P("Yes" | image, question).

The question is ``Does this figure show "{prompt}"? Please answer yes or no.``; the backend must implement
``yes_probability(images, questions)`` (all backends in ``scorers.models`` do, InstructBLIP for decoder-only LMs).

Reference: Lin et al., "Evaluating Text-to-Visual Generation with Image-to-Text Generation", ECCV 2024.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..checks import check_pairs
from .scorers import resolve_backend

__all__ = ["VQASCORE_TEMPLATE", "VQAScorer", "vqascore_question"]

VQASCORE_TEMPLATE = 'Does this figure show "{prompt}"? Please answer yes or no.'


def vqascore_question(prompt: str, template: str = VQASCORE_TEMPLATE) -> str:
    """The yes/no question VQAScore asks about ``prompt``."""
    return template.format(prompt=str(prompt).strip())


class VQAScorer:
    """Runner scorer: ``score(images, prompts)`` -> P("Yes") per image."""

    def __init__(self, *, backend: Any = None, model: str | None = None, vqa_backend: str = "auto",
                 device: Any = None, precision: str | None = None, batch_size: int | None = None,
                 template: str = VQASCORE_TEMPLATE, name: str = "vqa_score"):
        self.backend = resolve_backend(backend, model, device, precision, batch_size, vqa_backend)
        if not hasattr(self.backend, "yes_probability"):
            raise ValueError(f"VQA backend {type(self.backend).__name__} has no yes_probability(images, questions)")
        self.template = template
        self.name = name
        self.config = {"scorer": name, "backend": type(self.backend).__name__,
                       "model": getattr(self.backend, "name", model), "template": template}

    def score(self, images: Sequence, prompts: Sequence[str]) -> np.ndarray:
        check_pairs(images, prompts)
        questions = [vqascore_question(p, self.template) for p in prompts]
        return np.asarray(self.backend.yes_probability(list(images), questions), dtype=np.float64)
