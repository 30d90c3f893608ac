"""Pairwise preference accuracy: does a metric order a pair of images (one prompt, images A and B) as the humans did?

NumPy only (importing this module never loads SciPy or pandas). Re-exported from :mod:`scorers.stats.agreement`.

Input: per pair, the metric's score of image A (``score_a``) and of image B (``score_b``), and the human choice
(``human``): ``"a"`` / ``"b"`` / ``"tie"`` or ``1`` / ``-1`` / ``0`` (1 = A preferred). ``items`` names the prompt of
each pair: the bootstrap resamples prompts (all pairs of a resampled prompt come along), because the pairs of one
prompt share its images and are not independent. Without ``items`` every pair is its own unit.

Tie conventions (``ties=``):

* ``"calibrated"`` -- ``acc_eq`` of Deutsch, Foster and Freitag (2023): the metric ties a pair when
  ``|a - b| <= epsilon``; a pair is correct when the human's and the metric's signs agree (tie = 0), so a human tie
  is credited only when the metric ties it too. ``epsilon`` is chosen among ``0`` and the observed ``|a - b|`` to
  maximise the accuracy (the smallest maximiser is reported), and is re-chosen on every bootstrap resample. Computed
  by sorting the gaps once and sweeping the candidates with cumulative counts (no loop over candidates).
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

from scorers.stats.resampling import ConfidenceInterval, PairedComparison, percentile_interval, resample_indices
from scorers.checks import ParameterError, check_choice
from scorers.json_safe import json_float

__all__ = [
    "TIE_CONVENTIONS",
    "PreferenceAccuracy",
    "compare_preference_accuracy",
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
    n_items))`` over prompts (the same draw as :func:`scorers.stats.agreement.bootstrap_indices`), so a seed reproduces
    the interval exactly.
    """
    prepared = _prepare(score_a, score_b, human, ties=ties, items=items, metric_ties=metric_ties,
                        confidence=confidence)
    return _accuracy(prepared, _resamples(prepared.n_items, n_bootstrap, seed), confidence)


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
    _same_length({"metric_1 score_a": a1, "metric_1 score_b": b1, "metric_2 score_a": a2, "metric_2 score_b": b2})
    bad = np.isnan(a1) | np.isnan(b1) | np.isnan(a2) | np.isnan(b2)
    a1, b1, a2, b2 = (np.where(bad, np.nan, x) for x in (a1, b1, a2, b2))
    p1 = _prepare(a1, b1, human, ties=ties, items=items, metric_ties=metric_ties, confidence=confidence)
    p2 = _prepare(a2, b2, human, ties=ties, items=items, metric_ties=metric_ties, confidence=confidence)
    idx = _resamples(p1.n_items, n_bootstrap, seed)
    r1, r2 = _accuracy(p1, idx, confidence), _accuracy(p2, idx, confidence)
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
        confidence_interval=_interval(diffs, confidence), value_a=r1.statistic,
        value_b=r2.statistic, n_units=p1.n_items, unit="prompt" if items is not None else "pair",
        method=f"paired bootstrap over {'prompts' if items is not None else 'pairs'} ({n_bootstrap} resamples)",
        labels=labels)


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
    _same_length({"score_a": a, "score_b": b, "human": h})
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
    if p.ties == "calibrated":
        value, eps = _calibrated(p.gap, p.human, None)
        boot = None
        if idx is not None:
            # per-pair weights = the frequency of the pair's prompt; built a block of resamples at a time so that
            # memory stays bounded (resamples x pairs) whatever the number of pairs
            rows = max(1, _CHUNK // max(1, p.gap.size))
            boot = np.concatenate([_calibrated(p.gap, p.human, _frequencies(idx[s:s + rows], p.n_items)[:, p.unit])[0]
                                   for s in range(0, idx.shape[0], rows)])
    else:
        value, eps = _excluded(p.gap, p.human, None, p.metric_ties), None
        boot = None
        if idx is not None:
            # the accuracy of a resample is (sum over its prompts of credit) / (its pairs): per-prompt sums suffice
            credit = _credit(p.gap, p.human, p.metric_ties)
            per_unit = np.bincount(p.unit, weights=credit, minlength=p.n_items)
            pairs = np.bincount(p.unit, minlength=p.n_items).astype(np.float64)
            boot = np.concatenate([_ratio(_frequencies(idx[s:s + 100_000], p.n_items), per_unit, pairs)
                                   for s in range(0, idx.shape[0], 100_000)])
    value = float(value[0]) if np.ndim(value) else float(value)
    if eps is not None:
        eps = float(eps[0])
    ci = None if boot is None else _interval(boot, confidence)
    return PreferenceAccuracy(value, eps, p.ties, int(p.gap.size), p.n_human_ties, p.n_nan_dropped, p.n_items, ci,
                              float(confidence), p.metric_ties, boot)


def _calibrated(gap: np.ndarray, h: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Best ``acc_eq`` and its smallest epsilon per weight row (None = each pair once).

    Correct(eps) = human ties with ``|gap| <= eps`` + concordant pairs (``sign(gap) == h != 0``) with
    ``|gap| > eps``. Both counts are step functions of eps that change only at observed gaps, so the candidates
    ``{0} U {|gap|}`` suffice; each is evaluated by ``searchsorted`` into the sorted gaps and cumulative sums.
    """
    n = gap.size
    if n == 0:
        rows = 1 if weights is None else weights.shape[0]
        return np.full(rows, np.nan), np.full(rows, np.nan)
    absgap = np.abs(gap)
    tie = h == 0
    con = (h != 0) & (np.sign(gap) == h)
    order_t = np.argsort(absgap[tie], kind="stable")
    order_c = np.argsort(absgap[con], kind="stable")
    gap_t, gap_c = absgap[tie][order_t], absgap[con][order_c]
    candidates = np.unique(np.concatenate([[0.0], absgap]))
    n_t = np.searchsorted(gap_t, candidates, side="right")  # human ties the metric ties at each candidate
    n_c = np.searchsorted(gap_c, candidates, side="right")  # concordant pairs lost to a metric tie
    if weights is None:
        score = n_t + (gap_c.size - n_c)
        best = int(score.argmax())  # first maximiser = smallest epsilon (candidates ascend)
        return np.array([score[best] / n]), np.array([candidates[best]])
    values, eps = [], []
    w_t_all = weights[:, tie][:, order_t]
    w_c_all = weights[:, con][:, order_c]
    rows = max(1, _CHUNK // max(1, n + candidates.size))
    for start in range(0, weights.shape[0], rows):
        stop = start + rows
        w_t, w_c = w_t_all[start:stop], w_c_all[start:stop]
        cum_t = np.concatenate([np.zeros((w_t.shape[0], 1)), np.cumsum(w_t, axis=1)], axis=1)
        cum_c = np.concatenate([np.zeros((w_c.shape[0], 1)), np.cumsum(w_c, axis=1)], axis=1)
        score = cum_t[:, n_t] + (cum_c[:, -1:] - cum_c[:, n_c])
        best = score.argmax(axis=1)
        total = weights[start:stop].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            values.append(np.where(total > 0, score[np.arange(score.shape[0]), best] / total, np.nan))
        eps.append(candidates[best])
    return np.concatenate(values), np.concatenate(eps)


def _excluded(gap: np.ndarray, h: np.ndarray, weights: np.ndarray | None, metric_ties: str) -> np.ndarray:
    """Accuracy over human-decided pairs (``h`` has no 0 here): 1 when ``sign(gap) == h``, 0 when opposite, 0 or 1/2
    for a metric tie (``gap == 0``)."""
    if gap.size == 0:
        return np.full(1 if weights is None else weights.shape[0], np.nan)
    credit = _credit(gap, h, metric_ties)
    if weights is None:
        return np.array([credit.mean()])
    total = weights.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (weights @ credit) / total, np.nan)


def _credit(gap: np.ndarray, h: np.ndarray, metric_ties: str) -> np.ndarray:
    credit = (np.sign(gap) == h).astype(np.float64)
    if metric_ties == "half":
        credit[gap == 0] = 0.5
    return credit


def _ratio(freq: np.ndarray, per_unit: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    total = freq @ pairs
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (freq @ per_unit) / np.where(total > 0, total, 1), np.nan)


def _resamples(n_units: int, n_bootstrap: int, seed: int) -> np.ndarray | None:
    if int(n_bootstrap) != n_bootstrap or n_bootstrap < 0:
        raise ParameterError("{n_bootstrap} must be an integer >= 0, got {value!r}", value=n_bootstrap)
    if n_bootstrap == 0 or n_units == 0:
        return None
    return resample_indices(n_units, int(n_bootstrap), seed)


def _frequencies(idx: np.ndarray, n_units: int) -> np.ndarray:
    b = idx.shape[0]
    flat = (idx + (np.arange(b) * n_units)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n_units).reshape(b, n_units).astype(np.float64)


def _interval(boot: np.ndarray, confidence: float) -> ConfidenceInterval:
    return percentile_interval(boot, confidence)


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


def _same_length(arrays: dict) -> None:
    sizes = {name: len(x) for name, x in arrays.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError("inputs differ in length: " + ", ".join(f"{k}={v}" for k, v in sizes.items()))


def _codes(labels: list) -> np.ndarray:
    seen: dict = {}
    return np.fromiter((seen.setdefault(label, len(seen)) for label in labels), dtype=np.int64, count=len(labels))
