"""Pairwise preference accuracy: does a metric order a pair of images (one prompt, images A and B) as the humans did?
And the one tie-calibrated pairwise accuracy of the package (:class:`PairSet`), which the coefficient
``pairwise_acc`` of :mod:`scorers.stats.agreement` runs on too.

NumPy only (importing this module never loads SciPy or pandas).

Input: per pair, the metric's score of image A (``score_a``) and of image B (``score_b``), and the human choice
(``human``): ``"a"`` / ``"b"`` / ``"tie"`` or ``1`` / ``-1`` / ``0`` (1 = A preferred). ``items`` names the prompt of
each pair: the bootstrap resamples prompts (all pairs of a resampled prompt come along), because the pairs of one
prompt share its images and are not independent. Without ``items`` every pair is its own unit.

Tie conventions (``ties=``):

* ``"calibrated"`` -- ``acc_eq`` of Deutsch, Foster and Freitag (2023): the metric ties a pair when
  ``|a - b| <= epsilon``; a pair is correct when the human's and the metric's signs agree (tie = 0), so a human tie
  is credited only when the metric ties it too. ``epsilon`` is chosen among ``0`` and the observed ``|a - b|`` to
  maximise the accuracy (the smallest maximiser is reported), and is re-chosen on every bootstrap resample. Computed
  by sorting the gaps once and sweeping the candidates with cumulative counts (no loop over candidates): a
  :class:`PairSet`, calibrated for any weighting of its pairs (bootstrap resamples) by cumulative sums instead of a
  new sort.
* ``"excluded"`` -- the common reward-model convention: pairs the humans tied are dropped (``n_pairs`` counts those
  kept, ``n_human_ties`` those dropped); a metric tie (``a == b`` exactly) counts as **wrong** by default
  (``metric_ties="wrong"``). This is ImageReward's test accuracy (its ``acc``: pairs with equal human ranks are
  skipped, and a pair is correct only when the scores differ strictly in the humans' direction), which HPSv2's
  evaluation reuses for the ImageReward test set. ``metric_ties="half"`` gives half credit instead (the expected
  accuracy of a random tie-break). Not covered by either: HPSv2's ``inversion_score`` on HPDv2 (``1 - discordant /
  all pairs``, so human-tied pairs count as correct), and Pick-a-Pic's paper, which keeps human ties and predicts a
  tie below a threshold tuned on the validation split. ``"calibrated"`` is the closest to the latter, but it
  chooses epsilon on the evaluated pairs themselves, which is optimistic (Deutsch et al. discuss this).

Rankings: :func:`pairs_from_rankings` turns ``k`` ranked images per prompt (HPDv2 test, ImageRewardDB) into their
``k(k-1)/2`` pairs, image ``i`` before ``j`` in list order, with a smaller rank = preferred (HPDv2's ``rank`` and
ImageRewardDB's ``rank`` are 1 = best; equal ranks give a tie).

References: Deutsch et al., "Ties Matter: Meta-Evaluating Modern Metrics with Pairwise Accuracy and Tie Calibration",
EMNLP 2023; Xu et al., "ImageReward", NeurIPS 2023; Kirstain et al., "Pick-a-Pic", NeurIPS 2023; Wu et al., "Human
Preference Score v2", 2023.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from scorers.checks import check_choice, check_same_length
from scorers.errors import ParameterError
from scorers.stats.resampling import PairedComparison, percentile_interval, resample_counts, resample_indices
from scorers.json_safe import json_float

__all__ = [
    "PAIR_WORK_MAX",
    "POOLED_PAIRS_MAX_ITEMS",
    "TIE_CONVENTIONS",
    "PairSet",
    "PreferenceAccuracy",
    "check_pair_work",
    "classify_pairs",
    "compare_preference_accuracy",
    "dense_pairwise",
    "human_preferences",
    "pairs_from_rankings",
    "pairwise_preference_accuracy",
]

TIE_CONVENTIONS = ("calibrated", "excluded")
METRIC_TIES = ("wrong", "half")
_HUMAN = {"a": 1, "b": -1, "tie": 0, "1": 1, "-1": -1, "0": 0}
_CHUNK = 20_000_000  # elements of one (resamples x pairs) block


@dataclass
class PreferenceAccuracy:
    """Pairwise preference accuracy of one metric.

    ``statistic``: the accuracy (a fraction); ``epsilon``: the calibrated metric tie threshold (``ties="calibrated"``,
    else None); ``n_pairs``: pairs that entered; ``n_human_ties``: human-tied pairs (dropped with ``"excluded"``, kept
    with ``"calibrated"``); ``n_nan_dropped``: pairs dropped for a NaN score; ``n_items``: prompts (units of the
    bootstrap); ``confidence_interval``: bootstrap percentile interval over prompts (None without bootstrap);
    ``bootstrap``: the resampled accuracies behind it.
    """

    statistic: float
    epsilon: float | None
    ties: str
    n_pairs: int
    n_human_ties: int
    n_nan_dropped: int
    n_items: int
    confidence_interval: tuple[float, float] | None = None
    confidence: float = 0.95
    metric_ties: str = "wrong"
    bootstrap: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        ci = self.confidence_interval
        return {
            "statistic": json_float(self.statistic), "epsilon": None if self.epsilon is None else json_float(self.epsilon),
            "ties": self.ties, "metric_ties": self.metric_ties if self.ties == "excluded" else None,
            "n_pairs": self.n_pairs, "n_human_ties": self.n_human_ties, "n_nan_dropped": self.n_nan_dropped,
            "n_items": self.n_items, "confidence": self.confidence,
            "confidence_interval": None if ci is None else [json_float(ci[0]), json_float(ci[1])],
        }


# ----------------------------------------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------------------------------------


def human_preferences(human: Sequence[object]) -> np.ndarray:
    """``"a"``/``"b"``/``"tie"`` (any case) or ``1``/``-1``/``0`` -> int8 array of 1 / -1 / 0; anything else is refused
    with the position and value."""
    values = list(human) if not isinstance(human, np.ndarray) else human.tolist()
    out = np.empty(len(values), dtype=np.int8)
    for position, value in enumerate(values):
        key = value.strip().lower() if isinstance(value, str) else value
        if isinstance(key, (bool, np.bool_)):
            key = None
        elif isinstance(key, (int, np.integer, float, np.floating)) and float(key) in (1.0, -1.0, 0.0):
            key = str(int(key))
        code = _HUMAN.get(key) if isinstance(key, str) else None
        if code is None:
            raise ValueError(f"human[{position}] = {value!r}: expected 'a', 'b', 'tie' (or 1, -1, 0)")
        out[position] = code
    return out


def pairs_from_rankings(ranks: Sequence[Sequence[float]], *, lower_is_better: bool = True) -> dict[str, np.ndarray]:
    """All ``k(k-1)/2`` pairs of each ranked list: ``{"group", "a", "b", "preference"}`` arrays.

    ``ranks[g]`` holds the ranks of prompt ``g``'s images in list order; pair ``(i, j)`` with ``i < j`` has
    ``a = i``, ``b = j`` (indices into that prompt's list) and preference ``1`` (A) when image ``i`` ranks better,
    ``-1`` when ``j`` does, ``0`` on equal ranks. ``lower_is_better=True`` is HPDv2's and ImageRewardDB's convention
    (rank 1 = best); pass False for scores where larger is better. Lists may differ in length; fewer than 2 images
    give no pair.
    """
    groups, lefts, rights, prefs = [], [], [], []
    for g, ranking in enumerate(ranks):
        r = np.asarray(ranking, dtype=np.float64)
        if r.ndim != 1:
            raise ValueError(f"ranks[{g}]: expected a flat list of ranks, got shape {r.shape}")
        if np.isnan(r).any():
            raise ValueError(f"ranks[{g}]: contains NaN")
        i, j = np.triu_indices(r.size, 1)
        sign = np.sign(r[j] - r[i]) if lower_is_better else np.sign(r[i] - r[j])
        groups.append(np.full(i.size, g, dtype=np.int64))
        lefts.append(i)
        rights.append(j)
        prefs.append(sign.astype(np.int8))
    cat = (lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype=dtype))
    return {"group": cat(groups, np.int64), "a": cat(lefts, np.int64), "b": cat(rights, np.int64),
            "preference": cat(prefs, np.int8)}


# ----------------------------------------------------------------------------------------------------------------------
# Accuracy
# ----------------------------------------------------------------------------------------------------------------------


def pairwise_preference_accuracy(
    score_a: Sequence[float],
    score_b: Sequence[float],
    human: Sequence[object],
    *,
    ties: str = "calibrated",
    items: Sequence[object] | None = None,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    metric_ties: str = "wrong",
) -> PreferenceAccuracy:
    """Pairwise preference accuracy of a metric (see the module docstring for the conventions).

    ``n_bootstrap=0`` skips the interval. The resamples are ``default_rng(seed).integers(0, n_items, (n_bootstrap,
    n_items))`` over prompts (:func:`scorers.stats.resampling.resample_indices`, the draw of every bootstrap here), so
    a seed reproduces the interval exactly.
    """
    prepared = _prepare(score_a, score_b, human, ties=ties, items=items, metric_ties=metric_ties,
                        confidence=confidence)
    idx = resample_indices(prepared.n_items, n_bootstrap, seed, name="n_bootstrap") if n_bootstrap else None
    return _accuracy(prepared, idx, confidence)


def compare_preference_accuracy(
    metric_1: tuple[Sequence[float], Sequence[float]],
    metric_2: tuple[Sequence[float], Sequence[float]],
    human: Sequence[object],
    *,
    ties: str = "calibrated",
    items: Sequence[object] | None = None,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    metric_ties: str = "wrong",
) -> PairedComparison:
    """Is metric 1 more often right than metric 2 on the same pairs? ``metric_k = (score_a, score_b)``.

    Pairs where either metric has a NaN are dropped for both. The same prompt resamples serve both metrics (a
    paired bootstrap; epsilon re-calibrated per metric and resample). Returns the toolkit's one
    :class:`scorers.stats.resampling.PairedComparison`: ``statistic`` = accuracy 1 - accuracy 2, its bootstrap percentile
    ``confidence_interval``, and the two-sided bootstrap ``pvalue`` = ``min(1, 2 * (1 + #{d on the far side of 0}) /
    (1 + n_bootstrap))``, as :func:`scorers.stats.agreement.compare_agreement` uses for ungrouped coefficients;
    ``value_a`` / ``value_b`` the two accuracies, ``labels`` the tie convention and each metric's epsilon.
    """
    if n_bootstrap < 1:
        raise ParameterError("{n_bootstrap} must be >= 1 for a paired comparison, got {value}", value=n_bootstrap)
    a1, b1 = (_floats(x, f"metric_1[{k}]") for k, x in enumerate(metric_1))
    a2, b2 = (_floats(x, f"metric_2[{k}]") for k, x in enumerate(metric_2))
    check_same_length({"metric_1 score_a": a1, "metric_1 score_b": b1, "metric_2 score_a": a2,
                       "metric_2 score_b": b2})
    bad = np.isnan(a1) | np.isnan(b1) | np.isnan(a2) | np.isnan(b2)
    a1, b1, a2, b2 = (np.where(bad, np.nan, x) for x in (a1, b1, a2, b2))
    p1 = _prepare(a1, b1, human, ties=ties, items=items, metric_ties=metric_ties, confidence=confidence)
    p2 = _prepare(a2, b2, human, ties=ties, items=items, metric_ties=metric_ties, confidence=confidence)
    idx = resample_indices(p1.n_items, n_bootstrap, seed, name="n_bootstrap")
    r1, r2 = _accuracy(p1, idx, confidence), _accuracy(p2, idx, confidence)
    if r1.bootstrap is None:
        raise ValueError("the accuracy is undefined on every resample (no pairs)")
    diffs = r1.bootstrap - r2.bootstrap
    diffs = diffs[~np.isnan(diffs)]
    if diffs.size == 0:
        raise ValueError("the accuracy is undefined on every resample (no pairs)")
    far = min(np.count_nonzero(diffs <= 0), np.count_nonzero(diffs >= 0))
    pvalue = min(1.0, 2.0 * (1 + far) / (1 + n_bootstrap))
    labels = {"ties": ties, "metric_ties": metric_ties}
    if ties == "calibrated":
        labels.update(epsilon_1=r1.epsilon, epsilon_2=r2.epsilon)
    return PairedComparison(
        statistic=r1.statistic - r2.statistic, pvalue=pvalue,
        confidence_interval=percentile_interval(diffs, confidence), value_a=r1.statistic,
        value_b=r2.statistic, n_units=p1.n_items, unit="prompt" if items is not None else "pair",
        method=f"paired bootstrap over {'prompts' if items is not None else 'pairs'} ({n_bootstrap} resamples)",
        labels=labels)


# ----------------------------------------------------------------------------------------------------------------------
# Tie-calibrated pairwise accuracy: the one implementation (preference pairs here, ``pairwise_acc`` of agreement)
# ----------------------------------------------------------------------------------------------------------------------

#: largest pooled item count for pairwise_acc (all n(n-1)/2 pair gaps are held in memory)
POOLED_PAIRS_MAX_ITEMS = 10_000
#: bootstrap of pairwise_acc touches resamples x pairs weights; beyond this the call is refused, not left to run
PAIR_WORK_MAX = 20_000_000_000


class PairSet:
    """The pairs a tie-calibrated accuracy is taken over, sorted once by metric gap, so that any weighting of them (a
    bootstrap resample) is calibrated by cumulative sums instead of a new sort.

    ``tie_*``: pairs tied by the humans (correct when the metric ties them: gap <= epsilon); ``con_*``: pairs ordered
    the same way by both (correct while gap > epsilon). Pairs ordered oppositely are never correct. Correct(epsilon)
    is a step function that rises only at the gaps of human-tied pairs, so the candidates ``{0} U {tie gaps}`` hold
    its smallest maximiser (the same one as over all observed gaps); each is evaluated by ``searchsorted``.

    Built from items and their pairs (``PairSet(left, right, group, h, m)``, :meth:`pooled`: rating sets) or from
    pairs given one by one (:meth:`from_preferences`: preference sets).
    """

    def __init__(self, left, right, group, h, m):
        self._set(*classify_pairs(left, right, group, h, m))

    def _set(self, tie_left, tie_right, tie_group, tie_gap, con_left, con_right, con_group, con_gap, n_pairs):
        order_t = np.argsort(tie_gap, kind="stable")
        order_c = np.argsort(con_gap, kind="stable")
        take = (lambda values, order: None if values is None else values[order])
        self.tie_gap, self.con_gap = tie_gap[order_t], con_gap[order_c]
        self.tie_left, self.tie_right = take(tie_left, order_t), take(tie_right, order_t)
        self.con_left, self.con_right = take(con_left, order_c), take(con_right, order_c)
        self.tie_group, self.con_group = tie_group[order_t], con_group[order_c]
        self.candidates = np.unique(np.concatenate([[0.0], self.tie_gap]))
        self.n_tie_within = np.searchsorted(self.tie_gap, self.candidates, side="right")
        self.n_con_within = np.searchsorted(self.con_gap, self.candidates, side="right")
        self.n_pairs = int(n_pairs)
        self.pairs_per_group: np.ndarray | None = None

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

    @classmethod
    def from_preferences(cls, gap: np.ndarray, human: np.ndarray, group: np.ndarray, n_groups: int) -> "PairSet":
        """Pairs given one by one: ``gap`` = score A - score B, ``human`` 1 (A) / -1 (B) / 0 (tie), ``group`` the unit
        (prompt, ``0 .. n_groups - 1``) of each pair, the unit :meth:`calibrate_by_group` weighs."""
        tie = human == 0
        con = (human != 0) & (np.sign(gap) == human)
        absgap = np.abs(gap)
        self = cls.__new__(cls)
        self._set(None, None, group[tie], absgap[tie], None, None, group[con], absgap[con], gap.size)
        self.pairs_per_group = np.bincount(group, minlength=n_groups).astype(np.float64)
        return self

    def best(self) -> tuple[float, float]:
        """Each pair once: the best accuracy and its smallest epsilon ((NaN, NaN) without pairs)."""
        if self.n_pairs == 0:
            return float("nan"), float("nan")
        score = self.n_tie_within + (self.con_gap.size - self.n_con_within)
        best = int(score.argmax())  # first maximiser = smallest epsilon (candidates ascend)
        return float(score[best] / self.n_pairs), float(self.candidates[best])

    def accuracy_at(self, epsilon: float) -> float:
        """Each pair once, at a fixed metric tie threshold: human ties with gap <= epsilon and concordant pairs with
        gap > epsilon are correct."""
        tie = np.searchsorted(self.tie_gap, epsilon, side="right")
        con = self.con_gap.size - np.searchsorted(self.con_gap, epsilon, side="right")
        return float((tie + con) / self.n_pairs)

    def calibrate(self, weights: np.ndarray, *, per_group: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Best accuracy and its epsilon for every row of ``weights``.

        Pooled (``per_group`` None): ``weights`` are per-item frequencies ``(B, n)``; a pair counts ``w_i * w_j`` times
        and the ``C(w_i, 2)`` copies of an item paired with itself are ties on both sides (always correct), as in the
        explicitly resampled list. Grouped: ``weights`` are per-group frequencies ``(B, G)`` and ``per_group`` the
        pair count of each group; the value is the weighted mean over groups of each group's accuracy.
        """
        if per_group is None and weights.shape[0] == 1 and np.all(weights == 1):
            value, eps = self.best()  # the full data: integer pair counts, no per-pair weights needed
            return np.array([value]), np.array([eps])

        def pair_weights(w):
            if per_group is None:
                total = w.sum(axis=1)
                return (w[:, self.tie_left] * w[:, self.tie_right], w[:, self.con_left] * w[:, self.con_right],
                        (w * (w - 1) / 2).sum(axis=1), total * (total - 1) / 2)
            scale = w / per_group[None, :]
            return scale[:, self.tie_group], scale[:, self.con_group], np.zeros(w.shape[0]), w.sum(axis=1)

        return self._sweep(weights, pair_weights)

    def calibrate_by_group(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Best accuracy and its epsilon for every row of per-group frequencies ``weights`` ``(B, G)`` (a bootstrap
        over prompts): each pair counts as often as its group, and the accuracy is over the weighted pairs (NaN for a
        row with none). Needs a set built by :meth:`from_preferences`."""
        def pair_weights(w):
            return (w[:, self.tie_group], w[:, self.con_group], np.zeros(w.shape[0]),
                    (w * self.pairs_per_group[None, :]).sum(axis=1))

        return self._sweep(weights, pair_weights)

    def _sweep(self, weights: np.ndarray, pair_weights) -> tuple[np.ndarray, np.ndarray]:
        """``pair_weights(w) -> (tie weights, concordant weights, base, norm)`` for a block of weight rows; the score
        at each candidate epsilon is ``base`` + the weight of the ties within it + that of the concordant pairs beyond
        it, divided by ``norm``."""
        values, eps = [], []
        rows = max(1, _CHUNK // max(1, self.n_pairs))
        for start in range(0, weights.shape[0], rows):
            w = weights[start:start + rows].astype(np.float64)
            wt, wc, base, norm = pair_weights(w)
            cum_t = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(wt, axis=1)], axis=1)
            cum_c = np.concatenate([np.zeros((w.shape[0], 1)), np.cumsum(wc, axis=1)], axis=1)
            score = base[:, None] + cum_t[:, self.n_tie_within] + (cum_c[:, -1:] - cum_c[:, self.n_con_within])
            best = score.argmax(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                values.append(score[np.arange(w.shape[0]), best] / norm)
            eps.append(self.candidates[best])
        return np.concatenate(values), np.concatenate(eps)


def classify_pairs(left, right, group, h, m):
    """Split pairs into human-tied ones and concordant ones (metric gap > 0 in the humans' direction); discordant
    pairs are never correct and are dropped. Returns tie (left, right, group, gap), con (left, right, group, gap),
    and the number of pairs given. Signs, not the product of the differences, decide concordance (no underflow at
    scores like 1e-200)."""
    dh = h[right] - h[left]
    dm = m[right] - m[left]
    tie = dh == 0
    con = np.sign(dh) * np.sign(dm) > 0
    gap = np.abs(dm)
    return (left[tie], right[tie], group[tie], gap[tie], left[con], right[con], group[con], gap[con], left.size)


def dense_pairwise(H: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tie-calibrated pairwise accuracy of every row of two small ``(rows, size)`` arrays, each row calibrated on its
    own: ``(accuracy, epsilon)``. For values that change with every resample (model means of a ``system``
    bootstrap), where :class:`PairSet`'s one sort does not apply: all pairs and candidates of a row at once."""
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


def check_pair_work(n_pairs: int, n_bootstrap: int) -> None:
    """Refuse a ``pairwise_acc`` bootstrap that would touch more than ``PAIR_WORK_MAX`` pair weights."""
    if n_pairs * n_bootstrap > PAIR_WORK_MAX:
        raise ParameterError("pairwise_acc bootstrap over {n_pairs:,} pairs x {n} resamples is too much work; use "
                             "fewer resamples ({n_bootstrap}) or {grouping='item'}", n_pairs=n_pairs, n=n_bootstrap)


# ----------------------------------------------------------------------------------------------------------------------
# Internals
# ----------------------------------------------------------------------------------------------------------------------


@dataclass
class _Prepared:
    gap: np.ndarray        # a - b per kept pair
    human: np.ndarray      # 1 / -1 / 0 per kept pair
    unit: np.ndarray       # prompt index per kept pair (0..n_items-1)
    n_items: int
    ties: str
    metric_ties: str
    n_human_ties: int
    n_nan_dropped: int


def _prepare(score_a, score_b, human, *, ties, items, metric_ties, confidence) -> _Prepared:
    check_choice("ties", ties, TIE_CONVENTIONS)
    check_choice("metric_ties", metric_ties, METRIC_TIES)
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    a, b = _floats(score_a, "score_a"), _floats(score_b, "score_b")
    h = human_preferences(human)
    check_same_length({"score_a": a, "score_b": b, "human": h})
    if items is None:
        unit = np.arange(a.size)
    else:
        labels = list(items) if not isinstance(items, np.ndarray) else items.tolist()
        if len(labels) != a.size:
            raise ValueError(f"items has {len(labels)} entries, score_a has {a.size}")
        unit = _codes(labels)
    nan = np.isnan(a) | np.isnan(b)
    keep = ~nan
    n_human_ties = int(np.count_nonzero(keep & (h == 0)))
    if ties == "excluded":
        keep &= h != 0
    gap, hk, uk = (a - b)[keep], h[keep].astype(np.int8), unit[keep]
    uniq, uk = np.unique(uk, return_inverse=True)  # units without a kept pair are not resampled
    return _Prepared(gap, hk, uk.astype(np.int64), int(uniq.size), ties, metric_ties, n_human_ties,
                     int(np.count_nonzero(nan)))


def _accuracy(p: _Prepared, idx: np.ndarray | None, confidence: float) -> PreferenceAccuracy:
    """The accuracy of prepared pairs, with the interval over the prompt resamples ``idx`` (none when ``idx`` is None
    or no prompt is left)."""
    boot = None
    if p.n_items == 0:
        idx = None
    if p.ties == "calibrated":
        pairs = PairSet.from_preferences(p.gap, p.human, p.unit, p.n_items)
        value, eps = pairs.best()
        if idx is not None:
            # each pair weighted by the frequency of its prompt; a block of resamples at a time (bounded memory)
            rows = max(1, _CHUNK // max(1, p.n_items))
            boot = np.concatenate([pairs.calibrate_by_group(resample_counts(idx[s:s + rows], p.n_items))[0]
                                   for s in range(0, idx.shape[0], rows)])
    else:
        value, eps = _excluded(p.gap, p.human, p.metric_ties), None
        if idx is not None:
            # the accuracy of a resample is (sum over its prompts of credit) / (its pairs): per-prompt sums suffice
            credit = _credit(p.gap, p.human, p.metric_ties)
            per_unit = np.bincount(p.unit, weights=credit, minlength=p.n_items)
            pairs = np.bincount(p.unit, minlength=p.n_items).astype(np.float64)
            boot = np.concatenate([_ratio(resample_counts(idx[s:s + 100_000], p.n_items).astype(np.float64),
                                          per_unit, pairs)
                                   for s in range(0, idx.shape[0], 100_000)])
    ci = None if boot is None else percentile_interval(boot, confidence)
    return PreferenceAccuracy(value, eps, p.ties, int(p.gap.size), p.n_human_ties, p.n_nan_dropped, p.n_items, ci,
                              float(confidence), p.metric_ties, boot)


def _excluded(gap: np.ndarray, h: np.ndarray, metric_ties: str) -> float:
    """Accuracy over human-decided pairs (``h`` has no 0 here): 1 when ``sign(gap) == h``, 0 when opposite, 0 or 1/2
    for a metric tie (``gap == 0``); NaN without pairs."""
    return float(_credit(gap, h, metric_ties).mean()) if gap.size else float("nan")


def _credit(gap: np.ndarray, h: np.ndarray, metric_ties: str) -> np.ndarray:
    credit = (np.sign(gap) == h).astype(np.float64)
    if metric_ties == "half":
        credit[gap == 0] = 0.5
    return credit


def _ratio(freq: np.ndarray, per_unit: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    total = freq @ pairs
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (freq @ per_unit) / np.where(total > 0, total, 1), np.nan)


def _floats(values, name: str) -> np.ndarray:
    try:
        out = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected numbers") from None
    if out.ndim != 1:
        raise ValueError(f"{name}: expected a flat sequence, got shape {out.shape}")
    if np.isinf(out).any():
        raise ValueError(f"{name}[{int(np.flatnonzero(np.isinf(out))[0])}] is infinite")
    return out


def _codes(labels: list) -> np.ndarray:
    seen: dict = {}
    return np.fromiter((seen.setdefault(label, len(seen)) for label in labels), dtype=np.int64, count=len(labels))
