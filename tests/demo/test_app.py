"""The demo's logic without a browser: config resolution, upload validation, leaderboard rows, SEG explorer, scorers.

Numbers are checked against ``scorers.stats.meta.ts2_meta`` computed here; error messages against the text the UI shows.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
TS2 = [sys.executable, "-c", "import sys; from scorers.cli import main; sys.exit(main())"]

from scorers.stats.graph import build_segs  # noqa: E402
from scorers.stats.meta import ts2_meta  # noqa: E402
from scorers.demo.config import AppConfig  # noqa: E402
from scorers.demo.leaderboard_tab import (  # noqa: E402
    evaluate_upload,
    is_uploaded,
    leaderboard_view,
    published_reproduction,
    read_upload,
)
from scorers.demo.upload_scoring import LazyScorer, ScorerSpec, score_image, scorer_specs  # noqa: E402
from scorers.demo.sources import ImageSource, load_tables  # noqa: E402

from tests.helpers.ts2_fixture_data import make_data_dir  # noqa: E402
from tests.helpers.release_data import require  # noqa: E402

#: the pinned "final update" commit of the Hub dataset saxon/T2IScoreScore (its metadata.csv and images/)
HUB_COMMIT = "f450d74c2341a1b7b71752c57e8185f2a264f613"


@pytest.fixture(scope="module")
def config(shared_ts2):
    return AppConfig.resolve(
        metadata=shared_ts2 / "metadata.csv",
        scores_csv=shared_ts2 / "released_scores.csv",
        paper_table=shared_ts2 / "paper_table2.csv",
    )


@pytest.fixture(scope="module")
def tables(config):
    loaded = load_tables(config)
    assert loaded.problems == []
    return loaded


@pytest.fixture(scope="module")
def published(tables, config):
    return published_reproduction(tables, config)


def _my_scores(metadata: pd.DataFrame, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return -metadata["error_count"].to_numpy() + rng.normal(0.0, 1.0, len(metadata))


# ------------------------------------------------------------------------------------------------------ config


def test_tables_come_from_the_pinned_release_with_no_paths(sources, fresh_cache, shared_ts2):
    config = AppConfig.resolve()
    assert (config.metadata, config.scores_csv, config.paper_table, config.data_dir) == (None, None, None, None)
    tables = load_tables(config)
    assert tables.problems == []
    assert len(tables.metadata) == 2840 and len(tables.scores) == 2840  # the release's 2,840 images
    for key, name in (("metadata", "metadata.csv"), ("scores", "released_scores.csv")):
        assert tables.paths[key].read_bytes() == (shared_ts2 / name).read_bytes(), name
        assert fresh_cache in tables.paths[key].parents, name  # downloaded into this test's HF cache
    # the paper's Table 2: the release's table2_full_precision.csv (paper_table2.csv has no public URL)
    assert fresh_cache in tables.paths["paper"].parents
    official = pd.read_csv(require("table2_full_precision.csv")).set_index("metric")
    got = tables.paper.set_index(["column", "meta_metric"])
    # the file holds fractions (CLIPScore spearman-all 0.7141387); read back x 100
    assert got.loc[("clipscore", "rank"), "avg"] == pytest.approx(100 * official.loc["clipscore", "spearman-all"],
                                                                  abs=1e-9)
    # the Hub's metadata.csv: huggingface_hub's HEAD + GET; each GitHub file: one GET; nothing else
    assert sources.count("metadata.csv") == 2 and sources.count("released_scores.csv") == 1
    assert sources.count("table2_full_precision.csv") == 1 and sources.count() == 4
    again = load_tables(config)
    assert again.paths == tables.paths and sources.count() == 4  # second load: 0 requests
    published = published_reproduction(again, config)
    assert len(leaderboard_view(published, again.paper, [])) == 19  # the paper's 19 published metric columns


def test_offline_with_an_empty_cache_is_the_release_message_not_a_crash(fresh_cache):
    tables = load_tables(AppConfig.resolve())
    assert tables.metadata is None and tables.scores is None
    (problem,) = tables.problems  # one message naming both files
    lines = problem.splitlines()
    assert lines[0] == "2 TS2 release file(s) are not cached and HF_HUB_OFFLINE=1 forbids downloading them:"
    assert lines[1] == (f"  metadata.csv  <-  https://huggingface.co/datasets/saxon/T2IScoreScore/resolve/{HUB_COMMIT}"
                        "/metadata.csv")
    assert lines[2].startswith("  released_scores.csv  <-  https://raw.githubusercontent.com/michaelsaxon/"
                               "T2IScoreScore/")
    assert "set TS2_DATA=that folder" in lines[3]


def test_app_without_tables_still_builds_and_says_why(fresh_cache):
    from scorers.demo import build_app

    demo = build_app(AppConfig.resolve())
    values = [c.get("props", {}).get("value") for c in demo.get_config_file()["components"]]
    texts = [v for v in values if isinstance(v, str)]
    assert any(v.startswith("**Error:** 2 TS2 release file(s) are not cached and HF_HUB_OFFLINE=1 forbids "
                            "downloading them:<br>  metadata.csv  <-  ") for v in texts)
    assert "The leaderboard needs the release tables (metadata.csv, released_scores.csv)." in texts


def test_ts2_data_folder_gives_all_three_tables(monkeypatch, shared_ts2):
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    tables = load_tables(AppConfig.resolve())
    assert tables.problems == []
    release_dir = shared_ts2.resolve()  # scorers.tables.release resolves the TS2_DATA folder (../shared may be a link)
    assert tables.paths == {"metadata": release_dir / "metadata.csv", "scores": release_dir / "released_scores.csv",
                            "paper": release_dir / "paper_table2.csv"}
    assert tables.paper is not None


def test_small_data_dir_takes_tables_as_a_pair_from_the_release(tmp_path, monkeypatch, shared_ts2):
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    data_dir = make_data_dir(tmp_path, seg_ids=[0, 1])
    config = AppConfig.resolve(data_dir=data_dir)
    # the data_dir has metadata.csv for 2 SEGs but no scores: both tables come from the release
    assert (config.metadata, config.scores_csv, config.data_dir) == (None, None, data_dir)
    assert not config.hub_images  # images from the data_dir
    tables = load_tables(config)
    release_dir = shared_ts2.resolve()  # scorers.tables.release resolves the TS2_DATA folder (../shared may be a link)
    assert tables.paths["metadata"] == release_dir / "metadata.csv" and len(tables.metadata) == 2840
    assert tables.paths["scores"] == release_dir / "released_scores.csv"


def test_data_dir_with_its_scores_table_is_used_as_a_pair(tmp_path, monkeypatch, shared_ts2):
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    data_dir = make_data_dir(tmp_path, seg_ids=[0])
    (data_dir / "released_scores.csv").write_text("clipscore\n" + "0.5\n" * 12)
    config = AppConfig.resolve(data_dir=data_dir)
    assert config.metadata == data_dir / "metadata.csv" and config.scores_csv == data_dir / "released_scores.csv"


def test_data_dir_without_the_release_keeps_its_metadata(tmp_path, fresh_cache):
    data_dir = make_data_dir(tmp_path, seg_ids=[0])
    config = AppConfig.resolve(data_dir=data_dir)
    assert config.metadata is None and config.scores_csv is None
    tables = load_tables(config)  # offline, empty cache: the release cannot be had
    assert tables.metadata is not None and set(tables.metadata["seg_id"]) == {0}
    assert tables.paths == {"metadata": data_dir / "metadata.csv"}
    (problem,) = tables.problems
    assert problem.startswith("2 TS2 release file(s) are not cached") and "released_scores.csv  <-  " in problem


def test_missing_explicit_paths_raise(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        AppConfig.resolve(data_dir=tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="metadata.csv path"):
        AppConfig.resolve(metadata=tmp_path / "nope.csv")


def test_from_env_reads_space_variables(tmp_path, shared_ts2):
    env = {
        "TS2_METADATA": str(shared_ts2 / "metadata.csv"),
        "TS2_SCORES_CSV": str(shared_ts2 / "released_scores.csv"),
        "TS2_CLIP_MODEL": "some/clip",
        "TS2_MAX_UPLOAD_MB": "3",
    }
    config = AppConfig.from_env(env)
    assert config.clip_model == "some/clip" and not config.hub_images
    assert config.max_upload_bytes == 3 * 1024 * 1024
    assert config.metadata == shared_ts2 / "metadata.csv"


# ------------------------------------------------------------------------------------------------- leaderboard


def test_published_leaderboard_has_19_rows_equal_to_ts2_meta(published, tables):
    frame = leaderboard_view(published, tables.paper, [])
    assert len(frame) == 19 and not is_uploaded(frame).any()
    assert list(frame["#"]) == list(range(1, 20))
    metadata = tables.metadata
    clip = pd.to_numeric(tables.scores["clipscore"]).to_numpy()
    expected = ts2_meta(clip, metadata["seg_id"], metadata["node"], seg_subset=range(0, 164))
    row = frame[frame["column"] == "clipscore"].iloc[0]
    assert row["metric"] == "CLIPScore" and row["family"] == "embedding"
    assert row["rank"] == pytest.approx(round(100 * expected.rank.statistic["avg"], 1))
    assert row["sep"] == pytest.approx(round(100 * expected.sep.statistic["avg"], 1))
    assert row["delta"] == pytest.approx(round(100 * expected.delta.statistic["avg"], 1))
    # LLMScore columns are lower-is-better: negating them by hand gives the shown rank
    ec = pd.to_numeric(tables.scores["llmscore_ec"]).to_numpy()
    expected_ec = ts2_meta(-ec, metadata["seg_id"], metadata["node"], seg_subset=range(0, 164))
    shown = frame[frame["column"] == "llmscore_ec"].iloc[0]
    assert shown["rank"] == pytest.approx(round(100 * expected_ec.rank.statistic["avg"], 1))


def test_partition_and_sort(published, tables):
    frame = leaderboard_view(published, tables.paper, [], partition="nat", sort_by="sep")
    assert list(frame["sep"]) == sorted(frame["sep"], reverse=True)
    nat = {r["column"]: r["ours"] for r in published.rows if r["meta_metric"] == "sep" and r["partition"] == "nat"}
    assert frame.set_index("column")["sep"].to_dict() == pytest.approx({k: round(v, 1) for k, v in nat.items()})
    with pytest.raises(ValueError, match="partition"):
        leaderboard_view(published, tables.paper, [], partition="all")


def test_joined_and_row_aligned_uploads_give_the_same_row(tmp_path, tables, config, published):
    metadata = tables.metadata
    mine = _my_scores(metadata)
    joined = tmp_path / "joined.csv"
    pd.DataFrame({"id": metadata["seg_id"], "file_name": metadata["file_name"], "mine": mine}).sample(
        frac=1.0, random_state=1).to_csv(joined, index=False)
    aligned = tmp_path / "aligned.csv"
    pd.DataFrame({"seg_id": metadata["seg_id"], "mine": mine}).to_csv(aligned, index=False)
    (a,) = evaluate_upload(joined, tables, config)
    (b,) = evaluate_upload(aligned, tables, config)
    assert a.rows == b.rows
    expected = ts2_meta(mine, metadata["seg_id"], metadata["node"], seg_subset=range(0, 164))
    frame = leaderboard_view(published, tables.paper, [a])
    assert len(frame) == 20
    row = frame[is_uploaded(frame)].iloc[0]
    assert row["metric"] == "★ mine" and row["family"] == "uploaded"
    assert row["rank"] == pytest.approx(round(100 * expected.rank.statistic["avg"], 1))


def test_lower_is_better_and_name_clash(tmp_path, tables, config):
    metadata = tables.metadata
    mine = _my_scores(metadata)
    path = tmp_path / "clip.csv"
    pd.DataFrame({"clipscore": -mine}).to_csv(path, index=False)
    (metric,) = evaluate_upload(path, tables, config, lower_is_better=True, taken={"clipscore"})
    assert metric.label == "clipscore (yours)"
    expected = ts2_meta(mine, metadata["seg_id"], metadata["node"], seg_subset=range(0, 164))
    rank = [r["ours"] for r in metric.rows if r["meta_metric"] == "rank" and r["partition"] == "avg"][0]
    assert rank == pytest.approx(100 * expected.rank.statistic["avg"], abs=1e-3)


@pytest.mark.parametrize("keyed", [True, False])
def test_an_upload_is_read_and_joined_once(tmp_path, tables, config, monkeypatch, keyed):
    """read_upload's check is the work: its cells' reading (text_scores) and its join are what reproduce_table
    evaluates, not done again; the numbers are those of the same scores given as a frame."""
    import scorers.demo.leaderboard_tab as leaderboard_tab
    import scorers.tables.pandas_tables as pandas_tables
    import scorers.ts2.meta_from_tables as meta_from_tables
    from scorers.ts2.options import MetaOptions
    from scorers.ts2.reproduce import reproduce_table

    metadata = tables.metadata
    mine, other = _my_scores(metadata), _my_scores(metadata, seed=4)
    columns = {"seg_id": metadata["seg_id"], **({"file_name": metadata["file_name"]} if keyed else {}),
               "mine": mine, "other": other}
    path = tmp_path / "upload.csv"
    frame = pd.DataFrame(columns)
    (frame.sample(frac=1.0, random_state=2) if keyed else frame).to_csv(path, index=False)
    calls = {"join_scores": 0, "text_scores": 0}

    def counted(module, name):
        real = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    for module, name in ((leaderboard_tab, "join_scores"), (meta_from_tables, "join_scores"),
                         (pandas_tables, "text_scores")):
        counted(module, name)
    uploaded = evaluate_upload(path, tables, config)
    assert calls == {"join_scores": 1, "text_scores": 2}  # one join per upload, one reading per score column
    monkeypatch.undo()
    expected = reproduce_table(pd.DataFrame({"mine": mine, "other": other}), metadata, None,
                               options=MetaOptions(seg_subset=range(0, 164), n_bootstrap=1000))
    assert [m.rows for m in uploaded] == [[r for r in expected.rows if r["column"] == c] for c in ("mine", "other")]


@pytest.mark.parametrize(
    "content, message",
    [
        ("seg_id,file_name\n0,images/000-00.jpg\n", "no score column found"),
        ("seg_id,file_name,x\n0,images/000-00.jpg,abc\n", "non-numeric value(s): position 0: 'abc'"),
        ("seg_id,file_name,x\n0,images/000-00.jpg,1\n999,images/999-00.jpg,1\n",
         "unknown SEG id(s) [999] (first on line 3)"),
        ("seg_id,file_name,x\nzero,images/000-00.jpg,1\n", "line 2: SEG id 'zero' is not an integer"),
        ("seg_id,file_name,x\n0,images/000-00.jpg,1\n", "2839 metadata row(s) have no score row"),
        ("file_name,x\nimages/000-00.jpg,1\n", "needs a seg_id column"),
        ("x\n1\n2\n", "the CSV has 2 rows but the release has 2840 images"),
        ("a,b,c,d,e,f\n1,2,3,4,5,6\n", "at most 5 per upload"),
        ("x\n", "header but no rows"),
        ("", "the file is empty"),
        ('x,y\n1,2\n3,4,5,6\n', "not a readable CSV file"),
    ],
)
def test_malformed_uploads_give_readable_errors(tmp_path, tables, config, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(ValueError) as info:
        evaluate_upload(path, tables, config)
    assert message in str(info.value)
    assert "Traceback" not in str(info.value)


def test_row_aligned_upload_in_the_wrong_seg_order_is_refused(tmp_path, tables):
    metadata = tables.metadata
    seg = metadata["seg_id"].to_numpy()[::-1]
    path = tmp_path / "rev.csv"
    pd.DataFrame({"seg_id": seg, "x": np.arange(len(seg), dtype=float)}).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"line 2: SEG id 164 but metadata row 2 is SEG 0"):
        read_upload(path, metadata, 10 * 2**20)


def test_upload_size_limit(tmp_path, tables):
    path = tmp_path / "big.csv"
    path.write_text("x\n" + "0.5\n" * 1999)  # 7,998 bytes
    with pytest.raises(ValueError, match=r"the file is 7.8 KB; the limit is 1.0 KB"):
        read_upload(path, tables.metadata, 1000)


# ----------------------------------------------------------------------------------------------- SEG explorer


def test_explorer_structure_scores_and_per_seg_values(tmp_path, tables, published, config):
    from scorers.demo.explorer import SegExplorer

    data_dir = make_data_dir(tmp_path, seg_ids=[0])
    explorer = SegExplorer(tables, published, ImageSource(config.with_(data_dir=data_dir)))
    seg0 = build_segs(tables.metadata["seg_id"], tables.metadata["node"])[0]
    assert len(explorer.choices()) == 165
    assert explorer.choices()[0] == ("SEG 0 (synth): A Christmas tree with lights and teddy bear", 0)
    table = explorer.image_table(0)
    assert len(table) == 12 and list(table["node"]) == [n for n, m in zip(seg0.nodes, seg0.members) for _ in m]
    assert table["clipscore"].iloc[0] == "0.72" and table["llmscore_over"].tolist().count("-") == 0
    summary = explorer.summary_markdown(0, "clipscore")
    value = published.results["clipscore"].rank.per_seg[0]
    assert f"rank **{100 * value:.1f}**" in summary and "A Christmas tree" in summary
    assert "outside the leaderboard" in explorer.summary_markdown(164, "clipscore")
    gallery = explorer.gallery(0, "clipscore")
    # short captions (issue 23.14: "clipscor..." was cut off); the metric is named in the gallery label
    assert len(gallery) == 12 and gallery[0][1] == "0 · SD2.1 · 0.72"
    assert gallery[0][0].size == (16, 16)  # the data_dir's image, not the 160 px placeholder
    assert explorer.gallery(1, None)[0][0].size == (160, 160)  # SEG 1 has no image in this data_dir
    figure = explorer.figure(0)
    assert len(figure.axes[0].collections) == len(seg0.nodes)
    with pytest.raises(ValueError, match="unknown SEG id 999"):
        explorer.summary_markdown(999, None)


def test_image_source_refuses_paths_outside_the_data_dir(tmp_path, config):
    data_dir = make_data_dir(tmp_path / "d", seg_ids=[0])
    (tmp_path / "secret.jpg").write_bytes((data_dir / "images" / "000-00.jpg").read_bytes())
    images = ImageSource(config.with_(data_dir=data_dir))
    assert images.get("images/000-00.jpg") is not None
    assert images.get("../secret.jpg") is None
    assert images.get(str(tmp_path / "secret.jpg")) is None  # an absolute path elsewhere
    (data_dir / "images" / "out.jpg").symlink_to(tmp_path / "secret.jpg")
    assert images.get("images/out.jpg") is None  # a symlink leading out


def test_hub_images_only_with_release_tables_and_given_up_after_one_failure(fresh_cache, config):
    assert not ImageSource(config).use_hub  # local tables: placeholders, no network
    images = ImageSource(AppConfig())  # offline (HF_HUB_OFFLINE=1), empty cache
    assert images.use_hub and images.available
    assert images.get("images/000-00.jpg") is None
    assert not images.use_hub  # one failure switches the Hub off for the process


def _jpeg(size=(24, 16), colour=(200, 30, 40)) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="JPEG", quality=95)
    return buffer.getvalue()


def test_images_come_from_the_release_hub_dataset_at_the_pinned_revision(sources, fresh_cache):
    url_path = f"/datasets/saxon/T2IScoreScore/resolve/{HUB_COMMIT}/images/000-00.jpg"
    sources.routes[url_path] = _jpeg()
    sources.hub_commits[url_path] = HUB_COMMIT
    images = ImageSource(AppConfig.resolve())
    image = images.get("images/000-00.jpg")
    assert image is not None and image.size == (24, 16)
    # JPEG is lossy: a flat colour comes back within a few levels (observed 0-2 at quality 95)
    assert np.abs(np.asarray(image, dtype=int) - [200, 30, 40]).max() <= 6
    assert [r for r in sources.requests if r[1] == url_path] == [("HEAD", url_path), ("GET", url_path)]
    before = sources.count()
    assert ImageSource(AppConfig.resolve()).get("images/000-00.jpg").size == (24, 16)
    assert sources.count() == before  # a cached image at a pinned commit: 0 requests
    assert images.get("../metadata.csv") is None and sources.count() == before  # never leaves the dataset
    assert images.get("images/999-99.jpg") is None and not images.use_hub  # 404: the Hub is given up
    after = sources.count()
    assert images.get("images/000-01.jpg") is None and sources.count() == after


# --------------------------------------------------------------------------------------------------- scoring


class _Constant:
    def score(self, images, prompts):
        return np.full(len(images), 0.25)


def test_lazy_scorer_builds_once_and_reports_failures():
    calls = []

    def build():
        calls.append(1)
        return _Constant()

    slot = LazyScorer(ScorerSpec("Const", build, "const-model"))
    assert "not loaded yet" in slot.status()
    assert slot.get() is slot.get() and len(calls) == 1
    assert slot.status().startswith("**Ready:** Const model `const-model`")

    def broken():
        raise OSError("no such checkpoint")

    bad = LazyScorer(ScorerSpec("Broken", broken, "/nowhere"))
    with pytest.raises(RuntimeError, match="failed to load from `/nowhere`: OSError: no such checkpoint"):
        bad.get()


def test_score_image_inputs():
    from PIL import Image

    image = Image.new("RGB", (8, 8))
    result = score_image(_Constant(), image, "a cat")
    assert (result.score, result.answers, result.cosine, result.detail()) == (0.25, None, None, "")
    with pytest.raises(ValueError, match="upload an image"):
        score_image(_Constant(), None, "a cat")
    with pytest.raises(ValueError, match="enter the prompt"):
        score_image(_Constant(), image, "   ")


def test_qga_scorers_need_a_vlm(config):
    specs = scorer_specs(config)
    assert list(specs) == ["CLIPScore", "TIFA", "DSG"]
    assert specs["CLIPScore"].unavailable is None
    assert "no VQA model configured" in specs["TIFA"].unavailable
    with pytest.raises(RuntimeError, match="Unavailable"):
        LazyScorer(specs["DSG"]).get()


class FakeTIFA:
    """A registry-style QG/A factory: per item, the score and its per-question answers."""

    def __init__(self, model, device="cpu", precision="fp32", questions=None):
        self.model, self.questions = model, questions

    def score_with_records(self, images, prompts):
        answers = [{"question": "is there a cat?", "answer": "yes", "correct": True},
                   {"question": "is the chair red?", "answer": "no", "correct": False}]
        return np.full(len(images), 0.5), [{"answers": answers} for _ in images]


def test_qga_scorer_shows_per_question_answers_when_registered_and_a_vlm_is_set(monkeypatch, config):
    from PIL import Image

    import scorers.scoring.registry

    import scorers.models.text_lm

    monkeypatch.setitem(scorers.scoring.registry.SCORERS, "tifa", f"{__name__}:FakeTIFA")
    monkeypatch.delitem(scorers.scoring.registry.SCORERS, "dsg", raising=False)  # a registry without DSG: shown unavailable
    monkeypatch.setattr(scorers.models.text_lm, "TextLM", lambda name: f"lm:{name}")
    assert "--qg-model" in scorer_specs(config.with_(vlm="tiny-vlm"))["TIFA"].unavailable  # no question source
    specs = scorer_specs(config.with_(vlm="tiny-vlm", qg_model="tiny-qg"))
    assert specs["TIFA"].unavailable is None and specs["TIFA"].model.startswith("tiny-vlm + questions from tiny-qg")
    assert "no 'dsg' scorer" in specs["DSG"].unavailable
    slot = LazyScorer(specs["TIFA"])
    scorer = slot.get()
    assert isinstance(scorer, FakeTIFA) and scorer.model == "tiny-vlm"
    # questions for any prompt: generated on demand by the configured LM
    assert scorer.questions.kind == "tifa" and scorer.questions.generator.lm == "lm:tiny-qg"
    result = score_image(scorer, Image.new("RGB", (8, 8)), "a cat on a red chair")
    value, answers = result.score, result.answers
    assert value == 0.5
    assert answers.to_dict("list") == {"question": ["is there a cat?", "is the chair red?"], "answer": ["yes", "no"],
                                       "correct": [True, False]}


def test_clipscore_slot_matches_the_library_on_a_tiny_local_model(tmp_path, config):
    from PIL import Image

    from scorers.metrics.embedding import CLIPScore

    from tests.helpers.tiny_embed_models import build_hf_clip

    path = build_hf_clip(tmp_path, seed=1)
    slot = LazyScorer(scorer_specs(config.with_(clip_model=path))["CLIPScore"])
    image = Image.new("RGB", (40, 30), (200, 30, 30))
    result = score_image(slot.get(), image, "a photo of a cat")
    expected = CLIPScore(path).score([image], ["a photo of a cat"])[0]
    assert result.answers is None and result.score == pytest.approx(expected) and result.score > 0
    cosine = CLIPScore(path, form="cosine").score([image], ["a photo of a cat"])[0]
    assert result.cosine == pytest.approx(cosine) and result.detail().startswith("raw cosine: ")


# ------------------------------------------------------------------------------------------------------- CLI


def test_cli_demo_reports_bad_paths():
    result = subprocess.run(TS2 + ["demo", "--data-dir", "/nonexistent/ts2"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2
    assert "ts2 demo: error: --data-dir /nonexistent/ts2: data dir does not exist" in result.stderr


def test_cli_demo_serves_on_loopback(shared_ts2):
    import socket

    from tests.helpers.loopback_http import poll_url

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "TS2_DATA": str(shared_ts2)}  # a developer's `TS2_DATA=../shared/ts2 ts2 demo`
    process = subprocess.Popen(TS2 + ["demo", "--port", str(port)], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        body = poll_url(f"http://127.0.0.1:{port}/", process, time.time() + 90)
        assert "TS2" in body or "gradio" in body.lower(), "the demo did not answer on loopback"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/config", timeout=5) as response:
            assert "19 published metrics" in response.read().decode()
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0]
    assert f"ts2 demo: serving on http://127.0.0.1:{port}/" in output
    assert "share=True" not in output  # gradio's advice to Python users is not shown to a CLI user


def test_cli_demo_share_flag_reaches_launch(monkeypatch, shared_ts2, capsys):
    from scorers.cli import demo as demo_cli
    from scorers.cli import main

    space = demo_cli._load_demo()
    launched = {}

    class App:
        def launch(self, **kwargs):
            launched.update(kwargs)

    monkeypatch.setattr(space, "build_app", lambda config: App())
    assert main(["demo", "--share", "--port", "7861"]) == 0
    assert launched["share"] is True and launched["quiet"] is False and launched["server_port"] == 7861
    assert main(["demo", "--port", "7861"]) == 0
    assert launched["share"] is False and launched["quiet"] is True


def test_qga_scorer_uses_the_data_dir_question_table_without_a_generator(monkeypatch, config, tmp_path, shared_ts2):
    import shutil

    import scorers.scoring.registry

    monkeypatch.setitem(scorers.scoring.registry.SCORERS, "tifa", f"{__name__}:FakeTIFA")
    shutil.copy(shared_ts2 / "tifa_questions.csv", tmp_path / "tifa_questions.csv")
    specs = scorer_specs(config.with_(vlm="tiny-vlm", data_dir=tmp_path))
    assert specs["TIFA"].unavailable is None
    assert "dsg_questions.csv" in specs["DSG"].unavailable  # no DSG table there, no generator
    scorer = LazyScorer(specs["TIFA"]).get()
    assert scorer.questions == str(tmp_path / "tifa_questions.csv")
