"""Tie-calibrated pairwise accuracy (Deutsch et al., 2023): the item pairs it is taken over, calibrated for any
weighting of them (bootstrap resamples) by cumulative sums instead of a new sort. The coefficient ``pairwise_acc`` of
:mod:`scorers.stats.agreement` runs on this machinery; plain NumPy.
"""
from __future__ import annotations

import numpy as np

from scorers.checks import ParameterError

__all__ = ["PAIR_WORK_MAX", "POOLED_PAIRS_MAX_ITEMS", "PairSet", "check_pair_work", "classify_pairs",
           "dense_pairwise"]

#: largest pooled item count for pairwise_acc (all n(n-1)/2 pair gaps are held in memory)
POOLED_PAIRS_MAX_ITEMS = 10_000
#: bootstrap of pairwise_acc touches resamples x pairs weights; beyond this the call is refused, not left to run
PAIR_WORK_MAX = 20_000_000_000
_CHUNK = 20_000_000  # elements per (resamples x pairs) block


def dense_pairwise(H: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tie-calibrated pairwise accuracy of every row of two small ``(rows, size)`` arrays, each row calibrated on its
    own: ``(accuracy, epsilon)``."""
    i, j = np.triu_indices(H.shape[1], 1)
    dh = np.sign(H[:, j] - H[:, i])
    diff = M[:, j] - M[:, i]
    gap = np.abs(diff)
    concordant = dh * np.sign(diff) > 0
    tie = dh == 0
    candidates = np.concatenate([np.zeros((H.shape[0], 1)), gap], axis=1)  # (rows, K)
    within = gap[:, None, :] <= candidates[:, :, None]  # (rows, K, P)
    correct = np.where(within, tie[:, None, :], concordant[:, None, :]).sum(axis=2)
    best = correct.max(axis=1)
    eps = np.where(correct == best[:, None], candidates, np.inf).min(axis=1)
    return best / i.size, eps


class PairSet:
    """The item pairs a tie-calibrated accuracy is taken over, sorted once by metric gap, so that any weighting of them
    (a bootstrap resample) is calibrated by cumulative sums instead of a new sort.

    ``tie_*``: pairs tied by the humans (correct when the metric ties them: gap <= epsilon); ``con_*``: pairs ordered
    the same way by both (correct while gap > epsilon). Pairs ordered oppositely are never correct.
    """

    def __init__(self, left, right, group, h, m):
        self._set(*classify_pairs(left, right, group, h, m))

    def _set(self, tie_left, tie_right, tie_group, tie_gap, con_left, con_right, con_group, con_gap, n_pairs):
        order_t = np.argsort(tie_gap, kind="stable")
        order_c = np.argsort(con_gap, kind="stable")
        self.tie_gap, self.con_gap = tie_gap[order_t], con_gap[order_c]
        self.tie_left, self.tie_right, self.tie_group = tie_left[order_t], tie_right[order_t], tie_group[order_t]
        self.con_left, self.con_right, self.con_group = con_left[order_c], con_right[order_c], con_group[order_c]
        self.candidates = np.unique(np.concatenate([[0.0], self.tie_gap]))
        self.n_tie_within = np.searchsorted(self.tie_gap, self.candidates, side="right")
        self.n_con_within = np.searchsorted(self.con_gap, self.candidates, side="right")
        self.n_pairs = int(n_pairs)

    @classmethod
    def pooled(cls, h: np.ndarray, m: np.ndarray) -> "PairSet":
        """All ``i < j`` pairs of ``n`` pooled items, enumerated in blocks of rows so that only the human-tied and
        concordant pairs are kept (32-bit indices): GenAI-Bench's 9,600 images fit in a few hundred MB."""
        n = h.size
        if n > POOLED_PAIRS_MAX_ITEMS:
            raise ParameterError("pairwise_acc over {n} pooled items would hold {pairs:,} pairs; use {grouping='item'} "
                                 "or at most {most} items", n=n, pairs=n * (n - 1) // 2, most=POOLED_PAIRS_MAX_ITEMS)
        parts = []
        block = max(1, 4_000_000 // max(1, n))
        for start in range(0, n - 1, block):
            rows = np.arange(start, min(start + block, n - 1), dtype=np.int32)
            left = np.repeat(rows, n - 1 - rows)
            offsets = np.arange(left.size, dtype=np.int64) - np.repeat(np.cumsum(n - 1 - rows) - (n - 1 - rows),
                                                                        n - 1 - rows)
            right = (left + 1 + offsets).astype(np.int32)
            parts.append(classify_pairs(left, right, np.zeros(left.size, dtype=np.int32), h, m))
        self = cls.__new__(cls)
        self._set(*(np.concatenate([p[k] for p in parts]) for k in range(8)), n * (n - 1) // 2)
        return self

    def calibrate(self, weights: np.ndarray, *, per_group: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Best accuracy and its epsilon for every row of ``weights``.

        Pooled (``per_group`` None): ``weights`` are per-item frequencies ``(B, n)``; a pair counts ``w_i * w_j`` times
        and the ``C(w_i, 2)`` copies of an item paired with itself are ties on both sides (always correct), as in the
        explicitly resampled list. Grouped: ``weights`` are per-group frequencies ``(B, G)`` and ``per_group`` the
        pair count of each group; the value is the weighted mean over groups of each group's accuracy.
        """
        if per_group is None and weights.shape[0] == 1 and np.all(weights == 1):
            # the full data: integer pair counts, no per-pair weights needed
            score = self.n_tie_within + (self.con_gap.size - self.n_con_within)
            best = int(score.argmax())
            return np.array([score[best] / self.n_pairs]), np.array([self.candidates[best]])
        values, eps = [], []
        rows = max(1, _CHUNK // max(1, self.n_pairs))
        for start in range(0, weights.shape[0], rows):
            w = weights[start:start + rows].astype(np.float64)
            if per_group is None:
                wt = w[:, self.tie_left] * w[:, self.tie_right]
                wc = w[:, self.con_left] * w[:, self.con_right]
                total = w.sum(axis=1)
                base = (w * (w - 1) / 2).sum(axis=1)
                norm = total * (total - 1) / 2
            else:
                scale = w / per_group[None, :]
                wt = scale[:, self.tie_group]
                wc = scale[:, self.con_group]
                base = np.zeros(w.shape[0])
                norm = w.sum(axis=1)
            cum_t = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(wt, axis=1)], axis=1)
            cum_c = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(wc, axis=1)], axis=1)
            score = base[:, None] + cum_t[:, self.n_tie_within] + (cum_c[:, -1:] - cum_c[:, self.n_con_within])
            best = score.argmax(axis=1)
            rows_at = np.arange(w.shape[0])
            with np.errstate(divide="ignore", invalid="ignore"):
                values.append(score[rows_at, best] / norm)
            eps.append(self.candidates[best])
        return np.concatenate(values), np.concatenate(eps)


def classify_pairs(left, right, group, h, m):
    """Split pairs into human-tied ones and concordant ones (metric gap > 0 in the humans' direction); discordant
    pairs are never correct and are dropped. Returns tie (left, right, group, gap), con (left, right, group, gap),
    and the number of pairs given."""
    dh = h[right] - h[left]
    dm = m[right] - m[left]
    tie = dh == 0
    con = (dh * dm) > 0
    gap = np.abs(dm)
    return (left[tie], right[tie], group[tie], gap[tie], left[con], right[con], group[con], gap[con], left.size)


def check_pair_work(n_pairs: int, n_bootstrap: int) -> None:
    if n_pairs * n_bootstrap > PAIR_WORK_MAX:
        raise ParameterError("pairwise_acc bootstrap over {n_pairs:,} pairs x {n} resamples is too much work; use "
                             "fewer resamples ({n_bootstrap}) or {grouping='item'}", n_pairs=n_pairs, n=n_bootstrap)
