"""`ts2 score --meta`'s second table, the new metric among the published rows: printed only when the scores were made
on the release's metadata and SEGs; a data dir built by `ts2 seg build` gets one line saying why not.

``print_meta`` is what ``ts2 score --meta`` calls once the images are scored (the scoring itself is tested
elsewhere); here it gets a hand-made scores frame. Expected values: the sha256 of the files (hashlib), the release's
column count (its header).
"""
from __future__ import annotations

import hashlib
import re
from types import SimpleNamespace

import pandas as pd

from tests.helpers.built_dirs import build_dir, write_scores


def _frame(scores, metadata, column):
    """``ts2 score``'s output frame: ``seg_id, file_name, node, <column>`` in metadata order."""
    return pd.DataFrame({"seg_id": metadata["seg_id"].astype(int).to_numpy(),
                         "file_name": metadata["file_name"].to_numpy(), "node": metadata["node"].to_numpy(),
                         column: scores[column].to_numpy(dtype=float)})


def test_scores_of_a_built_dir_are_not_ranked_among_the_published_rows(tmp_path, capsys, shared_ts2, monkeypatch):
    """Today: a 20-row ranking of the built dir's 3 SEGs among the release's metrics on its 164."""
    from scorers.cli.score import print_meta
    from scorers.tables.pandas_tables import read_metadata

    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    out = build_dir(tmp_path)
    scores = pd.read_csv(write_scores(out, tmp_path / "scores.csv"))
    frame = _frame(scores, read_metadata(out / "metadata.csv"), "good")
    print_meta(frame, SimpleNamespace(extra={"score_columns": ["good"]}), data_dir=str(out))
    printed = capsys.readouterr()
    assert "SEGs: 0-2 (3 SEGs)" in printed.out
    assert "Beside the published leaderboard" not in printed.out and "clipscore" not in printed.out
    release, ours = (hashlib.sha256(p.read_bytes()).hexdigest()[:12] for p in (shared_ts2 / "metadata.csv",
                                                                               out / "metadata.csv"))
    assert (f"(published rows left out: they were computed on the TS2 release metadata (sha256 {release}…), these "
            f"scores on {out / 'metadata.csv'} (sha256 {ours}…))") in printed.err.splitlines()


def test_scores_of_the_release_are_ranked_among_the_published_rows(tmp_path, capsys, shared_ts2, monkeypatch):
    """The same check lets the release's own metadata in: 19 published rows and yours."""
    from scorers.cli.score import print_meta
    from scorers.tables.pandas_tables import read_metadata

    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    frame = _frame(pd.DataFrame({"mine": pd.to_numeric(raw["clipscore"])}), metadata, "mine")
    print_meta(frame, SimpleNamespace(extra={"score_columns": ["mine"]}), data_dir=str(shared_ts2))
    printed = capsys.readouterr()
    beside = printed.out.split("Beside the published leaderboard", 1)[1]
    rows = [line for line in beside.splitlines() if re.match(r"^\s*\d+ ", line)]
    assert len(rows) == len(pd.read_csv(shared_ts2 / "released_scores.csv", nrows=0).columns) - 2 + 1  # 19 + yours
    assert sum(">> mine" in line for line in rows) == 1 and "left out" not in printed.err
