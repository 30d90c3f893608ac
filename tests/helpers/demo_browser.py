"""What the demo's browser tests share: the app served in-process on a free loopback port, and a headless Debian
Chromium page (Playwright) opened on its leaderboard."""
from __future__ import annotations

import contextlib
from pathlib import Path

from tests.helpers.environment import free_port

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
#: screenshots (gitignored)
ARTIFACTS = REPO / "artifacts" / "demo"
TIMEOUT_MS = 30_000


@contextlib.contextmanager
def served_app(config):
    """The demo of ``config`` launched on a free 127.0.0.1 port; yields its URL, closes it on exit."""
    from scorers.demo import build_app, launch_kwargs

    demo = build_app(config)
    for attempt in range(3):  # a released probe port may be taken before gradio binds it: then try another one
        port = free_port()
        try:
            demo.launch(prevent_thread_lock=True, quiet=True, **launch_kwargs(config, port=port))
            break
        except OSError:  # gradio: "Cannot find empty port in range: PORT-PORT"
            if attempt == 2:
                raise
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


@contextlib.contextmanager
def leaderboard_page(url: str):
    """A Chromium tab on ``url``, once its leaderboard has rendered a cell."""
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        tab = browser.new_page(viewport={"width": 1280, "height": 1000})
        tab.set_default_timeout(TIMEOUT_MS)
        tab.goto(url)
        tab.wait_for_selector("#leaderboard [data-testid='cell-0-1']")
        try:
            yield tab
        finally:
            browser.close()


def dataframe_rows(page, elem_id: str) -> list[list[str]]:
    """Body cells of the ``gr.Dataframe`` with ``elem_id`` as text, row by row (cells carry ``data-row`` and
    ``data-col``)."""
    cells = page.locator(f"#{elem_id} [role=gridcell]")
    texts = cells.evaluate_all("els => els.map(e => [e.dataset.row, e.dataset.col, e.innerText.trim()])")
    rows: dict[int, dict[int, str]] = {}
    for row, col, text in texts:
        rows.setdefault(int(row), {})[int(col)] = text
    return [[by_col[c] for c in sorted(by_col)] for _, by_col in sorted(rows.items())]
