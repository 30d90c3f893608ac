"""scorers.stats.agreement: hand-computed cases, property tests against scipy and a plain double loop, the bootstrap
against explicitly resampled arrays, paired comparison and bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from scorers.stats import agreement as A
from scorers.stats.preference_accuracy import POOLED_PAIRS_MAX_ITEMS
from scorers.stats.resampling import resample_indices

# float tolerance for two exact formulas of the same number computed in different orders (double precision)
TOL = 1e-9

SCIPY = {
    "pearson": lambda h, m: stats.pearsonr(h, m).statistic,
    "spearman": lambda h, m: stats.spearmanr(h, m).statistic,
    "kendall_b": lambda h, m: stats.kendalltau(h, m, variant="b").statistic,
    "kendall_c": lambda h, m: stats.kendalltau(h, m, variant="c").statistic,
}


def plain_pairwise(h, m, epsilon=None):
    """Deutsch et al.'s acc_eq by a plain double loop; epsilon=None tries 0 and every pair gap, keeps the first best."""
    h, m = [float(x) for x in h], [float(x) for x in m]
    n = len(h)
    candidates = [0.0] + sorted({abs(m[i] - m[j]) for i in range(n) for j in range(i + 1, n)})
    if epsilon is not None:
        candidates = [epsilon]
    best, best_eps = -1.0, None
    for eps in candidates:
        good = total = 0
        for i in range(n):
            for j in range(i + 1, n):
                human = (h[i] > h[j]) - (h[i] < h[j])
                gap = m[i] - m[j]
                metric = 0 if abs(gap) <= eps else (1 if gap > 0 else -1)
                good += human == metric
                total += 1
        if good / total > best:
            best, best_eps = good / total, eps
    return best, best_eps


def plain_pairwise_grouped(groups):
    """One epsilon shared by all groups, maximising the mean of the per-group accuracies (plain loops)."""
    candidates = {0.0}
    for h, m in groups:
        candidates |= {abs(m[i] - m[j]) for i in range(len(h)) for j in range(i + 1, len(h))}
    best, best_eps = -1.0, None
    for eps in sorted(candidates):
        value = np.mean([plain_pairwise(h, m, eps)[0] for h, m in groups])
        if value > best + 1e-12:
            best, best_eps = value, eps
    return best, best_eps


# ----------------------------------------------------------------------------------------------------------------------
# hand-computed cases
# ----------------------------------------------------------------------------------------------------------------------

def test_pearson_by_hand():
    # h - 2.5 = (-1.5, -.5, .5, 1.5), m - 2.5 = (-1.5, .5, -.5, 1.5): cov sum 4, both squares 5 -> 4/5
    assert A.correlation([1, 2, 3, 4], [1, 3, 2, 4], "pearson") == pytest.approx(0.8, abs=TOL)


def test_spearman_with_tied_ranks_by_hand():
    # ranks h = (1, 2.5, 2.5, 4), m = (1, 3, 2, 4): cov sum 4.5, squares 4.5 and 5 -> 4.5 / sqrt(22.5) = 3/sqrt(10)
    assert A.correlation([1, 2, 2, 3], [1, 3, 2, 4], "spearman") == pytest.approx(3 / math.sqrt(10), abs=TOL)


def test_kendall_b_and_c_with_ties_by_hand():
    # 6 pairs: 5 concordant, 1 tied in h only (items 2,3). tau_b = 5 / sqrt((6-1)(6-0));
    # tau_c = 2*5 / (n^2 (k-1)/k) with n=4, k=min(3 distinct h, 4 distinct m)=3 -> 10 / (16*2/3) = 15/16
    h, m = [1, 2, 2, 3], [1, 3, 2, 4]
    assert A.correlation(h, m, "kendall_b") == pytest.approx(5 / math.sqrt(30), abs=TOL)
    assert A.correlation(h, m, "kendall_c") == pytest.approx(15 / 16, abs=TOL)


def test_pairwise_accuracy_tie_calibration_by_hand():
    # pairs: (0,1) human tie, gap .02 | (0,2) (1,2) concordant, gaps .40 .38 | three discordant pairs.
    # eps=0: 2/6 correct; eps=.02: the tie is credited too -> 3/6; eps>=.38 loses concordant pairs.
    h, m = [1, 1, 2, 3], [0.50, 0.52, 0.90, 0.10]
    value, eps = A.pairwise_accuracy(h, m)
    assert value == pytest.approx(0.5, abs=TOL)
    assert eps == pytest.approx(0.02, abs=1e-12)
    assert A.pairwise_accuracy(h, m, epsilon=0.0) == (pytest.approx(2 / 6, abs=TOL), 0.0)
    # exact metric ties count as ties at eps = 0: human tie + metric tie is correct, human order + metric tie is not
    assert A.pairwise_accuracy([1, 1, 2], [5, 5, 5], epsilon=0.0)[0] == pytest.approx(1 / 3, abs=TOL)


def test_item_grouping_averages_prompts_and_skips_small_or_constant_ones():
    items = ["a"] * 3 + ["b"] * 3 + ["c"] * 3 + ["d"]
    h = [1, 2, 3, 3, 2, 1, 2, 2, 2, 5]
    m = [1, 2, 3, 1, 2, 3, 1, 2, 3, 4]
    r = A.agreement(h, m, coefficient="spearman", grouping="item", items=items)
    # a: +1, b: -1, c: constant human (skipped), d: one image (skipped)
    assert r.statistic == pytest.approx(0.0, abs=TOL)
    assert (r.n_groups, r.n_groups_skipped, r.n_items) == (2, 2, 6)
    assert r.per_group == {"a": pytest.approx(1.0), "b": pytest.approx(-1.0)}


def test_item_grouping_pairwise_shares_one_epsilon():
    # prompt a: h=(1,1,2) m=(.5,.6,.9): tie gap .1, concordant gaps .4 .3; prompt b: all concordant, gaps .15 .7 .55.
    # eps=0: a 2/3, b 1 -> 5/6; eps=.1: a 3/3, b 1 -> 1.0 (b's smallest gap .15 > .1).
    items = ["a"] * 3 + ["b"] * 3
    h = [1, 1, 2, 1, 2, 3]
    m = [0.5, 0.6, 0.9, 0.2, 0.35, 0.9]
    r = A.agreement(h, m, coefficient="pairwise_acc", grouping="item", items=items)
    assert r.statistic == pytest.approx(1.0, abs=TOL)
    assert r.epsilon == pytest.approx(0.1, abs=1e-12)
    assert r.per_group == {"a": pytest.approx(1.0), "b": pytest.approx(1.0)}
    # a constant-metric prompt is kept by pairwise_acc (ties are what it credits): 3 human-tied pairs, all correct
    r = A.agreement([2, 2, 2], [0.7, 0.7, 0.7], coefficient="pairwise_acc", grouping="item", items=["x"] * 3)
    assert (r.statistic, r.n_groups_skipped) == (pytest.approx(1.0), 0)


def test_system_grouping_correlates_model_means():
    # model means: h (2, 4, 5), m (.2, .6, .4). Pearson: cov .4 / sqrt(42/9 * .08); Spearman of ranks (1,2,3) (1,3,2) = .5
    systems = ["s1", "s1", "s2", "s2", "s3", "s3"]
    h = [1, 3, 4, 4, 5, 5]
    m = [0.1, 0.3, 0.5, 0.7, 0.3, 0.5]
    r = A.agreement(h, m, coefficient="pearson", grouping="system", systems=systems)
    assert r.statistic == pytest.approx(0.4 / math.sqrt(42 / 9 * 0.08), abs=TOL)
    assert (r.n_groups, r.n_items) == (3, 6)
    assert A.agreement(h, m, coefficient="spearman", grouping="system", systems=systems).statistic == pytest.approx(0.5)


def test_nan_pairs_are_dropped_and_counted():
    r = A.agreement([1, 2, np.nan, 4, 5], [1, 2, 3, np.nan, 5], coefficient="pearson")
    assert (r.n_items, r.n_nan_dropped) == (3, 2)
    assert r.statistic == pytest.approx(1.0, abs=TOL)


def test_constant_pooled_input_is_skipped_not_an_error():
    r = A.agreement([3, 3, 3], [1, 2, 3], coefficient="kendall_b")
    assert math.isnan(r.statistic) and r.n_groups_skipped == 1


# ----------------------------------------------------------------------------------------------------------------------
# property tests
# ----------------------------------------------------------------------------------------------------------------------

likert = st.integers(1, 5).map(float)
coarse = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 0.1, 0.3])


@st.composite
def pairs(draw, min_size=3, max_size=30):
    n = draw(st.integers(min_size, max_size))
    h = draw(st.lists(likert, min_size=n, max_size=n))
    m = draw(st.lists(st.one_of(coarse, st.floats(-5, 5, allow_nan=False)), min_size=n, max_size=n))
    return np.array(h), np.array(m)


@pytest.mark.parametrize("coefficient", A.CORRELATIONS)
@settings(max_examples=60, deadline=None)
@given(data=pairs())
def test_pooled_correlations_equal_scipy(coefficient, data):
    h, m = data
    r = A.agreement(h, m, coefficient=coefficient)
    if len(set(h)) < 2 or len(set(m)) < 2:
        assert math.isnan(r.statistic)
    else:
        assert r.statistic == pytest.approx(SCIPY[coefficient](h, m), abs=TOL)


@pytest.mark.parametrize("coefficient", A.CORRELATIONS)
@settings(max_examples=40, deadline=None)
@given(data=pairs(min_size=6, max_size=40), sizes=st.lists(st.integers(1, 7), min_size=1, max_size=8))
def test_per_prompt_values_equal_scipy_per_group(coefficient, data, sizes):
    h, m = data
    items = np.resize(np.repeat(np.arange(len(sizes)), sizes), h.size).astype(str)
    r = A.agreement(h, m, coefficient=coefficient, grouping="item", items=items)
    want = {}
    for label in np.unique(items):
        sel = items == label
        if sel.sum() >= 2 and len(set(h[sel])) > 1 and len(set(m[sel])) > 1:
            want[label] = SCIPY[coefficient](h[sel], m[sel])
    assert set(r.per_group) == set(want)
    for label, value in want.items():
        assert r.per_group[label] == pytest.approx(value, abs=TOL)
    assert r.n_groups_skipped == len(np.unique(items)) - len(want)


@settings(max_examples=60, deadline=None)
@given(data=pairs(min_size=2, max_size=12))
def test_pooled_pairwise_accuracy_equals_plain_loop(data):
    h, m = data
    value, eps = A.pairwise_accuracy(h, m)
    want, want_eps = plain_pairwise(list(h), list(m))
    assert value == pytest.approx(want, abs=TOL)
    assert eps == want_eps  # counts are integers: the first best epsilon is exact


@settings(max_examples=40, deadline=None)
@given(data=pairs(min_size=4, max_size=14), sizes=st.lists(st.integers(2, 5), min_size=1, max_size=4))
def test_grouped_pairwise_accuracy_equals_plain_loop(data, sizes):
    h, m = data
    items = np.resize(np.repeat(np.arange(len(sizes)), sizes), h.size).astype(str)
    r = A.agreement(h, m, coefficient="pairwise_acc", grouping="item", items=items)
    groups = [(list(h[items == g]), list(m[items == g])) for g in np.unique(items) if (items == g).sum() >= 2]
    want, _ = plain_pairwise_grouped(groups)
    assert r.statistic == pytest.approx(want, abs=TOL)
    # the reported epsilon reaches that accuracy when each prompt is scored with it by the plain loop
    at_eps = np.mean([plain_pairwise(gh, gm, r.epsilon)[0] for gh, gm in groups])
    assert at_eps == pytest.approx(want, abs=TOL)


def test_large_groups_take_the_scipy_path_and_agree():
    rng = np.random.default_rng(3)
    h = rng.integers(1, 6, 200).astype(float)
    m = h + rng.normal(0, 2, 200)
    items = np.repeat(["big", "small"], [A.DENSE_MAX + 10, 200 - A.DENSE_MAX - 10])
    for c in A.CORRELATIONS:
        r = A.agreement(h, m, coefficient=c, grouping="item", items=items)
        want = np.mean([SCIPY[c](h[items == g], m[items == g]) for g in ("big", "small")])
        assert r.statistic == pytest.approx(want, abs=TOL)


# ----------------------------------------------------------------------------------------------------------------------
# bootstrap: vectorised resampling == the coefficient of explicitly resampled arrays
# ----------------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def rated():
    rng = np.random.default_rng(11)
    n_items, n_sys = 9, 4
    items = np.repeat([f"p{k}" for k in range(n_items)], n_sys)
    systems = np.tile([f"s{k}" for k in range(n_sys)], n_items)
    h = rng.integers(1, 6, items.size).astype(float)
    m = np.round(h / 5 + rng.normal(0, 0.3, items.size), 1)
    return h, m, items, systems


@pytest.mark.parametrize("coefficient", A.COEFFICIENTS)
def test_pooled_bootstrap_equals_explicit_resamples(rated, coefficient):
    h, m, _, _ = rated
    h, m = h[:14], m[:14]  # the plain pairwise loop is O(n^4)
    r = A.agreement(h, m, coefficient=coefficient, n_bootstrap=12, seed=5)
    idx = resample_indices(h.size, 12, 5)
    for b, rows in enumerate(idx):
        hb, mb = h[rows], m[rows]
        if coefficient == "pairwise_acc":
            want = plain_pairwise(list(hb), list(mb))[0]
        elif len(set(hb)) < 2 or len(set(mb)) < 2:
            want = float("nan")
        else:
            want = SCIPY[coefficient](hb, mb)
        assert r.bootstrap[b] == pytest.approx(want, abs=TOL, nan_ok=True)
    assert r.confidence_interval == (pytest.approx(np.nanquantile(r.bootstrap, 0.025)),
                                     pytest.approx(np.nanquantile(r.bootstrap, 0.975)))


@pytest.mark.parametrize("coefficient", A.COEFFICIENTS)
def test_item_bootstrap_equals_explicit_prompt_resamples(rated, coefficient):
    h, m, items, _ = rated
    r = A.agreement(h, m, coefficient=coefficient, grouping="item", items=items, n_bootstrap=10, seed=2)
    labels = sorted(r.per_group) if coefficient != "pairwise_acc" else sorted(set(items))
    idx = resample_indices(len(labels), 10, 2)
    for b, rows in enumerate(idx):
        groups = [(list(h[items == labels[k]]), list(m[items == labels[k]])) for k in rows]
        if coefficient == "pairwise_acc":
            want = plain_pairwise_grouped(groups)[0]
        else:
            want = np.mean([SCIPY[coefficient](np.array(gh), np.array(gm)) for gh, gm in groups])
        assert r.bootstrap[b] == pytest.approx(want, abs=TOL)


@pytest.mark.parametrize("coefficient", A.COEFFICIENTS)
def test_system_bootstrap_resamples_prompts_and_recomputes_model_means(rated, coefficient):
    h, m, items, systems = rated
    r = A.agreement(h, m, coefficient=coefficient, grouping="system", items=items, systems=systems,
                    n_bootstrap=10, seed=4)
    prompts = np.unique(items)
    idx = resample_indices(prompts.size, 10, 4)
    for b, rows in enumerate(idx):
        chosen = np.concatenate([np.flatnonzero(items == prompts[k]) for k in rows])
        sys_h = [h[chosen][systems[chosen] == s].mean() for s in np.unique(systems)]
        sys_m = [m[chosen][systems[chosen] == s].mean() for s in np.unique(systems)]
        if coefficient == "pairwise_acc":
            want = plain_pairwise(sys_h, sys_m)[0]
        elif len(set(sys_h)) < 2 or len(set(sys_m)) < 2:
            want = float("nan")
        else:
            want = SCIPY[coefficient](np.array(sys_h), np.array(sys_m))
        assert r.bootstrap[b] == pytest.approx(want, abs=TOL, nan_ok=True)


def test_bootstrap_is_seeded():
    h, m = np.arange(20.0) % 5, np.arange(20.0) % 7
    a = A.agreement(h, m, coefficient="spearman", n_bootstrap=50, seed=1)
    b = A.agreement(h, m, coefficient="spearman", n_bootstrap=50, seed=1)
    c = A.agreement(h, m, coefficient="spearman", n_bootstrap=50, seed=2)
    assert a.confidence_interval == b.confidence_interval and a.confidence_interval != c.confidence_interval


# ----------------------------------------------------------------------------------------------------------------------
# paired comparison, inter-rater
# ----------------------------------------------------------------------------------------------------------------------

def test_compare_by_prompt_uses_the_meta_paired_test(rated):
    from scorers.stats.resampling import paired_mean_test

    h, m, items, _ = rated
    noisy = m + np.random.default_rng(0).normal(0, 1, m.size)
    out = A.compare_agreement(h, m, noisy, coefficient="spearman", grouping="item", items=items, n_resamples=500)
    ra = A.agreement(h, m, coefficient="spearman", grouping="item", items=items)
    rb = A.agreement(h, noisy, coefficient="spearman", grouping="item", items=items)
    keys = sorted(set(ra.per_group) & set(rb.per_group))
    diffs = np.array([ra.per_group[k] - rb.per_group[k] for k in keys])
    observed, ci, p = paired_mean_test(diffs, n_resamples=500)
    assert (out.statistic, out.confidence_interval, out.pvalue, out.n_units) == (pytest.approx(observed), ci, p, len(keys))


def test_compare_pooled_is_a_paired_bootstrap(rated):
    h, m, _, _ = rated
    out = A.compare_agreement(h, m, m[::-1].copy(), coefficient="pearson", n_resamples=200, seed=3)
    ra = A.agreement(h, m, coefficient="pearson", n_bootstrap=200, seed=3)
    rb = A.agreement(h, m[::-1].copy(), coefficient="pearson", n_bootstrap=200, seed=3)
    d = ra.bootstrap - rb.bootstrap
    assert out.statistic == pytest.approx(ra.statistic - rb.statistic)
    assert out.confidence_interval == (pytest.approx(np.quantile(d, 0.025)), pytest.approx(np.quantile(d, 0.975)))
    far = min((d <= 0).sum(), (d >= 0).sum())
    assert out.pvalue == pytest.approx(min(1.0, 2 * (1 + far) / 201))
    # identical metrics: difference 0, p = 1
    same = A.compare_agreement(h, m, m, coefficient="kendall_b", n_resamples=50)
    assert same.statistic == 0 and same.pvalue == 1.0


def test_inter_rater_averages_rater_pairs():
    r1, r2, r3 = [1, 2, 3, 4, 5], [1, 3, 2, 4, 5], [5, 4, 3, 2, 1]
    out = A.inter_rater({"a": r1, "b": r2, "c": r3}, coefficient="spearman")
    want = np.mean([stats.spearmanr(r1, r2).statistic, stats.spearmanr(r1, r3).statistic,
                    stats.spearmanr(r2, r3).statistic])
    assert out.metric == "inter-rater" and out.statistic == pytest.approx(want, abs=TOL)


# ----------------------------------------------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(human=[1, 2, 3], metric=[1, 2]), "length mismatch"),
    (dict(human=[1, 2, 3], metric=[1, "x", 3]), "non-numeric"),
    (dict(human=[np.nan, np.nan], metric=[1, 2]), "human has no valid score"),
    (dict(human=[1, 2], metric=[np.nan, np.nan]), "metric has no valid score"),
    (dict(human=[1, np.nan], metric=[np.nan, 2]), "no row has both"),
    (dict(human=[1, 2], metric=[1, 2], coefficient="kendall"), "unknown coefficient"),
    (dict(human=[1, 2], metric=[1, 2], grouping="prompt"), "unknown grouping"),
    (dict(human=[1, 2], metric=[1, 2], grouping="item"), "needs the prompt"),
    (dict(human=[1, 2], metric=[1, 2], grouping="item", items=["a"]), "items has 1 entries"),
    (dict(human=[1, 2], metric=[1, 2], grouping="system", systems=["a", None]), "missing label"),
])
def test_bad_input_is_a_clear_value_error(kwargs, message):
    human, metric = kwargs.pop("human"), kwargs.pop("metric")
    with pytest.raises(ValueError, match=message):
        A.agreement(human, metric, **kwargs)


def test_too_many_pooled_pairs_is_refused_fast():
    n = POOLED_PAIRS_MAX_ITEMS + 1
    with pytest.raises(ValueError, match="grouping='item'"):
        A.agreement(np.arange(n) % 5, np.arange(n, dtype=float), coefficient="pairwise_acc")


def test_pooled_pairs_enumerated_in_blocks_match_the_direct_count():
    # 3,000 items -> the pair set is built in several row blocks; the direct fixed-epsilon count uses np.triu_indices
    rng = np.random.default_rng(5)
    h = rng.integers(1, 6, 3000).astype(float)
    m = np.round(h + rng.normal(0, 1.5, 3000), 1)
    value, eps = A.pairwise_accuracy(h, m)
    assert value == pytest.approx(A.pairwise_accuracy(h, m, epsilon=eps)[0], abs=TOL)
    for other in (0.0, 0.05, 0.1, 0.3, 1.0):
        assert A.pairwise_accuracy(h, m, epsilon=other)[0] <= value + TOL


@pytest.mark.parametrize("coefficient", ["spearman", "pairwise_acc"])
def test_a_prompt_lost_to_nan_counts_as_skipped(coefficient):
    items = ["a", "a", "a", "b", "b", "c", "c", "c"]
    h = [1, 2, 3, np.nan, np.nan, 3, 1, 2]
    m = [1, 2, 3, 0.5, 0.7, 1, 2, 3]
    r = A.agreement(h, m, coefficient=coefficient, grouping="item", items=items)
    assert (r.n_groups, r.n_groups_skipped, r.n_nan_dropped) == (2, 1, 2)


def test_grouped_bootstrap_design_equals_the_six_keywords(rated):
    """Issue 25: the grouping settings travel as one GroupedBootstrap; same numbers as the keywords."""
    h, m, items, _ = rated
    design = A.GroupedBootstrap(grouping="item", items=items, n_bootstrap=100, seed=4)
    by_keywords = A.agreement(h, m, coefficient="kendall_b", grouping="item", items=items, n_bootstrap=100, seed=4)
    by_design = A.agreement(h, m, coefficient="kendall_b", design=design)
    assert ((by_design.statistic, by_design.confidence_interval)
            == (by_keywords.statistic, by_keywords.confidence_interval))
    with pytest.raises(ValueError, match="design= or as keywords, not both"):
        A.agreement(h, m, design=design, n_bootstrap=5)
