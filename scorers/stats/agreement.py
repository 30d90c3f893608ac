"""Agreement of a faithfulness metric with human ratings: the pre-TS2 view of a metric, done with TS2's rigour.

Plain arrays in, dataclasses out (like :mod:`scorers.stats.meta`); NumPy and SciPy only.

Coefficients (``COEFFICIENTS``), all with ``scipy.stats`` conventions:

* ``pearson``   -- ``scipy.stats.pearsonr``;
* ``spearman``  -- ``scipy.stats.spearmanr`` (Pearson of average ranks);
* ``kendall_b`` / ``kendall_c`` -- ``scipy.stats.kendalltau(variant='b' / 'c')``;
* ``pairwise_acc`` -- pairwise accuracy with tie calibration, ``acc_eq`` of Deutsch et al. (2023): over all pairs of
  items, a pair is correct when human and metric order it the same way, or when both tie it. The metric ties a pair
  when ``|m_i - m_j| <= epsilon``; epsilon is chosen among ``0`` and the pairs' metric gaps to maximise the accuracy
  (the smallest such epsilon is reported). This is ``acc_23`` with tau optimisation in Google's mt-metrics-eval.

Groupings (``GROUPINGS``):

* ``none``   -- every item pooled; bootstrap resamples items (rows).
* ``item``   -- one value per prompt (the images of one prompt), averaged over prompts; bootstrap resamples prompts.
  For ``pairwise_acc`` one epsilon is shared by all prompts (it maximises the mean accuracy), as in mt-metrics-eval.
* ``system`` -- human and metric scores averaged per T2I model, then correlated across models; bootstrap resamples
  prompts when ``items`` are given (rows otherwise) and recomputes the model averages.

Groups with fewer than 2 items are skipped and counted; for the four correlations so are groups where the human or
the metric scores are constant (the coefficient is undefined there). ``pairwise_acc`` keeps constant groups: a metric
tie on a human tie is exactly what it credits. Pairs with a NaN on either side are dropped and counted.

Bootstrap intervals are percentile intervals over ``n_bootstrap`` seeded resamples; every statistic is recomputed on
each resample (for ``pairwise_acc`` the epsilon is re-calibrated on each resample too). The resampling is vectorised
(frequency weights instead of copies), and checked in the tests against scipy on the explicitly resampled arrays.

References: Deutsch, Foster and Freitag, "Ties Matter: Meta-Evaluating Modern Metrics with Pairwise Accuracy and Tie
Calibration", EMNLP 2023; Hu et al., "TIFA", ICCV 2023 (TIFA160 ratings).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from scorers.checks import as_scores, check_same_length
from scorers.errors import ParameterError
from scorers.json_safe import json_float
from scorers.stats.correlation_kernels import (dense_correlations, is_constant, single_correlation,
                                               weighted_correlations)
from scorers.stats.preference_accuracy import PairSet, check_pair_work, dense_pairwise
from scorers.stats.resampling import (ConfidenceInterval, PairedComparison, paired_mean_test, percentile_interval,
                                      resample_counts, resample_indices)

__all__ = [
    "COEFFICIENTS",
    "GROUPINGS",
    "Agreement",
    "GroupedBootstrap",
    "agreement",
    "agreement_many",
    "compare_agreement",
    "correlation",
    "inter_rater",
    "pairwise_accuracy",
]

COEFFICIENTS = ("pearson", "spearman", "kendall_b", "kendall_c", "pairwise_acc")
CORRELATIONS = COEFFICIENTS[:4]
GROUPINGS = ("none", "item", "system")
#: groups up to this size use the dense (groups x size x size) kernels; bigger ones go one by one through scipy
DENSE_MAX = 64


@dataclass
class Agreement:
    """One coefficient of one metric against the human ratings under one grouping.

    ``statistic`` is a plain coefficient (not %); ``confidence_interval`` a bootstrap percentile interval (``.low``,
    ``.high``; None without bootstrap);
    ``n_items`` the rows that entered (after NaN pairs and skipped groups), ``n_groups`` the groups used (1 for
    ``none``, prompts for ``item``, models for ``system``), ``n_groups_skipped`` those left out (fewer than 2 items or
    constant input), ``n_nan_dropped`` rows dropped for a NaN, ``epsilon`` the calibrated metric tie threshold
    (``pairwise_acc`` only), ``per_group`` the per-prompt values (``item`` grouping, keyed by prompt label),
    ``bootstrap`` the resampled values behind ``confidence_interval`` (NaN where undefined on a resample).
    :meth:`to_dict` is the ``ts2 correlate --json`` row.

    Examples:
        >>> result = agreement([1, 2, 3, 4], [0.1, 0.3, 0.2, 0.9], coefficient="spearman", name="clip")
        >>> result.metric, round(result.statistic, 12), result.confidence_interval, result.n_items
        ('clip', 0.8, None, 4)
        >>> result.to_dict()["ci_low"] is None
        True
    """

    metric: str
    coefficient: str
    grouping: str
    statistic: float
    confidence_interval: ConfidenceInterval | None
    n_items: int
    n_groups: int
    n_groups_skipped: int
    n_nan_dropped: int
    epsilon: float | None = None
    per_group: dict = field(default_factory=dict, repr=False)
    bootstrap: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict:
        """The ``ts2 correlate --json`` row (NaN becomes None); its keys (``value``, ``ci_low``, ``ci_high`` ...) are
        the file format's and stay as they are."""
        ci = self.confidence_interval
        low, high = ci if ci is not None else (float("nan"), float("nan"))
        return {
            "metric": self.metric,
            "coefficient": self.coefficient,
            "grouping": self.grouping,
            "value": json_float(self.statistic),
            "ci_low": json_float(low),
            "ci_high": json_float(high),
            "n_items": self.n_items,
            "n_groups_skipped": self.n_groups_skipped,
            "n_groups": self.n_groups,
            "n_nan_dropped": self.n_nan_dropped,
            "epsilon": None if self.epsilon is None else json_float(self.epsilon),
        }


# ----------------------------------------------------------------------------------------------------------------------
# Plain coefficients of two arrays
# ----------------------------------------------------------------------------------------------------------------------


def correlation(human: Sequence[float], metric: Sequence[float], coefficient: str = "spearman") -> float:
    """One coefficient between two arrays (NaN pairs dropped); NaN when undefined (constant input, < 2 pairs).

    ``pairwise_acc`` returns the tie-calibrated accuracy (see :func:`pairwise_accuracy` for its epsilon).

    Raises:
        ValueError: ``coefficient`` is not one of ``COEFFICIENTS``, the arrays differ in length, or a value is
            non-numeric or infinite.

    Examples:
        One discordant pair (items 2 and 3) of six: Kendall's tau is (5 - 1) / 6; Spearman's rho is
        1 - 6 * 2 / (4 * 15) = 0.8 (squared rank differences 0, 1, 1, 0):

        >>> human, metric = [1, 2, 3, 4], [0.1, 0.3, 0.2, 0.9]
        >>> round(correlation(human, metric, "kendall_b"), 6), round(correlation(human, metric, "spearman"), 6)
        (0.666667, 0.8)
        >>> correlation([1, 2, 3], [0.5, 0.5, 0.5])  # constant metric: undefined
        nan
        >>> correlation(human, metric, "tau")
        Traceback (most recent call last):
        ...
        ValueError: unknown coefficient 'tau'; expected one of pearson, spearman, kendall_b, kendall_c, pairwise_acc
    """
    _check_coefficient(coefficient)
    h, m = _clean_pair(human, metric)
    if coefficient == "pairwise_acc":
        return pairwise_accuracy(h, m)[0]
    if h.size < 2 or is_constant(h) or is_constant(m):
        return float("nan")
    return float(single_correlation(coefficient, h, m))


def pairwise_accuracy(
    human: Sequence[float], metric: Sequence[float], *, epsilon: float | None = None
) -> tuple[float, float]:
    """Pairwise accuracy ``acc_eq`` over all pairs and the metric tie threshold used: ``(accuracy, epsilon)``.

    ``epsilon=None`` calibrates it (Deutsch et al., 2023): the smallest epsilon among ``0`` and the pairs'
    ``|m_i - m_j|`` that maximises the accuracy. A pair is correct when ``sign(h_i - h_j) == sign(m_i - m_j)`` with the
    metric difference counted as 0 when ``|m_i - m_j| <= epsilon``. NaN pairs are dropped; fewer than 2 items -> NaN.

    Raises:
        ValueError: ``epsilon`` negative or not finite, arrays of different lengths, or values :func:`as_scores`
            refuses.

    Examples:
        Five of the six pairs agree in sign; the calibrated threshold stays 0:

        >>> pairwise_accuracy([1, 2, 3, 4], [0.1, 0.3, 0.2, 0.9])
        (0.8333333333333334, 0.0)

        A human tie (items 0 and 1) is matched when the metric's gap is within epsilon; calibration finds 0.05:

        >>> accuracy, epsilon = pairwise_accuracy([1, 1, 2], [0.1, 0.15, 0.9])
        >>> accuracy, round(epsilon, 6)
        (1.0, 0.05)
    """
    h, m = _clean_pair(human, metric)
    if h.size < 2:
        return float("nan"), float("nan")
    if epsilon is not None:
        if not np.isfinite(epsilon) or epsilon < 0:
            raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
        i, j = np.triu_indices(h.size, 1)
        return PairSet(i, j, np.zeros(i.size, dtype=np.int64), h, m).accuracy_at(float(epsilon)), float(epsilon)
    return PairSet.pooled(h, m).best()


# ----------------------------------------------------------------------------------------------------------------------
# Grouped agreement with bootstrap intervals
# ----------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupedBootstrap:
    """The settings every agreement function shares: how rows are grouped and how the interval resamples them.

    ``grouping`` is ``"none"``, ``"item"`` (needs ``items``: the prompt of each image) or ``"system"`` (needs
    ``systems``: the T2I model of each image; ``items`` optional, used as bootstrap clusters); ``n_bootstrap``,
    ``confidence``, ``seed``: the percentile bootstrap interval (0 = none), resampling as in the module docstring.
    Pass one as ``design=`` to :func:`agreement`, :func:`agreement_many` or :func:`inter_rater` instead of the six
    keywords (:func:`compare_agreement` builds its own, with ``n_resamples`` as ``n_bootstrap``).
    """

    grouping: str = "none"
    items: Sequence[object] | None = None
    systems: Sequence[object] | None = None
    n_bootstrap: int = 0
    confidence: float = 0.95
    seed: int = 0

    def prepare(self, human, metric, name: str) -> "_Prepared":
        """One metric's rows, NaN pairs dropped, with this grouping's structure."""
        return _Prepared.build(human, metric, grouping=self.grouping, items=self.items, systems=self.systems,
                               name=name)

    def run(self, data: "_Prepared", coefficient: str, *, n_bootstrap: int | None = None, return_boot: bool = False):
        """``coefficient`` on ``data`` with this design's interval (``n_bootstrap`` overrides the resample count)."""
        return data.run(coefficient, n_bootstrap=self.n_bootstrap if n_bootstrap is None else n_bootstrap,
                        confidence=self.confidence, seed=self.seed, return_boot=return_boot)


_DEFAULT_DESIGN = GroupedBootstrap()


def _is_default(value, default) -> bool:
    return value is None if default is None else (not isinstance(value, (list, np.ndarray)) and value == default)


def _design(design: GroupedBootstrap | None, **settings) -> GroupedBootstrap:
    if design is None:
        return GroupedBootstrap(**settings)
    given = [k for k, v in settings.items() if not _is_default(v, getattr(_DEFAULT_DESIGN, k))]
    if given:
        raise ValueError(f"pass the grouping settings as design= or as keywords, not both (also got {given})")
    return design


def agreement(
    human: Sequence[float],
    metric: Sequence[float],
    *,
    coefficient: str = "spearman",
    grouping: str = "none",
    items: Sequence[object] | None = None,
    systems: Sequence[object] | None = None,
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    name: str = "metric",
    design: GroupedBootstrap | None = None,
) -> Agreement:
    """Agreement of one metric's per-image scores with per-image human ratings.

    Parameters
    ----------
    human, metric : per-image values, aligned; NaN pairs are dropped and counted.
    coefficient : one of ``COEFFICIENTS``.
    grouping : ``"none"``, ``"item"`` (needs ``items``: the prompt of each image) or ``"system"`` (needs ``systems``:
        the T2I model of each image; ``items`` optional, used as bootstrap clusters).
    n_bootstrap, confidence, seed : percentile bootstrap interval (0 = none), resampling as in the module docstring.
    name : the metric's name in the result.
    design : the six settings above as one :class:`GroupedBootstrap` (then leave them at their defaults).

    Raises
    ------
    ValueError
        An unknown ``coefficient`` or ``grouping``, ``items``/``systems`` missing for their grouping, misaligned or
        non-numeric inputs, or nothing left to correlate.

    Examples
    --------
    Per prompt (``grouping="item"``): prompt p is ordered like the humans (+1), prompt q backwards (-1); the average is 0:

    >>> result = agreement([1, 2, 3, 1, 2, 3], [0.1, 0.2, 0.3, 0.3, 0.2, 0.1], grouping="item",
    ...                    items=["p", "p", "p", "q", "q", "q"])
    >>> result.statistic, result.per_group, result.n_groups
    (0.0, {'p': 1.0, 'q': -1.0}, 2)
    """
    _check_coefficient(coefficient)
    design = _design(design, grouping=grouping, items=items, systems=systems, n_bootstrap=n_bootstrap,
                     confidence=confidence, seed=seed)
    return design.run(design.prepare(human, metric, name), coefficient)


def agreement_many(
    human: Sequence[float],
    metrics: Mapping[str, Sequence[float]],
    *,
    coefficients: Sequence[str] = COEFFICIENTS,
    grouping: str = "none",
    items: Sequence[object] | None = None,
    systems: Sequence[object] | None = None,
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    design: GroupedBootstrap | None = None,
) -> list[Agreement]:
    """:func:`agreement` for every metric x coefficient (metrics outer); all share the seed, hence the resamples.

    Raises:
        ValueError: no metric columns, an unknown coefficient, or what :func:`agreement` refuses.

    Examples:
        >>> rows = agreement_many([1, 2, 3, 4], {"x": [0.1, 0.3, 0.2, 0.9], "y": [4, 3, 2, 1]}, coefficients=["spearman"])
        >>> [(r.metric, round(r.statistic, 6)) for r in rows]
        [('x', 0.8), ('y', -1.0)]
    """
    if not metrics:
        raise ValueError("no metric columns given")
    for c in coefficients:
        _check_coefficient(c)
    design = _design(design, grouping=grouping, items=items, systems=systems, n_bootstrap=n_bootstrap,
                     confidence=confidence, seed=seed)
    out = []
    for metric_name, values in metrics.items():
        data = design.prepare(human, values, metric_name)
        for c in coefficients:
            out.append(design.run(data, c))
    return out


def inter_rater(
    raters: Mapping[str, Sequence[float]],
    *,
    coefficient: str = "spearman",
    grouping: str = "none",
    items: Sequence[object] | None = None,
    systems: Sequence[object] | None = None,
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    design: GroupedBootstrap | None = None,
) -> Agreement:
    """Agreement between human raters (the ceiling a metric can reach): the coefficient of every pair of raters
    (the first of a pair in the human role), averaged over pairs; the bootstrap averages the pairs on the same
    resamples. Reported with metric name ``"inter-rater"``; ``epsilon`` is the mean calibrated epsilon.

    Raises:
        ValueError: fewer than two raters, or what :func:`agreement` refuses.

    Examples:
        >>> round(inter_rater({"r1": [1, 2, 3, 4], "r2": [1, 3, 2, 4]}).statistic, 12)  # one pair: 1 - 6 * 2 / 60
        0.8
    """
    names = list(raters)
    if len(names) < 2:
        raise ValueError(f"inter-rater agreement needs at least two rater columns, got {names}")
    design = _design(design, grouping=grouping, items=items, systems=systems, n_bootstrap=n_bootstrap,
                     confidence=confidence, seed=seed)
    results = []
    boots = []
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            data = design.prepare(raters[names[a]], raters[names[b]], f"{names[a]}~{names[b]}")
            result, boot = design.run(data, coefficient, return_boot=True)
            results.append(result)
            boots.append(boot)
    first = results[0]
    ci = None
    if design.n_bootstrap:
        ci = percentile_interval(np.mean(np.vstack(boots), axis=0), design.confidence)
    eps = [r.epsilon for r in results if r.epsilon is not None]
    return Agreement(
        metric="inter-rater", coefficient=coefficient, grouping=design.grouping,
        statistic=float(np.mean([r.statistic for r in results])), confidence_interval=ci,
        n_items=min(r.n_items for r in results), n_groups=first.n_groups,
        n_groups_skipped=max(r.n_groups_skipped for r in results),
        n_nan_dropped=max(r.n_nan_dropped for r in results),
        epsilon=float(np.mean(eps)) if eps else None,
    )


def compare_agreement(
    human: Sequence[float],
    metric_a: Sequence[float],
    metric_b: Sequence[float],
    *,
    coefficient: str = "spearman",
    grouping: str = "none",
    items: Sequence[object] | None = None,
    systems: Sequence[object] | None = None,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Is metric A closer to the humans than metric B? Both are evaluated on the rows where human, A and B are all
    defined.

    ``item`` grouping: the per-prompt values of A and B on prompts where both are defined are compared exactly like
    :func:`scorers.stats.meta.compare` compares per-SEG values (bootstrap interval of the mean difference, two-sided
    sign-flip permutation p-value; same helper). ``none`` / ``system``: a paired bootstrap (the same resamples for A and
    B) gives the interval of ``A - B``, and the p-value is the two-sided bootstrap p,
    ``min(1, 2 * (1 + #{d_b on the far side of 0}) / (1 + n_resamples))``.

    Raises:
        ValueError: an unknown coefficient, misaligned inputs, no prompt defined for both (``item``), or a coefficient
            undefined on every resample.

    Examples:
        A matches the humans exactly (Spearman 1); B's ranks 1, 3, 2, 6, 4, 5 give squared rank differences
        0, 1, 1, 4, 1, 1, so its rho is 1 - 6 * 8 / 210 = 0.7714:

        >>> result = compare_agreement([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], [1, 3, 2, 6, 4, 5], n_resamples=200)
        >>> result.value_a, round(result.value_b, 4), round(result.statistic, 4), result.n_units
        (1.0, 0.7714, 0.2286, 6)
    """
    _check_coefficient(coefficient)
    h = as_scores(human, name="human")
    a = as_scores(metric_a, name="metric_a")
    b = as_scores(metric_b, name="metric_b")
    check_same_length({"human": h, "metric_a": a, "metric_b": b})
    both = np.isnan(a) | np.isnan(b)
    a, b = np.where(both, np.nan, a), np.where(both, np.nan, b)
    design = GroupedBootstrap(grouping, items, systems, n_resamples, confidence, seed)
    data_a, data_b = design.prepare(h, a, "a"), design.prepare(h, b, "b")
    labels = {"coefficient": coefficient, "grouping": grouping}
    if grouping == "item":
        res_a, res_b = design.run(data_a, coefficient, n_bootstrap=0), design.run(data_b, coefficient, n_bootstrap=0)
        keys = [k for k in res_a.per_group if k in res_b.per_group]
        if not keys:
            raise ValueError("no prompt has a defined value for both metrics")
        diffs = np.array([res_a.per_group[k] - res_b.per_group[k] for k in keys])
        observed, ci, p_value = paired_mean_test(diffs, n_resamples=n_resamples, confidence=confidence, seed=seed)
        return PairedComparison(observed, p_value, ci, float(np.mean([res_a.per_group[k] for k in keys])),
                                float(np.mean([res_b.per_group[k] for k in keys])), len(keys), "prompt",
                                "sign-flip permutation over prompts", labels)
    res_a, boot_a = design.run(data_a, coefficient, return_boot=True)
    res_b, boot_b = design.run(data_b, coefficient, return_boot=True)
    diffs = boot_a - boot_b
    diffs = diffs[~np.isnan(diffs)]
    if diffs.size == 0:
        raise ValueError("the coefficient is undefined on every resample for at least one metric")
    far = min(np.count_nonzero(diffs <= 0), np.count_nonzero(diffs >= 0))
    p_value = min(1.0, 2.0 * (1 + far) / (1 + n_resamples))
    return PairedComparison(res_a.statistic - res_b.statistic, p_value, percentile_interval(diffs, confidence),
                            res_a.statistic, res_b.statistic, data_a.n_units,
                            "prompt" if data_a.cluster is not None else "item", "paired bootstrap", labels)


# ----------------------------------------------------------------------------------------------------------------------
# Internals
# ----------------------------------------------------------------------------------------------------------------------


def _check_coefficient(name: str) -> None:
    if name not in COEFFICIENTS:
        raise ValueError(f"unknown coefficient {name!r}; expected one of {', '.join(COEFFICIENTS)}")


def _clean_pair(human, metric) -> tuple[np.ndarray, np.ndarray]:
    h = as_scores(human, name="human")
    m = as_scores(metric, name="metric")
    check_same_length({"human": h, "metric": m})
    keep = ~np.isnan(h) & ~np.isnan(m)
    return h[keep], m[keep]


def _labels(values: Sequence[object] | None, what: str, n: int) -> np.ndarray | None:
    if values is None:
        return None
    arr = np.asarray(values, dtype=object).reshape(-1)
    if arr.size != n:
        raise ValueError(f"length mismatch: {what} has {arr.size} entries but the scores have {n}")
    missing = [p for p, v in enumerate(arr) if v is None or (isinstance(v, float) and v != v) or str(v) == ""]
    if missing:
        raise ValueError(f"{what} has {len(missing)} missing label(s), first at position {missing[0]}")
    return arr.astype(str)


@dataclass
class _Prepared:
    """One metric's NaN-free rows with the group structure of the chosen grouping."""

    name: str
    grouping: str
    h: np.ndarray
    m: np.ndarray
    group: np.ndarray | None  # item or system index per row (dense 0..G-1 over the kept rows)
    group_names: np.ndarray | None  # label of each group index
    cluster: np.ndarray | None  # bootstrap cluster per row (system grouping with items)
    n_nan_dropped: int
    n_groups_total: int

    @classmethod
    def build(cls, human, metric, *, grouping, items, systems, name) -> "_Prepared":
        if grouping not in GROUPINGS:
            raise ValueError(f"unknown grouping {grouping!r}; expected one of {', '.join(GROUPINGS)}")
        h = as_scores(human, name="human")  # as_scores refuses all-NaN input with a message naming the column
        m = as_scores(metric, name=name)
        check_same_length({"human": h, name: m})
        if h.size == 0:
            raise ValueError("no ratings given (empty input)")
        item_idx = _labels(items, "items", h.size)
        system_idx = _labels(systems, "systems", h.size)
        if grouping == "item" and item_idx is None:
            raise ParameterError("grouping 'item' needs the prompt of each image ({items})")
        if grouping == "system" and system_idx is None:
            raise ParameterError("grouping 'system' needs the T2I model of each image ({systems})")
        keep = ~np.isnan(h) & ~np.isnan(m)
        if not keep.any():
            raise ValueError(f"no row has both a human rating and a {name} score")
        labels = {"none": None, "item": item_idx, "system": system_idx}[grouping]
        total = 1 if labels is None else int(np.unique(labels).size)
        cluster = item_idx[keep] if (grouping == "system" and item_idx is not None) else None
        group = names = None
        if labels is not None:
            names, group = np.unique(labels[keep], return_inverse=True)
            group = group.reshape(-1)
        return cls(name, grouping, h[keep], m[keep], group, names, cluster, int((~keep).sum()), total)

    @property
    def n_units(self) -> int:
        if self.grouping == "item":
            return int(self.group.max()) + 1
        if self.cluster is not None:
            return int(np.unique(self.cluster).size)
        return int(self.h.size)

    def run(self, coefficient, *, n_bootstrap=0, confidence=0.95, seed=0, return_boot=False):
        if n_bootstrap < 0:
            raise ParameterError("{n_bootstrap} must be >= 0, got {value}", value=n_bootstrap)
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {confidence}")
        runner = {"none": self._pooled, "item": self._by_item, "system": self._by_system}[self.grouping]
        result, boot = runner(coefficient, n_bootstrap, seed)
        if n_bootstrap:
            result.confidence_interval = percentile_interval(boot, confidence)
            result.bootstrap = boot
        return (result, boot) if return_boot else result

    def _result(self, coefficient, value, n_items, n_groups, skipped, epsilon=None, per_group=None):
        eps = None if coefficient != "pairwise_acc" else (float("nan") if epsilon is None else float(epsilon))
        return Agreement(self.name, coefficient, self.grouping, float(value), None, int(n_items), int(n_groups),
                         int(skipped), self.n_nan_dropped, eps, per_group or {})

    # -- none ---------------------------------------------------------------------------------------------------------
    def _pooled(self, coefficient, n_bootstrap, seed):
        h, m, n = self.h, self.m, self.h.size
        boot = np.empty(0)
        if coefficient == "pairwise_acc":
            if n < 2:
                return self._result(coefficient, np.nan, 0, 0, 1), np.full(n_bootstrap, np.nan)
            if n_bootstrap:
                check_pair_work(n * (n - 1) // 2, n_bootstrap)
            pairs = PairSet.pooled(h, m)
            value, eps = pairs.calibrate(np.ones((1, n)))
            if n_bootstrap:
                boot, _ = pairs.calibrate(resample_counts(resample_indices(n, n_bootstrap, seed), n))
            return self._result(coefficient, value[0], n, 1, 0, eps[0]), boot
        if n < 2 or is_constant(h) or is_constant(m):
            return self._result(coefficient, np.nan, 0, 0, 1), np.full(n_bootstrap, np.nan)
        value = single_correlation(coefficient, h, m)
        if n_bootstrap:
            boot = weighted_correlations(coefficient, h, m, resample_counts(resample_indices(n, n_bootstrap, seed), n))
        return self._result(coefficient, value, n, 1, 0), boot

    # -- item ---------------------------------------------------------------------------------------------------------
    def _by_item(self, coefficient, n_bootstrap, seed):
        g = self.group
        n_groups = int(g.max()) + 1
        sizes = np.bincount(g, minlength=n_groups)
        order = np.argsort(g, kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        values = np.full(n_groups, np.nan)
        if coefficient == "pairwise_acc":
            usable = sizes >= 2
            lefts, rights, groups = [], [], []
            for s in np.unique(sizes[usable]):
                members = np.flatnonzero(sizes == s)
                rows = order[starts[members][:, None] + np.arange(s)[None, :]]  # (G_s, s)
                i, j = np.triu_indices(s, 1)
                lefts.append(rows[:, i].ravel())
                rights.append(rows[:, j].ravel())
                groups.append(np.repeat(members, i.size))
            if not usable.any():
                return self._result(coefficient, np.nan, 0, 0, self.n_groups_total), np.full(n_bootstrap, np.nan)
            kept = np.flatnonzero(usable)
            dense_group = np.full(n_groups, -1)
            dense_group[kept] = np.arange(kept.size)
            pairs = PairSet(np.concatenate(lefts), np.concatenate(rights),
                             dense_group[np.concatenate(groups)], self.h, self.m)
            per_pairs = (sizes[kept] * (sizes[kept] - 1) / 2).astype(np.float64)
            value, eps = pairs.calibrate(np.ones((1, kept.size)), per_group=per_pairs)
            per_group = self._per_group_accuracy(kept, order, starts, sizes, eps[0])
            boot = np.empty(0)
            if n_bootstrap:
                check_pair_work(pairs.n_pairs, n_bootstrap)
                counts = resample_counts(resample_indices(kept.size, n_bootstrap, seed), kept.size)
                boot, _ = pairs.calibrate(counts, per_group=per_pairs)
            skipped = self.n_groups_total - kept.size
            return self._result(coefficient, value[0], sizes[kept].sum(), kept.size, skipped, eps[0], per_group), boot
        for s in np.unique(sizes[sizes >= 2]):
            members = np.flatnonzero(sizes == s)
            rows = order[starts[members][:, None] + np.arange(s)[None, :]]
            if s <= DENSE_MAX:
                values[members] = dense_correlations(coefficient, self.h[rows], self.m[rows])
            else:
                for k, r in zip(members, rows):
                    hr, mr = self.h[r], self.m[r]
                    undefined = is_constant(hr) or is_constant(mr)
                    values[k] = np.nan if undefined else single_correlation(coefficient, hr, mr)
        defined = ~np.isnan(values)
        kept = np.flatnonzero(defined)
        if kept.size == 0:
            return self._result(coefficient, np.nan, 0, 0, self.n_groups_total), np.full(n_bootstrap, np.nan)
        per_group = {str(self.group_names[k]): float(values[k]) for k in kept}
        boot = np.empty(0)
        if n_bootstrap:
            boot = values[kept][resample_indices(kept.size, n_bootstrap, seed)].mean(axis=1)
        skipped = self.n_groups_total - kept.size
        return self._result(coefficient, values[kept].mean(), sizes[kept].sum(), kept.size, skipped,
                            per_group=per_group), boot

    def _per_group_accuracy(self, kept, order, starts, sizes, eps):
        out = {}
        for k in kept:
            rows = order[starts[k]:starts[k] + sizes[k]]
            out[str(self.group_names[k])] = pairwise_accuracy(self.h[rows], self.m[rows], epsilon=float(eps))[0]
        return out

    # -- system -------------------------------------------------------------------------------------------------------
    def _by_system(self, coefficient, n_bootstrap, seed):
        g = self.group
        n_sys = int(g.max()) + 1
        skipped = self.n_groups_total - n_sys  # models with no valid row
        onehot = (g[None, :] == np.arange(n_sys)[:, None]).astype(np.float64)  # (S, n)
        weights = np.ones((1, self.h.size))
        value, eps = self._system_values(coefficient, weights, onehot)
        boot = np.empty(0)
        if n_bootstrap:
            if self.cluster is not None:
                clusters = np.unique(self.cluster, return_inverse=True)[1].reshape(-1)
                n_units = int(clusters.max()) + 1
                counts = resample_counts(resample_indices(n_units, n_bootstrap, seed), n_units)[:, clusters]
            else:
                counts = resample_counts(resample_indices(self.h.size, n_bootstrap, seed), self.h.size)
            boot, _ = self._system_values(coefficient, counts.astype(np.float64), onehot)
        if n_sys < 2:
            return self._result(coefficient, np.nan, 0, n_sys, self.n_groups_total), boot
        epsilon = eps[0] if eps is not None else None
        return self._result(coefficient, value[0], self.h.size, n_sys, skipped, epsilon), boot

    def _system_values(self, coefficient, weights, onehot):
        """Coefficient across model means for every row of frequency ``weights`` (B, n)."""
        mass = weights @ onehot.T  # (B, S)
        with np.errstate(divide="ignore", invalid="ignore"):
            H = (weights * self.h) @ onehot.T / mass
            M = (weights * self.m) @ onehot.T / mass
        out = np.full(weights.shape[0], np.nan)
        eps = np.full(weights.shape[0], np.nan)
        ok = ~np.isnan(H).any(axis=1) & (H.shape[1] >= 2)
        if ok.any():
            if coefficient == "pairwise_acc":
                out[ok], eps[ok] = dense_pairwise(H[ok], M[ok])
            else:
                out[ok] = dense_correlations(coefficient, H[ok], M[ok])
        return out, (eps if coefficient == "pairwise_acc" else None)
