"""Scores of a built data dir keyed by either name of each image: the built one (``images/000-02.png``) or the file
it was built from (``dog/no-dog-1.png``, the ``source_file`` column of the built ``metadata.csv``).

``ts2 seg build`` renames every image, and a user who scored their images with their own code keys the scores by their
own file names. Expected values come from the plain scipy loop (tests/helpers/reference_meta.py) on the scores in
metadata order, never from the join.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.tables.join import join_scores
from scorers.tables.pandas_tables import read_metadata
from scorers.ts2.seg.build import build_seg_dir
from tests.helpers.cli import one_line, run_cli
from tests.helpers.reference_meta import reference_meta
from tests.helpers.seg_files import write_docs_example


@pytest.fixture()
def built(tmp_path) -> Path:
    """The worked example of docs/build-your-own-segs.md, built: ``my_segs/`` and ``my_segs_scores.csv`` (keyed by
    the built names, ANNOTATIONS order = metadata order), ``annotations.csv`` (the source names)."""
    write_docs_example(tmp_path)
    build_seg_dir(tmp_path / "annotations.csv", images=tmp_path / "my_images", out=tmp_path / "my_segs")
    return tmp_path


def source_keyed(work: Path, spell=lambda name: name, seed: int = 3) -> pd.DataFrame:
    """``my_segs_scores.csv`` keyed by the ANNOTATIONS file names (spelled by ``spell``), rows shuffled."""
    scores = pd.read_csv(work / "my_segs_scores.csv", dtype=str, keep_default_na=False)
    sources = pd.read_csv(work / "annotations.csv", dtype=str, keep_default_na=False)["file_name"]
    scores["file_name"] = [spell(name) for name in sources]
    return scores.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def reference(work: Path) -> dict:
    metadata = pd.read_csv(work / "my_segs" / "metadata.csv", dtype=str, keep_default_na=False)
    scores = pd.read_csv(work / "my_segs_scores.csv")
    assert scores["file_name"].tolist() == metadata["file_name"].tolist()  # metadata order
    return reference_meta(scores["my_metric"].to_numpy(), metadata["id"].astype(int).to_numpy(), metadata["rank"])


def assert_per_seg(result: dict, ref: dict) -> None:
    for metric in ("rank", "sep", "delta"):
        got = {int(k): v for k, v in result[metric]["per_seg"].items()}
        assert got.keys() == ref[metric].keys()
        for seg, value in ref[metric].items():
            assert math.isclose(got[seg], value, rel_tol=0, abs_tol=1e-9), (metric, seg)


def meta_json(capsys, scores: Path, work: Path, *extra) -> dict:
    code, out, err = run_cli(capsys, "meta", scores, "--metadata", work / "my_segs" / "metadata.csv", "--json",
                             "--n-bootstrap", 0, *extra)
    assert code == 0, err
    return json.loads(out)["my_metric"]


def test_scores_keyed_by_source_names_equal_the_reference(built, capsys):
    source_keyed(built).to_csv(built / "src.csv", index=False)
    ref = reference(built)
    assert_per_seg(meta_json(capsys, built / "src.csv", built), ref)  # the pandas-free reader of plain CSVs
    assert_per_seg(meta_json(capsys, built / "src.csv", built, "--on", "seg_id", "file_name"), ref)  # pandas
    by_type = meta_json(capsys, built / "src.csv", built, "--by-error-type")["by_error_type"]
    assert by_type == meta_json(capsys, built / "my_segs_scores.csv", built, "--by-error-type")["by_error_type"]


def test_join_scores_takes_either_name_and_mixed_spellings(built):
    metadata = read_metadata(built / "my_segs" / "metadata.csv")
    expected = pd.read_csv(built / "my_segs_scores.csv", dtype=str, keep_default_na=False)["my_metric"].tolist()
    spellings = [lambda n: n, lambda n: "./" + n, lambda n: n.replace("/", "\\"), lambda n: n.replace("/", "//")]
    for spell in spellings:
        joined = join_scores(source_keyed(built, spell), metadata)
        assert joined.frame["my_metric"].tolist() == expected and joined.covered.all()
    mixed = source_keyed(built)
    built_names = pd.read_csv(built / "my_segs_scores.csv", dtype=str)
    half = mixed.index[: len(mixed) // 2]
    by_source = dict(zip(pd.read_csv(built / "annotations.csv", dtype=str)["file_name"], built_names["file_name"]))
    mixed.loc[half, "file_name"] = mixed.loc[half, "file_name"].map(by_source)  # these rows by their built name
    assert join_scores(mixed, metadata).frame["my_metric"].tolist() == expected


def test_two_rows_for_one_image_are_refused_naming_it(built, capsys):
    scores = pd.read_csv(built / "my_segs_scores.csv", dtype=str, keep_default_na=False)
    extra = scores.iloc[[2]].assign(file_name="dog/no-dog-1.png")  # image 000-02 again, by its source name
    pd.concat([scores, extra]).to_csv(built / "twice.csv", index=False)
    code, out, err = run_cli(capsys, "meta", built / "twice.csv", "--metadata", built / "my_segs" / "metadata.csv")
    line = one_line(err)
    assert code != 0 and "Traceback" not in err
    assert "two score rows for one image: SEG 0, images/000-02.png (source_file dog/no-dog-1.png)" in line
    assert "lines 4 ('images/000-02.png') and 16 ('dog/no-dog-1.png')" in line


def test_a_name_that_is_built_and_source_is_refused_naming_it(tmp_path, capsys):
    """A source file named like another image's built name: ``images/000-00.png`` is the built name of the first
    image and the source of the second, so a score row keyed by it could mean either."""
    (tmp_path / "a.csv").write_text("seg_id,prompt,file_name,errors\n0,a dog,x.png,\n0,a dog,images/000-00.png,\n"
                                    "0,a dog,y.png,dog\n", encoding="utf-8")
    build_seg_dir(tmp_path / "a.csv", images=None, out=tmp_path / "out")
    metadata = pd.read_csv(tmp_path / "out" / "metadata.csv", dtype=str, keep_default_na=False)
    assert metadata["source_file"].tolist() == ["x.png", "images/000-00.png", "y.png"]
    pd.DataFrame({"seg_id": 0, "file_name": metadata["file_name"], "m": [0.9, 0.8, 0.1]}).to_csv(
        tmp_path / "s.csv", index=False)
    code, out, err = run_cli(capsys, "meta", tmp_path / "s.csv", "--metadata", tmp_path / "out" / "metadata.csv")
    assert code != 0 and "Traceback" not in err
    assert ("line 2: file name 'images/000-00.png' of SEG 0 names two images: images/000-00.png by its built name "
            "and images/000-01.png by its source_file") in one_line(err)


def test_unknown_names_say_both_names_were_tried(built, capsys):
    scores = source_keyed(built)
    scores.loc[0, "file_name"] = "dog/nowhere.png"
    scores.to_csv(built / "bad.csv", index=False)
    code, out, err = run_cli(capsys, "meta", built / "bad.csv", "--metadata", built / "my_segs" / "metadata.csv")
    assert code != 0
    assert "1 score row(s) match no metadata row (seg_id, file_name or source_file)" in one_line(err)


def test_card_and_report_join_source_names(built, capsys, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    source_keyed(built).to_csv(built / "src.csv", index=False)
    metadata = built / "my_segs" / "metadata.csv"
    cards = {}
    for name, scores in (("built", built / "my_segs_scores.csv"), ("source", built / "src.csv")):
        code, out, err = run_cli(capsys, "card", "--scores", f"m={scores}", "--metadata", metadata, "--out",
                                 built / f"card-{name}", "--offline", "--n-bootstrap", 20, "--baseline", "none")
        assert code == 0, err
        cards[name] = (built / f"card-{name}" / "m.md").read_text()
    strip = lambda text: "\n".join(l for l in text.splitlines() if "src.csv" not in l and "my_segs_scores" not in l)
    assert strip(cards["source"]) == strip(cards["built"])
    code, out, err = run_cli(capsys, "report", built / "src.csv", "--metadata", metadata, "--out", built / "report",
                             "--no-published", "--n-bootstrap", 20, "--offline")
    assert code == 0, err


def test_the_pandas_free_reader_takes_source_names_too(built):
    """``ts2 meta``'s fast path (tables/csv_tables) joins source names itself rather than handing over to pandas."""
    from scorers.tables.csv_tables import light_metadata, light_scores

    source_keyed(built, lambda n: "./" + n).to_csv(built / "src.csv", index=False)
    metadata = light_metadata(built / "my_segs" / "metadata.csv")
    assert metadata.source_file.tolist() == pd.read_csv(built / "annotations.csv")["file_name"].tolist()
    values, pairing, note = light_scores(built / "src.csv", metadata, columns=None, required_segs=None,
                                         clean_quotes=False, max_columns=10)
    expected = pd.read_csv(built / "my_segs_scores.csv")["my_metric"].to_numpy()
    assert pairing == "keys (seg_id, file_name)" and note is None and np.array_equal(values["my_metric"], expected)
