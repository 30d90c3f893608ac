"""``ts2 seg push`` keeps everything a built data dir holds, and ``ts2 dataset unpack`` brings it back.

The Parquet rows keep ``partition``, ``errors``, ``error_types`` and ``source_file``; ``segs.json``, ``warnings.txt``
and the question CSVs travel beside the shards (in the dry-run folder as in the upload). A download unpacked gives the
same ``segs.json``, ``metadata.csv``, images, and the same ``ts2 meta --by-error-type --json``. Expected values are the
built folder's own files, compared byte for byte or number by number.
"""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from scorers.ts2.seg.build import build_seg_dir
from tests.helpers.cli import one_line, run_cli
from tests.helpers.seg_files import write_docs_example

SIDE = ("segs.json", "warnings.txt", "tifa_questions.csv", "dsg_questions.csv")


@pytest.fixture()
def built(tmp_path, monkeypatch) -> Path:
    """The worked example of docs/build-your-own-segs.md built into ``my_segs`` (two SEGs, typed errors, warnings),
    with TIFA and DSG questions of SEGs 0 and 1 beside ANNOTATIONS (copied into the build)."""
    from tests.helpers.ts2_fixture_data import make_data_dir

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    write_docs_example(tmp_path)
    release = make_data_dir(tmp_path / "release-part", seg_ids=[0, 1], image_size=8)
    for name in SIDE[2:]:
        shutil.copyfile(release / name, tmp_path / name)
    build_seg_dir(tmp_path / "annotations.csv", images=tmp_path / "my_images", out=tmp_path / "my_segs")
    assert all((tmp_path / "my_segs" / name).is_file() for name in SIDE)
    return tmp_path


def dry_run(work: Path, capsys) -> Path:
    code, out, err = run_cli(capsys, "seg", "push", work / "my_segs", "--repo", "me/my-segs", "--dry-run")
    assert code == 0, err
    return work / "my_segs-hub"


def shard_rows(export: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq

    tables = [pq.read_table(p, columns=None).drop(["image"]) for p in sorted((export / "segs").glob("*.parquet"))]
    return pd.concat([t.to_pandas() for t in tables], ignore_index=True)


def test_dry_run_export_keeps_the_build_columns_and_files(built, capsys):
    import datasets

    export = dry_run(built, capsys)
    metadata = pd.read_csv(built / "my_segs" / "metadata.csv", dtype=str, keep_default_na=False)
    rows = shard_rows(export)
    assert rows["file_name"].tolist() == metadata["file_name"].tolist()
    for column in ("partition", "errors", "error_types", "source_file"):
        assert rows[column].tolist() == metadata[column].tolist(), column
    assert rows["source_file"].iloc[2] == "dog/no-dog-1.png"  # by hand: line 7 is dog/blue-no-mat.png, red;mat
    assert rows["errors"].iloc[6] == "mat;red" and rows["error_types"].iloc[6] == "missing;attribute"
    for name in SIDE:
        assert (export / name).read_bytes() == (built / "my_segs" / name).read_bytes(), name
    loaded = datasets.load_dataset(str(export), "segs", split="train", cache_dir=str(built / "load"))
    assert {"errors", "error_types", "partition", "source_file"} <= set(loaded.column_names)
    assert loaded["errors"][6] == metadata["errors"].iloc[6]


def test_upload_sends_the_side_files_in_one_commit_before_the_card(built, capsys, monkeypatch):
    import datasets
    import huggingface_hub

    sent = []
    monkeypatch.setattr(datasets.DatasetDict, "push_to_hub",
                        lambda self, repo, **kw: sent.append(("data", kw["config_name"], self)))
    monkeypatch.setattr(huggingface_hub.HfApi, "create_commit",
                        lambda self, repo, operations, **kw: sent.append(("files", kw["repo_type"], operations)))
    monkeypatch.setattr(huggingface_hub.DatasetCard, "push_to_hub",
                        lambda self, repo, **kw: sent.append(("card", kw["repo_type"], str(self))))
    code, out, err = run_cli(capsys, "seg", "push", built / "my_segs", "--repo", "me/my-segs")
    assert code == 0, err
    assert [s[:2] for s in sent] == [("data", "segs"), ("data", "tifa_questions"), ("data", "dsg_questions"),
                                     ("files", "dataset"), ("card", "dataset")]
    assert {"errors", "error_types", "partition", "source_file"} <= set(sent[0][2]["train"].column_names)
    operations = sent[3][2]
    assert [op.path_in_repo for op in operations] == list(SIDE)
    for op in operations:
        assert Path(op.path_or_fileobj).read_bytes() == (built / "my_segs" / op.path_in_repo).read_bytes()
    assert "pushed segs.json, warnings.txt, tifa_questions.csv, dsg_questions.csv: beside the Parquet" in out


def _numbers(tree, path=""):
    """Every number of a JSON tree by its path (None kept), for a comparison to 1e-9."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _numbers(value, f"{path}/{key}")
    elif isinstance(tree, list):
        for k, value in enumerate(tree):
            yield from _numbers(value, f"{path}/{k}")
    else:
        yield path, tree


def test_a_download_unpacked_gives_the_same_segs_json_and_by_error_type(built, capsys):
    export = dry_run(built, capsys)
    back = built / "back"
    code, out, err = run_cli(capsys, "dataset", "unpack", export, "--out", back, "--cache-dir", built / "load")
    assert code == 0, err
    assert "segs.json" in out and "images/ (14 files)" in out
    original = built / "my_segs"
    for name in ("segs.json", "metadata.csv", *SIDE[1:]):
        assert (back / name).read_bytes() == (original / name).read_bytes(), name
    for name in pd.read_csv(original / "metadata.csv")["file_name"]:
        assert (back / name).read_bytes() == (original / name).read_bytes()
    scores = pd.read_csv(built / "my_segs_scores.csv", dtype=str, keep_default_na=False)  # keyed by source names
    scores["file_name"] = pd.read_csv(built / "annotations.csv", dtype=str, keep_default_na=False)["file_name"]
    scores.to_csv(built / "by_source.csv", index=False)
    results = []
    for folder in (original, back, back):
        scores = built / ("by_source.csv" if len(results) == 2 else "my_segs_scores.csv")
        code, out, err = run_cli(capsys, "meta", scores, "--metadata", folder / "metadata.csv", "--by-error-type",
                                 "--json", "--n-bootstrap", 0)
        assert code == 0, err
        results.append(dict(_numbers(json.loads(out))))
    assert any("by_error_type" in k for k in results[0])
    for result in results[1:]:
        assert result.keys() == results[0].keys()
        for key, value in results[0].items():
            if isinstance(value, float) and isinstance(result[key], float):
                assert math.isclose(value, result[key], rel_tol=0, abs_tol=1e-9), key
            else:
                assert value == result[key], key


def test_unpack_refusals_are_one_line(built, capsys):
    import pyarrow.parquet as pq

    export = dry_run(built, capsys)
    code, out, err = run_cli(capsys, "dataset", "unpack", built / "nowhere", "--out", built / "b1")
    assert code == 2 and "nowhere: no such folder" in one_line(err)
    (built / "b2").mkdir()
    (built / "b2" / "x").write_text("x")
    code, out, err = run_cli(capsys, "dataset", "unpack", export, "--out", built / "b2")
    assert code == 2 and "b2 is not empty; pass --overwrite" in one_line(err)
    shard = next((export / "segs").glob("*.parquet"))  # an export whose image name leaves the folder
    table = pq.read_table(shard)
    names = table.column("file_name").to_pylist()
    names[0] = "../evil.png"
    table = table.set_column(table.schema.get_field_index("file_name"), "file_name", [names])
    pq.write_table(table, shard)
    code, out, err = run_cli(capsys, "dataset", "unpack", export, "--out", built / "b3", "--cache-dir", built / "c3")
    assert code == 2 and "image file_name '../evil.png' lies outside the folder" in one_line(err)
    assert not (built / "evil.png").exists()
