"""The one resampling helper: the same numbers as scipy.stats.bootstrap and the plain loops."""
import numpy as np
import pytest

from scorers.stats.resampling import (ConfidenceInterval, PairedComparison, bootstrap_mean_interval,
                                bootstrap_ratio_interval, percentile_interval, resample_indices)


def test_ratio_interval_equals_scipy_paired_percentile_bootstrap():
    from scipy.stats import bootstrap

    rng = np.random.default_rng(7)
    num, den = rng.integers(0, 5, 30).astype(float), rng.integers(5, 9, 30).astype(float)
    ref = bootstrap((num, den), lambda a, b, axis=-1: a.sum(axis=axis) / b.sum(axis=axis), paired=True,
                    vectorized=True, n_resamples=999, confidence_level=0.9, method="percentile",
                    rng=np.random.default_rng(3))
    ours = bootstrap_ratio_interval(num, den, 999, 0.9, 3)
    # same indices, same quantile rule: only summation order can differ (float64 rounding)
    assert ours.low == pytest.approx(ref.confidence_interval.low, rel=1e-12)
    assert ours.high == pytest.approx(ref.confidence_interval.high, rel=1e-12)


def test_mean_interval_is_the_plain_loop():
    values = np.array([0.1, 0.4, 0.35, 0.8, 0.05])
    rng = np.random.default_rng(11)
    boot = [values[rng.integers(0, 5, 5)].mean() for _ in range(1)]  # first row of the same generator
    idx = resample_indices(5, 200, 11)
    assert values[idx[0]].mean() == boot[0]
    means = np.array([values[row].mean() for row in idx])
    # vectorised vs per-row means differ only in float64 summation order
    assert bootstrap_mean_interval(values, 200, 0.95, 11) == (pytest.approx(np.quantile(means, 0.025), rel=1e-12),
                                                              pytest.approx(np.quantile(means, 0.975), rel=1e-12))


def test_percentile_interval_drops_nan_and_empty_is_nan():
    assert percentile_interval(np.array([np.nan, 1.0, 3.0]), 0.0) == (2.0, 2.0)
    low, high = percentile_interval(np.array([np.nan]), 0.95)
    assert np.isnan(low) and np.isnan(high)
    assert np.isnan(bootstrap_ratio_interval(np.array([1.0]), np.array([2.0]), 100, 0.95, 0).low)


def test_paired_comparison_row_names():
    cmp = PairedComparison(-0.25, 0.5, ConfidenceInterval(-0.5, float("nan")), 0.25, 0.5, 4, "text", "m", {"a": "x"})
    assert cmp.to_dict() == {"a": "x", "value_a": 0.25, "value_b": 0.5, "statistic": -0.25, "ci_low": -0.5,
                             "ci_high": None, "pvalue": 0.5, "n_units": 4, "unit": "text", "method": "m"}
    assert cmp.confidence_interval.low == cmp.confidence_interval[0] == -0.5
