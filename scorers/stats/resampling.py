"""Bootstrap resampling over units and the one paired-comparison result.

Every interval in the package comes from here: ``meta`` (units = SEGs), ``agreement`` (items, prompts or clusters)
and the TIFA v1.0 tables (texts). A resample is ``default_rng(seed).integers(0, n_units, (n_resamples, n_units))``
-- the same indices ``scipy.stats.bootstrap`` draws (paired, one batch) -- and an interval is the percentile interval
``np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2])`` over the finite resampled values.

:class:`PairedComparison` is what ``meta.compare``, ``agreement.compare_agreement`` and
``tifa_bench.results.compare_runs`` return, named as scipy names its results (``statistic``, ``pvalue``,
``confidence_interval`` with ``.low`` / ``.high``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from scorers.errors import ParameterError, mention
from scorers.json_safe import json_float

__all__ = [
    "ConfidenceInterval",
    "PairedComparison",
    "bootstrap_mean_interval",
    "bootstrap_ratio_interval",
    "paired_mean_test",
    "percentile_interval",
    "resample_counts",
    "resample_indices",
]


class ConfidenceInterval(NamedTuple):
    """A percentile interval; a tuple ``(low, high)`` too, as scipy's ``ConfidenceInterval``."""

    low: float
    high: float


def _rng(seed_or_rng: int | np.random.Generator) -> np.random.Generator:
    if isinstance(seed_or_rng, np.random.Generator):
        return seed_or_rng
    return np.random.default_rng(seed_or_rng)


def resample_indices(n_units: int, n_resamples: int, seed: int | np.random.Generator, *,
                     name: str = "n_resamples") -> np.ndarray:
    """``(n_resamples, n_units)`` unit indices drawn with replacement: ``rng.integers(0, n_units, (B, n_units))``;
    the draw of every bootstrap in the package (``name`` is the caller's name for ``n_resamples``, for the error).

    Raises:
        ParameterError: ``n_resamples`` is not an integer >= 0 (a ``ValueError`` naming it as ``name``).

    Examples:
        >>> resample_indices(4, 2, seed=0).shape
        (2, 4)
        >>> bool((resample_indices(4, 2, seed=0) == resample_indices(4, 2, seed=0)).all())  # the seed fixes them
        True
        >>> resample_indices(4, -1, seed=0, name="n_bootstrap")
        Traceback (most recent call last):
        ...
        scorers.errors.ParameterError: n_bootstrap must be an integer >= 0, got -1
    """
    if int(n_resamples) != n_resamples or n_resamples < 0:
        raise ParameterError("{name} must be an integer >= 0, got {value!r}", name=mention(name), value=n_resamples)
    return _rng(seed).integers(0, n_units, size=(int(n_resamples), n_units))


def resample_counts(idx: np.ndarray, n_units: int) -> np.ndarray:
    """``(B, n_units)`` integer counts of each unit in each row of resampled indices ``idx`` (B, n): the frequency
    weights that stand for the explicitly resampled copies.

    Examples:
        >>> resample_counts(np.array([[0, 0, 2], [1, 2, 2]]), 3).tolist()
        [[2, 0, 1], [0, 1, 2]]
    """
    b = idx.shape[0]
    flat = (idx + (np.arange(b) * n_units)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n_units).reshape(b, n_units)


def percentile_interval(boot: np.ndarray, confidence: float) -> ConfidenceInterval:
    """Percentile interval of the finite-or-inf values of ``boot`` (NaN dropped; (NaN, NaN) if none is left)."""
    boot = np.asarray(boot, dtype=np.float64)
    boot = boot[~np.isnan(boot)]
    if boot.size == 0:
        return ConfidenceInterval(float("nan"), float("nan"))
    alpha = (1.0 - confidence) / 2.0
    return ConfidenceInterval(float(np.quantile(boot, alpha)), float(np.quantile(boot, 1.0 - alpha)))


def bootstrap_mean_interval(values: np.ndarray, n_resamples: int, confidence: float,
                            seed: int | np.random.Generator) -> ConfidenceInterval:
    """Percentile interval of the mean of ``values`` resampling its entries (NaN, NaN if ``values`` is empty)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return ConfidenceInterval(float("nan"), float("nan"))
    boot = values[resample_indices(values.size, n_resamples, seed)].mean(axis=1)
    return percentile_interval(boot, confidence)


def bootstrap_ratio_interval(numerators: np.ndarray, denominators: np.ndarray, n_resamples: int, confidence: float,
                             seed: int | np.random.Generator) -> ConfidenceInterval:
    """Percentile interval of ``sum(num) / sum(den)``, resampling units with their (num, den) pairs; (NaN, NaN) for
    fewer than two units or no resamples. Equals ``scipy.stats.bootstrap(..., paired=True, method="percentile")``
    with the same generator (tests/stats/test_resampling.py)."""
    numerators = np.asarray(numerators, dtype=np.float64)
    denominators = np.asarray(denominators, dtype=np.float64)
    if n_resamples <= 0 or numerators.size < 2:
        return ConfidenceInterval(float("nan"), float("nan"))
    idx = resample_indices(numerators.size, n_resamples, seed)
    return percentile_interval(numerators[idx].sum(axis=-1) / denominators[idx].sum(axis=-1), confidence)


def paired_mean_test(
    diffs: np.ndarray, *, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, ConfidenceInterval, float]:
    """Paired differences (A - B per unit) -> ``(mean difference, bootstrap percentile interval, p-value)``.

    The interval resamples the units ``n_resamples`` times; the p-value is two-sided, from ``n_resamples`` random sign
    flips of the differences: ``(1 + #|perm| >= |obs|) / (1 + n_resamples)``. Shared by :func:`scorers.stats.meta.compare`
    (units = SEGs), :func:`scorers.stats.agreement.compare_agreement` (units = prompts) and the TIFA v1.0 model comparison
    (:func:`scorers.tifa_bench.results.compare_runs`, units = texts).

    Raises:
        ValueError: ``diffs`` is empty.

    Examples:
        >>> observed, (low, high), p_value = paired_mean_test([0.2, 0.4, 0.6], n_resamples=1000)
        >>> round(observed, 6), low <= observed <= high, 0 < p_value <= 1
        (0.4, True, True)
        >>> paired_mean_test([])
        Traceback (most recent call last):
        ...
        ValueError: paired_mean_test needs at least one matched pair
    """
    diffs = np.asarray(diffs, dtype=np.float64)
    n = diffs.size
    if n == 0:
        raise ValueError("paired_mean_test needs at least one matched pair")
    rng = np.random.default_rng(seed)
    observed = float(diffs.mean())
    ci = bootstrap_mean_interval(diffs, n_resamples, confidence, rng)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_resamples, n))
    perm = (signs * diffs).mean(axis=1)
    p_value = float((1 + np.count_nonzero(np.abs(perm) >= abs(observed) - 1e-15)) / (1 + n_resamples))
    return observed, ci, p_value


@dataclass(frozen=True)
class PairedComparison:
    """A vs B on the same units.

    ``statistic`` is the difference A - B, ``pvalue`` its two-sided p-value, ``confidence_interval`` its bootstrap
    percentile interval; ``value_a`` / ``value_b`` the two values it is the difference of (means over the matched
    units, or the two coefficients of a paired bootstrap); ``n_units`` how many matched units (``unit`` says what one
    is: SEG, prompt, item, text); ``method`` the test; ``labels`` what was compared (meta-metric and partition,
    coefficient and grouping, run names ...), written first by :meth:`to_dict`.
    """

    statistic: float
    pvalue: float
    confidence_interval: ConfidenceInterval
    value_a: float
    value_b: float
    n_units: int
    unit: str
    method: str
    labels: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """A flat JSON-ready row (NaN becomes None)."""
        return {
            **{k: json_float(v) if isinstance(v, float) else v for k, v in self.labels.items()},
            "value_a": json_float(self.value_a),
            "value_b": json_float(self.value_b),
            "statistic": json_float(self.statistic),
            "ci_low": json_float(self.confidence_interval.low),
            "ci_high": json_float(self.confidence_interval.high),
            "pvalue": json_float(self.pvalue),
            "n_units": self.n_units,
            "unit": self.unit,
            "method": self.method,
        }
