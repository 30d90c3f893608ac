"""Set loaders on small generated files in each set's real format: parse, schema errors in one line, checksums."""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scorers.tables.release import ChecksumMismatch, ReleaseFileUnavailable
from scorers.sets import (PAIR_COLUMNS, RATING_COLUMNS, SetFormatError, load_evalmuse, load_gecko2k,
                          load_hpdv2, load_imagerewarddb, load_mjbench_alignment, load_pickapic_v2)
from scorers.sets import preferences, set_files
from scorers.sets import ratings as set_ratings
from tests.helpers.environment import use_hf_home
from tests.helpers.loopback_http import LoopbackServer
from tests.helpers.loopback_hub import LoopbackHubDataset
from tests.helpers.set_files import (write_evalmuse, write_hpdv2, write_imagerewarddb, write_mjbench,
                                     write_pickapic)

GECKO_CSV = (",dataset_id,prompt,prompt_type,prompt_id,max_disagreement_less_0.5\n"
             "0,ne/landmarks:landmarks,a penguin on an ice shelf,Gecko(S),0,True\n"
             "1,render/text:text_rendering,\"a sign saying \"\"hi\"\"\",Gecko(S),1,False\n"
             "2,coco:12,two dogs on a sofa,Gecko(R),2,True\n")


# ---- parsing ----------------------------------------------------------------------------------------------------


def test_pickapic_pairs(tmp_path):
    frame, prov = load_pickapic_v2(write_pickapic(tmp_path / "test_unique.parquet"))
    assert list(frame.columns[:5]) == list(PAIR_COLUMNS)
    assert frame["preference"].tolist() == ["a", "b", "tie"]  # label_0 = 1, 0, 0.5
    assert frame["image_a"].tolist() == ["img0-0", "img0-1", "img0-2"]
    assert frame["item"].tolist() == ["prompt 0", "prompt 1", "prompt 2"]  # grouped by prompt
    assert frame["ranking_id"].tolist() == [100, 101, 102]
    assert prov["sha256"] == hashlib.sha256((tmp_path / "test_unique.parquet").read_bytes()).hexdigest()
    assert prov["sha256_pinned"] is False and prov["licence"]


def test_hpdv2_rankings_become_all_pairs(tmp_path):
    frame, _ = load_hpdv2(write_hpdv2(tmp_path / "test.json"))
    first = frame[frame["item"] == "0"]
    assert len(first) == 6 and len(frame) == 7  # 4 images -> 6 pairs, 2 images -> 1 pair
    # ranks [2, 1, 4, 3] (1 = best): (0,1) b, (0,2) a, (0,3) a, (1,2) a, (1,3) a, (2,3) b
    assert first["preference"].tolist() == ["b", "a", "a", "a", "a", "b"]
    assert first[["image_a", "image_b"]].iloc[0].tolist() == ["00000.jpg", "00001.jpg"]
    assert frame["preference"].iloc[-1] == "tie"  # equal ranks


def test_imagerewarddb_pairs_within_prompt(tmp_path):
    frame, _ = load_imagerewarddb(write_imagerewarddb(tmp_path / "metadata-test.parquet"))
    assert frame["item"].tolist() == ["000001-0001"] * 3 + ["000002-0002"]
    # prompt 1 ranks [2, 1, 2]: (a,b) b, (a,c) tie, (b,c) a; prompt 2 ranks [1, 3]: a
    assert frame["preference"].tolist() == ["b", "tie", "a", "a"]
    assert frame["image_b"].iloc[0] == "images/test/b.webp"


def test_mjbench_label_is_the_preferred_index(tmp_path):
    frame, _ = load_mjbench_alignment(write_mjbench(tmp_path / "alignment.parquet"))
    assert frame["preference"].tolist() == ["a", "b", "a"]
    assert frame["image_a"].iloc[1] == "alignment.parquet#1/image0"


def test_evalmuse_mean_of_total_score(tmp_path):
    frame, prov = load_evalmuse(write_evalmuse(tmp_path / "train_list.json"))
    assert list(frame.columns[:5]) == list(RATING_COLUMNS)
    assert frame["human"].tolist() == [4.0, 1.5]  # mean([3, 4, 5]), mean([1, 2])
    assert frame["n_raters"].tolist() == [3, 2] and frame["item"].tolist() == ["p1", "p1"]
    assert prov["revision"] is None  # a local copy names no revision


def test_gecko_prompts_and_given_ratings(tmp_path):
    prompts = tmp_path / "prompts.csv"
    prompts.write_text(GECKO_CSV)
    frame, prov = load_gecko2k(prompts=prompts)
    assert frame["item"].tolist() == ["0", "1", "2"] and frame["human"].isna().all()
    assert frame["prompt"].iloc[1] == 'a sign saying "hi"'
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("prompt_id,system,image,human\n2,imagen,i/2.png,4.5\n0,sdxl,i/0.png,2\n")
    joined, prov = load_gecko2k(ratings, prompts=prompts)
    assert joined[["item", "system", "human", "prompt"]].values.tolist() == [
        ["2", "imagen", 4.5, "two dogs on a sofa"], ["0", "sdxl", 2.0, "a penguin on an ice shelf"]]
    assert "ratings" in prov


# ---- schema errors: one line ------------------------------------------------------------------------------------


def _one_line(error) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


def test_schema_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"caption": ["x"], "image_0_uid": ["u"]}), bad)
    with pytest.raises(SetFormatError) as err:
        load_pickapic_v2(bad)
    assert "missing field(s) ['image_1_uid', 'label_0', 'label_1']" in _one_line(err)
    with pytest.raises(SetFormatError, match=r"row 0: label_0/label_1 = 0.3/0.7") as err:
        load_pickapic_v2(write_pickapic(tmp_path / "p.parquet", labels=((0.3, 0.7),)))
    _one_line(err)
    hp = tmp_path / "hp.json"
    hp.write_text(json.dumps([{"prompt": "x", "image_path": ["a", "b"], "rank": [1]}]))
    with pytest.raises(SetFormatError, match="entry 0: image_path and rank must be lists of the same length") as err:
        load_hpdv2(hp)
    _one_line(err)
    hp.write_text("{not json")
    with pytest.raises(SetFormatError, match="not valid JSON") as err:
        load_hpdv2(hp)
    _one_line(err)
    with pytest.raises(SetFormatError, match="not an ImageRewardDB metadata table") as err:
        load_imagerewarddb(bad)
    _one_line(err)
    with pytest.raises(SetFormatError, match=r"row 1: label 2") as err:
        load_mjbench_alignment(write_mjbench(tmp_path / "m.parquet", labels=(0, 2)))
    _one_line(err)
    ev = tmp_path / "test.json"
    ev.write_text(json.dumps([{"prompt_id": "p", "prompt": "x", "img_path": "i.png"}]))  # test.json: no scores
    with pytest.raises(SetFormatError, match="test.json has no annotations yet") as err:
        load_evalmuse(ev)
    _one_line(err)
    prompts = tmp_path / "prompts.csv"
    prompts.write_text(GECKO_CSV)
    rt = tmp_path / "r.csv"
    rt.write_text("prompt_id,system,image,human\n99,sdxl,i.png,3\n")
    with pytest.raises(SetFormatError, match="row 0: prompt_id '99' is not in Gecko2K") as err:
        load_gecko2k(rt, prompts=prompts)
    _one_line(err)


def test_registry_names_every_loader():
    from scorers.sets.registry import REGISTRY

    assert {r.name for r in REGISTRY.values() if r.load is not None} == {
        "tifa160", "genai_bench", "evalmuse", "gecko2k", "pickapic_v2", "hpdv2", "imagerewarddb", "mjbench_alignment"}
    for file in (preferences.PICKAPIC_V2_TEST_UNIQUE, preferences.HPDV2_TEST, preferences.IMAGEREWARDDB_TEST,
                 preferences.MJBENCH_ALIGNMENT, set_ratings.EVALMUSE_TRAIN):
        assert len(file.revision) == 40 and int(file.revision, 16) >= 0  # a full commit hash, never a branch
        assert file.licence and file.note


# ---- downloads: pinned Hub files and pinned GitHub files --------------------------------------------------------


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return use_hf_home(monkeypatch, tmp_path / "hf")


def test_hub_download_pinned_revision_then_offline_cache(tmp_path, hub_env, monkeypatch):
    spec = preferences.HPDV2_TEST
    repo = tmp_path / "repo"
    repo.mkdir()
    write_hpdv2(repo / "test.json")
    with LoopbackHubDataset(repo, spec.repo_id, spec.revision) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.base)
        frame, prov = load_hpdv2()
        assert len(frame) == 7 and prov["revision"] == spec.revision
        assert prov["source"] == "hf://datasets/ymhao/HPDv2/test.json"
    frame2, _ = load_hpdv2(offline=True)  # server gone: the cache alone
    assert frame2.equals(frame)


def test_hub_offline_without_cache_is_a_clear_error(hub_env):
    with pytest.raises(ReleaseFileUnavailable, match="offline") as err:  # unpinned: release_download.fetch_hub_unpinned
        load_hpdv2(offline=True)
    assert "ymhao/HPDv2/test.json@74f2e7b" in _one_line(err)
    with pytest.raises(ReleaseFileUnavailable, match="offline") as err:  # pinned: release_download.fetch's own message
        load_evalmuse(offline=True)
    assert set_ratings.EVALMUSE_TRAIN.url in str(err.value)


def test_hub_pinned_sha256_refuses_other_content(tmp_path, hub_env, monkeypatch):
    spec = replace(preferences.HPDV2_TEST, sha256="0" * 64)  # pinned to other bytes than the served file
    repo = tmp_path / "repo"
    repo.mkdir()
    write_hpdv2(repo / "test.json")
    with LoopbackHubDataset(repo, spec.repo_id, spec.revision) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.base)
        with pytest.raises(ChecksumMismatch, match="does not match the pinned") as err:
            set_files.fetch_hub(spec)
        _one_line(err)
        assert not [p for p in (hub_env / "hub").rglob("test.json") if p.exists()]  # nothing kept
        good = replace(spec, sha256=hashlib.sha256((repo / "test.json").read_bytes()).hexdigest())
        assert set_files.fetch_hub(good).read_bytes() == (repo / "test.json").read_bytes()


class _Files(LoopbackServer):
    def __init__(self, files: dict[str, bytes]):
        self.files = files
        super().__init__()

    def route(self, path):
        data = self.files.get(self.path_of(path))
        return (200, {}, data) if data is not None else (404, {}, b"")


def test_gecko_prompts_github_pin_refuses_a_corrupted_copy(tmp_path, monkeypatch):
    url_path = "/" + set_ratings.GECKO_PROMPTS.url.removeprefix("https://raw.githubusercontent.com/")
    server = _Files({url_path: GECKO_CSV.encode()})
    monkeypatch.setenv("TS2_GITHUB_URL", server.base)
    cache = tmp_path / "cache"
    digest = hashlib.sha256(GECKO_CSV.encode()).hexdigest()
    try:
        pinned = replace(set_ratings.GECKO_PROMPTS, sha256=digest)
        frame, prov = load_gecko2k(offline=False, cache_dir=cache, source=pinned)
        assert len(frame) == 3 and prov["sha256"] == digest and prov["sha256_pinned"] is True
        server.files[url_path] = GECKO_CSV.replace("penguin", "pelican").encode()  # the source changed
        with pytest.raises(ChecksumMismatch) as err:
            load_gecko2k(offline=False, cache_dir=tmp_path / "other", source=pinned)
        _one_line(err)
        # the shipped constant is unpinned (trust on first use): the first digest is recorded and enforced
        frame, prov = load_gecko2k(offline=False, cache_dir=tmp_path / "tofu")
        assert prov["sha256_pinned"] is False
        cached = next((tmp_path / "tofu").rglob("gecko_prompts.csv"))
        assert cached.with_name(cached.name + ".sha256").is_file()
    finally:
        server.stop()


def test_shipped_pins_refuse_a_stand_in_download(tmp_path, hub_env, monkeypatch):
    """ImageRewardDB's and EvalMuse's shipped constants carry the sha256 of the real files (their Git LFS
    pointers): a generated stand-in served at the pinned revision is refused in one line, and nothing is kept."""
    for spec, writer, loader in ((preferences.IMAGEREWARDDB_TEST, write_imagerewarddb, load_imagerewarddb),
                                 (set_ratings.EVALMUSE_TRAIN, write_evalmuse, load_evalmuse)):
        assert spec.sha256 is not None
        repo = tmp_path / spec.repo_id.replace("/", "_")
        repo.mkdir()
        writer(repo / spec.filename)
        with LoopbackHubDataset(repo, spec.repo_id, spec.revision) as hub:
            monkeypatch.setenv("HF_ENDPOINT", hub.base)
            with pytest.raises(ChecksumMismatch, match=spec.sha256) as err:
                loader()
            _one_line(err)
        assert not [p for p in (hub_env / "hub").rglob(spec.filename) if p.exists()]
        frame, prov = loader(repo / spec.filename)  # the same file as a local copy: read, flagged as not the pin
        assert prov["matches_pinned"] is False and prov["sha256_pinned"] is False


def test_hub_file_needs_a_full_commit():
    with pytest.raises(ValueError, match="full commit hash"):
        set_files.HubFile("a/b", "main", "x.json", licence="-")
