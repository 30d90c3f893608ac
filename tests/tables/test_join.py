"""Score tables with keys are joined to the metadata by key, never paired by row position.

Expected values come from the plain scipy loop (tests/helpers/reference_meta.py) on the release's rows in metadata order,
never from the join itself. The shuffled/sorted comparison is what a user does to a ``ts2 score`` CSV (sort by score,
filter, re-save) before feeding it back: before the fix ``ts2 meta`` took such rows in metadata order (rank of the
issue's sample moved from -17.3 to +6.6, exit 0, no warning).
"""
import json

import numpy as np
import pandas as pd
import pytest

from scorers.cli import main
from scorers.tables.join import ROW_POSITION_NOTE, join_scores
from scorers.stats.orientation import RELEASED_LOWER_IS_BETTER, resolve_orientation
from scorers.ts2.meta_from_tables import meta_from_tables
from scorers.ts2.options import MetaOptions
from scorers.tables.pandas_tables import read_metadata
from tests.helpers.reference_meta import reference_meta, reference_summary, released_reference

PARTS = ("avg", "synth", "nat", "real")


@pytest.fixture(scope="module")
def metadata(shared_ts2):
    return read_metadata(shared_ts2 / "metadata.csv")


@pytest.fixture(scope="module")
def keyed(shared_ts2, metadata):
    """The release's clipscore and llmscore_ec with seg_id,file_name keys: sorted (metadata order) and shuffled."""
    released = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    frame = pd.DataFrame({"seg_id": metadata["seg_id"], "file_name": metadata["file_name"],
                          "node": metadata["node"], "clipscore": released["clipscore"],
                          "llmscore_ec": released["llmscore_ec"]})
    shuffled = frame.sample(frac=1.0, random_state=7).reset_index(drop=True)
    assert not (shuffled["file_name"] == frame["file_name"]).all()
    return frame, shuffled


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def assert_matches_reference(summary_by_metric, ref, scale=1.0, abs_tol=1e-12):
    for metric in ("rank", "sep", "delta"):
        for part in PARTS:
            assert summary_by_metric[metric][part] == pytest.approx(scale * ref[metric]["summary"][part],
                                                                    abs=abs_tol), (metric, part)


def test_meta_on_shuffled_keyed_rows_equals_the_reference(tmp_path, shared_ts2, keyed, capsys):
    frame, shuffled = keyed
    shuffled.to_csv(tmp_path / "shuffled.csv", index=False)
    frame.to_csv(tmp_path / "sorted.csv", index=False)
    ref = released_reference(str(shared_ts2), "clipscore")  # scipy loop, SEGs 0-163, metadata order
    payloads = {}
    for name in ("sorted", "shuffled"):
        code, out, err = run(capsys, "meta", tmp_path / f"{name}.csv", "--metadata", shared_ts2 / "metadata.csv",
                             "--column", "clipscore", "--json", "--n-bootstrap", "0")
        assert code == 0, err
        payloads[name] = json.loads(out)["clipscore"]
        assert payloads[name]["pairing"] == "keys (seg_id, file_name)" and payloads[name]["notes"] == []
        assert_matches_reference({m: payloads[name][m]["summary"] for m in ("rank", "sep", "delta")}, ref)
    assert payloads["sorted"]["rank"]["per_seg"] == payloads["shuffled"]["rank"]["per_seg"]


def test_row_position_would_have_given_another_number(shared_ts2, metadata, keyed):
    """The bug's size on this sample: the shuffled values taken in row order (what the code did) are far off."""
    _, shuffled = keyed
    wrong = reference_meta(shuffled["clipscore"].astype(float).to_numpy()[metadata["seg_id"] <= 163],
                           metadata["seg_id"][metadata["seg_id"] <= 163].to_numpy(),
                           metadata["node"][metadata["seg_id"] <= 163].to_numpy())
    right = released_reference(str(shared_ts2), "clipscore")["rank"]["summary"]["avg"]
    assert abs(reference_summary(wrong["rank"])["avg"] - right) > 0.3


def test_reproduce_report_and_library_join_shuffled_rows(tmp_path, shared_ts2, keyed, capsys, monkeypatch):
    from tests.helpers.report_figures import skip_report_figures

    skip_report_figures(monkeypatch)  # the leaderboard's numbers are checked here; its figures elsewhere
    _, shuffled = keyed
    path = tmp_path / "shuffled.csv"
    shuffled.to_csv(path, index=False)
    ref_clip = released_reference(str(shared_ts2), "clipscore")
    ref_ec = released_reference(str(shared_ts2), "llmscore_ec", higher_is_better=False)
    # the library path (reproduce_table -> meta_from_tables): llmscore_ec oriented by the release's known fact
    evaluated = meta_from_tables(path, shared_ts2 / "metadata.csv", columns=["clipscore", "llmscore_ec"])
    assert evaluated.orientation == {"clipscore": True, "llmscore_ec": False} and evaluated.notes == []
    assert_matches_reference(evaluated.results["clipscore"].summary(), ref_clip)
    assert_matches_reference(evaluated.results["llmscore_ec"].summary(), ref_ec)
    # ts2 reproduce --scores on the shuffled file, printed as Markdown (values in %, one decimal)
    code, out, err = run(capsys, "reproduce", "--scores", path, "--metadata", shared_ts2 / "metadata.csv",
                         "--paper", shared_ts2 / "paper_table2.csv", "--markdown")
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("| clipscore |"))
    assert row.split("|")[2].strip().startswith(f"{100 * ref_clip['rank']['summary']['avg']:.1f} / 71.4")
    # ts2 report on the shuffled file: leaderboard.csv holds % rounded to 4 decimals (hence abs 5e-5)
    code, out, err = run(capsys, "report", path, "--metadata", shared_ts2 / "metadata.csv", "--out", tmp_path / "r",
                         "--n-bootstrap", "0", "--column", "clipscore", "--column", "llmscore_ec")
    assert code == 0, err
    assert "paired by row position" not in out
    board = pd.read_csv(tmp_path / "r" / "leaderboard.csv").set_index("column")
    for column, ref in (("clipscore", ref_clip), ("llmscore_ec", ref_ec)):
        for metric in ("rank", "sep", "delta"):
            assert board.loc[column, f"{metric}_avg"] == pytest.approx(100 * ref[metric]["summary"]["avg"], abs=5e-5)


def test_image_id_keys_join_the_official_evaluator_layout(shared_ts2, metadata):
    """``id,image_id,rank,score`` (clipscore_fullprecision.csv, the official evaluator's layout) shuffled: joined on
    (id, image_id), image_id being the image's position inside its SEG."""
    table = pd.read_csv(shared_ts2 / "clipscore_fullprecision.csv", dtype=str)
    shuffled = table.sample(frac=1.0, random_state=3)
    evaluated = meta_from_tables(shuffled, metadata, columns=["score"], options=MetaOptions(seg_subset="all"))
    assert evaluated.pairing == {"scores": "keys (id, image_id)"}
    ref = reference_meta(table["score"].astype(float).to_numpy(), metadata["seg_id"].to_numpy(),
                         metadata["node"].to_numpy())
    for metric in ("rank", "sep", "delta"):
        assert evaluated.results["score"][metric].statistic["avg"] == pytest.approx(
            reference_summary(ref[metric])["avg"], abs=1e-12)


def test_duplicate_key_is_refused_naming_it(tmp_path, shared_ts2, keyed, capsys):
    frame, _ = keyed
    dup = frame.copy()
    dup.loc[5, ["seg_id", "file_name"]] = dup.loc[4, ["seg_id", "file_name"]].to_numpy()  # same row count
    dup.to_csv(tmp_path / "dup.csv", index=False)
    code, out, err = run(capsys, "meta", tmp_path / "dup.csv", "--metadata", shared_ts2 / "metadata.csv")
    assert code == 2 and out == ""
    assert "1 duplicate key(s) (seg_id, file_name): (0, 'images/000-04.jpg') on lines 6, 7" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unknown_keys_are_refused_naming_the_first_few(tmp_path, shared_ts2, keyed, capsys):
    frame, _ = keyed
    bad = frame.copy()
    for row in range(7):
        bad.loc[row, "file_name"] = f"images/nope-{row}.jpg"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    code, _, err = run(capsys, "meta", tmp_path / "bad.csv", "--metadata", shared_ts2 / "metadata.csv")
    assert code == 2
    assert ("7 score row(s) match no metadata row (seg_id, file_name): (0, 'images/nope-0.jpg') (line 2), "
            "(0, 'images/nope-1.jpg') (line 3)") in err and "and 2 more" in err
    bad = frame.copy()
    bad.loc[0, "seg_id"] = 999
    bad.to_csv(tmp_path / "seg.csv", index=False)
    code, _, err = run(capsys, "meta", tmp_path / "seg.csv", "--metadata", shared_ts2 / "metadata.csv")
    assert code == 2 and "unknown SEG id(s) [999] (first on line 2)" in err


def test_keyless_table_is_row_aligned_and_says_so(tmp_path, shared_ts2, keyed, capsys):
    frame, _ = keyed
    frame[["clipscore"]].to_csv(tmp_path / "plain.csv", index=False)
    code, out, err = run(capsys, "meta", tmp_path / "plain.csv", "--metadata", shared_ts2 / "metadata.csv",
                         "--n-bootstrap", "0")
    assert code == 0, err
    assert f"note: plain.csv: {ROW_POSITION_NOTE}" in out
    code, out, err = run(capsys, "meta", tmp_path / "plain.csv", "--metadata", shared_ts2 / "metadata.csv",
                         "--json", "--n-bootstrap", "0")
    payload = json.loads(out)["clipscore"]
    assert payload["pairing"] == "row position" and payload["notes"] == [f"plain.csv: {ROW_POSITION_NOTE}"]
    assert err == ""
    assert_matches_reference({m: payload[m]["summary"] for m in ("rank", "sep", "delta")},
                             released_reference(str(shared_ts2), "clipscore"))


def test_keyless_table_with_seg_ids_out_of_order_is_refused(metadata):
    table = pd.DataFrame({"seg_id": metadata["seg_id"].to_numpy()[::-1], "x": np.arange(len(metadata), dtype=float)})
    with pytest.raises(ValueError, match=r"line 2: SEG id 164 but metadata row 2 is SEG 0"):
        join_scores(table, metadata)


def test_the_release_file_is_row_aligned_because_its_image_id_is_not_a_key(shared_ts2, metadata):
    released = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    joined = join_scores(released, metadata)
    assert joined.keys is None and joined.note.startswith(ROW_POSITION_NOTE)
    assert "image_id column has 164 empty cell(s)" in joined.note


# ------------------------------------------------------------------------------------------------ orientation


def test_orientation_resolver_precedence():
    paper = pd.DataFrame({"column": ["a", "b"], "higher_is_better": ["true", "false"]})
    assert resolve_orientation(["a", "b", "llmscore_ec", "x"]) == {"a": True, "b": True, "llmscore_ec": False,
                                                                   "x": True}
    assert resolve_orientation(["a", "b"], paper=paper) == {"a": True, "b": False}
    assert resolve_orientation(["llmscore_ec"], higher_is_better=["llmscore_ec"]) == {"llmscore_ec": True}
    assert resolve_orientation(["a", "x"], lower_is_better=["x"], higher_is_better={"a": False, "zz": True}) == {
        "a": False, "x": False}
    assert resolve_orientation(["a", "b"], higher_is_better=False) == {"a": False, "b": False}
    assert set(RELEASED_LOWER_IS_BETTER) == {"llmscore_ec", "llmscore_over"}
    with pytest.raises(ValueError, match=r"lower_is_better 'nope': no such score column"):
        resolve_orientation(["a"], lower_is_better=["nope"])
    with pytest.raises(ValueError, match="both lower-is-better and higher-is-better"):
        resolve_orientation(["a"], lower_is_better=["a"], higher_is_better=["a"])


def test_bare_lower_is_better_needs_one_column(tmp_path, shared_ts2, keyed, capsys):
    frame, _ = keyed
    frame.to_csv(tmp_path / "two.csv", index=False)
    code, _, err = run(capsys, "meta", tmp_path / "two.csv", "--metadata", shared_ts2 / "metadata.csv",
                       "--lower-is-better")
    assert code == 2 and "--lower-is-better without a column name needs a single score column" in err
    code, out, err = run(capsys, "meta", tmp_path / "two.csv", "--metadata", shared_ts2 / "metadata.csv",
                         "--lower-is-better", "clipscore", "--json", "--n-bootstrap", "0")
    assert code == 0, err
    payload = json.loads(out)
    ref = released_reference(str(shared_ts2), "clipscore", higher_is_better=False)
    assert payload["clipscore"]["higher_is_better"] is False and payload["llmscore_ec"]["higher_is_better"] is False
    assert payload["clipscore"]["rank"]["summary"]["avg"] == pytest.approx(ref["rank"]["summary"]["avg"], abs=1e-12)
