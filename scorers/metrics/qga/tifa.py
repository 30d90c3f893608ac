"""TIFA's score: the fraction of an image's questions whose matched answer equals the expected answer.

Reference: Hu et al., "TIFA: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with Question
Answering", ICCV 2023, Eq. 1.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["tifa_score", "is_correct"]


def is_correct(chosen: str, expected: str) -> bool:
    """A matched choice is correct when it equals the expected answer (case and surrounding space ignored)."""
    return str(chosen).strip().lower() == str(expected).strip().lower()


def tifa_score(correct: Sequence[bool]) -> float:
    """Mean correctness over one image's questions; an image with no questions is an error (no score to give)."""
    values = np.asarray(correct, dtype=float)
    if values.size == 0:
        raise ValueError("tifa_score: an image needs at least one question")
    return float(values.mean())
