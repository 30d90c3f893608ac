"""`ts2 report --ratings`: the human-agreement table beside the TS2 leaderboard (one metric read both ways)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scorers.cli import main


def _ratings(path):
    """Ratings of 40 prompts x 4 models with columns named like the release's metrics (llmscore_ec: lower = better)."""
    rng = np.random.default_rng(7)
    n = 160
    quality = rng.normal(0, 1, n)
    frame = pd.DataFrame({
        "item": np.repeat([f"p{k}" for k in range(40)], 4),
        "system": np.tile(["a", "b", "c", "d"], 40),
        "human_1": np.clip(np.round(3 + quality + rng.normal(0, 0.5, n)), 1, 5),
        "human_2": np.clip(np.round(3 + quality + rng.normal(0, 0.5, n)), 1, 5),
        "clipscore": 0.25 + 0.02 * quality + rng.normal(0, 0.02, n),
        "mplug_tifa": np.round(np.clip(0.6 + 0.2 * quality, 0, 1) * 4) / 4,
        "llmscore_ec": np.round(np.clip(2 - quality, 0, 5)),
    })
    frame.to_csv(path, index=False)
    return frame


@pytest.fixture(scope="module")
def report(shared_ts2, tmp_path_factory):
    out = tmp_path_factory.mktemp("report-human")
    ratings = _ratings(out / "ratings.csv")
    argv = ["report", str(shared_ts2 / "released_scores.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
            "--paper", str(shared_ts2 / "paper_table2.csv"), "--segs", "0-163", "--clean-quotes",
            "--column", "clipscore", "--column", "mplug_tifa", "--column", "llmscore_ec", "--column", "viescore",
            "--n-bootstrap", "50", "--ratings", str(out / "ratings.csv"), "--human", "human_1",
            "--human", "human_2", "--out", str(out / "report")]
    assert main(argv) == 0
    return out / "report", ratings


def test_human_table_sits_beside_the_leaderboard(report, capsys):
    folder, ratings = report
    table = pd.read_csv(folder / "human_agreement.csv")
    board = pd.read_csv(folder / "leaderboard.csv")
    assert list(table["column"]) == ["inter-rater", "clipscore", "mplug_tifa", "llmscore_ec"]
    human = (ratings["human_1"] + ratings["human_2"]) / 2
    row = table.set_index("column")
    assert row.loc["clipscore", "spearman"] == pytest.approx(stats.spearmanr(human, ratings["clipscore"]).statistic)
    # LLMScore EC counts errors (lower is better in the paper table): negated, so agreement is positive
    assert row.loc["llmscore_ec", "kendall_b"] == pytest.approx(
        -stats.kendalltau(human, ratings["llmscore_ec"]).statistic)
    assert row.loc["inter-rater", "pearson"] == pytest.approx(
        stats.pearsonr(ratings["human_1"], ratings["human_2"]).statistic)
    ts2 = board.set_index("column")
    assert row.loc["mplug_tifa", "rank_avg"] == ts2.loc["mplug_tifa", "rank_avg"]
    assert (row.loc["clipscore", "spearman_ci_low"] <= row.loc["clipscore", "spearman"]
            <= row.loc["clipscore", "spearman_ci_high"])
    markdown = (folder / "human_agreement.md").read_text()
    assert "| TIFA mPLUG |" in markdown and "ε=" in markdown


def test_ratings_needs_human_and_unknown_columns_are_clear(shared_ts2, tmp_path, capsys):
    _ratings(tmp_path / "r.csv")
    base = ["report", str(shared_ts2 / "released_scores.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
            "--column", "clipscore", "--n-bootstrap", "0", "--out", str(tmp_path / "o")]
    assert main(base + ["--ratings", str(tmp_path / "r.csv")]) == 2
    assert "--human" in capsys.readouterr().err
    assert main(base + ["--column", "viescore", "--ratings", str(tmp_path / "r.csv"), "--human", "rater"]) == 2
    assert "--human 'rater': no such column" in capsys.readouterr().err
