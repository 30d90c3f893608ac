"""Saved results: `ts2 meta ... --out result.json` saves the numbers with how they were made; `ts2 meta --from
result.json` re-prints them and says whether the inputs changed."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from scorers import __version__
import pytest

from scorers.cli import main
from tests.helpers.cli import one_line, run_cli

DATA = Path(__file__).resolve().parents[1] / "data"


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


# --- ts2 meta --from: re-derived from the saved results, never trusted as typed -----------------------------------


@pytest.fixture
def saved(tmp_path, capsys):
    """A ts2 meta result saved with --out, and the numbers --json printed for the same command."""
    import shutil

    scores, metadata = tmp_path / "my_scores.csv", tmp_path / "sample_metadata.csv"
    shutil.copy(DATA / "my_scores.csv", scores)
    shutil.copy(DATA / "sample_metadata.csv", metadata)
    argv = ["meta", scores, "--metadata", metadata, "--on", "seg_id", "file_name", "--n-bootstrap", 20, "--seed", 7]
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    numbers = json.loads(out)
    code, printed, err = run_cli(capsys, *argv, "--out", tmp_path / "result.json")
    assert code == 0, err
    return tmp_path / "result.json", numbers, printed


def edit(path: Path, change) -> Path:
    payload = json.loads(path.read_text())
    change(payload)
    path.write_text(json.dumps(payload))
    return path


def test_from_refuses_a_table_edited_by_hand(saved, capsys):
    path, _numbers, printed = saved
    payload = json.loads(path.read_text())
    cell = payload["table"].split("\n")[3].split()[2]  # the first metric's rank avg, as printed
    assert cell in printed
    edit(path, lambda p: p.update(table=p["table"].replace(cell, "99.9", 1)))
    code, out, err = run_cli(capsys, "meta", "--from", path)
    line = one_line(err)
    assert code == 2 and not out
    assert str(path) in line and "'table' does not match 'results'" in line and "99.9" in line and "edited" in line


def test_from_refuses_results_edited_by_hand(saved, capsys):
    path, numbers, _printed = saved
    column = next(iter(numbers))
    edit(path, lambda p: p["results"][column]["rank"]["summary"].update(avg=0.999))
    code, _out, err = run_cli(capsys, "meta", "--from", path)
    assert code == 2 and "does not match" in one_line(err) and "99.9" in err


def test_from_reprints_an_untouched_result(saved, capsys):
    path, _numbers, printed = saved
    code, out, err = run_cli(capsys, "meta", "--from", path)
    assert code == 0, err
    assert out.startswith(printed.rstrip("\n")) and out.count("(unchanged)") == 2


def test_from_with_json_prints_the_saved_numbers(saved, capsys):
    path, numbers, _printed = saved
    code, out, err = run_cli(capsys, "meta", "--from", path, "--json")
    assert code == 0, err
    assert json.loads(out) == numbers  # what --json printed for the saved command


@pytest.mark.parametrize("flags, named", [
    (["--seed", "0"], "--seed"), (["--seed", "3"], "--seed"), (["--n-bootstrap", "5"], "--n-bootstrap"),
    (["--lower-is-better", "my_metric"], "--lower-is-better"), (["--lower-is-better"], "--lower-is-better"),
    (["--variant", "official"], "--variant"), (["--segs", "0-5"], "--segs"),
])
def test_from_refuses_options_that_would_compute(saved, capsys, flags, named):
    path, _numbers, _printed = saved
    code, out, err = run_cli(capsys, "meta", "--from", path, *flags)
    line = one_line(err)
    assert code == 2 and not out and named in line and "computes nothing" in line


@pytest.mark.parametrize("change, needle", [
    (lambda p: p.update(inputs=["a", "b"]), "field 'inputs' must be an object {role: {\"path\": text, \"sha256\": text}}, got a list"),
    (lambda p: p.update(table=5), "field 'table' must be text, got a number"),
    (lambda p: p.pop("table"), "missing field(s) 'table'"),
    (lambda p: [p.pop(k) for k in ("results", "seed")], "missing field(s) 'seed', 'results'"),
    (lambda p: p.update(inputs={"scores": {"path": 1}}), "field 'inputs' must be"),
    (lambda p: p.update(seed="7"), "field 'seed' must be an integer or null, got text"),
    (lambda p: p.update(results=[]), "field 'results' must be an object, got a list"),
    (lambda p: p["results"][next(iter(p["results"]))]["rank"].pop("per_seg"), "field 'results' is not the results of ts2 meta"),
])
def test_from_names_a_malformed_field_in_one_line(saved, capsys, change, needle):
    path, _numbers, _printed = saved
    edit(path, change)
    code, out, err = run_cli(capsys, "meta", "--from", path)
    line = one_line(err)
    assert code == 2 and not out and needle in line and str(path) in line, line


def test_from_prints_the_saved_command_with_control_characters_escaped(saved, capsys):
    path, _numbers, _printed = saved
    edit(path, lambda p: p.update(command="ts2 meta x.csv\x1b[2J\x1b[31m\rEVIL\n\u202eabc"))
    code, out, err = run_cli(capsys, "meta", "--from", path)
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("saved by:"))
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert "x.csv\\x1b[2J\\x1b[31m\\rEVIL\\n\\u202eabc" in line
