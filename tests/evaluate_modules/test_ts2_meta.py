"""The `ts2_meta` evaluate module: compute, add_batch + compute, and the "official" config."""
from pathlib import Path

import numpy as np
import pytest

from scorers.stats.meta import ts2_meta  # noqa: E402

MODULE = str(Path(__file__).resolve().parents[2] / "evaluate_modules" / "ts2_meta")
SCORES = [0.9, 0.6, 0.1, 0.7, 0.8, 0.2, 0.5, 0.4]
SEGS = [0, 0, 0, 0, 120, 120, 120, 120]
NODES = ["0", "1a", "2", "1b", "0", "1", "1", "2"]


def test_compute_matches_library():
    import evaluate

    metric = evaluate.load(MODULE)
    out = metric.compute(scores=SCORES, seg_ids=SEGS, nodes=NODES)
    lib = ts2_meta(SCORES, SEGS, NODES)
    for name in ("rank", "sep", "delta"):
        assert out[name] == pytest.approx(lib[name].statistic["avg"])
    assert out["partitions"]["nat"]["rank"] == pytest.approx(lib.rank.statistic["nat"])
    assert out["n_segs_used"] == {"rank": 2, "sep": 2, "delta": 2}
    assert set(out["per_seg"]["rank"]) == {0, 120}
    assert out["segs"] == "0,120"  # the output states the SEGs it used


def test_add_batch_then_compute_equals_one_shot():
    import evaluate

    metric = evaluate.load(MODULE)
    for start in range(0, len(SCORES), 3):
        stop = start + 3
        metric.add_batch(scores=SCORES[start:stop], seg_ids=SEGS[start:stop], nodes=NODES[start:stop])
    batched = metric.compute()
    one_shot = evaluate.load(MODULE).compute(scores=SCORES, seg_ids=SEGS, nodes=NODES)
    for name in ("rank", "sep", "delta"):
        assert batched[name] == pytest.approx(one_shot[name])


def test_official_config_changes_only_delta():
    import evaluate

    paper = evaluate.load(MODULE).compute(scores=SCORES, seg_ids=SEGS, nodes=NODES)
    official = evaluate.load(MODULE, "official").compute(scores=SCORES, seg_ids=SEGS, nodes=NODES)
    assert official["rank"] == paper["rank"] and official["sep"] == paper["sep"]
    lib = ts2_meta(SCORES, SEGS, NODES, variant="official")
    assert official["delta"] == pytest.approx(lib.delta.statistic["avg"])
    assert official["delta"] != pytest.approx(paper["delta"])


def test_bootstrap_and_orientation_keywords():
    import evaluate

    metric = evaluate.load(MODULE)
    out = metric.compute(scores=SCORES, seg_ids=SEGS, nodes=NODES, higher_is_better=False, n_bootstrap=50, seed=1)
    assert out["rank"] == pytest.approx(ts2_meta(-np.array(SCORES), SEGS, NODES).rank.statistic["avg"])
    lo, hi = out["ci"]["rank"]["avg"]
    assert lo <= out["rank"] <= hi


def test_bad_input_is_named():
    import evaluate

    metric = evaluate.load(MODULE)
    with pytest.raises(ValueError, match="node label"):
        metric.compute(scores=[0.1, 0.2], seg_ids=[0, 0], nodes=["0", "x1"])


@pytest.mark.parametrize("walks", ["levels", "edges"])
def test_built_dir_partitions_and_walks_equal_the_cli(tmp_path, capsys, walks):
    """On a data dir built by `ts2 seg build`, `partitions` (the metadata's column) and `walks` give the numbers of
    `ts2 meta --metadata OUT/metadata.csv [--walks edges]`, per partition, to 1e-9."""
    import json

    import evaluate
    import pandas as pd

    from tests.helpers.cli import run_cli
    from tests.helpers.seg_files import build_walks_dir, built_edges

    out, scores = build_walks_dir(tmp_path, capsys)
    flags = ("--walks", "edges") if walks == "edges" else ()
    code, stdout, err = run_cli(capsys, "meta", scores, "--metadata", out / "metadata.csv", "--json",
                                "--n-bootstrap", 0, *flags)
    assert code == 0, err
    cli = json.loads(stdout)["my_metric"]
    md = pd.read_csv(out / "metadata.csv", dtype=str, keep_default_na=False)
    table = pd.read_csv(scores).set_index("file_name")
    inputs = dict(scores=table.loc[md["file_name"], "my_metric"].tolist(), seg_ids=md["id"].astype(int).tolist(),
                  nodes=md["rank"].tolist(), partitions=md["partition"].tolist())
    kwargs = {"walks": "edges", "segs": str(out / "segs.json")} if walks == "edges" else {}
    got = evaluate.load(MODULE).compute(**inputs, **kwargs)
    assert set(got["partitions"]) == {"alpha", "beta"} and got["walks"] == walks
    for name in ("rank", "sep", "delta"):
        assert got[name] == pytest.approx(cli[name]["summary"]["avg"], abs=1e-9)
        for part in ("alpha", "beta"):
            assert got["partitions"][part][name] == pytest.approx(cli[name]["summary"][part], abs=1e-9)
    if walks == "edges":  # the edges as a mapping, as JSON gives it (string keys, lists)
        mapping = {str(k): [list(e) for e in v] for k, v in built_edges(out).items()}
        again = evaluate.load(MODULE).compute(**inputs, walks="edges", segs=mapping)
        assert again["rank"] == pytest.approx(got["rank"], abs=1e-12)


def test_partitions_left_out_keep_ts2_partitions_and_walks_need_segs():
    import evaluate

    out = evaluate.load(MODULE).compute(scores=SCORES, seg_ids=SEGS, nodes=NODES)
    assert set(out["partitions"]) == {"synth", "nat"} and out["walks"] == "levels"
    with pytest.raises(ValueError, match="segs"):
        evaluate.load(MODULE).compute(scores=SCORES, seg_ids=SEGS, nodes=NODES, walks="edges")
    with pytest.raises(ValueError, match="one for every image"):
        evaluate.load(MODULE).compute(scores=SCORES, seg_ids=SEGS, nodes=NODES, partitions=["a"] * 4 + [""] * 4)
