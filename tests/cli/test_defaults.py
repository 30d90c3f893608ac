"""One default SEG set (0-163, graph.DEFAULT_SEG_IDS) in every entry point, and one unit in every JSON
output (fractions, stated; % only in the printed tables). Expected values: the plain scipy loop over SEGs 0-163
(tests/helpers/reference_meta.py) and the README's CLIPScore rank 68.2 %."""
import json
from pathlib import Path

import pytest

from scorers.cli import main
from scorers.stats.meta import TS2Evaluator, ts2_meta
from scorers.tables.pandas_tables import column_scores, read_metadata, read_score_table
from tests.helpers.reference_meta import released_reference

MODULE = str(Path(__file__).resolve().parents[2] / "evaluate_modules" / "ts2_meta")


@pytest.fixture(scope="module")
def clip(shared_ts2):
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    return column_scores(read_score_table(shared_ts2 / "released_scores.csv"), "clipscore"), metadata


def test_python_api_defaults_to_segs_0_163(shared_ts2, clip):
    values, metadata = clip
    ref = released_reference(str(shared_ts2), "clipscore")  # SEGs 0-163
    result = ts2_meta(values, metadata["seg_id"], metadata["node"])
    assert result.segs == "0-163" and round(100 * result.rank.statistic["avg"], 1) == 68.2  # the README's figure
    assert result.rank.statistic["avg"] == pytest.approx(ref["rank"]["summary"]["avg"], abs=1e-12)
    assert result.delta.statistic["avg"] == pytest.approx(ref["delta"]["summary"]["avg"], abs=1e-12)
    many = TS2Evaluator(metadata["seg_id"], metadata["node"]).evaluate_many({"c": values})["c"]
    assert many.segs == "0-163" and many.rank.statistic["avg"] == result.rank.statistic["avg"]
    every = ts2_meta(values, metadata["seg_id"], metadata["node"], seg_subset="all")
    assert every.segs == "0-164"
    assert result.to_dict()["unit"] == "fraction"


def test_evaluate_module_defaults_to_segs_0_163(shared_ts2, clip):
    evaluate = pytest.importorskip("evaluate")
    values, metadata = clip
    out = evaluate.load(MODULE).compute(scores=values.tolist(), seg_ids=metadata["seg_id"].tolist(),
                                        nodes=metadata["node"].tolist())
    ref = released_reference(str(shared_ts2), "clipscore")
    assert out["segs"] == "0-163" and out["unit"] == "fraction"
    assert out["rank"] == pytest.approx(ref["rank"]["summary"]["avg"], abs=1e-12)


def test_every_json_output_is_in_fractions_and_states_segs(shared_ts2, capsys):
    ref = released_reference(str(shared_ts2), "clipscore")
    common = ["--metadata", str(shared_ts2 / "metadata.csv"), "--n-bootstrap", "0"]
    assert main(["meta", str(shared_ts2 / "released_scores.csv"), "--column", "clipscore", "--json", *common]) == 0
    meta = json.loads(capsys.readouterr().out)["clipscore"]
    assert meta["unit"] == "fraction" and meta["segs"] == "0-163"
    assert meta["rank"]["summary"]["avg"] == pytest.approx(ref["rank"]["summary"]["avg"], abs=1e-12)
    assert main(["reproduce", "--scores", str(shared_ts2 / "released_scores.csv"), "--paper",
                 str(shared_ts2 / "paper_table2.csv"), "--clean-quotes", "--json", *common]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["unit"] == "fraction" and rep["segs"] == "0-163"
    row = next(r for r in rep["rows"] if (r["column"], r["meta_metric"], r["partition"]) == ("clipscore", "rank", "avg"))
    # the rows are rounded to 4 decimals of a percent before the unit change: 5e-7 as a fraction
    assert row["ours"] == pytest.approx(ref["rank"]["summary"]["avg"], abs=5e-7)
    assert row["paper"] == pytest.approx(0.714, abs=1e-12)  # the paper's 71.4 %
