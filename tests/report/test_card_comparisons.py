"""`ts2 card` on a data dir built by `ts2 seg build`: the published rows (the release's metrics on its own metadata)
are never a place for a metric of other SEGs, the default baseline (the release's clipscore) gives way to none with
one line, a release column named as the baseline is one error naming both fixes, and a verdict says better or worse
only when its paired test is significant at the stated level.

Expected values come from outside the code under test: the sha256 of the files (hashlib), the per-SEG order of the
hand-made scores (``good`` orders every SEG, ``bad`` reverses it) and the sign-flip test's floor on three SEGs (2/8).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.helpers.built_dirs import build_dir, write_scores
from tests.helpers.cli import one_line, run_cli

N_BOOT = 200


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("built")
    out = build_dir(work)
    return out, write_scores(out, work / "scores.csv")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _card(capsys, built, shared_ts2, tmp_path, *extra):
    out, scores = built
    code, stdout, err = run_cli(capsys, "card", "--scores", f"good={scores}", *extra, "--metadata",
                                out / "metadata.csv", "--data-dir", shared_ts2, "--n-bootstrap", N_BOOT,
                                "--out", tmp_path / "card", "--json")
    return code, stdout, err


def _left_out_line(built, shared_ts2) -> str:
    out, _ = built
    return (f"published rows left out: they were computed on the TS2 release metadata (sha256 "
            f"{_sha(shared_ts2 / 'metadata.csv')[:12]}…), these scores on {out / 'metadata.csv'} (sha256 "
            f"{_sha(out / 'metadata.csv')[:12]}…)")


def test_default_baseline_on_a_built_dir_is_none_with_one_line(capsys, built, shared_ts2, tmp_path):
    """Today: an error about released_scores.csv's rows. Now: no baseline, a note naming --baseline NAME, and the
    published rows left out with one line naming both metadata files and their sha256."""
    code, stdout, err = _card(capsys, built, shared_ts2, tmp_path)
    assert code == 0, err
    card = json.loads(stdout)["good"]
    assert card["baseline"] is None and card["verdict"] == "no baseline: no paired tests"
    baseline_note = next(n for n in card["notes"] if n.startswith("no baseline"))
    assert "--baseline NAME" in baseline_note and "clipscore" in baseline_note
    assert _left_out_line(built, shared_ts2) in card["notes"]
    ts2 = card["sets"]["ts2"]
    assert ts2["published"] is None and "comparison" not in ts2
    markdown = (tmp_path / "card" / "good.md").read_text(encoding="utf-8")
    assert "place among the published rows" not in markdown and _left_out_line(built, shared_ts2) in markdown


@pytest.mark.parametrize("baseline", ["none", "bad"])
def test_a_built_dir_is_never_placed_among_the_published_rows(capsys, built, shared_ts2, tmp_path, baseline):
    """--baseline none and --baseline NAME (a --scores name): today the card says "place ... 1 of 20"."""
    _, scores = built
    extra = [f"bad={scores}"] if baseline == "bad" else []
    code, stdout, err = _card(capsys, built, shared_ts2, tmp_path, *extra, "--baseline", baseline)
    assert code == 0, err
    card = json.loads(stdout)["good"]
    assert card["sets"]["ts2"]["published"] is None
    assert _left_out_line(built, shared_ts2) in card["notes"]
    assert "of 20" not in (tmp_path / "card" / "good.md").read_text(encoding="utf-8")
    if baseline == "bad":
        assert card["baseline"] == "bad" and len(card["sets"]["ts2"]["comparison"]) == 3


def test_a_release_column_as_the_baseline_of_a_built_dir_names_both_fixes(capsys, built, shared_ts2, tmp_path):
    code, stdout, err = _card(capsys, built, shared_ts2, tmp_path, "--baseline", "clipscore")
    line = one_line(err)
    assert code == 2 and stdout == ""
    assert line.startswith("ts2 card: error: --baseline clipscore:")
    assert "--baseline none" in line and "--baseline NAME" in line and "released_scores.csv" in line


def test_the_release_metadata_keeps_its_place_and_default_baseline(capsys, shared_ts2, tmp_path):
    """The same rule lets a metric of the release's metadata in: placed among the published rows, against the
    release's clipscore by default."""
    import pandas as pd

    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    raw[["id", "image_id", "mplug_tifa"]].to_csv(tmp_path / "mplug.csv", index=False)
    code, stdout, err = run_cli(capsys, "card", "--scores", f"mplug_tifa={tmp_path / 'mplug.csv'}", "--data-dir",
                                shared_ts2, "--segs", "0-20", "--n-bootstrap", 0, "--out", tmp_path / "card", "--json")
    assert code == 0, err
    card = json.loads(stdout)["mplug_tifa"]
    assert card["baseline"] == "clipscore" and card["notes"] == []
    published = card["sets"]["ts2"]["published"]
    assert published["of"] == 19 and card["sets"]["ts2"]["published_left_out"] is None


def test_verdict_is_not_better_when_its_test_is_not_significant(capsys, built, shared_ts2, tmp_path):
    """good orders every SEG and bad reverses it: every per-SEG difference is positive, so the bootstrap interval
    lies above 0 (today: "better"), but a sign-flip test on three SEGs cannot go below 2/8 = 0.25."""
    _, scores = built
    code, stdout, err = _card(capsys, built, shared_ts2, tmp_path, f"bad={scores}", "--baseline", "bad")
    assert code == 0, err
    card = json.loads(stdout)["good"]
    first = card["sets"]["ts2"]["comparison"][0]
    assert first["ci_low"] > 0 and first["pvalue"] >= 0.25
    assert card["sets"]["ts2"]["verdict"] == f"no significant difference (p = {first['pvalue']:.3f} at alpha 0.05)"
    assert card["verdict"] == "better than bad on 0 of 1 sets, worse on 0, 95% paired intervals"


@pytest.mark.parametrize("comparison, alpha, expected", [
    ({"ci_low": 0.02, "ci_high": 0.4, "pvalue": 0.237}, 0.05, "no significant difference (p = 0.237 at alpha 0.05)"),
    ({"ci_low": 0.02, "ci_high": 0.4, "pvalue": 0.012}, 0.05, "better"),
    ({"ci_low": -0.4, "ci_high": -0.02, "pvalue": 0.012}, 0.05, "worse"),
    ({"ci_low": -0.4, "ci_high": -0.02, "pvalue": 0.012}, 0.01, "no significant difference (p = 0.012 at alpha 0.01)"),
    ({"ci_low": -0.1, "ci_high": 0.2, "pvalue": 0.6}, 0.05, "no significant difference (p = 0.600 at alpha 0.05)"),
    ({"ci_low": 0.02, "ci_high": 0.4, "pvalue": None}, 0.05, "better"),  # no p-value: the interval alone
    (None, 0.05, "no comparison"),
])
def test_verdict_of_a_hand_made_test(comparison, alpha, expected):
    from scorers.report.card.sections import is_judged, verdict_of

    assert verdict_of(comparison, alpha) == expected
    assert is_judged(expected) == (comparison is not None)
