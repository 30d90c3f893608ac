"""The demo's community leaderboard in headless Debian Chromium (Playwright): a verified community row and a
rejected submission, read from the page.

The app runs in-process on 127.0.0.1 with the shared release tables and ``AppConfig.submissions`` pointing at a
folder of two submissions written by ``scorers.ts2.submission.folder.write_submission``: one as written, one whose claimed
rank was changed by hand. The expected numbers come from ``ts2 meta --json`` on the same scores (its own process).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers.demo_browser import ARTIFACTS, CHROMIUM, dataframe_rows, leaderboard_page, served_app

if not CHROMIUM.exists():
    pytest.skip("Debian chromium (/usr/bin/chromium) is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True, scope="module")
def extras_installed():
    import gradio  # noqa: F401
    from playwright import sync_api  # noqa: F401


@pytest.fixture(scope="module")
def submissions(tmp_path_factory, shared_ts2):
    """``(dataset folder, scores file)``: a good submission ``noisy-clip`` and a tampered one ``tampered``."""
    from scorers.ts2.options import MetaOptions
    from scorers.ts2.submission.folder import write_submission

    root = tmp_path_factory.mktemp("community")
    metadata = pd.read_csv(shared_ts2 / "metadata.csv")
    released = pd.read_csv(shared_ts2 / "released_scores.csv")
    noise = np.random.default_rng(11).normal(0, 0.05, len(metadata))
    scores = root / "scores.csv"
    pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"],
                  "noisy_clip": released["clipscore"].to_numpy() + noise}).to_csv(scores, index=False)
    info = {"metric": "CLIP with noise", "paper_url": None, "code_url": None, "license": "MIT",
            "flops_per_image": None}
    for folder, name in (("a-good", "noisy-clip"), ("b-tampered", "tampered")):
        write_submission(scores, column="noisy_clip", name=name, out=root / "dataset" / "submissions" / folder,
                         info=info, metadata=shared_ts2 / "metadata.csv", options=MetaOptions(n_bootstrap=0))
    tampered = root / "dataset" / "submissions" / "b-tampered"
    result = json.loads((tampered / "result.json").read_text())
    result["results"]["noisy_clip"]["rank"]["summary"]["avg"] = 0.99
    (tampered / "result.json").write_text(json.dumps(result))
    manifest = json.loads((tampered / "manifest.json").read_text())
    manifest["sha256"]["result.json"] = hashlib.sha256((tampered / "result.json").read_bytes()).hexdigest()
    (tampered / "manifest.json").write_text(json.dumps(manifest))
    return root / "dataset", scores


@pytest.fixture(scope="module")
def page(submissions, shared_ts2):
    from scorers.demo import AppConfig

    config = AppConfig.resolve(metadata=shared_ts2 / "metadata.csv", scores_csv=shared_ts2 / "released_scores.csv",
                               paper_table=shared_ts2 / "paper_table2.csv", submissions=str(submissions[0]))
    with served_app(config) as url, leaderboard_page(url) as tab:
        yield tab


def _table(page, elem_id: str) -> list[list[str]]:
    """Body cells of a gr.Dataframe as text, row by row, once it has some."""
    page.wait_for_selector(f"#{elem_id} [role=gridcell]")
    return dataframe_rows(page, elem_id)


def test_the_tab_shows_a_verified_community_row_and_a_rejected_one(page, submissions, shared_ts2):
    dataset, scores = submissions
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    meta = json.loads(subprocess.run(
        [sys.executable, "-m", "scorers.cli", "meta", str(scores), "--column", "noisy_clip", "--data-dir",
         str(shared_ts2), "--n-bootstrap", "0", "--json"], env=env, capture_output=True, text=True, check=True,
        timeout=300).stdout)["noisy_clip"]
    expected = [f"{100 * meta[m]['summary']['avg']:.1f}" for m in ("rank", "sep", "delta")]

    page.locator("#community-board").scroll_into_view_if_needed()
    status = page.locator("#community-status").inner_text()
    assert "1 verified" in status and "1 rejected" in status
    rows = _table(page, "community-board")
    assert len(rows) == 1  # the verified submission alone: the 19 published metrics are the table above
    group, position, metric, name, verified_by, *values, coverage = rows[0]
    assert (group, metric, name, verified_by) == ("default", "CLIP with noise", "noisy-clip", "ts2-evaluate 0.1.0")
    assert values == expected
    assert coverage == "2835/2835 cells scored, 164/164 SEGs used"
    published = [float(row[4]) for row in _table(page, "leaderboard")]  # the main table's rank column
    assert len(published) == 19
    assert int(position) == 1 + sum(r > float(expected[0]) for r in published)
    assert "1 verified community submission(s): 1 ranked, 0 incomplete" in page.locator("#community-board").inner_text()

    # the partition control: the community row shows its synth values too
    synth = [f"{100 * meta[m]['summary']['synth']:.1f}" for m in ("rank", "sep", "delta")]
    page.get_by_label("synth").check()
    page.wait_for_function(
        "(v) => [...document.querySelectorAll('#community-board [role=row]')].some(r => r.innerText.includes(v))",
        arg=synth[1],
    )
    assert _table(page, "community-board")[0][5:8] == synth
    assert "synth values in %" in page.locator("#community-board").inner_text()
    page.get_by_label("avg").check()
    page.wait_for_function(
        "(v) => [...document.querySelectorAll('#community-board [role=row]')].some(r => r.innerText.includes(v))",
        arg=expected[1],
    )

    rejected = _table(page, "community-rejected")
    assert len(rejected) == 1
    folder, claimed, reason = rejected[0]
    assert (folder, claimed) == ("b-tampered", "tampered")
    assert reason.startswith("results.noisy_clip.rank.summary.avg: claimed 0.99, recomputed ")
    assert "tampered" not in {row[3] for row in rows}
    page.screenshot(path=str(ARTIFACTS / "community-leaderboard.png"), full_page=True)
