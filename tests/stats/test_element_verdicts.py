"""Element verdicts: wrong rates per error count, detection figures, McNemar and the paired bootstrap, against hand
computation, plain loops and scipy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from scorers.stats.element_verdicts import element_detection, paired_element_test, wrong_rates
from scorers.stats.resampling import resample_indices


def test_wrong_rates_equal_a_plain_loop_and_resample_groups():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 9, 300)
    counts = rng.integers(0, 3, 300)
    wrong = rng.random(300) < 0.2 + 0.2 * counts
    result = wrong_rates(wrong, counts, groups, n_bootstrap=200, seed=5)
    for c in range(3):
        n = sum(1 for k in range(300) if counts[k] == c)
        w = sum(1 for k in range(300) if counts[k] == c and wrong[k])
        entry = result.to_dict()[str(c)]
        assert entry["n"] == n and entry["wrong_rate"] == pytest.approx(w / n, abs=1e-15)
        # the interval: the pooled rate over resampled groups (those holding answers at this count), the one draw
        used = sorted(set(groups[counts == c].tolist()))
        num = np.array([np.sum(wrong[(counts == c) & (groups == g)]) for g in used], dtype=float)
        den = np.array([np.sum((counts == c) & (groups == g)) for g in used], dtype=float)
        idx = resample_indices(len(used), 200, 5)
        boot = num[idx].sum(axis=1) / den[idx].sum(axis=1)
        assert entry["low"] == pytest.approx(np.quantile(boot, 0.025), abs=1e-12)
        assert entry["high"] == pytest.approx(np.quantile(boot, 0.975), abs=1e-12)


def test_detection_figures_by_hand():
    # TP, TP, FP, FN, TN, TN, TN
    said = [1, 1, 1, 0, 0, 0, 0]
    truth = [1, 1, 0, 1, 0, 0, 0]
    result = element_detection(said, truth, [0, 0, 1, 1, 2, 2, 3], n_bootstrap=50)
    assert (result.tp, result.fp, result.fn, result.tn) == (2, 1, 1, 3)
    assert result.precision == pytest.approx(2 / 3) and result.recall == pytest.approx(2 / 3)
    assert result.f1 == pytest.approx(2 / 3) and result.accuracy == pytest.approx(5 / 7)
    assert result.balanced_accuracy == pytest.approx((2 / 3 + 3 / 4) / 2)
    assert result.auroc is None and result.to_dict()["auroc"] is None
    assert result.n == 7 and result.n_wrong == 3


def test_undefined_figures_are_null_never_nan():
    result = element_detection([0, 0], [0, 0], [0, 1], n_bootstrap=10).to_dict()
    assert result["precision"] is None and result["recall"] is None and result["balanced_accuracy"] is None
    assert result["accuracy"] == 1.0


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 4)), min_size=2, max_size=40))
def test_auroc_is_the_mann_whitney_u_over_its_pairs(pairs):
    truth = np.array([t for t, _ in pairs])
    prob = np.array([s / 4 for _, s in pairs])  # few levels: ties count one half
    result = element_detection(truth, truth, np.arange(truth.size), prob_wrong=prob, n_bootstrap=0)
    if truth.all() or not truth.any():
        assert result.auroc is None or math.isnan(result.auroc)
        return
    u = stats.mannwhitneyu(prob[truth], prob[~truth]).statistic
    assert result.auroc == pytest.approx(u / (truth.sum() * (~truth).sum()), abs=1e-12)


def test_mcnemar_exact_below_25_discordant_answers():
    # 7 answers only A gets right, 2 only B, 11 both, 3 neither
    a = [1] * 7 + [0] * 2 + [1] * 11 + [0] * 3
    b = [0] * 7 + [1] * 2 + [1] * 11 + [0] * 3
    result = paired_element_test(a, b, np.arange(23) % 5, n_bootstrap=100)
    assert (result.n_a_only, result.n_b_only) == (7, 2)
    assert result.statistic == 2.0
    assert result.p_value == pytest.approx(2 * (1 + 9 + 36) / 2 ** 9, abs=1e-12)  # 2 P(Bin(9, 1/2) <= 2)
    assert "exact binomial" in result.test
    assert result.difference == pytest.approx((18 - 13) / 23)


def test_mcnemar_chi_square_with_continuity_correction():
    a = [1] * 30 + [0] * 10 + [1] * 5
    b = [0] * 30 + [1] * 10 + [1] * 5
    result = paired_element_test(a, b, np.arange(45) % 4, n_bootstrap=0)
    assert result.statistic == pytest.approx((20 - 1) ** 2 / 40)
    assert result.p_value == pytest.approx(math.erfc(math.sqrt(9.025 / 2)), abs=1e-12)  # chi2(1) survival
    assert "continuity correction" in result.test


def test_paired_bootstrap_states_its_test():
    a = [1, 1, 1, 0, 1, 1]
    b = [0, 1, 0, 0, 1, 0]
    result = paired_element_test(a, b, [0, 0, 1, 1, 2, 2], method="bootstrap", n_bootstrap=500)
    assert result.method == "bootstrap" and "paired bootstrap" in result.test
    assert result.statistic == pytest.approx(3 / 6) and 0 <= result.p_value <= 1
    assert result.low <= result.difference <= result.high


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="method must be one of"):
        paired_element_test([1], [0], [0], method="wilcoxon")
    with pytest.raises(ValueError, match="truly_wrong has 1 entries"):
        element_detection([1, 0], [1], [0, 0])
    with pytest.raises(ValueError, match="wrong must hold booleans"):
        wrong_rates([2, 0], [0, 0], [0, 0])
