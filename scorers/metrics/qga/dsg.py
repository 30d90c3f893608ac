"""DSG's score: questions form a dependency graph; a question counts only if it and its parents pass.

``accumulate="dsg"`` (default): the fraction of an image's questions that were answered yes *and* whose parents
pass. ``accumulate="tifa"``: the plain fraction answered yes, ignoring dependencies (the "without dependency" rows of
the DSG paper's Table 3).

Two published rules say which parents count (``gating``):

* ``"ancestors"`` (default): a question passes when it and *every ancestor* were answered yes, recursively, so a
  failed question zeroes its whole subtree. This is TS2's code (``get_avg_scores_dsg`` in the T2IScoreScore
  repository's ``src/vqa_scores/postprocess.py``, which gates each child on its parents' already-gated values) and its
  release: it reproduces the released per-image DSG scores from the per-question correctness on 2,835 / 2,840 /
  2,840 of the 2,840 images (BLIP1 / LLaVA / mPLUG; tests/metrics/test_qga_release.py).
* ``"parents"``: a question passes when it and its *direct* parents were answered yes, one level only: a child of a
  passing-but-gated parent still counts. This is the official DSG code (``calc_vqa_score`` in ``j-min/DSG``'s
  ``dsg/vqa_utils.py``, which checks each parent's raw answer score). It reproduces the released scores on 2,810 /
  2,785 / 2,804 images; the two rules differ only for questions with a grandparent (55 of TS2's 898 DSG questions).

Reference: Cho et al., "Davidsonian Scene Graph: Improving Reliability in Fine-grained Evaluation for Text-to-Image
Generation", ICLR 2024, Sec. 3.
"""
from __future__ import annotations

import graphlib
from typing import Sequence

import numpy as np

from scorers.checks import check_choice

__all__ = ["ACCUMULATE", "GATING", "check_gating", "dsg_passed", "dsg_score"]

ACCUMULATE = ("dsg", "tifa")
#: which answers gate a question (see the module docstring): all ancestors (TS2) or direct parents only (official DSG)
GATING = ("ancestors", "parents")


def check_gating(gating: str) -> str:
    return check_choice("dsg_gating", gating, GATING)


def dsg_passed(correct: Sequence[bool], parents: Sequence[Sequence[int]], gating: str = "ancestors") -> np.ndarray:
    """Per question: answered correctly and every ancestor too (``gating="ancestors"``), or every direct parent
    (``gating="parents"``). ``parents[q]`` are indices into ``correct``."""
    check_gating(gating)
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
    gate = passed if gating == "ancestors" else correct  # parents' gated values, or their own answers
    for q in order:
        passed[q] = correct[q] and all(gate[p] for p in parents[q])
    return passed


def dsg_score(correct: Sequence[bool], parents: Sequence[Sequence[int]], accumulate: str = "dsg",
              gating: str = "ancestors") -> float:
    """One image's DSG score (see the module docstring for ``accumulate`` and ``gating``)."""
    check_choice("accumulate", accumulate, ACCUMULATE)
    check_gating(gating)
    values = np.asarray(correct, dtype=bool)
    if values.size == 0:
        raise ValueError("dsg_score: an image needs at least one question")
    if accumulate == "tifa":
        return float(values.mean())
    return float(dsg_passed(values, parents, gating).mean())
