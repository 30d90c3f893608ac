"""TS2 meta-metrics pinned by hand-computed SEGs, cross-checked against a plain scipy loop."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorers.checks import as_scores
from scorers.stats.meta import TS2Evaluator, compare, ts2_meta
from tests.helpers.reference_meta import reference_edge_meta, reference_meta


def seg_values(result, metric):
    return {int(s): v for s, v in zip(result[metric].seg_ids, result[metric].per_seg)}


def test_perfect_metric_one_walk():
    # node 0 > 1a > 2: spearman(err, score) = -1 on the only walk; every KS is 1
    r = ts2_meta([0.9, 0.6, 0.1], [0, 0, 0], ["0", "1a", "2"])
    assert r.rank.statistic["avg"] == pytest.approx(1.0)
    assert r.sep.statistic["avg"] == pytest.approx(1.0)
    std = np.std([0.9, 0.6, 0.1])  # population std, 0.32998
    assert r.delta.statistic["avg"] == pytest.approx(((0.9 - 0.6) + (0.6 - 0.1)) / 2 / std)
    official = ts2_meta([0.9, 0.6, 0.1], [0, 0, 0], ["0", "1a", "2"], variant="official")
    assert official.delta.statistic["avg"] == pytest.approx((0.3 + 0.8 + 0.5) / 3)
    assert official.rank.statistic == r.rank.statistic and official.sep.statistic == r.sep.statistic
    assert r.rank.counts.tolist() == [1] and r.sep.counts.tolist() == [3] and r.delta.counts.tolist() == [2]


def test_ties_use_average_ranks():
    # x ranks [1.5,1.5,3.5,3.5], y ranks [3,3,3,1] -> r = -2/sqrt(12)
    r = ts2_meta([0.5, 0.5, 0.5, 0.2], [0] * 4, ["0", "0", "1a", "1a"])
    assert r.rank.statistic["avg"] == pytest.approx(2 / math.sqrt(12))
    # KS({.5,.5}, {.5,.2}) = 0.5 at 0.2
    assert r.sep.statistic["avg"] == pytest.approx(0.5)


def test_nan_scores_are_skipped_and_weights_count_valid_images():
    # SEG 0: walk (0, 1) has valid images 0.9 and 0.3 -> r = -1 with weight 2
    # SEG 1: walk (0a,1): x ranks [1.5,1.5,3], y ranks [3,2,1] -> -r = 1.5/sqrt(3), weight 3;
    #        walk (0b,1): -r = -1, weight 2
    scores = [0.9, np.nan, 0.3, 0.9, 0.8, 0.1, 0.5]
    seg = [0, 0, 0, 1, 1, 1, 1]
    nodes = ["0", "0", "1", "0a", "0a", "0b", "1"]
    r = ts2_meta(scores, seg, nodes)
    per = seg_values(r, "rank")
    assert per[0] == pytest.approx(1.0)
    assert per[1] == pytest.approx((3 * 1.5 / math.sqrt(3) + 2 * -1.0) / 5)


def test_constant_scores_give_zero_rank_and_sep_and_undefined_delta():
    r = ts2_meta([0.4] * 4, [0] * 4, ["0", "1a", "1b", "2"])
    assert r.rank.statistic["avg"] == 0.0
    assert r.sep.statistic["avg"] == 0.0
    assert math.isnan(r.delta.statistic["avg"])  # no spread to normalise by
    assert r.delta.n_skipped == 1


def test_several_heads():
    r = ts2_meta([0.9, 0.2, 0.5], [0, 0, 0], ["0a", "0b", "1"])
    assert r.rank.statistic["avg"] == pytest.approx(0.0)  # walks (+1, -1) with equal weights
    assert r.sep.statistic["avg"] == pytest.approx(1.0)  # 0a-0b is not a pair: same error count
    assert r.delta.statistic["avg"] == pytest.approx(((0.9 - 0.5) + (0.2 - 0.5)) / 2 / np.std([0.9, 0.2, 0.5]))


def test_level_gap_nodes_0_and_2_only():
    r = ts2_meta([0.8, 0.6, 0.1], [0, 0, 0], ["0", "0", "2"])
    assert r.rank.statistic["avg"] == pytest.approx(1.5 / math.sqrt(3))
    assert r.sep.statistic["avg"] == pytest.approx(1.0)
    assert math.isnan(r.delta.statistic["avg"])  # paper delta: no pair one error apart
    official = ts2_meta([0.8, 0.6, 0.1], [0, 0, 0], ["0", "0", "2"], variant="official")
    assert official.delta.statistic["avg"] == pytest.approx(0.7 - 0.1)


def test_walk_with_fewer_than_two_valid_images_is_skipped():
    r = ts2_meta([np.nan, 0.5, 0.9, 0.1], [0, 0, 1, 1], ["0", "1", "0", "1"])
    assert math.isnan(seg_values(r, "rank")[0])
    assert r.rank.n_used == 1 and r.rank.n_skipped == 1
    assert r.rank.statistic["avg"] == pytest.approx(1.0)  # SEG 0 excluded from the mean


def test_lower_is_better_flips_orientation():
    scores = np.array([3.0, 1.0, 0.0, 2.0, 5.0])
    seg, nodes = [0, 0, 0, 0, 0], ["0", "0", "1a", "1b", "2"]
    flipped = ts2_meta(scores, seg, nodes, higher_is_better=False)
    negated = ts2_meta(-scores, seg, nodes)
    for m in ("rank", "sep", "delta"):
        assert flipped[m].statistic == negated[m].statistic


def test_partition_means():
    seg = [0, 0, 111, 111, 140, 140]
    nodes = ["0", "1"] * 3
    r = ts2_meta([0.9, 0.1, 0.1, 0.9, 0.9, 0.1], seg, nodes)
    assert r.rank.statistic == pytest.approx({"avg": 1 / 3, "synth": 1.0, "nat": -1.0, "real": 1.0})
    custom = ts2_meta([0.9, 0.1, 0.1, 0.9, 0.9, 0.1], seg, nodes, partitions={0: "a", 111: "a", 140: "b"})
    assert custom.rank.statistic == pytest.approx({"avg": 1 / 3, "a": 0.0, "b": 1.0})


def test_seg_subset_restricts_segs_and_the_delta_std():
    seg = [0, 0, 1, 1]
    r = ts2_meta([0.9, 0.1, 10.0, -10.0], seg, ["0", "1"] * 2, seg_subset=[0])
    assert r.rank.seg_ids.tolist() == [0]
    assert r.score_std == pytest.approx(0.4)
    assert r.delta.statistic["avg"] == pytest.approx(0.8 / 0.4)
    with pytest.raises(ValueError, match=r"\[7\]"):
        ts2_meta([0.9, 0.1], [0, 0], ["0", "1"], seg_subset=[7])


@pytest.mark.parametrize(
    "scores, seg, nodes, message",
    [
        ([0.1, 0.2], [0, 0, 0], ["0", "1", "2"], "2 entries but seg_ids/nodes have 3"),
        ([0.1, 0.2, 0.3], [0, 0], ["0", "1", "2"], "seg_ids has 2 entries but nodes has 3"),
        (["0.1", '"3', "0.2"], [0, 0, 0], ["0", "1", "2"], r"position 1: '\"3'"),
        ([0.1, np.inf, 0.2], [0, 0, 0], ["0", "1", "2"], "infinite value.*position 1"),
        ([0.1, 0.2, 0.3], [0, 0, 0], ["0", "1?", "2"], "position 1: node label '1\\?'"),
        ([0.1, 0.2], [5, 5], ["1a", "1b"], "SEG 5 has no error-0 node"),
    ],
)
def test_bad_input_names_the_offender(scores, seg, nodes, message):
    with pytest.raises(ValueError, match=message):
        ts2_meta(scores, seg, nodes)


def test_as_scores_clean_quotes_is_explicit():
    assert as_scores(['"3', "2", "", None], clean_quotes=True).tolist()[:2] == [3.0, 2.0]
    assert np.isnan(as_scores(["", None, "0.5"], clean_quotes=False)[:2]).all()  # all-empty: see test_all_nan_...
    with pytest.raises(ValueError, match="clean_quotes"):
        as_scores(['"3'])
    with pytest.raises(ValueError, match="unknown meta|variant"):
        ts2_meta([0.1, 0.2], [0, 0], ["0", "1"], variant="nope")


# --- cross-check against the plain scipy loop ---------------------------------------------------------------------

def _random_segs(draw_levels, draw_nodes_per_level, rng):
    seg_ids, nodes = [], []
    for seg in range(len(draw_levels)):
        for level in range(draw_levels[seg]):
            if level == 1 and seg % 3 == 2:
                continue  # sometimes leave a level gap (0 and 2 without 1)
            for suffix in "abc"[: draw_nodes_per_level[seg]]:
                for _ in range(rng.integers(1, 4)):
                    seg_ids.append(seg)
                    nodes.append(f"{level}{suffix}")
    return np.array(seg_ids), np.array(nodes)


#: random SEGs for the property tests: levels, images per level, scores (ties, NaNs) and the variant
RANDOM_SEGS = dict(
    levels=st.lists(st.integers(1, 4), min_size=1, max_size=5),
    per_level=st.lists(st.integers(1, 3), min_size=5, max_size=5),
    seed=st.integers(0, 2**31 - 1),
    tie_grid=st.sampled_from([0, 3, 10]),
    nan_rate=st.sampled_from([0.0, 0.2]),
    variant=st.sampled_from(["paper", "official"]),
)


@settings(max_examples=60, deadline=None)
@given(**RANDOM_SEGS)
def test_matches_reference_loop_on_random_segs(levels, per_level, seed, tie_grid, nan_rate, variant):
    rng = np.random.default_rng(seed)
    seg_ids, nodes = _random_segs(levels, per_level, rng)
    scores = rng.random(len(seg_ids))
    if tie_grid:
        scores = np.round(scores * tie_grid) / tie_grid  # many ties
    scores[rng.random(len(scores)) < nan_rate] = np.nan
    if np.isnan(scores).all():
        scores[0] = 0.5
    ours = ts2_meta(scores, seg_ids, nodes, variant=variant)
    ref = reference_meta(scores, seg_ids, nodes, variant=variant)
    for metric in ("rank", "sep", "delta"):
        got = seg_values(ours, metric)
        for seg, want in ref[metric].items():
            if np.isnan(want):
                assert np.isnan(got[seg]), (metric, seg)
            else:
                assert got[seg] == pytest.approx(want, abs=1e-9), (metric, seg)


def test_matches_reference_loop_on_released_scores(shared_ts2):
    import pandas as pd

    md = pd.read_csv(shared_ts2 / "metadata.csv")
    released = pd.read_csv(shared_ts2 / "released_scores.csv")
    for column in ("clipscore", "llava_tifa"):
        # every SEG, as the reference loop below (the default set is 0-163 since issue 23 item 5)
        ours = ts2_meta(released[column], md["id"], md["rank"], seg_subset="all")
        ref = reference_meta(released[column].to_numpy(), md["id"].to_numpy(), md["rank"].to_numpy())
        for metric in ("rank", "sep", "delta"):
            want = np.array([ref[metric][s] for s in ours[metric].seg_ids])
            np.testing.assert_allclose(ours[metric].per_seg, want, atol=1e-9, equal_nan=True)


def test_evaluate_many_equals_one_at_a_time():
    rng = np.random.default_rng(0)
    seg_ids, nodes = _random_segs([3, 4, 2, 3], [2, 1, 3, 2, 2], rng)
    columns = {f"m{k}": np.round(rng.random(len(seg_ids)) * 5) / 5 for k in range(4)}
    columns["m1"][::4] = np.nan
    evaluator = TS2Evaluator(seg_ids, nodes)
    many = evaluator.evaluate_many(columns, higher_is_better={"m0": True, "m1": False, "m2": True, "m3": True})
    for name, values in columns.items():
        one = ts2_meta(values, seg_ids, nodes, higher_is_better=(name != "m1"))
        for metric in ("rank", "sep", "delta"):
            np.testing.assert_allclose(many[name][metric].per_seg, one[metric].per_seg, rtol=0, atol=1e-12)


# --- bootstrap and paired comparison ----------------------------------------------------------------------------

def _synthetic(n_segs=40, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    seg_ids, nodes, errors = [], [], []
    for seg in range(n_segs):
        for node, err in (("0", 0), ("1a", 1), ("1b", 1), ("2", 2)):
            for _ in range(3):
                seg_ids.append(seg)
                nodes.append(node)
                errors.append(err)
    errors = np.array(errors, dtype=float)
    return np.array(seg_ids), np.array(nodes), -errors + noise * rng.standard_normal(errors.size) * 3


def test_bootstrap_ci_is_seeded_and_brackets_the_mean():
    seg_ids, nodes, scores = _synthetic()
    a = ts2_meta(scores, seg_ids, nodes, n_bootstrap=500, seed=3)
    b = ts2_meta(scores, seg_ids, nodes, n_bootstrap=500, seed=3)
    assert a.rank.confidence_interval == b.rank.confidence_interval
    lo, hi = a.rank.confidence_interval["avg"]
    assert lo < a.rank.statistic["avg"] < hi
    assert ts2_meta(scores, seg_ids, nodes).rank.confidence_interval is None


def test_paired_comparison():
    seg_ids, nodes, good = _synthetic(noise=0.1, seed=1)
    _, _, bad = _synthetic(noise=2.0, seed=2)
    rg, rb = ts2_meta(good, seg_ids, nodes), ts2_meta(bad, seg_ids, nodes)
    better = compare(rg, rb, meta_metric="rank", n_resamples=2000)
    assert better.statistic > 0.3 and better.pvalue < 0.01 and better.confidence_interval.low > 0
    same = compare(rg, rg, meta_metric="sep", n_resamples=500)
    assert same.statistic == 0 and same.pvalue == 1.0
    assert better.n_units == 40


# --- sep when missing scores empty a whole error level (issue 12, item 1) -----------------------------------------

def test_sep_is_zero_and_counted_when_nan_removes_a_whole_level():
    # SEG 0: nodes 0 / 1a / 1b; NaN empties level 1, so the pairs (0,1a), (0,1b) exist but none can be computed:
    # the spec's rule gives the SEG sep 0, and it stays in the mean. SEG 1: 0 = {0.9}, 1 = {0.1}: KS 1.
    scores = [0.9, 0.8, np.nan, np.nan, 0.9, 0.1]
    seg = [0, 0, 0, 0, 1, 1]
    nodes = ["0", "0", "1a", "1b", "0", "1"]
    r = ts2_meta(scores, seg, nodes)
    assert seg_values(r, "sep") == {0: 0.0, 1: 1.0}
    assert r.sep.counts.tolist() == [0, 1]
    assert r.sep.statistic["avg"] == pytest.approx(0.5)  # (0 + 1) / 2, hand-computed
    assert r.sep.n_used == 2 and r.sep.n_skipped == 0 and r.sep.n_no_pair == 1
    assert r.to_dict()["sep"]["n_no_pair"] == 1


def test_sep_is_zero_when_nan_removes_the_head_level():
    # SEG 0 keeps only level-2 scores (head and level 1 all NaN): no computable pair -> 0
    r = ts2_meta([np.nan, np.nan, 0.3, 0.2, 0.1, 0.9, 0.2], [0] * 5 + [1] * 2, ["0", "1a", "2", "2", "2", "0", "1"])
    assert seg_values(r, "sep") == {0: 0.0, 1: 1.0}
    assert r.sep.statistic["avg"] == pytest.approx(0.5)
    # walk 0-1a-2 still has 3 valid images, all on level 2: constant error count -> r = 0, weight 3
    assert seg_values(r, "rank")[0] == 0.0


@pytest.mark.parametrize("seed", range(8))
def test_sep_matches_reference_loop_under_random_level_masks(seed):
    # random NaN masks that often empty whole nodes or levels, checked per SEG against the scipy loop
    rng = np.random.default_rng(100 + seed)
    seg_ids, nodes = _random_segs([3, 4, 2, 3, 4, 3], [2, 1, 3, 2, 2, 3], rng)
    scores = np.round(rng.random(len(seg_ids)) * 10) / 10
    levels = np.array([int(n[0]) for n in nodes])
    for seg in np.unique(seg_ids):
        if rng.random() < 0.5:  # drop one whole error level of this SEG
            level = rng.choice(np.unique(levels[seg_ids == seg]))
            scores[(seg_ids == seg) & (levels == level)] = np.nan
    scores[rng.random(len(scores)) < 0.3] = np.nan
    if np.isnan(scores).all():
        scores[0] = 0.5
    for variant in ("paper", "official"):
        ours = ts2_meta(scores, seg_ids, nodes, variant=variant)
        ref = reference_meta(scores, seg_ids, nodes, variant=variant)
        for metric in ("rank", "sep", "delta"):
            want = np.array([ref[metric][s] for s in ours[metric].seg_ids])
            np.testing.assert_allclose(ours[metric].per_seg, want, rtol=0, atol=1e-9, equal_nan=True)
        want_avg = np.nanmean(list(ref["sep"].values()))
        assert ours.sep.statistic["avg"] == pytest.approx(want_avg, abs=1e-12)
        assert not np.isnan(ours.sep.per_seg).any()  # sep is never undefined


def test_reference_loop_handles_all_equal_scores():
    # The hypothesis example that made tests/helpers/reference_meta.py divide by a zero std (all valid scores equal):
    # delta has no spread to normalise by -> NaN on both sides; rank and sep are 0.
    scores = np.array([0.5, np.nan, 0.5, 0.5])
    seg_ids, nodes = np.array([0, 0, 0, 0]), np.array(["0a", "0b", "1a", "2a"])
    ours = ts2_meta(scores, seg_ids, nodes)
    ref = reference_meta(scores, seg_ids, nodes)
    assert ref["std"] == 0.0 and math.isnan(ref["delta"][0]) and math.isnan(seg_values(ours, "delta")[0])
    assert ref["rank"][0] == 0.0 == seg_values(ours, "rank")[0]
    assert ref["sep"][0] == 0.0 == seg_values(ours, "sep")[0]


# --- numbers a user compares (issue 12, items 6 and 7) -----------------------------------------------------------

def test_all_nan_metric_is_an_error():
    with pytest.raises(ValueError, match=r"blank has no valid score \(all 3 values are NaN or empty\)"):
        TS2Evaluator([0, 0, 0], ["0", "1", "2"]).evaluate([np.nan] * 3, name="blank")
    with pytest.raises(ValueError, match="no valid score"):
        as_scores(["", "nan", None])
    # valid scores only outside the evaluated SEGs: nothing to evaluate either
    with pytest.raises(ValueError, match="m has no valid score in the evaluated SEGs"):
        TS2Evaluator([0, 0, 1, 1], ["0", "1", "0", "1"], seg_subset=[0]).evaluate(
            [np.nan, np.nan, 0.2, 0.1], name="m")


def test_higher_is_better_mapping_must_cover_every_column():
    evaluator = TS2Evaluator([0, 0], ["0", "1"])
    with pytest.raises(ValueError, match=r"higher_is_better has no entry for column\(s\) \['b'\]"):
        evaluator.evaluate_many({"a": [0.9, 0.1], "b": [0.2, 0.3]}, higher_is_better={"a": True})
    with pytest.raises(ValueError, match=r"higher_is_better names unknown column\(s\) \['c'\]"):
        evaluator.evaluate_many({"a": [0.9, 0.1]}, higher_is_better={"a": True, "c": False})


def test_results_state_the_segs_they_cover():
    r = ts2_meta([0.9, 0.1, 0.8, 0.2, 0.7, 0.3, 0.5, 0.4], [0, 0, 1, 1, 2, 2, 5, 5], ["0", "1"] * 4,
                 seg_subset=[0, 1, 2, 5])
    assert r.to_dict()["segs"] == "0-2,5" and r.to_dict()["n_segs"] == 4
    assert r.segs == "0-2,5"


# --- the edge walk rule (a built dir's own edges) -----------------------------------------------------------------

#: error sets {} -> {a} -> {a, c} and {} -> {b} -> {b, d}: nodes 0, 1a, 1b, 2a, 2b, one image each; the sets do not
#: nest across branches, so TS2's level rule walks 0 -> 1a -> 2b and 0 -> 1b -> 2a too, which no edge joins
HAND_NODES = ["0", "1a", "1b", "2a", "2b"]
HAND_SCORES = [1.0, 0.8, 0.4, 0.4, 0.2]
HAND_EDGES = {0: [("0", "1a"), ("0", "1b"), ("1a", "2a"), ("1b", "2b")]}


def test_edge_walks_by_hand_differ_from_level_walks():
    """Hand computation (scores 0: 1.0, 1a: 0.8, 1b: 0.4, 2a: 0.4, 2b: 0.2; error counts 0, 1, 1, 2, 2).

    rank, levels: four walks of 3 images. (0,1a,2a) 1.0,0.8,0.4, (0,1a,2b) 1.0,0.8,0.2 and (0,1b,2b) 1.0,0.4,0.2
    fall strictly: -rho = 1. (0,1b,2a) 1.0,0.4,0.4: score ranks 3, 1.5, 1.5 against error ranks 1, 2, 3; centred
    (1, -0.5, -0.5) and (-1, 0, 1): cov -1.5, sums of squares 1.5 and 2, rho = -1.5 / sqrt(3) = -0.8660254038.
    Weighted by 3 images each: (1 + 1 + 0.8660254038 + 1) / 4 = 0.9665063509.
    rank, edges: walks (0,1a,2a) and (0,1b,2b) only, both falling strictly: 1.0.
    sep, levels: the 8 pairs of different error counts; one image per node, so KS is 1 between different scores and
    0 between equal ones: (1b, 2a) 0.4 vs 0.4 gives 0, the other 7 give 1: 7 / 8 = 0.875.
    sep, edges: the 6 pairs joined by a directed path (0-1a, 0-1b, 0-2a, 0-2b, 1a-2a, 1b-2b): all 1: 1.0.
    delta: population std of the scores: mean 0.56, squares 0.1936 + 0.0576 + 0.0256 + 0.0256 + 0.1296 = 0.432,
    std = sqrt(0.432 / 5) = sqrt(0.0864) = 0.2939387691.
    delta, levels: pairs one level apart: 0-1a 0.2, 0-1b 0.6, 1a-2a 0.4, 1a-2b 0.6, 1b-2a 0.0, 1b-2b 0.2; mean 2.0 / 6
    = 0.3333333333; / std = 1.1340230290.
    delta, edges: the 4 edges: 0.2, 0.6, 0.4, 0.2; mean 0.35; / std = 1.1907241805.
    """
    levels = ts2_meta(HAND_SCORES, [0] * 5, HAND_NODES)
    edges = ts2_meta(HAND_SCORES, [0] * 5, HAND_NODES, walks="edges", edges=HAND_EDGES)
    assert levels.rank.per_seg[0] == pytest.approx(0.9665063509, abs=1e-9)
    assert levels.sep.per_seg[0] == pytest.approx(0.875, abs=1e-12)
    assert levels.delta.per_seg[0] == pytest.approx(1.1340230290, abs=1e-9)
    assert edges.rank.per_seg[0] == pytest.approx(1.0, abs=1e-12)
    assert edges.sep.per_seg[0] == pytest.approx(1.0, abs=1e-12)
    assert edges.delta.per_seg[0] == pytest.approx(1.1907241805, abs=1e-9)
    assert (levels.rank.counts[0], edges.rank.counts[0], levels.sep.counts[0], edges.sep.counts[0]) == (4, 2, 8, 6)
    assert edges.walks == "edges" and edges.to_dict()["walks"] == "edges"
    assert levels.walks == "levels" and "walks" not in levels.to_dict()  # absent: TS2's rule, as before


def test_edge_walks_reference_by_hand():
    ref = reference_edge_meta(HAND_SCORES, [0] * 5, HAND_NODES, HAND_EDGES)
    assert (ref["rank"][0], ref["sep"][0]) == (pytest.approx(1.0), pytest.approx(1.0))
    assert ref["delta"][0] == pytest.approx(1.1907241805, abs=1e-9)


def test_walks_edges_needs_edges_and_refuses_the_published_variant():
    with pytest.raises(ValueError, match="walks='edges'.*edges"):
        ts2_meta(HAND_SCORES, [0] * 5, HAND_NODES, walks="edges")
    with pytest.raises(ValueError, match="walks must be one of levels, edges"):
        ts2_meta(HAND_SCORES, [0] * 5, HAND_NODES, walks="paths")
    with pytest.raises(ValueError, match="published"):
        ts2_meta(HAND_SCORES, [0] * 5, HAND_NODES, walks="edges", edges=HAND_EDGES, variant="published")
    with pytest.raises(ValueError, match="SEG 0: edge 1a -> 3 names node '3'"):
        ts2_meta(HAND_SCORES, [0] * 5, HAND_NODES, walks="edges", edges={0: [("1a", "3")]})
    with pytest.raises(ValueError, match="SEG 0 has no entry in the edges"):
        ts2_meta(HAND_SCORES, [0] * 5, HAND_NODES, walks="edges", edges={7: []})


def _random_edges(seg_ids, nodes, rng):
    """Random edges between nodes whose error counts grow (a DAG, as error sets give), some nodes left unreached."""
    edges = {}
    for seg in sorted(set(seg_ids.tolist())):
        labels = sorted(set(nodes[seg_ids == seg].tolist()), key=lambda n: (int(n[:-1]), n))
        count = {n: int(n[:-1]) for n in labels}
        edges[seg] = [(a, b) for a in labels for b in labels if count[b] > count[a] and rng.random() < 0.5]
    return edges


@settings(max_examples=60, deadline=None)
@given(**RANDOM_SEGS)
def test_edge_walks_match_the_reference_loop_on_random_graphs(levels, per_level, seed, tie_grid, nan_rate, variant):
    rng = np.random.default_rng(seed)
    seg_ids, nodes = _random_segs(levels, per_level, rng)
    edges = _random_edges(seg_ids, nodes, rng)
    scores = rng.random(len(seg_ids))
    if tie_grid:
        scores = np.round(scores * tie_grid) / tie_grid
    scores[rng.random(len(scores)) < nan_rate] = np.nan
    if np.isnan(scores).all():
        scores[0] = 0.5
    ours = ts2_meta(scores, seg_ids, nodes, variant=variant, walks="edges", edges=edges)
    ref = reference_edge_meta(scores, seg_ids, nodes, edges, variant=variant)
    for metric in ("rank", "sep", "delta"):
        got = seg_values(ours, metric)
        for seg, want in ref[metric].items():
            if np.isnan(want):
                assert np.isnan(got[seg]), (metric, seg)
            else:
                assert got[seg] == pytest.approx(want, abs=1e-9), (metric, seg)
