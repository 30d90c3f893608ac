"""`ts2 reproduce` and `ts2 meta` with no path arguments read the release tables through scorers.tables.release:
a local copy ($TS2_DATA), or the cache filled once from the (loopback stand-in of the) Hub and GitHub."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from scorers.tables import release, release_download
from scorers.cli import main
from tests.helpers.reference_meta import released_reference
from tests.helpers.release_data import require


def _rows(out: str) -> dict:
    """The JSON rows, back in % for the comparisons (issue 23 item 5: the JSON holds fractions, ``"unit"`` says so)."""
    payload = json.loads(out)
    assert payload["unit"] == "fraction"
    percent = ("ours", "paper", "residual", "ci_low", "ci_high")
    return {(r["column"], r["meta_metric"], r["partition"]):
            {k: (100 * v if k in percent and v is not None else v) for k, v in r.items()} for r in payload["rows"]}


def test_reproduce_without_paths_reads_ts2_data(shared_ts2, monkeypatch, capsys):
    require("paper_table2.csv")  # the printed table (71.4 below), which only a local release folder has
    monkeypatch.setenv(release.DATA_ENV, str(shared_ts2))
    assert main(["reproduce", "--json"]) == 0
    rows = _rows(capsys.readouterr().out)
    # expected from the plain scipy reference loop over SEGs 0-163 (tests/helpers/reference_meta.py), not from our code
    for column, lower in (("clipscore", False), ("llmscore_ec", True)):
        reference = released_reference(str(shared_ts2), column, higher_is_better=not lower)
        for meta_metric in ("rank", "sep", "delta"):
            row = rows[column, meta_metric, "avg"]
            # 5e-5 (in %): the JSON rows carry values rounded to 4 decimals
            assert row["ours"] == pytest.approx(100 * reference[meta_metric]["summary"]["avg"], abs=5e-5)
    # the paper's Table 2 came from $TS2_DATA too: residuals are printed (CLIPScore rank: 71.4 in the paper)
    assert rows["clipscore", "rank", "avg"]["paper"] == pytest.approx(71.4)
    assert rows["clipscore", "rank", "avg"]["residual"] is not None


def test_reproduce_without_paths_downloads_once_then_makes_no_request(sources, fresh_cache, shared_ts2,  # noqa: F811
                                                                       capsys):
    """Table 2 with residuals and no path argument: the paper's numbers come from table2_full_precision.csv (the
    official file, the copy the tests find (tests/helpers/release_data.py), served by the loopback stand-in, checked against its pinned
    sha256)."""
    assert main(["reproduce"]) == 0
    out = capsys.readouterr().out
    assert "only our values are shown" not in out
    assert "stray quotes" in out and "are cleaned" in out
    first = sources.count()
    assert first > 0
    assert main(["reproduce", "--json"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert sources.count() == first  # second run: 0 HTTP requests
    # the official file read as plain CSV (fractions): e.g. CLIPScore spearman-all 0.7141387, printed 71.4 in the paper
    official = pd.read_csv(require("table2_full_precision.csv")).set_index("metric")
    for column, lower in (("clipscore", False), ("llmscore_ec", True)):  # llmscore_ec: lower is better
        reference = released_reference(str(shared_ts2), column, higher_is_better=not lower)
        for meta_metric in ("rank", "sep", "delta"):
            row = rows[column, meta_metric, "avg"]
            prefix = {"rank": "spearman", "sep": "ks", "delta": "delta"}[meta_metric]
            published = 100 * official.loc[column, f"{prefix}-all"]
            # 5e-5 (in %): the JSON rows carry values rounded to 4 decimals
            assert row["paper"] == pytest.approx(published, abs=5e-5)
            # 5e-5 (in %): the JSON rows carry values rounded to 4 decimals
            assert row["ours"] == pytest.approx(100 * reference[meta_metric]["summary"]["avg"], abs=5e-5)
            assert row["residual"] == pytest.approx(row["ours"] - published, abs=1e-4)


def test_reproduce_offline_without_table2_shows_ours_and_says_why(sources, fresh_cache, shared_ts2,  # noqa: F811
                                                                   capsys):
    """The release's scores cached but Table 2 not: our values, oriented by the release (llmscore_ec lower is better),
    and a note naming what is missing."""
    from huggingface_hub import constants

    release_download.paths(["metadata.csv", "released_scores.csv"], progress=False)
    constants.HF_HUB_OFFLINE = True  # restored by the fixture's monkeypatch
    assert main(["reproduce", "--json"]) == 0
    rows = _rows(capsys.readouterr().out)
    reference = released_reference(str(shared_ts2), "llmscore_ec", higher_is_better=False)
    assert rows["llmscore_ec", "rank", "avg"]["ours"] == pytest.approx(100 * reference["rank"]["summary"]["avg"],
                                                                       abs=5e-5)  # 4-decimal JSON rows
    assert rows["llmscore_ec", "rank", "avg"]["paper"] is None
    assert main(["reproduce"]) == 0
    out = capsys.readouterr().out
    assert "table2_full_precision.csv" in out and "only our values are shown" in out


def test_meta_without_metadata_uses_the_release_metadata(shared_ts2, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(release.DATA_ENV, str(shared_ts2))
    released = pd.read_csv(shared_ts2 / "released_scores.csv", usecols=["clipscore"])
    released.to_csv(tmp_path / "clip.csv", index=False)
    assert main(["meta", str(tmp_path / "clip.csv"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["clipscore"]
    reference = released_reference(str(shared_ts2), "clipscore")
    assert result["rank"]["summary"]["avg"] == pytest.approx(reference["rank"]["summary"]["avg"], abs=1e-12)


def test_offline_with_nothing_cached_is_one_clear_error(fresh_cache, monkeypatch, capsys):  # noqa: F811
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert main(["reproduce"]) == 2
    err = capsys.readouterr().err
    assert "released_scores.csv" in err and "TS2_DATA" in err and "Traceback" not in err


def test_table2_full_precision_reader_by_hand(tmp_path):
    """The official file's layout (fractions; spearman = rank, ks = sep, delta) read as the paper table (in %)."""
    from scorers.tables.pandas_tables import read_table2_full_precision
    from tests.helpers.ts2_fixture_data import OFFICIAL_TABLE2_HEADER

    path = tmp_path / "t2.csv"
    path.write_text(",".join(OFFICIAL_TABLE2_HEADER) + "\n"
                    "m1,0.5,0.25,0.125,1.0,1.5,1.25,1.0,0.75,0.9,0.8,0.7,0.6,6.04E+08,1E+09\n")
    table = read_table2_full_precision(path).set_index("meta_metric")
    assert list(table.index) == ["rank", "sep", "delta"] and set(table["column"]) == {"m1"}
    # by hand: x 100 of spearman-*, ks-*, delta-* in the order avg (all), synth, nat, real
    assert table.loc["rank", ["avg", "synth", "nat", "real"]].tolist() == [50.0, 25.0, 12.5, 100.0]
    assert table.loc["sep", ["avg", "synth", "nat", "real"]].tolist() == pytest.approx([90.0, 80.0, 70.0, 60.0])
    assert table.loc["delta", ["avg", "synth", "nat", "real"]].tolist() == [150.0, 125.0, 100.0, 75.0]
    assert table.loc["rank", "flop_per_image"] == pytest.approx(6.04e8)

    path.write_text(path.read_text().replace("0.9,", "n/a,"))
    with pytest.raises(ValueError, match=r"line 2, ks-all"):
        read_table2_full_precision(path)
    path.write_text("metric,spearman-all\nm1,0.5\n")
    with pytest.raises(ValueError, match=r"missing column\(s\) \['cost', 'spearman-synth'"):
        read_table2_full_precision(path)
