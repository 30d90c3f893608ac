"""The demo as a user offline sees it, in headless Debian Chromium: release tables from ``$TS2_DATA``,
images meant to come from the Hub dataset, no network, an empty Hugging Face cache.

Checks what the page says (why the tiles are grey and what to do; where images come from now), that gallery
captions are not cut off, that leaderboard rows carry their bootstrap intervals and no residual note, and that a
model error names the demo's flag. Screenshots: ``artifacts/demo/offline_*.png`` (gitignored).
"""
from __future__ import annotations

import re

import pytest

from tests.helpers.environment import skip_module_without, use_hf_home
from tests.helpers.demo_browser import ARTIFACTS, CHROMIUM, REPO, leaderboard_page, served_app

if not CHROMIUM.exists():
    pytest.skip("Debian chromium (/usr/bin/chromium) is not installed", allow_module_level=True)
skip_module_without("playwright", reason="playwright for Python is not installed")
skip_module_without("gradio", reason="gradio is not installed")

from scorers.tables import release  # noqa: E402
from scorers.demo import AppConfig  # noqa: E402
from scorers.demo.leaderboard_tab import published_reproduction  # noqa: E402
from scorers.demo.sources import load_tables  # noqa: E402


@pytest.fixture(scope="module")
def offline_app(tmp_path_factory, shared_ts2):
    home = tmp_path_factory.mktemp("hf")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        use_hf_home(patch, home)
        patch.setenv(release.DATA_ENV, str(shared_ts2))
        config = AppConfig(clip_model=str(home / "no_such_clip"))
        with served_app(config) as url:
            yield {"url": url, "config": config}


@pytest.fixture(scope="module")
def page(offline_app):
    with leaderboard_page(offline_app["url"]) as tab:
        yield tab


def test_leaderboard_rows_show_intervals_and_no_residual_note(page, offline_app):
    page.get_by_role("tab", name="Leaderboard").click()  # the module's page may be on another tab
    page.locator("#leaderboard [data-testid='cell-0-1']").wait_for()
    header = page.locator("#leaderboard th").all_inner_texts()
    assert [h.strip() for h in header][-3:] == ["rank 95% CI", "sep 95% CI", "delta 95% CI"]
    config = offline_app["config"]
    published = published_reproduction(load_tables(config), config)
    clip = next(r for r in published.rows
                if r["column"] == "clipscore" and r["meta_metric"] == "rank" and r["partition"] == "avg")
    row = page.locator("#leaderboard [role=row]").filter(has_text="clipscore")
    assert f"{clip['ci_low']:.1f}–{clip['ci_high']:.1f}" in row.inner_text()
    assert "look swapped" not in page.inner_text("body")
    page.screenshot(path=str(ARTIFACTS / "offline_leaderboard.png"), full_page=True)


def test_grey_tiles_are_explained_and_captions_fit(page):
    page.get_by_role("tab", name="SEG explorer").click()
    note = page.locator("#images-note")
    note.wait_for()
    text = note.inner_text()
    assert "could not be reached" in text and "--data-dir" in text and "network" in text
    page.wait_for_function("() => document.querySelectorAll('#seg-gallery .caption-label').length >= 12")
    widths = page.locator("#seg-gallery .caption-label").evaluate_all(
        "els => els.map(e => [e.innerText, e.scrollWidth, e.clientWidth])")
    clipped = [t for t, scroll, client in widths if scroll > client]
    assert not clipped, f"captions cut off: {clipped}"
    assert all(re.fullmatch(r"\S+ · \S+ · \S+", t) for t, _, _ in widths)
    page.get_by_text("Data sources").click()
    page.wait_for_function("() => document.querySelector('#data-sources')?.innerText?.includes('images:') ?? false")
    images_line = next(line for line in page.locator("#data-sources").inner_text().splitlines() if "images:" in line)
    assert "placeholders" in images_line and "could not be reached" in images_line
    page.screenshot(path=str(ARTIFACTS / "offline_seg_explorer.png"), full_page=True)


def test_model_error_names_the_demo_flag(page):
    page.get_by_role("tab", name="Score your image").click()
    page.locator("#score-image input[type=file]").set_input_files(str(REPO / "docs" / "assets" / "rank_vs_flops.png"))
    page.locator("#score-prompt textarea").fill("a chart")
    page.locator("#score-button").click()
    page.wait_for_function("() => document.querySelector('#model-status')?.innerText?.includes('Error') ?? false")
    status = page.locator("#model-status").inner_text()
    assert "--clip-model" in status and not re.search(r"--model\b", status), status
    page.screenshot(path=str(ARTIFACTS / "offline_score_error.png"), full_page=True)
