"""The community leaderboard with submissions made on other metadata (a data dir built by ``ts2 seg build``): they are
verified on that metadata and listed, never ranked with the published rows, which are left out with one note naming
both metadata files. On the release's metadata the same submission is rejected, naming the metadata's sha256.

Expected values: the sha256 of the files (hashlib).
"""
from __future__ import annotations

import hashlib

import pytest

from scorers.report.community import community_leaderboard
from tests.helpers.built_dirs import build_dir, write_scores
from tests.helpers.cli import run_cli


@pytest.fixture(scope="module")
def built_submission(tmp_path_factory):
    from scorers.ts2.options import MetaOptions
    from scorers.ts2.submission.folder import write_submission

    work = tmp_path_factory.mktemp("lb")
    out = build_dir(work)
    scores = write_scores(out, work / "scores.csv")
    write_submission(scores, column="good", name="my-good", out=work / "lb" / "submissions" / "my-good",
                     metadata=out / "metadata.csv", options=MetaOptions(n_bootstrap=0))
    return work / "lb", out / "metadata.csv"


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_submissions_on_other_metadata_are_not_ranked_with_the_published_rows(built_submission, shared_ts2):
    """Today the 19 published rows are listed beside a submission of three other SEGs."""
    folder, metadata = built_submission
    board = community_leaderboard(folder, metadata=metadata, data_dir=str(shared_ts2))
    assert [(r["name"], r["source"], r["#"]) for r in board.rows] == [("my-good", "community", 1)]
    assert board.rejected == []
    assert board.notes == [f"published rows left out: they were computed on the TS2 release metadata (sha256 "
                           f"{_sha(shared_ts2 / 'metadata.csv')[:12]}…), the submissions on {metadata} (sha256 "
                           f"{_sha(metadata)[:12]}…)"]


def test_ts2_leaderboard_on_other_metadata_says_why_in_one_line(built_submission, shared_ts2, capsys):
    folder, metadata = built_submission
    code, out, err = run_cli(capsys, "leaderboard", "--submissions", folder, "--metadata", metadata, "--data-dir",
                             shared_ts2)
    assert code == 0, err
    assert "published" not in out.replace("published rows left out", "")
    assert sum(line.startswith("note: published rows left out") for line in out.splitlines()) == 1


def test_on_the_release_metadata_the_same_submission_is_rejected(built_submission, shared_ts2):
    folder, metadata = built_submission
    board = community_leaderboard(folder, data_dir=str(shared_ts2))
    assert {r["source"] for r in board.rows} == {"published"} and len(board.rows) == 19
    (rejected,) = board.rejected
    assert rejected.folder == "my-good" and _sha(metadata) in rejected.reason
    assert _sha(shared_ts2 / "metadata.csv") in rejected.reason
