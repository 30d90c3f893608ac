"""How much of a SEG set a metric's per-image scores cover, and a fingerprint of those scores.

A leaderboard ranks only *complete* scores: every image of the evaluated SEGs scored with a finite number. Leaving
out the images a metric orders worst (a blank cell is NaN, skipped by rank/sep/delta) raises its numbers, so a
score column's :class:`Coverage` is stated beside its numbers (``ts2 meta --json`` / ``--out``: ``coverage``; the
leaderboard lists an incomplete one apart). :func:`score_fingerprint` names the scores themselves, so that the same
scores under a second name are found.

Plain arrays in (the scores in metadata order and each image's SEG id), numbers out.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable

import numpy as np

__all__ = ["Coverage", "score_coverage", "score_fingerprint"]


@dataclass(frozen=True)
class Coverage:
    """``cells_scored`` of ``cells_total`` images of the evaluated SEGs hold a finite score; ``segs_used`` of
    ``segs_total`` SEGs hold at least one; ``cells_repaired``: cells read only once stray quote characters were
    stripped (the release's LLMScore cells like ``"3``). ``complete``: every image scored.

    Examples:
        >>> c = score_coverage([0.5, np.nan, 0.1, 0.2], [0, 0, 1, 1])
        >>> c.complete, c.text()
        (False, '3/4 cells scored, 2/2 SEGs used')
        >>> c.to_dict()["cells_skipped"]
        1
    """

    cells_scored: int
    cells_total: int
    segs_used: int
    segs_total: int
    cells_repaired: int = 0

    @property
    def complete(self) -> bool:
        return self.cells_scored == self.cells_total and self.segs_used == self.segs_total

    @property
    def cells_skipped(self) -> int:
        return self.cells_total - self.cells_scored

    def to_dict(self) -> dict:
        """The JSON form (a result file's ``coverage``)."""
        return {"cells_scored": self.cells_scored, "cells_total": self.cells_total,
                "cells_skipped": self.cells_skipped, "segs_used": self.segs_used, "segs_total": self.segs_total,
                "cells_repaired": self.cells_repaired, "complete": self.complete}

    @classmethod
    def from_dict(cls, data: dict) -> "Coverage":
        return cls(cells_scored=int(data["cells_scored"]), cells_total=int(data["cells_total"]),
                   segs_used=int(data["segs_used"]), segs_total=int(data["segs_total"]),
                   cells_repaired=int(data.get("cells_repaired", 0)))

    def text(self) -> str:
        """``2698/2840 cells scored, 164/164 SEGs used`` (and the repaired cells, when any)."""
        text = f"{self.cells_scored}/{self.cells_total} cells scored, {self.segs_used}/{self.segs_total} SEGs used"
        if self.cells_repaired:
            text += f", {self.cells_repaired} read after stripping stray quotes"
        return text


def _in_segs(image_segs: np.ndarray, segs: Iterable[int] | None) -> np.ndarray:
    if segs is None:
        return np.ones(image_segs.shape, dtype=bool)
    return np.isin(image_segs, np.asarray(list(segs), dtype=image_segs.dtype))


def score_coverage(scores, image_segs, segs: Iterable[int] | None = None, *, repaired: int = 0) -> Coverage:
    """The :class:`Coverage` of ``scores`` (one per image) over the images whose SEG id (``image_segs``) is in
    ``segs`` (default: every image). ``repaired``: the cells read only after stray quotes were stripped."""
    scores = np.asarray(scores, dtype=np.float64)
    image_segs = np.asarray(image_segs).astype(np.int64)
    chosen = _in_segs(image_segs, segs)
    finite = np.isfinite(scores) & chosen
    seg_set = np.unique(image_segs[chosen])
    used = np.unique(image_segs[finite])
    return Coverage(cells_scored=int(finite.sum()), cells_total=int(chosen.sum()), segs_used=int(used.size),
                    segs_total=int(seg_set.size), cells_repaired=int(repaired))


def score_fingerprint(scores, image_segs, segs: Iterable[int] | None = None) -> str:
    """A sha256 of ``scores`` over the images of ``segs`` (metadata order; each value written with 9 significant
    digits, a missing one as ``nan``): two columns with the same scores on the same images have the same
    fingerprint, whatever their name or the way the cells were written (``0.72`` or ``0.720``).

    Examples:
        >>> score_fingerprint([0.72, 0.5], [0, 0]) == score_fingerprint([0.720000000001, 0.5], [0, 0])
        True
        >>> score_fingerprint([0.72, 0.5], [0, 0]) == score_fingerprint([0.5, 0.72], [0, 0])
        False
    """
    scores = np.asarray(scores, dtype=np.float64)
    chosen = _in_segs(np.asarray(image_segs).astype(np.int64), segs)
    text = ",".join("nan" if not np.isfinite(v) else f"{v:.9g}" for v in scores[chosen].tolist())
    return hashlib.sha256(text.encode("ascii")).hexdigest()
