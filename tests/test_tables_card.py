"""Issue 33 items 12-15 and issue 34 section 5 (the card): duplicate header names are refused by every table read,
``ts2 meta --from`` re-derives the saved table from its results, the card's preference inputs are checked, the card
reads what ``ts2 score --set`` writes for every set, and the card's units, messages and figure labels.

Expected values come from hand-made files (the duplicated names are the ones written), from ``ts2 meta``'s own
``--json`` run on the same file (the saved table) and from hand counts of the pairs written."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.cli import main


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def release_columns(shared: Path, header: list[str], columns: list[str], target: Path) -> Path:
    """A score table of the release's rows (``id, image_id`` and ``columns`` copied verbatim) under ``header``."""
    raw = pd.read_csv(shared / "released_scores.csv", dtype=str, keep_default_na=False)
    body = raw[["id", "image_id", *columns]].to_csv(index=False, header=False)
    target.write_text(",".join(header) + "\n" + body)
    return target


# ---------------------------------------------------------------------------------------------- 12. duplicate headers


def test_meta_refuses_two_columns_of_one_name(capsys, tmp_path, shared_ts2):
    scores = release_columns(shared_ts2, ["id", "image_id", "my_metric", "my_metric"], ["clipscore", "alignscore"],
                             tmp_path / "dup.csv")
    code, out, err = run_cli(capsys, "meta", scores, "--data-dir", shared_ts2)
    line = one_line(err)
    assert code == 2 and not out
    assert str(scores) in line and "duplicate column name" in line and "'my_metric'" in line


def test_meta_refuses_a_duplicated_key_header(capsys, tmp_path, shared_ts2):
    """Before: the second ``id`` became a metric named ``id.1`` (all-constant numbers)."""
    scores = release_columns(shared_ts2, ["id", "id", "image_id", "my_metric"], ["id", "clipscore"],
                             tmp_path / "dupkey.csv")
    code, out, err = run_cli(capsys, "meta", scores, "--data-dir", shared_ts2)
    line = one_line(err)
    assert code == 2 and "'id'" in line and "duplicate column name" in line and "id.1" not in out


def test_a_real_dotted_name_is_not_a_duplicate(capsys, tmp_path, shared_ts2):
    """``x`` and ``x.1`` written as such are two names: read as given."""
    scores = release_columns(shared_ts2, ["id", "image_id", "x", "x.1"], ["clipscore", "alignscore"],
                             tmp_path / "dotted.csv")
    code, out, err = run_cli(capsys, "meta", scores, "--data-dir", shared_ts2, "--json")
    assert code == 0, err
    assert set(json.loads(out)) == {"x", "x.1"}


def test_metadata_with_a_duplicated_header_is_refused(tmp_path, shared_ts2):
    from scorers.tables.readers import DuplicateHeaderError, read_metadata

    text = (shared_ts2 / "metadata.csv").read_text(encoding="utf-8").splitlines()
    lines = [text[0] + ",rank"] + [line + ",x" for line in text[1:]]
    (tmp_path / "metadata.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DuplicateHeaderError, match=r"duplicate column name.*'rank'"):
        read_metadata(tmp_path / "metadata.csv")


@pytest.mark.parametrize("header", [["image", "mine", "mine"], ["image", "image", "mine"], ["image", "mine", " mine"]])
def test_card_preference_scores_refuse_duplicate_headers(capsys, tmp_path, shared_ts2, header):
    (tmp_path / "pairs.csv").write_text("item,prompt,image_a,image_b,preference\n1,p,u1,u2,a\n")
    (tmp_path / "s.csv").write_text(",".join(header) + "\nu1,0.5,0.1\nu2,0.3,0.2\n")
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, _out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences", f"toy={tmp_path / 'pairs.csv'}",
                              "--preference-scores", f"toy={tmp_path / 's.csv'}", "--data-dir", shared_ts2,
                              "--n-bootstrap", 0, "--out", tmp_path / "o")
    line = one_line(err)
    assert code == 2 and "duplicate column name" in line and f"'{header[1].strip()}'" in line
    assert line.count(str(tmp_path / "s.csv")) == 1


def test_parquet_and_tsv_tables_refuse_duplicate_names(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scorers.report.card.inputs import read_table
    from scorers.tables.readers import DuplicateHeaderError

    table = pa.Table.from_arrays([pa.array(["u1"]), pa.array([0.5]), pa.array([0.1])], names=["image", "m", "m"])
    pq.write_table(table, tmp_path / "s.parquet")
    with pytest.raises(DuplicateHeaderError, match="'m'"):
        read_table(tmp_path / "s.parquet")
    (tmp_path / "s.tsv").write_text("image\tm\tm\nu1\t0.5\t0.1\n")
    with pytest.raises(DuplicateHeaderError, match="'m'"):
        read_table(tmp_path / "s.tsv")


def test_duplicate_check_keeps_reading_fast(tmp_path):
    """The check reads the header row again only when a name looks like pandas' rename of a repeat: a 200,000-row
    table with a ``.1`` name is read within 1.5x (+ 50 ms) of pandas alone (the bound: the one extra header read)."""
    from scorers.tables.readers import read_csv

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"image": [f"i{k}" for k in range(200_000)], "m": rng.normal(size=200_000),
                          "m.1": rng.normal(size=200_000)})
    frame.to_csv(tmp_path / "big.csv", index=False)

    def best(call):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return min(times)

    plain = best(lambda: pd.read_csv(tmp_path / "big.csv", dtype=str, keep_default_na=False))
    ours = best(lambda: read_csv(tmp_path / "big.csv", dtype=str, keep_default_na=False))
    assert ours <= 1.5 * plain + 0.05, (ours, plain)
