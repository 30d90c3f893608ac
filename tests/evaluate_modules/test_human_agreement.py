"""evaluate_modules/human_agreement: a thin wrapper whose numbers are scipy's / the plain loop's."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

MODULE = str(Path(__file__).resolve().parents[2] / "evaluate_modules" / "human_agreement")
HUMAN = [1, 1, 2, 3, 4, 4, 5, 2, 3, 5]
METRIC = [0.50, 0.52, 0.90, 0.10, 0.70, 0.75, 0.95, 0.30, 0.55, 0.90]


def test_compute_equals_scipy_and_the_card_example():
    import evaluate

    out = evaluate.load(MODULE).compute(predictions=METRIC, references=HUMAN)
    assert out["pearson"] == pytest.approx(stats.pearsonr(HUMAN, METRIC).statistic, abs=1e-12)
    assert out["spearman"] == pytest.approx(stats.spearmanr(HUMAN, METRIC).statistic, abs=1e-12)
    assert out["kendall_b"] == pytest.approx(stats.kendalltau(HUMAN, METRIC, variant="b").statistic, abs=1e-12)
    assert out["kendall_c"] == pytest.approx(stats.kendalltau(HUMAN, METRIC, variant="c").statistic, abs=1e-12)
    assert out["n_items"] == 10 and "pairwise_acc_epsilon" in out
    # the card's example (hand-checked in tests/stats/test_agreement.py::test_pairwise_accuracy_tie_calibration_by_hand)
    card = evaluate.load(MODULE).compute(predictions=[0.50, 0.52, 0.90, 0.10], references=[1, 1, 2, 3],
                                         coefficients=["kendall_b", "pairwise_acc"])
    assert (round(card["kendall_b"], 4), card["pairwise_acc"], round(card["pairwise_acc_epsilon"], 2)) == \
        (-0.1826, 0.5, 0.02)


def test_add_batch_then_compute_equals_one_shot_and_grouping_kwargs():
    import evaluate

    metric = evaluate.load(MODULE)
    metric.add_batch(predictions=METRIC[:4], references=HUMAN[:4])
    metric.add_batch(predictions=METRIC[4:], references=HUMAN[4:])
    items = ["a"] * 5 + ["b"] * 5
    batched = metric.compute(coefficients="spearman", grouping="item", items=items, n_bootstrap=20)
    one = evaluate.load(MODULE).compute(predictions=METRIC, references=HUMAN, coefficients="spearman",
                                        grouping="item", items=items, n_bootstrap=20)
    assert batched == one
    want = np.mean([stats.spearmanr(HUMAN[:5], METRIC[:5]).statistic,
                    stats.spearmanr(HUMAN[5:], METRIC[5:]).statistic])
    assert one["spearman"] == pytest.approx(want, abs=1e-12) and len(one["spearman_ci"]) == 2


def test_bad_keyword_is_a_clear_error():
    import evaluate

    with pytest.raises(ValueError, match="unknown coefficient"):
        evaluate.load(MODULE).compute(predictions=METRIC, references=HUMAN, coefficients=["tau"])
