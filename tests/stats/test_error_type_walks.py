"""rank / sep / delta per error type (:func:`scorers.stats.error_type_walks.error_type_meta`): its bootstrap
intervals over SEGs are the main table's bootstrap, checked against a plain loop written from the documented seed
rule (``tests/helpers/reference_bootstrap.py``)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from scorers.stats.error_type_walks import error_type_meta
from tests.helpers.reference_bootstrap import reference_intervals

# per SEG: (error set, type of each error); SEGs 3 and 6 have no attribute error (no attribute walk: NaN there)
WITH_ATTRIBUTE = [("", ""), ("", ""), ("cat", "missing"), ("dog", "missing"), ("cat;dog", "missing;missing"),
                  ("red", "attribute"), ("cat;red", "missing;attribute")]
WITHOUT_ATTRIBUTE = WITH_ATTRIBUTE[:5]
PARTS = {0: "p2", 1: "real", 2: "p2", 3: "real", 4: "p1", 5: "real", 6: "p1", 7: "p2"}


def _inputs():
    rng = np.random.default_rng(4)
    seg_ids, keys, types, scores = [], [], {}, []
    for seg in PARTS:
        for errors, kinds in (WITHOUT_ATTRIBUTE if seg in (3, 6) else WITH_ATTRIBUTE):
            labels = [e for e in errors.split(";") if e]
            seg_ids.append(seg)
            keys.append(";".join(sorted(labels)))
            types.update({(seg, e): t for e, t in zip(labels, kinds.split(";"))})
            scores.append(1.0 - 0.3 * len(labels) + rng.normal(0, 0.3))
    scores = np.asarray(scores)
    return np.asarray(seg_ids), keys, types, {"m": scores, "n": -scores + rng.normal(0, 0.5, scores.size)}


@pytest.mark.parametrize("n_bootstrap, confidence, seed", [(250, 0.95, 0), (101, 0.8, 17)])
def test_intervals_equal_a_plain_bootstrap_loop(n_bootstrap, confidence, seed):
    seg_ids, keys, types, scores = _inputs()
    out = error_type_meta(seg_ids, keys, types, scores, score_std={c: float(np.std(v)) for c, v in scores.items()},
                          partitions=PARTS, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    checked = 0
    for column, by_type in out.items():
        assert sorted(by_type) == ["attribute", "missing"]
        for kind, result in by_type.items():
            for m in ("rank", "sep", "delta"):
                per_seg = dict(zip(result.seg_ids.tolist(), result.per_seg[m].tolist()))
                expected = reference_intervals(per_seg, PARTS, n_bootstrap, confidence, seed)
                got = result.confidence_interval[m]
                assert list(map(str, got)) == list(expected)  # avg, real, then p1, p2 (the main table's order)
                for key, (low, high) in expected.items():
                    assert got[key].low == pytest.approx(low, abs=1e-12)
                    assert got[key].high == pytest.approx(high, abs=1e-12)
                    assert got[key].low <= result.statistic[m][key] + 1e-12 <= got[key].high + 2e-12
                    checked += 1
                if kind == "attribute":  # two SEGs without an attribute walk are left out of the resampling
                    assert math.isnan(per_seg[3]) and math.isnan(per_seg[6])
    assert checked == 2 * 2 * 3 * 4
    as_json = out["m"]["missing"].to_dict()
    assert as_json["ci"]["rank"]["avg"] == [out["m"]["missing"].confidence_interval["rank"]["avg"].low,
                                            out["m"]["missing"].confidence_interval["rank"]["avg"].high]


def test_no_bootstrap_no_intervals():
    seg_ids, keys, types, scores = _inputs()
    out = error_type_meta(seg_ids, keys, types, scores, score_std={c: 1.0 for c in scores}, partitions=PARTS)
    result = out["m"]["missing"]
    assert result.confidence_interval is None and "ci" not in result.to_dict()
