"""`ts2 reproduce` and `ts2 meta` with no path arguments read the release tables through scorers.release (issue 14):
a local copy ($TS2_DATA), or the cache filled once from the (loopback stand-in of the) Hub and GitHub."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from scorers import release
from scorers.cli import main
from tests.reference_meta import released_reference
from tests.test_release import fresh_cache, sources  # noqa: F401  (fixtures: loopback sources, empty HF_HOME)


def _rows(out: str) -> dict:
    return {(r["column"], r["meta_metric"], r["partition"]): r for r in json.loads(out)["rows"]}


def test_reproduce_without_paths_reads_ts2_data(shared_ts2, monkeypatch, capsys):
    monkeypatch.setenv(release.DATA_ENV, str(shared_ts2))
    assert main(["reproduce", "--json"]) == 0
    rows = _rows(capsys.readouterr().out)
    # expected from the plain scipy reference loop over SEGs 0-163 (tests/reference_meta.py), not from our code
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
    assert main(["reproduce"]) == 0
    out = capsys.readouterr().out
    assert "only our values are shown; pass --paper FILE" in out  # Table 2 has no public download
    assert "stray quotes" in out and "are cleaned" in out
    first = sources.count()
    assert first > 0
    assert main(["reproduce", "--json"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert sources.count() == first  # second run: 0 HTTP requests
    # orientation without the paper table: llmscore_ec is an error count (lower is better), as the release says
    reference = released_reference(str(shared_ts2), "llmscore_ec", higher_is_better=False)
    assert rows["llmscore_ec", "rank", "avg"]["ours"] == pytest.approx(100 * reference["rank"]["summary"]["avg"],
                                                                       abs=5e-5)  # 4-decimal JSON rows
    assert rows["llmscore_ec", "rank", "avg"]["paper"] is None


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
