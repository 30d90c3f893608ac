"""DSG's score: questions form a dependency graph; a question counts only if it and all its ancestors pass.

``accumulate="dsg"`` (default): the fraction of an image's questions that were answered yes *and* whose parents all
pass, recursively (a failed parent zeroes its whole subtree). This reproduces the TS2 release's per-image DSG scores
from its per-question correctness (tests/test_qga_shared.py, 2,840 images x 3 VLMs). ``accumulate="tifa"``: the plain
fraction answered yes, ignoring dependencies (the "without dependency" rows of the DSG paper's Table 3).

Reference: Cho et al., "Davidsonian Scene Graph: Improving Reliability in Fine-grained Evaluation for Text-to-Image
Generation", ICLR 2024, Sec. 3.
"""
from __future__ import annotations

import graphlib
from typing import Sequence

import numpy as np

__all__ = ["ACCUMULATE", "dsg_passed", "dsg_score"]

ACCUMULATE = ("dsg", "tifa")


def dsg_passed(correct: Sequence[bool], parents: Sequence[Sequence[int]]) -> np.ndarray:
    """Per question: answered correctly and every ancestor too. ``parents[q]`` are indices into ``correct``."""
    correct = np.asarray(correct, dtype=bool)
    if len(parents) != correct.size:
        raise ValueError(f"dsg_passed: {correct.size} answers but {len(parents)} parent lists")
    for q, links in enumerate(parents):
        for p in links:
            if not 0 <= p < correct.size:
                raise ValueError(f"dsg_passed: question {q} has parent {p}, outside 0..{correct.size - 1}")
    try:  # parents before children (stdlib graphlib; the dataset builder checks tables the same way)
        order = list(graphlib.TopologicalSorter({q: tuple(links) for q, links in enumerate(parents)}).static_order())
    except graphlib.CycleError as error:
        raise ValueError(f"dsg_passed: parent links form a cycle through question {error.args[1][0]}") from None
    passed = np.zeros(correct.size, dtype=bool)
    for q in order:
        passed[q] = correct[q] and all(passed[p] for p in parents[q])
    return passed


def dsg_score(correct: Sequence[bool], parents: Sequence[Sequence[int]], accumulate: str = "dsg") -> float:
    """One image's DSG score (see the module docstring for ``accumulate``)."""
    if accumulate not in ACCUMULATE:
        raise ValueError(f"accumulate must be one of {ACCUMULATE}, got {accumulate!r}")
    values = np.asarray(correct, dtype=bool)
    if values.size == 0:
        raise ValueError("dsg_score: an image needs at least one question")
    if accumulate == "tifa":
        return float(values.mean())
    return float(dsg_passed(values, parents).mean())
