"""Scores of extreme magnitude: Pearson and the paper's delta are scale-free, so scores x1e-300 ..
x1e300 must give the same value as the plain scores. Expected values come from scipy and the reference loop."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scorers.stats.agreement import agreement, correlation
from scorers.stats.meta import ts2_meta
from tests.helpers.reference_meta import reference_meta, reference_summary

SCALES = (1e-300, 1e-200, 1e200, 1e300)


@pytest.fixture(scope="module")
def pair():
    rng = np.random.default_rng(7)
    human = rng.normal(size=60)
    return human, human + 0.8 * rng.normal(size=60)


@pytest.mark.parametrize("scale", SCALES)
def test_pearson_of_scaled_scores_equals_scipy(pair, scale):
    human, metric = pair
    expected = stats.pearsonr(human, metric).statistic  # scipy, on the unscaled scores (Pearson is scale-free)
    assert 0.3 < expected < 0.95
    # 1e-12: a few float64 roundings in a 60-term sum
    assert correlation(human, metric * scale, "pearson") == pytest.approx(expected, abs=1e-12)
    assert correlation(human * scale, metric * scale, "pearson") == pytest.approx(expected, abs=1e-12)
    assert correlation(human, metric * scale, "spearman") == pytest.approx(stats.spearmanr(human, metric).statistic,
                                                                        abs=1e-12)


@pytest.mark.parametrize("scale", SCALES)
def test_pearson_by_system_and_bootstrap_of_scaled_scores(pair, scale):
    human, metric = pair
    systems = np.repeat(np.arange(12), 5)
    h_sys = pd.Series(human).groupby(systems).mean().to_numpy()
    m_sys = pd.Series(metric).groupby(systems).mean().to_numpy()
    expected = stats.pearsonr(h_sys, m_sys).statistic  # scipy on the 12 system means
    result = agreement(human, metric * scale, coefficient="pearson", grouping="system", systems=systems)
    assert result.statistic == pytest.approx(expected, abs=1e-12)
    plain = agreement(human, metric, coefficient="pearson", n_bootstrap=200, seed=1)
    scaled = agreement(human, metric * scale, coefficient="pearson", n_bootstrap=200, seed=1)
    assert scaled.statistic == pytest.approx(stats.pearsonr(human, metric).statistic, abs=1e-12)
    # same resamples, scale-free coefficient
    assert scaled.confidence_interval == pytest.approx(plain.confidence_interval, abs=1e-12)


@pytest.fixture(scope="module")
def released(shared_ts2):
    md = pd.read_csv(shared_ts2 / "metadata.csv", dtype=str, keep_default_na=False)
    scores = pd.read_csv(shared_ts2 / "released_scores.csv")["clipscore"].to_numpy(dtype=float)
    keep = md["id"].astype(int).to_numpy() <= 163
    return scores[keep], md["id"][keep].astype(int).to_numpy(), md["rank"][keep].to_numpy()


@pytest.fixture(scope="module")
def reference_delta(released):
    """The reference loop on the unscaled scores (the paper's delta is divided by the score std: scale-free)."""
    scores, seg_ids, nodes = released
    return reference_summary(reference_meta(scores, seg_ids, nodes, variant="paper")["delta"])["avg"]


@pytest.mark.parametrize("scale", SCALES)
def test_paper_delta_of_scaled_scores_equals_the_reference_loop(released, reference_delta, scale):
    scores, seg_ids, nodes = released
    expected = reference_delta
    assert abs(expected) > 0.1  # a real, non-zero delta, so 0.0 or NaN cannot pass
    result = ts2_meta(scores * scale, seg_ids, nodes, variant="paper", seg_subset=None)
    assert result.delta.statistic["avg"] == pytest.approx(expected, rel=1e-9)  # float64 sums of ~2,800 terms
    assert result.score_std == pytest.approx(np.std(scores) * scale, rel=1e-9)
    assert result.rank.statistic["avg"] == pytest.approx(
        ts2_meta(scores, seg_ids, nodes, seg_subset=None).rank.statistic["avg"], abs=1e-12)
