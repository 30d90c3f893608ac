"""The pandas-free fast path (scorers.tables.csv_tables) reads what the pandas path reads, bit for bit, and leaves every
other file to it.

Expected values come from the pandas path (scorers.tables.pandas_tables + scorers.tables.join), the library's reference reading of
the same files; each malformed file below is one the light readers must decline (None), so that the pandas path's
checks and messages apply.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from scorers.tables.join import join_scores
from scorers.tables.csv_tables import (light_metadata, light_paper_table, light_scores, light_table2_full_precision,
                                  paper_table)
from scorers.ts2.meta_from_tables import meta_from_tables
from scorers.ts2.options import MetaOptions
from scorers.tables.pandas_tables import (column_scores, read_metadata, read_paper_table, read_score_table,
                                   read_table2_full_precision, score_columns)

WIDTH = 1000


def _pandas_values(scores, metadata, clean_quotes=True, required_segs=None):
    frame = read_metadata(metadata)
    joined = join_scores(read_score_table(scores), frame, required_segs=required_segs)
    return {c: column_scores(joined.frame, c, clean_quotes=clean_quotes) for c in score_columns(joined.frame)}, joined


def _same(light, pandas):
    assert list(light) == list(pandas)
    for name in pandas:
        assert light[name].dtype == np.float64 and np.array_equal(light[name], pandas[name], equal_nan=True), name


def test_release_metadata_and_scores_equal_the_pandas_path(shared_ts2):
    metadata = shared_ts2 / "metadata.csv"
    frame = read_metadata(metadata)
    light = light_metadata(metadata)
    assert light is not None and light.seg_id.dtype == np.int64
    assert np.array_equal(light.seg_id, frame["seg_id"].to_numpy())
    assert light.node.tolist() == frame["node"].tolist() and light.file_name.tolist() == frame["file_name"].tolist()
    read = light_scores(shared_ts2 / "released_scores.csv", light, columns=None, required_segs=None,
                        clean_quotes=True, max_columns=WIDTH)
    pandas, joined = _pandas_values(shared_ts2 / "released_scores.csv", metadata)
    assert read is not None and read[1] == joined.pairing and read[2] == joined.note
    _same(read[0], pandas)
    assert np.isnan(read[0]["llmscore_over"]).sum() == np.isnan(pandas["llmscore_over"]).sum()


def test_release_paper_tables_equal_the_pandas_path(shared_ts2):
    light = light_paper_table(shared_ts2 / "paper_table2.csv")
    frame = read_paper_table(shared_ts2 / "paper_table2.csv")
    assert light is not None and light.columns == list(frame.columns)
    assert light.to_dict("records") == frame.to_dict("records")
    assert light["column"] == frame["column"].tolist()
    assert light.drop_duplicates("column").to_dict("records") == frame.drop_duplicates("column").to_dict("records")
    from tests.helpers.release_data import require

    published = require("table2_full_precision.csv")
    full = light_table2_full_precision(published)
    assert full is not None and full.to_dict("records") == read_table2_full_precision(published).to_dict("records")
    assert light_paper_table(published) is None and paper_table(published).to_dict("records") == full.to_dict("records")


def _keyed(tmp_path, shared_ts2, rows=None, header="seg_id,file_name,clip,other", lines=None) -> Path:
    frame = read_metadata(shared_ts2 / "metadata.csv")
    rng = np.random.default_rng(0)
    out = lines if lines is not None else [
        f"{s},{f},{v:.6f},{'' if k % 7 == 0 else f'{w:.3f}'}"
        for k, (s, f, v, w) in enumerate(zip(frame["seg_id"], frame["file_name"], rng.random(len(frame)),
                                             rng.random(len(frame))))]
    order = rng.permutation(len(out)) if rows is None else rows
    path = tmp_path / "keyed.csv"
    path.write_text(header + "\n" + "\n".join(out[k] for k in order) + "\n", encoding="utf-8")
    return path


def test_a_shuffled_keyed_table_equals_the_pandas_join(tmp_path, shared_ts2):
    metadata = shared_ts2 / "metadata.csv"
    scores = _keyed(tmp_path, shared_ts2)
    read = light_scores(scores, light_metadata(metadata), columns=None, required_segs=None, clean_quotes=False,
                        max_columns=WIDTH)
    pandas, joined = _pandas_values(scores, metadata, clean_quotes=False)
    assert read is not None and read[1] == joined.pairing and read[2] is None
    _same(read[0], pandas)


def test_a_keyed_table_covering_only_the_evaluated_segs(tmp_path, shared_ts2):
    metadata = shared_ts2 / "metadata.csv"
    frame = read_metadata(metadata)
    keep = np.flatnonzero(frame["seg_id"].to_numpy() <= 20)
    scores = _keyed(tmp_path, shared_ts2, rows=keep)
    read = light_scores(scores, light_metadata(metadata), columns=["clip"], required_segs=range(21),
                        clean_quotes=False, max_columns=WIDTH)
    pandas, _ = _pandas_values(scores, metadata, clean_quotes=False, required_segs=range(21))
    assert read is not None and list(read[0]) == ["clip"]
    assert np.array_equal(read[0]["clip"], pandas["clip"], equal_nan=True)
    assert np.isnan(read[0]["clip"][frame["seg_id"].to_numpy() > 20]).all()
    assert light_scores(scores, light_metadata(metadata), columns=None, required_segs=None, clean_quotes=False,
                        max_columns=WIDTH) is None  # rows of required SEGs missing: the pandas path names them


@pytest.mark.parametrize("case", ["blank line", "short row", "duplicate key", "unknown file", "word", "infinity",
                                  "stray quote", "padded seg id", "bom", "spaced header", "image_id key",
                                  "all empty"])
def test_score_tables_the_light_path_declines(tmp_path, shared_ts2, case):
    frame = read_metadata(shared_ts2 / "metadata.csv")
    lines = [f"{s},{f},{k / len(frame):.6f},0.5" for k, (s, f) in enumerate(zip(frame["seg_id"], frame["file_name"]))]
    header = "seg_id,file_name,clip,other"
    if case == "blank line":
        lines.insert(5, "")
    elif case == "short row":
        lines[3] = lines[3].rsplit(",", 1)[0]
    elif case == "duplicate key":
        lines[4] = lines[3]
    elif case == "unknown file":
        lines[4] = lines[4].replace(".jpg", ".png")
    elif case == "word":
        lines[9] = lines[9].rsplit(",", 1)[0] + ",high"
    elif case == "infinity":
        lines[9] = lines[9].rsplit(",", 1)[0] + ",inf"
    elif case == "stray quote":
        lines[9] = lines[9].rsplit(",", 1)[0] + ',"""3"'
    elif case == "padded seg id":
        lines[9] = " " + lines[9]
    elif case == "bom":
        header = "\ufeff" + header
    elif case == "spaced header":
        header = "seg_id, file_name,clip,other"
    elif case == "image_id key":
        header = "seg_id,image_id,clip,other"
        lines = [f"{s},{k},0.1,0.2" for k, s in enumerate(frame["seg_id"])]
    elif case == "all empty":
        lines = [line.rsplit(",", 1)[0] + "," for line in lines]
    scores = _keyed(tmp_path, shared_ts2, rows=range(len(lines)), header=header, lines=lines)
    assert light_scores(scores, light_metadata(shared_ts2 / "metadata.csv"), columns=None, required_segs=None,
                        clean_quotes=False, max_columns=WIDTH) is None


@pytest.mark.parametrize("case", ["padded seg id", "empty prompt", "duplicate file", "bad node", "no head",
                                  "spaced header", "blank line", "full-width digit"])
def test_metadata_the_light_path_declines(tmp_path, shared_ts2, case):
    lines = (shared_ts2 / "metadata.csv").read_text(encoding="utf-8-sig").splitlines()
    header, rows = lines[0], lines[1:]
    if case == "padded seg id":
        rows[2] = " " + rows[2]
    elif case == "empty prompt":
        parts = rows[2].split(",")
        rows[2] = ",".join([parts[0], ""] + parts[-3:])
    elif case == "duplicate file":
        rows[3] = rows[2]
    elif case == "bad node":
        rows[2] = rows[2].rsplit(",", 1)[0] + ",a1"
    elif case == "no head":
        rows = [r.rsplit(",", 1)[0] + ",1" if r.startswith("0,") and r.endswith(",0") else r for r in rows]
    elif case == "spaced header":
        header = header.replace("file_name", " file_name")
    elif case == "blank line":
        rows.insert(7, "")
    elif case == "full-width digit":
        rows[2] = rows[2].rsplit(",", 1)[0] + ",\uff11a"
    path = tmp_path / "metadata.csv"
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert light_metadata(path) is None


def test_meta_from_tables_gives_the_same_results_either_way(tmp_path, shared_ts2):
    """Paths (the light path) and frames (the pandas path) of the release give equal results."""
    metadata = shared_ts2 / "metadata.csv"
    scores = shared_ts2 / "released_scores.csv"
    light = meta_from_tables(scores, metadata, options=MetaOptions(clean_quotes=True, n_bootstrap=50))
    frames = meta_from_tables([(str(scores), read_score_table(scores))], read_metadata(metadata),
                              options=MetaOptions(clean_quotes=True, n_bootstrap=50))
    assert light.columns == frames.columns and light.notes == frames.notes and light.pairing == frames.pairing
    assert light.to_dict() == frames.to_dict()


def test_a_file_the_light_path_declines_still_gets_the_pandas_message(tmp_path, shared_ts2):
    metadata = tmp_path / "metadata.csv"
    shutil.copy(shared_ts2 / "metadata.csv", metadata)
    scores = tmp_path / "s.csv"
    scores.write_text("seg_id,file_name,clip\n0,images/000-00.jpg,0.5\n0,images/000-00.jpg,0.4\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"1 duplicate key\(s\) \(seg_id, file_name\)"):
        meta_from_tables(scores, metadata, options=MetaOptions(seg_subset=[0]))


@pytest.mark.parametrize("cell", ["", "NA", "#N/A", "null", "True", "+5", "1e3", "-nan", "inf"])
def test_paper_tables_with_cells_pandas_reads_as_other_than_text_are_declined(tmp_path, cell):
    path = tmp_path / "paper.csv"
    path.write_text("column,name,family,meta_metric,avg,synth,nat,real,flop_per_image\n"
                    f"clipscore,{cell},embedding,rank,71.4,75.0,58.0,69.3,604M\n", encoding="utf-8")
    assert light_paper_table(path) is None
    path.write_text("column,name,family,meta_metric,avg,synth,nat,real,flop_per_image\n"
                    "clipscore,CLIPScore,embedding,rank,71.4,75.0,58.0,69.3,604M\n", encoding="utf-8")
    assert light_paper_table(path).to_dict("records") == read_paper_table(path).to_dict("records")
