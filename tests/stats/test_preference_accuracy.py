"""Pairwise preference accuracy: both tie conventions against a plain double loop, hand cases, bootstrap, paired test."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from scorers.stats.preference_accuracy import (compare_preference_accuracy, human_preferences, pairs_from_rankings,
                                               pairwise_preference_accuracy)
from scorers.stats.resampling import resample_indices


# ---- references written independently of the module: plain Python loops ------------------------------------------


def loop_acc_eq(a, b, h, eps):
    """acc_eq at one epsilon, one pair at a time."""
    right = 0
    for x, y, hh in zip(a, b, h):
        d = x - y
        m = 0 if abs(d) <= eps else (1 if d > 0 else -1)
        right += m == hh
    return right / len(a)


def loop_calibrated(a, b, h):
    """Best acc_eq over every candidate epsilon in {0} U {|a - b|}, smallest maximiser (double loop)."""
    best, best_eps = -1.0, None
    for eps in sorted({0.0} | {abs(x - y) for x, y in zip(a, b)}):
        acc = loop_acc_eq(a, b, h, eps)
        if acc > best:
            best, best_eps = acc, eps
    return best, best_eps


def loop_excluded(a, b, h, half=False):
    right = total = 0
    for x, y, hh in zip(a, b, h):
        if hh == 0:
            continue
        total += 1
        if x == y:
            right += 0.5 if half else 0
        elif (x > y) == (hh == 1):
            right += 1
    return right / total


def random_pairs(seed, n=300, levels=6):
    rng = np.random.default_rng(seed)
    # coarse scores so that exact metric ties and repeated gaps happen
    a = rng.integers(0, levels, n) / 2.0
    b = rng.integers(0, levels, n) / 2.0
    h = rng.choice([1, -1, 0], size=n, p=[0.45, 0.35, 0.2])
    items = rng.integers(0, 40, n)
    return a, b, h, items


@pytest.mark.parametrize("seed", range(5))
def test_calibrated_equals_double_loop(seed):
    a, b, h, _ = random_pairs(seed)
    got = pairwise_preference_accuracy(a, b, h, ties="calibrated", n_bootstrap=0)
    value, eps = loop_calibrated(a.tolist(), b.tolist(), h.tolist())
    assert got.statistic == pytest.approx(value, abs=1e-12)  # counts / n: exact up to float division
    assert got.epsilon == eps
    assert got.n_pairs == len(a) and got.n_human_ties == int((h == 0).sum())


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("half", [False, True])
def test_excluded_equals_double_loop(seed, half):
    a, b, h, _ = random_pairs(seed)
    got = pairwise_preference_accuracy(a, b, h, ties="excluded", n_bootstrap=0,
                                       metric_ties="half" if half else "wrong")
    assert got.statistic == pytest.approx(loop_excluded(a.tolist(), b.tolist(), h.tolist(), half), abs=1e-12)
    assert got.n_pairs == int((h != 0).sum()) and got.epsilon is None


def test_hand_case_calibrated():
    # gaps a - b: +0.1 (human A), -0.5 (human B), +0.05 (tie), +0.3 (human B, discordant), 0 (tie)
    a = [1.1, 0.0, 2.05, 1.3, 4.0]
    b = [1.0, 0.5, 2.0, 1.0, 4.0]
    h = ["a", "b", "tie", "b", "tie"]
    # eps = 0: right = pair1, pair2, pair5 -> 3/5; eps = 0.05: + pair3 -> 4/5; eps = 0.1: pair1 becomes a tie
    # (wrong) -> 3/5; larger eps lose more. Best 4/5 at eps 0.05.
    got = pairwise_preference_accuracy(a, b, h, ties="calibrated", n_bootstrap=0)
    assert got.statistic == pytest.approx(0.8, abs=1e-12)
    assert got.epsilon == pytest.approx(0.05, abs=1e-12)  # 2.05 - 2.0 in floating point


def test_hand_case_excluded():
    a = [1.1, 0.0, 2.05, 1.3, 4.0, 3.0]
    b = [1.0, 0.5, 2.0, 1.0, 4.0, 3.0]
    h = [1, -1, 0, -1, 0, 1]  # last pair: human A, metric tie
    # human ties (pairs 3, 5) dropped; pairs 1, 2 right, 4 wrong, 6 a metric tie: 2/4 (wrong) or 2.5/4 (half)
    assert pairwise_preference_accuracy(a, b, h, ties="excluded", n_bootstrap=0).statistic == 0.5
    half = pairwise_preference_accuracy(a, b, h, ties="excluded", n_bootstrap=0, metric_ties="half")
    assert half.statistic == 0.625 and half.n_pairs == 4 and half.n_human_ties == 2


def test_human_labels_accept_letters_and_signs():
    assert human_preferences(["a", "B", " tie ", 1, -1, 0, 1.0]).tolist() == [1, -1, 0, 1, -1, 0, 1]
    with pytest.raises(ValueError, match=r"human\[1\] = 'left'"):
        human_preferences(["a", "left"])
    with pytest.raises(ValueError, match=r"human\[0\] = 2"):
        human_preferences([2])


@pytest.mark.parametrize("ties", ["calibrated", "excluded"])
def test_bootstrap_over_prompts_matches_explicit_resampling(ties):
    a, b, h, items = random_pairs(7, n=120)
    got = pairwise_preference_accuracy(a, b, h, ties=ties, items=items, n_bootstrap=50, seed=3)
    again = pairwise_preference_accuracy(a, b, h, ties=ties, items=items, n_bootstrap=50, seed=3)
    assert got.confidence_interval == again.confidence_interval  # same seed, same interval
    other = pairwise_preference_accuracy(a, b, h, ties=ties, items=items, n_bootstrap=50, seed=4)
    assert other.confidence_interval != got.confidence_interval
    # reference: the prompts that have a kept pair, in first-seen order, resampled with the shared draw
    keep = np.ones(len(a), bool) if ties == "calibrated" else h != 0
    # the module numbers prompts by first appearance, then keeps those with a pair (in that order)
    seen = {}
    codes = np.array([seen.setdefault(x, len(seen)) for x in items.tolist()])
    units = sorted(set(codes[keep].tolist()))
    idx = resample_indices(len(units), 50, 3)
    expected = []
    for row in idx:
        rows = [k for u in row for k in np.flatnonzero(keep & (codes == units[u]))]
        aa, bb, hh = a[rows].tolist(), b[rows].tolist(), h[rows].tolist()
        expected.append(loop_calibrated(aa, bb, hh)[0] if ties == "calibrated" else loop_excluded(aa, bb, hh))
    np.testing.assert_allclose(got.bootstrap, expected, rtol=0, atol=1e-12)
    low, high = np.quantile(expected, [0.025, 0.975])
    assert got.confidence_interval == pytest.approx((low, high), abs=1e-12)
    assert got.n_items == len(units)


def test_pairs_from_rankings_hpdv2_convention():
    # HPDv2 test: rank 1 = best. Images ranked [2, 1, 3, 1]: image 1 and 3 tie for best.
    out = pairs_from_rankings([[2, 1, 3, 1], [1, 2]])
    assert out["group"].tolist() == [0] * 6 + [1]
    assert list(zip(out["a"].tolist(), out["b"].tolist())) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3), (0, 1)]
    assert out["preference"].tolist() == [-1, 1, -1, 1, 0, -1, 1]
    higher = pairs_from_rankings([[0.2, 0.9]], lower_is_better=False)
    assert higher["preference"].tolist() == [-1]
    k = 5
    assert pairs_from_rankings([list(range(k))])["a"].size == k * (k - 1) // 2


def test_paired_comparison():
    a, b, h, items = random_pairs(11, n=200)
    rng = np.random.default_rng(0)
    good = (np.where(h == 1, 1.0, np.where(h == -1, -1.0, 0.0)) + rng.normal(0, 0.3, h.size), np.zeros(h.size))
    cmp = compare_preference_accuracy(good, (a, b), h, ties="excluded", items=items, n_bootstrap=200, seed=1)
    one = pairwise_preference_accuracy(*good, h, ties="excluded", items=items, n_bootstrap=0)
    two = pairwise_preference_accuracy(a, b, h, ties="excluded", items=items, n_bootstrap=0)
    assert cmp.statistic == pytest.approx(one.statistic - two.statistic, abs=1e-12)
    assert cmp.confidence_interval[0] > 0 and cmp.pvalue < 0.05
    assert cmp.pvalue >= 2.0 / 201  # the bootstrap p-value's floor, min(1, 2 (1 + 0) / (1 + B))
    same = compare_preference_accuracy((a, b), (a, b), h, items=items, n_bootstrap=100)
    assert same.statistic == 0 and same.pvalue == 1.0


def test_bad_input_one_line():
    with pytest.raises(ValueError, match="ties must be one of"):
        pairwise_preference_accuracy([1], [0], ["a"], ties="dropped")
    with pytest.raises(ValueError, match="length mismatch"):
        pairwise_preference_accuracy([1, 2], [0], ["a"])
    with pytest.raises(ValueError, match="items has 1 entries"):
        pairwise_preference_accuracy([1, 2], [0, 1], ["a", "b"], items=["p"])


def test_nan_pairs_dropped_and_counted():
    got = pairwise_preference_accuracy([1, np.nan, 0], [0, 0, 1], ["a", "a", "b"], ties="excluded", n_bootstrap=0)
    assert got.statistic == 1.0 and got.n_pairs == 2 and got.n_nan_dropped == 1


def test_import_is_numpy_only():
    code = ("import sys, scorers.stats.preference_accuracy; "
            "print(sorted(m for m in ('scipy', 'pandas', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("ties", ["calibrated", "excluded"])
def test_bootstrap_in_blocks_equals_one_block(ties, monkeypatch):
    import scorers.stats.preference_accuracy as PA

    a, b, h, items = random_pairs(3, n=150)
    whole = pairwise_preference_accuracy(a, b, h, ties=ties, items=items, n_bootstrap=40, seed=2)
    monkeypatch.setattr(PA, "_CHUNK", 7)  # a few resamples per block
    blocks = pairwise_preference_accuracy(a, b, h, ties=ties, items=items, n_bootstrap=40, seed=2)
    np.testing.assert_array_equal(whole.bootstrap, blocks.bootstrap)


def test_pair_table_feeds_the_accuracy(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"item": ["p1", "p1", "p2"], "preference": ["a", "tie", "b"]})
    got = pairwise_preference_accuracy([2.0, 1.0, 0.0], [1.0, 1.0, 3.0], frame["preference"], items=frame["item"],
                                       ties="excluded", n_bootstrap=0)
    assert got.statistic == 1.0 and got.n_pairs == 2 and got.n_items == 2


def test_calibrated_equals_agreement_pairwise_accuracy_on_all_pairs():
    from scorers.stats.agreement import pairwise_accuracy

    rng = np.random.default_rng(5)
    h = rng.integers(1, 6, 40).astype(float)  # Likert ratings: many human ties
    m = np.round(rng.normal(size=40), 1)  # coarse metric: metric ties too
    i, j = np.triu_indices(40, 1)
    got = pairwise_preference_accuracy(m[i], m[j], np.sign(h[i] - h[j]).astype(int), n_bootstrap=0)
    value, eps = pairwise_accuracy(h, m)  # the rating-set path (scorers.stats.preference_accuracy.PairSet.pooled)
    assert got.statistic == pytest.approx(value, abs=1e-12)
    assert got.epsilon == pytest.approx(eps, abs=1e-12)
