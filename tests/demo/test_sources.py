"""The demo's data sources and messages, without a browser: offline images say why and what to do, the "Data sources" panel says
where images come from now, short gallery captions, the demo's own flag in model errors, no residual note on a page
without residuals, and bootstrap intervals on every leaderboard row."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tests.helpers.environment import skip_module_without

skip_module_without("gradio", reason="gradio is not installed (the demo extra)")

from scorers.tables import release  # noqa: E402
from scorers.demo import AppConfig  # noqa: E402
from scorers.demo.leaderboard_tab import N_BOOTSTRAP, leaderboard_view, published_reproduction  # noqa: E402
from scorers.demo.upload_scoring import LazyScorer, scorer_specs  # noqa: E402
from scorers.demo.sources import ImageSource, load_tables  # noqa: E402
from scorers.stats.meta import ts2_meta  # noqa: E402
from scorers.ts2.reproduce import DELTA_SWAP_NOTE  # noqa: E402
from scorers.tables.pandas_tables import column_scores  # noqa: E402

from tests.helpers.ts2_fixture_data import make_data_dir  # noqa: E402


@pytest.fixture(scope="module")
def tables(config):
    return load_tables(config)


@pytest.fixture(scope="module")
def published(tables, config):
    return published_reproduction(tables, config)


def _markdowns(demo) -> dict[str, str]:
    """Markdown components of a built app by elem_id (or an index), with their values at build time."""
    import gradio as gr

    out = {}
    for k, block in enumerate(demo.blocks.values()):
        if isinstance(block, gr.Markdown):
            value = block.value() if callable(block.value) else block.value
            out[block.elem_id or f"#{k}"] = str(value or "")
    return out


def test_offline_hub_images_say_why_and_what_to_do(fresh_cache):
    """Release tables from $TS2_DATA-less offline cache are absent, but the image source alone shows the state."""
    images = ImageSource(AppConfig())  # release metadata -> images from the Hub; offline, empty cache
    assert images.describe().startswith(f"Hub dataset {release.HUB_REPO}")  # before any try, the Hub is the plan
    assert images.get("images/000-00.jpg") is None
    described = images.describe()
    assert described.startswith("placeholders: the Hub dataset") and "could not be reached" in described
    note = images.note()
    assert "could not be reached" in note and "--data-dir" in note and "network" in note
    panel = AppConfig().describe({}, images=described)
    images_line = next(line for line in panel.splitlines() if line.startswith("- images:"))
    assert "placeholders" in images_line  # not "Hub dataset ..." as if images came from there


def test_no_data_dir_and_missing_files_are_explained(tmp_path, config):
    assert "--data-dir" in ImageSource(config).note()  # local tables, no data_dir: not configured
    data = make_data_dir(tmp_path / "data", seg_ids=[0])
    images = ImageSource(AppConfig.resolve(data_dir=data))
    assert images.get("images/000-00.jpg") is not None and images.note() is None
    assert images.get("images/001-00.jpg") is None
    assert "1 image file(s) are not in" in images.note() and "images/001-00.jpg" in images.note()


def test_offline_app_shows_the_images_note_and_the_real_image_source(fresh_cache, shared_ts2, monkeypatch):
    """The issue's case: tables found locally ($TS2_DATA), images meant to come from the Hub, no network."""
    from scorers.demo import build_app

    monkeypatch.setenv(release.DATA_ENV, str(shared_ts2))
    demo = build_app(AppConfig())
    texts = _markdowns(demo)
    assert "could not be reached" in texts["images-note"] and "--data-dir" in texts["images-note"]
    images_line = next(line for line in texts["data-sources"].splitlines() if line.startswith("- images:"))
    assert "placeholders: the Hub dataset" in images_line


def test_gallery_captions_fit_a_tile(tables, published):
    from scorers.demo.explorer import SegExplorer

    explorer = SegExplorer(tables, published, ImageSource(AppConfig()))
    items = explorer.gallery(0, "clipscore")
    released = column_scores(tables.scores, "clipscore")
    first = tables.metadata.index[tables.metadata["seg_id"] == 0][0]
    # node, image source, score to 3 significant digits: the release's first SEG 0 image
    assert items[0][1] == f"0 · {tables.metadata['image_source'].iloc[first]} · {released[first]:.3g}"
    # a 6-column gallery tile at 1280 px holds about 24 characters of caption text
    assert max(len(caption) for _, caption in items) <= 24
    assert explorer.gallery_label("clipscore") == "Images by node (caption: node · image source · clipscore score)"


def test_model_errors_name_the_demos_flags(tmp_path, config):
    slot = LazyScorer(scorer_specs(AppConfig(clip_model=str(tmp_path / "no_such_clip")))["CLIPScore"])
    with pytest.raises(RuntimeError):
        slot.get()
    status = slot.status()
    assert "--clip-model" in status and not re.search(r"--model\b", status), status


def test_no_residual_note_on_a_page_without_residuals(config, published):
    from scorers.demo import build_app

    assert DELTA_SWAP_NOTE in published.notes  # the library still says it (ts2 reproduce shows residuals)
    texts = _markdowns(build_app(config))
    assert not any("look swapped" in t for t in texts.values())
    assert "paper" not in " ".join(leaderboard_view(published, None, []).columns)  # indeed no paper column


def test_leaderboard_rows_show_bootstrap_intervals(published, tables, config):
    frame = leaderboard_view(published, tables.paper, [], partition="avg", sort_by="rank").set_index("column")
    values = column_scores(tables.scores, "clipscore")
    segs = [s for s in config.seg_range if s in set(tables.metadata["seg_id"])]
    # independent path: ts2_meta's own bootstrap (same resamples and seed) on the raw column
    result = ts2_meta(values, tables.metadata["seg_id"], tables.metadata["node"], seg_subset=segs,
                      n_bootstrap=N_BOOTSTRAP, seed=0)
    for meta in ("rank", "sep", "delta"):
        low, high = result[meta].confidence_interval["avg"]
        assert frame.loc["clipscore", f"{meta} 95% CI"] == f"{100 * low:.1f}–{100 * high:.1f}"
    for column, row in frame.iterrows():
        low, high = (float(x) for x in row["rank 95% CI"].split("–"))
        assert low <= row["rank"] + 0.05 and row["rank"] - 0.05 <= high, column
    assert N_BOOTSTRAP == 1000  # the CLI's default for meta/report intervals


def test_uploaded_rows_get_intervals_too(tmp_path, tables, config):
    from scorers.demo.leaderboard_tab import evaluate_upload

    metadata = tables.metadata
    rng = np.random.default_rng(0)
    path = tmp_path / "mine.csv"
    metadata[["seg_id", "file_name"]].assign(mine=-metadata["error_count"] + rng.normal(0, 1, len(metadata))) \
        .to_csv(path, index=False)
    uploaded = evaluate_upload(path, tables, config)
    frame = leaderboard_view(published_reproduction(tables, config), tables.paper, uploaded).set_index("column")
    cell = frame.loc["mine", "rank 95% CI"]
    low, high = (float(x) for x in cell.split("–"))
    assert low < frame.loc["mine", "rank"] < high and not math.isnan(high - low)
