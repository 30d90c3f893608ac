"""The TS2 datasets builder through ``scorers.ts2.dataset.load_ts2``: counts, fields, questions, source lookup, Hub path."""
from __future__ import annotations

import importlib.metadata
import logging
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from scorers.stats import graph
from scorers.ts2.dataset import (
    builder_module,
    find_builder_script,
    load_ts2,
    read_question_frame,
    seg_graphs,
    seg_index,
    seg_walks,
)
from tests.helpers.ts2_fixture_data import make_data_dir


@pytest.fixture(scope="module")
def segs(data_dir, cache_dir):
    return load_ts2("segs", data_dir=data_dir, cache_dir=cache_dir)


@pytest.fixture(scope="module")
def metadata(shared_ts2) -> pd.DataFrame:
    return pd.read_csv(shared_ts2 / "metadata.csv", dtype=str, keep_default_na=False)


def test_segs_rows_seg_count_and_partitions(segs, metadata):
    assert segs.num_rows == 2840
    frame = segs.remove_columns("image").to_pandas()
    assert frame["seg_id"].nunique() == 165
    per_partition = frame.groupby("partition")["seg_id"].nunique().to_dict()
    assert per_partition == {"synth": 111, "nat": 25, "real": 29}
    assert list(frame["partition"].unique()) == ["synth", "nat", "real"]  # metadata order: ids ascend


def test_segs_fields_match_metadata_and_label_digits(segs, metadata):
    import datasets

    assert list(segs.features) == ["seg_id", "prompt", "image", "file_name", "node", "error_count", "partition",
                                   "image_source", "is_head"]
    assert isinstance(segs.features["image"], datasets.Image)
    frame = segs.remove_columns("image").to_pandas()
    assert frame["seg_id"].tolist() == metadata["id"].astype(int).tolist()
    assert frame["prompt"].tolist() == metadata["target_prompt"].tolist()
    assert frame["file_name"].tolist() == metadata["file_name"].tolist()
    assert frame["node"].tolist() == metadata["rank"].tolist()
    assert frame["image_source"].tolist() == metadata["image_source"].tolist()
    digits = [int(re.match(r"\d+", label).group()) for label in metadata["rank"]]
    assert frame["error_count"].tolist() == digits
    assert frame["is_head"].tolist() == [d == 0 for d in digits]
    assert (frame.groupby("seg_id")["is_head"].any()).all()


def test_segs_images_are_the_files(segs, data_dir):
    import datasets

    raw = segs.cast_column("image", datasets.Image(decode=False))
    for row in (0, 1234, 2839):
        record = raw[row]
        assert record["image"]["bytes"] == (data_dir / record["file_name"]).read_bytes()
        assert record["image"]["path"] == record["file_name"]
    image = segs[2839]["image"]
    assert image.size == (16, 16)


def test_question_configs(data_dir, cache_dir, shared_ts2):
    import datasets

    tifa = load_ts2("tifa_questions", data_dir=data_dir, cache_dir=cache_dir)
    dsg = load_ts2("dsg_questions", data_dir=data_dir, cache_dir=cache_dir)
    assert tifa.num_rows == 1205 and dsg.num_rows == 898
    assert list(tifa.features) == ["seg_id", "prompt", "question_id", "question", "choices", "answer", "is_yes_no"]
    assert list(dsg.features) == list(tifa.features) + ["parents"]
    csv = pd.read_csv(shared_ts2 / "dsg_questions.csv", dtype=str, keep_default_na=False)
    expected = [[] if p == "-1" else [int(x) for x in p.split("-")] for p in csv["parent_question_id"]]
    assert dsg["parents"] == expected
    assert dsg["parents"][4] == [1, 0]  # SEG 0 question 4: "1-0"
    tifa_csv = pd.read_csv(shared_ts2 / "tifa_questions.csv", dtype=str, keep_default_na=False)
    assert tifa["choices"] == [c.split("|") for c in tifa_csv["choices"]]
    assert tifa["is_yes_no"] == [c == "yes|no" for c in tifa_csv["choices"]]
    assert tifa["answer"] == tifa_csv["answer"].tolist()
    assert sum(tifa["is_yes_no"]) > 0 and not all(tifa["is_yes_no"])
    both = load_ts2("tifa_questions", data_dir=data_dir, cache_dir=cache_dir, split=None)
    assert isinstance(both, datasets.DatasetDict) and list(both) == ["train"]


def test_release_quirks_are_logged_not_fatal(data_dir, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        load_ts2("segs", data_dir=data_dir, cache_dir=tmp_path, check_images=False)
        load_ts2("tifa_questions", data_dir=data_dir, cache_dir=tmp_path)
    text = caplog.text
    assert "SEG 3 mixes prompts" in text and "55" in text
    assert "4 answer(s) are not among their choices" in text and "leaning over" in text


def test_script_rules_agree_with_scorers_graph(metadata):
    module = builder_module()
    labels = set(metadata["rank"]) | {"0", "12c", " 1a ", "007", "3XYZ"}
    for label in labels:
        assert module.error_count(label) == graph.error_count(label), label
    for bad in ("a1", "", "1.5", "-1", "1-a", "one"):
        with pytest.raises(ValueError):
            module.error_count(bad)
        with pytest.raises(ValueError):
            graph.error_count(bad)
    for seg_id in list(range(0, 165)) + [300]:
        assert module.partition_of(seg_id) == graph.default_partition(seg_id), seg_id
    assert module.PARTITIONS == graph.PARTITIONS


def test_seg_helpers_wrap_graph(segs, metadata):
    graphs = seg_graphs(segs)
    reference = graph.build_segs(metadata["id"], metadata["rank"])
    assert [s.seg_id for s in graphs] == [s.seg_id for s in reference]
    assert all(a.nodes == b.nodes and a.partition == b.partition for a, b in zip(graphs, reference))
    index = seg_index(segs)
    assert len(index) == 165
    assert sum(len(rows) for nodes in index.values() for rows in nodes.values()) == 2840
    assert list(index[1]) == ["0", "1a", "1b"]
    assert index[1]["1a"] == [13, 14, 15, 16, 17]
    assert set(segs.select(index[1]["1b"])["node"]) == {"1b"}
    walks = seg_walks(segs)
    assert walks[1] == [("0", "1a"), ("0", "1b")]
    assert walks[2] == reference[2].walks() and len(walks[2]) == 3 * 2  # heads 0a/0b/0c x 1a/1b, then 2
    # positions are relative to the rows given: a filtered view, a DataFrame and a column mapping agree
    start = min(p for rows in index[160].values() for p in rows)
    view = segs.select(range(start, segs.num_rows))
    shifted = {seg: {node: [p - start for p in rows] for node, rows in nodes.items()}
               for seg, nodes in index.items() if seg >= 160}
    assert seg_index(view) == shifted
    frame = segs.remove_columns("image").to_pandas()
    assert seg_index(frame) == index
    assert seg_walks({"seg_id": frame["seg_id"], "node": frame["node"]}) == walks
    with pytest.raises(ValueError, match="seg_id"):
        seg_graphs({"node": ["0"]})


def test_read_questions_frame(data_dir):
    frame = read_question_frame(data_dir / "dsg_questions.csv", "dsg", seg_ids=range(165))
    assert len(frame) == 898 and frame.loc[4, "parents"] == [1, 0]
    assert {"seg_id", "question_id", "choices", "is_yes_no", "line"} <= set(frame.columns)


def test_script_found_from_any_cwd_and_env_override(tmp_path, monkeypatch, data_dir):
    monkeypatch.chdir(tmp_path)
    script = find_builder_script()
    assert script == Path(__file__).resolve().parents[2] / "dataset_script" / "ts2" / "ts2.py"
    copy = tmp_path / "copy"
    shutil.copytree(script.parent, copy)
    monkeypatch.setenv("TS2_DATASET_SCRIPT", str(copy))
    assert find_builder_script() == (copy / "ts2.py").resolve()
    monkeypatch.setenv("TS2_DATASET_SCRIPT", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="TS2_DATASET_SCRIPT"):
        find_builder_script()


def test_unknown_config_and_missing_data_dir(tmp_path):
    with pytest.raises(ValueError, match="unknown TS2 config 'images'"):
        load_ts2("images", data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_ts2("segs", data_dir=tmp_path / "absent", cache_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="metadata.csv"):
        load_ts2("segs", data_dir=tmp_path, cache_dir=tmp_path / "cache")


def test_edited_data_dir_is_rebuilt_not_served_stale(tmp_path):
    source = make_data_dir(tmp_path / "src", seg_ids=[0, 1])
    first = load_ts2("segs", data_dir=source, cache_dir=tmp_path / "cache")
    assert first.num_rows == 23
    frame = pd.read_csv(source / "metadata.csv", dtype=str, keep_default_na=False)
    frame.iloc[:-1].to_csv(source / "metadata.csv", index=False)
    second = load_ts2("segs", data_dir=source, cache_dir=tmp_path / "cache")
    assert second.num_rows == 22


def test_hub_offline_error_is_clear(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(FileNotFoundError) as info:
        load_ts2("segs", cache_dir=tmp_path)
    message = str(info.value)
    assert "saxon/T2IScoreScore" in message and "data_dir" in message and "Offline" in message


def test_hub_download_path_builds_from_snapshot(tmp_path, monkeypatch):
    import huggingface_hub

    snapshot = make_data_dir(tmp_path / "snapshot", seg_ids=[0, 111, 136], with_questions=False)
    calls = []

    def fake_snapshot_download(**kwargs):
        calls.append(kwargs)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    segs = load_ts2("segs", cache_dir=tmp_path / "cache", revision="abc123")
    assert sorted(set(segs["partition"])) == ["nat", "real", "synth"]
    assert calls[0]["repo_id"] == "saxon/T2IScoreScore" and calls[0]["repo_type"] == "dataset"
    assert calls[0]["revision"] == "abc123"
    assert set(calls[0]["allow_patterns"]) == {"metadata.csv", "images/*"}
    with pytest.raises(FileNotFoundError, match="has no tifa_questions.csv"):
        load_ts2("tifa_questions", cache_dir=tmp_path / "cache2")


@pytest.mark.skipif(int(importlib.metadata.version("datasets").split(".")[0]) < 4,
                    reason="datasets < 4 still runs scripts")
def test_datasets_4_plus_refuses_the_script_so_load_ts2_exists(tmp_path, data_dir):
    import datasets

    script_dir = find_builder_script().parent
    with pytest.raises(RuntimeError, match="scripts are no longer supported"):
        datasets.load_dataset(str(script_dir), "segs", data_dir=str(data_dir), cache_dir=str(tmp_path))
