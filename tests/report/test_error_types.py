"""``ts2 report``'s and ``ts2 card``'s per-error-type section (:mod:`scorers.report.error_types`, the card's TS2
block): present with the numbers of ``ts2 meta --by-error-type`` (intervals included) on a data dir built by
``ts2 seg build``; absent, with no note, on the release, which carries no error types."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.cli import run_cli
from tests.helpers.error_type_dir import build_error_type_dir

N_BOOT, SEED = 150, 2


@pytest.fixture
def built(tmp_path, capsys):
    """``(built dir, scores CSV, ts2 meta --by-error-type --json)`` with :data:`N_BOOT` resamples, seed :data:`SEED`."""
    out, scores = build_error_type_dir(tmp_path, lambda *argv: run_cli(capsys, *argv))
    code, stdout, err = run_cli(capsys, "meta", scores, "--metadata", out / "metadata.csv", "--by-error-type",
                                "--n-bootstrap", N_BOOT, "--seed", SEED, "--json")
    assert code == 0, err
    return out, scores, json.loads(stdout)


def _release_clip(shared_ts2: Path, tmp_path: Path) -> Path:
    """The release's clipscore column with its keys."""
    scores = pd.read_csv(shared_ts2 / "released_scores.csv", usecols=["id", "image_id", "clipscore"])
    scores.to_csv(tmp_path / "clip.csv", index=False)
    return tmp_path / "clip.csv"


def test_report_error_type_section_on_a_built_dir_not_on_the_release(built, shared_ts2, tmp_path, capsys):
    # the release carries no error types: no section, no note about one
    code, stdout, err = run_cli(capsys, "report", _release_clip(shared_ts2, tmp_path), "--metadata",
                                shared_ts2 / "metadata.csv", "--no-published", "--segs", "0-20", "--n-bootstrap", 20,
                                "--out", tmp_path / "release_report")
    assert code == 0, err
    assert not list((tmp_path / "release_report").glob("error_types*"))
    assert "error type" not in (stdout + err).replace(str(tmp_path), "TMP").replace("_", " ")
    # a built dir with error types: error_types.md / .csv hold ts2 meta --by-error-type's numbers and intervals
    out, scores, meta = built
    code, stdout, err = run_cli(capsys, "report", scores, "--metadata", out / "metadata.csv", "--no-published",
                                "--n-bootstrap", N_BOOT, "--seed", SEED, "--out", tmp_path / "report")
    assert code == 0, err
    assert "error_types_md" in stdout and "error_types_csv" in stdout
    table = pd.read_csv(tmp_path / "report" / "error_types.csv")
    assert sorted(zip(table["column"], table["error_type"])) == [("k", "attribute"), ("k", "missing"),
                                                                 ("m", "attribute"), ("m", "missing")]
    for row in table.to_dict("records"):
        expected = meta[row["column"]]["by_error_type"][row["error_type"]]
        assert (row["segs"], row["walks"], row["edges"]) == (expected["n_segs"], expected["n_walks"],
                                                             expected["n_edges"])
        for m in ("rank", "sep", "delta"):
            for key in ("avg", "p1", "p2"):
                assert row[f"{m}_{key}"] == pytest.approx(100 * expected["summary"][m][key], abs=1e-9)
                low, high = expected["ci"][m][key]
                assert (row[f"{m}_{key}_ci_low"], row[f"{m}_{key}_ci_high"]) == pytest.approx(
                    (100 * low, 100 * high), abs=1e-9)
    markdown = (tmp_path / "report" / "error_types.md").read_text(encoding="utf-8")
    header = markdown.splitlines()[0]
    assert header.startswith("| Metric | Error type | Rank Avg | Rank p1 |") and "SEGs / walks / edges" in header
    missing = meta["m"]["by_error_type"]["missing"]
    low, high = missing["ci"]["rank"]["avg"]
    row = next(line for line in markdown.splitlines() if line.startswith("| m | missing |"))
    assert f"{100 * missing['summary']['rank']['avg']:.1f} [{100 * low:.1f}, {100 * high:.1f}]" in row
    saved = json.loads((tmp_path / "report" / "result.json").read_text(encoding="utf-8"))
    assert saved["results"]["by_error_type"]["m"]["missing"]["ci"] == missing["ci"]


def test_card_error_type_block_on_a_built_dir_not_on_the_release(built, shared_ts2, tmp_path, capsys):
    # the release carries no error types: no block, no note about one
    code, stdout, err = run_cli(capsys, "card", "--scores", f"clip={_release_clip(shared_ts2, tmp_path)}",
                                "--data-dir", shared_ts2, "--baseline", "none", "--sets", "ts2", "--segs", "0-20",
                                "--n-bootstrap", 20, "--out", tmp_path / "release_card", "--json", "--offline")
    assert code == 0, err
    section = json.loads(stdout)["clip"]["sets"]["ts2"]
    assert section["status"] == "evaluated" and "by_error_type" not in section["meta"]
    text = ((tmp_path / "release_card" / "clip.md").read_text(encoding="utf-8") + err).replace(str(tmp_path), "TMP")
    assert "error type" not in text.replace("_", " ")
    # a built dir with error types: the card's TS2 set has ts2 meta --by-error-type's numbers and its block
    out, scores, meta = built
    code, stdout, err = run_cli(capsys, "card", "--scores", f"m={scores}", "--metadata", out / "metadata.csv",
                                "--baseline", "none", "--sets", "ts2", "--n-bootstrap", N_BOOT, "--seed", SEED,
                                "--out", tmp_path / "card", "--json", "--offline")
    assert code == 0, err
    section = json.loads(stdout)["m"]["sets"]["ts2"]
    by_type = section["meta"]["by_error_type"]
    assert sorted(by_type) == ["attribute", "missing"]
    for kind, expected in meta["m"]["by_error_type"].items():  # the same computation: the same numbers
        assert by_type[kind]["summary"] == expected["summary"] and by_type[kind]["ci"] == expected["ci"]
    markdown = (tmp_path / "card" / "m.md").read_text(encoding="utf-8")
    assert "## ts2 per error type" in markdown
    low, high = meta["m"]["by_error_type"]["attribute"]["ci"]["sep"]["p2"]
    value = meta["m"]["by_error_type"]["attribute"]["summary"]["sep"]["p2"]
    assert f"| attribute | sep | p2 | {100 * value:.1f} | [{100 * low:.1f}, {100 * high:.1f}] |" in markdown
    assert "ts2 per error type" in (tmp_path / "card" / "m.html").read_text(encoding="utf-8")
