"""Duplicate header names are refused by every table read (score tables, metadata, the card's preference scores
and ratings, Parquet and TSV), in one line naming the file and the name; the check keeps reading fast.

Expected values come from hand-made files: the duplicated names are the ones written."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.helpers.cli import one_line, run_cli
from tests.helpers.score_tables import release_columns


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


#: a second spelling of ``my_metric`` that only Unicode normalisation and the removal of format characters reveal
INVISIBLE_TWINS = {"bom": "\ufeffmy_metric", "zero-width space": "my_metric\u200b",
                   "zero-width joiner": "my\u200d_metric", "full-width": "\uff4d\uff59_metric"}


@pytest.mark.parametrize("twin", sorted(INVISIBLE_TWINS))
def test_names_that_differ_only_by_invisible_or_compatibility_characters_are_duplicates(capsys, tmp_path, shared_ts2,
                                                                                        twin):
    """Before: ``my_metric`` and ``my_metric`` with a zero-width space (or a BOM) were two metrics of one table."""
    name = INVISIBLE_TWINS[twin]
    scores = release_columns(shared_ts2, ["id", "image_id", "my_metric", name], ["clipscore", "alignscore"],
                             tmp_path / "twin.csv")
    code, out, err = run_cli(capsys, "meta", scores, "--data-dir", shared_ts2)
    line = one_line(err)
    assert code == 2 and not out
    assert str(scores) in line and "duplicate column name" in line and "'my_metric'" in line, line
    assert repr(name) in line and "differ only by invisible or compatibility characters" in line, line


def test_the_pandas_reader_compares_names_as_the_light_one(tmp_path):
    from scorers.tables.pandas_tables import DuplicateHeaderError, read_csv

    for twin, name in INVISIBLE_TWINS.items():
        (tmp_path / "t.csv").write_text(f"image,my_metric,{name}\nu1,0.5,0.1\n", encoding="utf-8")
        with pytest.raises(DuplicateHeaderError, match="duplicate column name.*'my_metric'"):
            read_csv(tmp_path / "t.csv", dtype=str, keep_default_na=False)
    (tmp_path / "t.csv").write_text("\ufeffimage,my_metric,mine\nu1,0.5,0.1\n", encoding="utf-8")  # a file's BOM
    assert list(read_csv(tmp_path / "t.csv", encoding="utf-8-sig").columns) == ["image", "my_metric", "mine"]


def test_a_real_dotted_name_is_not_a_duplicate(capsys, tmp_path, shared_ts2):
    """``x`` and ``x.1`` written as such are two names: read as given."""
    scores = release_columns(shared_ts2, ["id", "image_id", "x", "x.1"], ["clipscore", "alignscore"],
                             tmp_path / "dotted.csv")
    code, out, err = run_cli(capsys, "meta", scores, "--data-dir", shared_ts2, "--json")
    assert code == 0, err
    assert set(json.loads(out)) == {"x", "x.1"}


def test_metadata_with_a_duplicated_header_is_refused(tmp_path, shared_ts2):
    from scorers.tables.pandas_tables import DuplicateHeaderError, read_metadata

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
    from scorers.tables.pandas_tables import DuplicateHeaderError

    table = pa.Table.from_arrays([pa.array(["u1"]), pa.array([0.5]), pa.array([0.1])], names=["image", "m", "m"])
    pq.write_table(table, tmp_path / "s.parquet")
    with pytest.raises(DuplicateHeaderError, match="'m'"):
        read_table(tmp_path / "s.parquet")
    (tmp_path / "s.tsv").write_text("image\tm\tm\nu1\t0.5\t0.1\n")
    with pytest.raises(DuplicateHeaderError, match="'m'"):
        read_table(tmp_path / "s.tsv")


def test_duplicate_check_keeps_reading_fast(tmp_path, monkeypatch):
    """The check costs no second read of a table whose names pandas left alone, and one read of the header row (one
    row, not the table) when a name looks like pandas' rename of a repeat (``m.1``); the table itself is parsed by
    pandas' C reader once, never row by row in Python. Counted, not timed: the count does not depend on the load."""
    from scorers.tables import pandas_tables

    rng = np.random.default_rng(0)
    for names in (["m", "n"], ["m", "m.1"]):
        pd.DataFrame({"image": [f"i{k}" for k in range(20_000)], names[0]: rng.normal(size=20_000),
                      names[1]: rng.normal(size=20_000)}).to_csv(tmp_path / f"{names[1]}.csv", index=False)
    calls = []
    original = pd.read_csv

    def counted(*args, **kwargs):
        calls.append(kwargs.get("nrows"))
        return original(*args, **kwargs)

    monkeypatch.setattr(pandas_tables.pd, "read_csv", counted)
    pandas_tables.read_csv(tmp_path / "n.csv", dtype=str, keep_default_na=False)
    assert calls == [None]  # the table, once
    calls.clear()
    frame = pandas_tables.read_csv(tmp_path / "m.1.csv", dtype=str, keep_default_na=False)
    assert calls == [None, 1] and list(frame.columns) == ["image", "m", "m.1"]  # + the header row alone


def test_card_ratings_file_with_a_duplicated_header_is_an_error(capsys, tmp_path, shared_ts2):
    """Before: the set was listed as "not evaluated" and the card exited 0."""
    (tmp_path / "r.csv").write_text("item,system,image,prompt,human_1,mine,mine\n1,s,u1,p,3,0.5,0.4\n")
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, _out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--ratings", f"myset={tmp_path / 'r.csv'}",
                              "--baseline", "none", "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out",
                              tmp_path / "o")
    line = one_line(err)
    assert code == 2 and "duplicate column name" in line and "'mine'" in line
    assert line.count(str(tmp_path / "r.csv")) == 1
