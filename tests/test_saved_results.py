"""Issue 23, item 12: `ts2 meta ... --out result.json` saves the numbers with how they were made; `ts2 meta --from
result.json` re-prints them and says whether the inputs changed."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from scorers import __version__
from scorers.cli import main

DATA = Path(__file__).resolve().parent / "data"


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    scores, metadata = tmp_path / "my_scores.csv", tmp_path / "sample_metadata.csv"
    shutil.copy(DATA / "my_scores.csv", scores)
    shutil.copy(DATA / "sample_metadata.csv", metadata)
    return scores, metadata


def test_saved_result_records_how_it_was_made_and_reprints(tmp_path, capsys):
    scores, metadata = _inputs(tmp_path)
    fingerprint = {"name": "my_metric", "model": "some/model", "form": "paper"}
    (tmp_path / "my_scores.csv.cache").mkdir()
    (tmp_path / "my_scores.csv.cache" / "fingerprint.json").write_text(json.dumps(fingerprint))
    argv = ["meta", str(scores), "--metadata", str(metadata), "--on", "seg_id", "file_name", "--n-bootstrap", "20",
            "--seed", "7"]
    assert main([*argv, "--json"]) == 0
    numbers = json.loads(capsys.readouterr().out)
    assert main([*argv, "--out", str(tmp_path / "result.json")]) == 0
    printed = capsys.readouterr().out

    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["command"] == "ts2 " + " ".join([*argv, "--out", str(tmp_path / "result.json")])
    assert saved["ts2_evaluate_version"] == __version__
    assert saved["segs"] == [0, 1, 111, 136]  # make_sample.py's SEGs
    assert (saved["seed"], saved["n_bootstrap"], saved["variant"]) == (7, 20, "paper")
    for role, path in (("scores", scores), ("metadata", metadata)):
        assert saved["inputs"][role]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert saved["scorer_config"] == {"scores": fingerprint}
    assert saved["results"] == numbers  # the same numbers as --json (fractions)

    assert main(["meta", "--from", str(tmp_path / "result.json")]) == 0
    again = capsys.readouterr().out
    assert again.startswith(printed.rstrip("\n"))
    assert again.count("(unchanged)") == 2 and "seed 7, 20 bootstrap resamples" in again

    scores.write_text(scores.read_text().replace("0.", "0.0", 1))
    assert main(["meta", "--from", str(tmp_path / "result.json")]) == 0
    assert "CHANGED since" in capsys.readouterr().out


def test_from_refuses_a_file_that_is_not_a_saved_result(tmp_path, capsys):
    (tmp_path / "x.json").write_text("{}")
    assert main(["meta", "--from", str(tmp_path / "x.json")]) == 2
    assert "not a saved ts2 result" in capsys.readouterr().err
    assert main(["meta", "--from", str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err.strip() == f"ts2 meta: error: --from {tmp_path / 'none.json'}: no such file"


def test_report_writes_its_result_beside_the_tables(tmp_path, capsys):
    import pytest

    pytest.importorskip("matplotlib")
    scores, metadata = _inputs(tmp_path)
    out = tmp_path / "report"
    argv = ["report", str(scores), "--metadata", str(metadata), "--on", "seg_id", "file_name", "--n-bootstrap", "10",
            "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    saved = json.loads((out / "result.json").read_text())
    assert saved["command"] == "ts2 " + " ".join(argv) and saved["segs"] == "0-1,111,136"
    assert saved["inputs"]["scores[0]"]["sha256"] == hashlib.sha256(scores.read_bytes()).hexdigest()
    (row,) = saved["results"]["leaderboard"]
    assert row["column"] == "my_metric" and saved["table"] == (out / "leaderboard.md").read_text()
    assert main(["meta", "--from", str(out / "result.json")]) == 0
    assert capsys.readouterr().out.startswith(saved["table"])
