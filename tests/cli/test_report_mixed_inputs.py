"""`ts2 report yours.csv released_scores.csv --on seg_id file_name`: a keyed file mixes with the release's row-aligned
one (the README's command)."""
import numpy as np
import pandas as pd
import pytest

from scorers.cli import main
from scorers.stats.meta import ts2_meta
from scorers.tables.pandas_tables import read_metadata


@pytest.fixture(autouse=True, scope="module")
def extra_installed():
    """The [report] extra is a test dependency, never skipped: missing, each test here fails. Imported when the
    first test runs, not at collection."""
    import matplotlib  # noqa: F401


def test_keyed_and_row_aligned_tables_mix(shared_ts2, tmp_path, capsys):
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    rng = np.random.default_rng(0)
    values = rng.random(len(metadata)) - 0.1 * metadata["error_count"].to_numpy()
    order = rng.permutation(len(metadata))  # keyed rows in any order
    mine = pd.DataFrame({"seg_id": metadata["seg_id"], "file_name": metadata["file_name"], "my_metric": values})
    mine.iloc[order].to_csv(tmp_path / "my_scores.csv", index=False)
    out = tmp_path / "report"
    code = main(["report", str(tmp_path / "my_scores.csv"), str(shared_ts2 / "released_scores.csv"),
                 "--metadata", str(shared_ts2 / "metadata.csv"), "--paper", str(shared_ts2 / "paper_table2.csv"),
                 "--clean-quotes", "--on", "seg_id", "file_name", "--flops", "my_metric=12G", "--n-bootstrap", "0",
                 "--column", "my_metric", "--column", "clipscore", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "released_scores.csv: no 'file_name' column; its rows are taken in metadata order" in captured.out
    board = pd.read_csv(out / "leaderboard.csv").set_index("column")
    seg_ids, nodes = metadata["seg_id"].to_numpy(), metadata["node"].to_numpy()
    # the keyed file joined back into metadata order: the same rank as meta on the values in that order, over the
    # report's default SEG set 0-163 (the paper's Table 2 SEGs)
    expected = ts2_meta(values, seg_ids, nodes, seg_subset=range(164)).rank.statistic["avg"] * 100
    # abs 5e-5: leaderboard.csv writes values rounded to 4 decimals
    assert board.loc["my_metric", "rank_avg"] == pytest.approx(expected, abs=5e-5)
    released = pd.read_csv(shared_ts2 / "released_scores.csv")["clipscore"].to_numpy(dtype=float)
    expected_clip = ts2_meta(released, seg_ids, nodes, seg_subset=range(164)).rank.statistic["avg"] * 100
    assert board.loc["clipscore", "rank_avg"] == pytest.approx(expected_clip, abs=5e-5)


def test_a_table_without_keys_must_still_match_the_row_count(shared_ts2, tmp_path, capsys):
    pd.DataFrame({"my_metric": [0.5, 0.2]}).to_csv(tmp_path / "short.csv", index=False)
    code = main(["report", str(tmp_path / "short.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
                 "--on", "seg_id", "file_name", "--n-bootstrap", "0", "--no-published", "--out", str(tmp_path / "r")])
    assert code == 2
    err = capsys.readouterr().err
    assert "short.csv: scores has 2 rows but metadata has 2840" in err and "no 'seg_id' column to join on" in err
