"""`ts2 submit` on a data dir built by `ts2 seg build`: --walks edges is recorded in result.json and --verify
recomputes with the recorded rule."""
import json

import pytest

from tests.helpers.cli import one_line, run_cli
from tests.helpers.reference_meta import built_dir_reference
from tests.helpers.seg_files import build_walks_dir


def _submit(capsys, scores, out, folder, *flags):
    return run_cli(capsys, "submit", scores, "--column", "my_metric", "--name", "mine", "--out", folder,
                   "--data-dir", out, "--n-bootstrap", 0, *flags)


def test_submit_walks_edges_is_recorded_and_verified_with_the_recorded_rule(tmp_path, capsys):
    out, scores = build_walks_dir(tmp_path, capsys)
    code, stdout, err = _submit(capsys, scores, out, tmp_path / "edges", "--walks", "edges")
    assert code == 0, err
    saved = json.loads((tmp_path / "edges" / "result.json").read_text())
    result = saved["results"]["my_metric"]
    assert result["walks"] == "edges" and "--walks edges" in saved["command"]
    assert set(saved["inputs"]) == {"scores", "metadata", "segs"}
    expected = built_dir_reference(out, scores, "my_metric", walks="edges")
    for metric in ("rank", "sep", "delta"):
        for part, want in expected[metric]["summary"].items():
            assert result[metric]["summary"][part] == pytest.approx(want, abs=1e-9), (metric, part)
    code, stdout, err = run_cli(capsys, "submit", "--verify", tmp_path / "edges", "--data-dir", out)
    assert code == 0 and "verified mine" in stdout, err  # recomputed by levels, rank would differ: rejected

    code, _, err = _submit(capsys, scores, out, tmp_path / "levels")
    assert code == 0, err
    levels = json.loads((tmp_path / "levels" / "result.json").read_text())
    assert "walks" not in levels["results"]["my_metric"] and "segs" not in levels["inputs"]
    assert levels["results"]["my_metric"]["rank"]["summary"]["avg"] != pytest.approx(result["rank"]["summary"]["avg"])
    assert run_cli(capsys, "submit", "--verify", tmp_path / "levels", "--data-dir", out)[0] == 0


def test_submit_verify_rejects_edges_without_the_same_segs_json(tmp_path, capsys):
    out, scores = build_walks_dir(tmp_path, capsys)
    assert _submit(capsys, scores, out, tmp_path / "s", "--walks", "edges")[0] == 0
    segs = out / "segs.json"
    segs.write_text(segs.read_text() + "\n")
    code, stdout, err = run_cli(capsys, "submit", "--verify", tmp_path / "s", "--data-dir", out)
    assert code == 2 and "inputs.segs.sha256" in one_line(err), err
    segs.unlink()
    code, stdout, err = _submit(capsys, scores, out, tmp_path / "t", "--walks", "edges")
    line = one_line(err)
    assert code == 2 and "--walks edges" in line and str(segs) in line, line
