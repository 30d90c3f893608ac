"""``ts2 dataset export``: Parquet shards + card that ``datasets.load_dataset(OUT, config)`` reads with no script."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from PIL import Image

from scorers.cli import main
from scorers.ts2.dataset import load_ts2
from scorers.ts2.export import export_parquet, parse_size, portable_features
from tests.helpers.ts2_fixture_data import make_data_dir


@pytest.fixture(scope="module")
def exported(tmp_path_factory, data_dir, cache_dir):
    out = tmp_path_factory.mktemp("ts2-export") / "out"
    return export_parquet(out, data_dir=data_dir, cache_dir=cache_dir)


def _load(out: Path, config: str | None, tmp_path: Path):
    import datasets

    return datasets.load_dataset(str(out), config, split="train", cache_dir=str(tmp_path / "load-cache"))


def _raw(dataset):
    import datasets

    return dataset.cast_column("image", datasets.Image(decode=False)) if "image" in dataset.features else dataset


@pytest.mark.parametrize("config", ["segs", "tifa_questions", "dsg_questions"])
def test_export_loads_with_identical_rows(exported, data_dir, cache_dir, tmp_path, config):
    loaded = _load(exported.out, config, tmp_path)
    built = load_ts2(config, data_dir=data_dir, cache_dir=cache_dir)
    assert loaded.features == built.features
    assert loaded.num_rows == built.num_rows == exported.rows[config]
    assert _raw(loaded).to_dict() == _raw(built).to_dict()


def test_export_counts_and_default_config(exported, tmp_path):
    assert exported.rows == {"segs": 2840, "tifa_questions": 1205, "dsg_questions": 898}
    default = _load(exported.out, None, tmp_path)
    assert default.num_rows == 2840 and "image" in default.features
    dsg = _load(exported.out, "dsg_questions", tmp_path)
    assert dsg[4]["parents"] == [1, 0] and dsg[0]["parents"] == []


def test_images_round_trip_byte_for_byte(exported, data_dir, tmp_path):
    loaded = _load(exported.out, "segs", tmp_path)
    raw = _raw(loaded)
    for row in (0, 777, 2839):
        original = (data_dir / raw[row]["file_name"]).read_bytes()
        assert raw[row]["image"]["bytes"] == original
        decoded = loaded[row]["image"]
        assert isinstance(decoded, Image.Image)
        assert np.array_equal(np.asarray(decoded), np.asarray(Image.open(io.BytesIO(original))))


def test_unpack_gives_back_the_release_layout(exported, data_dir, tmp_path):
    """The release's export unpacked: its metadata.csv's columns and cells (no partition column: the release keeps
    TS2's id ranges) and its images, byte for byte."""
    import pandas as pd

    from scorers.ts2.export import unpack_export

    back = unpack_export(exported.out, tmp_path / "back", cache_dir=tmp_path / "load-cache")
    original = pd.read_csv(data_dir / "metadata.csv", dtype=str, keep_default_na=False)
    again = pd.read_csv(back / "metadata.csv", dtype=str, keep_default_na=False)
    assert list(again.columns) == ["id", "target_prompt", "file_name", "image_source", "rank"]
    assert again.equals(original[list(again.columns)])
    for name in original["file_name"].iloc[[0, 777, 2839]]:
        assert (back / name).read_bytes() == (data_dir / name).read_bytes()


def test_card_yaml_configs_and_three_ways_in(exported):
    text = exported.readme.read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---\n")[1])
    configs = {c["config_name"]: c for c in front["configs"]}
    assert list(configs) == ["segs", "tifa_questions", "dsg_questions"]
    assert configs["segs"]["default"] is True
    assert configs["dsg_questions"]["data_files"] == [{"split": "train", "path": "dsg_questions/train-*.parquet"}]
    assert front["license"] == "mit"
    for needle in ("load_ts2(", "load_dataset(", "trust_remote_code=True", "Known quirks", "bibtex"):
        assert needle in text


def test_parquet_metadata_is_readable_by_old_datasets(exported):
    schema = pq.read_schema(exported.files["dsg_questions"][0])
    features = json.loads(schema.metadata[b"huggingface"])["info"]["features"]
    assert features["parents"] == [{"dtype": "int32", "_type": "Value"}]
    assert '"List"' not in json.dumps(features)
    assert portable_features({"a": {"_type": "List", "feature": {"_type": "List", "feature": {"_type": "Image"}}}}) \
        == {"a": [[{"_type": "Image"}]]}
    old_sequence = {"_type": "Sequence", "length": -1, "feature": {"dtype": "string", "_type": "Value"}}
    assert portable_features(old_sequence) == [{"dtype": "string", "_type": "Value"}]
    dict_of_lists = {"_type": "Sequence", "length": -1, "feature": {"x": {"dtype": "int32", "_type": "Value"}}}
    assert portable_features(dict_of_lists) == dict_of_lists


def test_shards_split_by_size_and_keep_order(data_dir, cache_dir, tmp_path):
    result = export_parquet(tmp_path / "out", data_dir=data_dir, cache_dir=cache_dir, configs=["segs"],
                            max_shard_size="100KB")
    files = result.files["segs"]
    assert len(files) > 1
    assert [f.name for f in files][-1] == f"train-{len(files) - 1:05d}-of-{len(files):05d}.parquet"
    assert sum(pq.read_metadata(f).num_rows for f in files) == 2840
    loaded = _load(result.out, "segs", tmp_path)
    assert loaded["file_name"] == load_ts2("segs", data_dir=data_dir, cache_dir=cache_dir)["file_name"]
    assert not (result.out / "tifa_questions").exists()
    front = yaml.safe_load(result.readme.read_text().split("---\n")[1])
    assert [c["config_name"] for c in front["configs"]] == ["segs"]


def test_existing_output_needs_overwrite(data_dir, cache_dir, tmp_path):
    out = tmp_path / "out"
    export_parquet(out, data_dir=data_dir, cache_dir=cache_dir, configs=["tifa_questions"])
    with pytest.raises(FileExistsError, match="overwrite"):
        export_parquet(out, data_dir=data_dir, cache_dir=cache_dir, configs=["tifa_questions"])
    (out / "notes.txt").write_text("keep me")
    export_parquet(out, data_dir=data_dir, cache_dir=cache_dir, configs=["dsg_questions"], overwrite=True)
    assert not (out / "tifa_questions").exists() and (out / "dsg_questions").is_dir()
    assert (out / "notes.txt").read_text() == "keep me"


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="unknown config"):
        export_parquet(tmp_path / "o", data_dir=tmp_path, configs=["images"])
    with pytest.raises(ValueError, match="500MB"):
        export_parquet(tmp_path / "o", data_dir=tmp_path, max_shard_size="lots")
    assert parse_size("500MB") == 500_000_000
    assert parse_size("64KiB") == 65536
    assert parse_size("1.5G") == 1_500_000_000
    assert parse_size(1000) == 1000


def test_cli_export(data_dir, cache_dir, tmp_path, capsys):
    out = tmp_path / "cli-out"
    code = main(["dataset", "export", "--data-dir", str(data_dir), "--out", str(out), "--config", "tifa_questions",
                 "--config", "dsg_questions", "--cache-dir", str(cache_dir)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "tifa_questions: 1,205 rows -> 1 shard(s)" in printed
    assert "dsg_questions: 898 rows" in printed and "load_dataset(" in printed
    assert _load(out, "tifa_questions", tmp_path).num_rows == 1205


def test_cli_reports_data_errors(tmp_path, capsys):
    source = make_data_dir(tmp_path / "data", seg_ids=[0, 1])
    (source / "images" / "001-02.jpg").unlink()
    args = ["dataset", "export", "--data-dir", str(source), "--out", str(tmp_path / "out"), "--config", "segs",
            "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 2
    assert "images/001-02.jpg does not exist" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # everything is validated before anything is written
    assert main(args + ["--skip-missing-images"]) == 0
    assert "segs: 22 rows" in capsys.readouterr().out
    assert main(args + ["--skip-missing-images"]) == 2
    assert "is not empty; pass --overwrite to replace" in capsys.readouterr().err
