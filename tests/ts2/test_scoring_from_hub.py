"""``ts2 score`` with no ``--data-dir``: images from the Hub dataset through ``load_ts2()``.

A loopback stand-in for the Hub (``tests/helpers/loopback_hub.py``) serves a generated TS2 data dir (SEGs 0-2, 45 images) as
``saxon/T2IScoreScore`` at the pinned commit. The expected values come from outside the Hub path: the same scorer on
the same files through ``--data-dir`` (the plain, already tested path), the request log of the server, and the plain
scipy reference loop (``tests/helpers/reference_meta.py``) on the release's scores for the published rows.
"""
from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.tables.release import HUB_REPO, HUB_REVISION
from tests.helpers.loopback_hub import LoopbackHubDataset, point_hub_at
from tests.helpers.reference_meta import released_reference
from tests.helpers.environment import console_script

ROOT = Path(__file__).resolve().parents[2]
SEGS = [0, 1, 2]
RESOLVE = f"/datasets/{HUB_REPO}/resolve/"
TREE = f"/api/datasets/{HUB_REPO}/tree/"


@pytest.fixture(scope="module")
def hub_fixture(tmp_path_factory):
    from tests.helpers.tiny_embed_models import build_hf_clip
    from tests.helpers.ts2_fixture_data import make_data_dir

    root = tmp_path_factory.mktemp("hub")
    data = make_data_dir(root / "data", seg_ids=SEGS, with_questions=False)
    clip = build_hf_clip(root / "clip")
    with LoopbackHubDataset(data, HUB_REPO, HUB_REVISION) as hub:
        yield root, data, clip, hub


def _env(hub, home: Path, **extra: str) -> dict:
    env = dict(os.environ, HF_ENDPOINT=hub.base, HF_HOME=str(home), HF_DATASETS_CACHE=str(home / "datasets"),
               HF_HUB_OFFLINE="0",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("TS2_DATA", None)
    env.update(extra)
    return env


def _score(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scorers.cli", "score", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _downloads(hub) -> int:
    return hub.count(TREE) + hub.count(RESOLVE)


def test_hub_run_writes_the_data_dir_csv_and_a_second_run_downloads_nothing(hub_fixture):
    root, data, clip, hub = hub_fixture
    env = _env(hub, root / "hf-a")
    common = ["clip_score", "--model", clip, "--form", "cosine", "--num-workers", "0", "--no-progress"]
    before = _downloads(hub)
    first = _score([*common, "--out", "hub.csv"], env, root)
    assert first.returncode == 0, first.stderr
    fetched = _downloads(hub) - before
    assert fetched >= 1 + 46  # the tree listing, then metadata.csv and 45 images (HEAD and/or GET each)

    local = _score([*common, "--data-dir", str(data), "--out", "local.csv"], env, root)
    assert local.returncode == 0, local.stderr
    hub_csv, local_csv = (root / "hub.csv").read_bytes(), (root / "local.csv").read_bytes()
    assert hub_csv == local_csv  # same rows, order and values as the plain data_dir path
    frame = pd.read_csv(root / "hub.csv")
    assert len(frame) == 45 and frame["clip_score"].nunique() > 10  # real, distinct cosines (not all clamped to 0)

    again = _downloads(hub)
    second = _score([*common, "--out", "hub2.csv"], env, root)
    assert second.returncode == 0, second.stderr
    assert _downloads(hub) == again  # the prepared dataset is reused: 0 requests
    assert (root / "hub2.csv").read_bytes() == hub_csv

    resumed = _score([*common, "--out", "hub.csv"], env, root)  # same --out: every image from the score cache
    assert resumed.returncode == 0, resumed.stderr
    assert "(0 scored now, 45 from cache, 0 skipped)" in resumed.stderr


def test_meta_ranks_the_new_metric_among_the_published_rows_on_the_same_segs(hub_fixture, shared_ts2):
    """The Hub dataset at the pinned revision is the release's metadata, and this stand-in holds SEGs 0-2: the
    published rows are recomputed from the release's per-image scores on those very SEGs, then ranked with ours."""
    root, _, clip, hub = hub_fixture
    env = _env(hub, root / "hf-b", TS2_DATA=str(shared_ts2))
    done = _score(["clip_score", "--model", clip, "--form", "cosine", "--num-workers", "0", "--no-progress",
                   "--out", "meta.csv", "--meta"], env, root)
    assert done.returncode == 0, done.stderr
    assert "SEGs: 0-2 (3 SEGs)" in done.stdout and "published rows left out" not in done.stderr
    out = done.stdout
    assert "Beside the published leaderboard" in out
    rows = {}
    for line in out.split("Beside the published leaderboard", 1)[1].splitlines():
        match = re.match(r"^\s*(\d+) (>> )?(\S+)\s+(-|[-\d.]+)\s+(-|[-\d.]+)\s+(-|[-\d.]+)", line)
        if match:
            rows[(match.group(2) or "") + match.group(3)] = (int(match.group(1)), match.group(4), match.group(5))
    assert len(rows) == 20 and ">> clip_score" in rows  # the release's 19 metrics and ours
    for column in ("clipscore", "gpt4v_dsg"):
        want = released_reference(str(shared_ts2), column, max_seg=2)  # plain scipy loop over SEGs 0-2
        assert rows[column][1] == f"{100 * want['rank']['summary']['avg']:.1f}"
        assert rows[column][2] == f"{100 * want['sep']['summary']['avg']:.1f}"
    ranked = sorted(rows.values())
    values = [float(v[1]) for v in ranked if v[1] != "-"]
    assert values == sorted(values, reverse=True)  # best rank Avg first


def test_offline_with_nothing_cached_is_one_clear_error(hub_fixture):
    root, _, clip, hub = hub_fixture
    env = _env(hub, root / "hf-empty", HF_HUB_OFFLINE="1")
    before = len(hub.requests)
    done = _score(["clip_score", "--model", clip, "--out", "offline.csv", "--no-progress"], env, root)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("ts2 score: error:")]
    assert len(error) == 1 and "saxon/T2IScoreScore" in error[0] and "--data-dir" in error[0]
    assert len(hub.requests) == before  # offline means no request at all


def test_offline_error_names_the_data_dir_flag_and_the_ts2_data_folder_checked(hub_fixture):
    """The fix is said as the command's flag (``--data-dir DIR``, not ``data_dir=``) with what ``$TS2_DATA`` holds."""
    root, _, clip, hub = hub_fixture
    tables = root / "release-tables"  # a TS2_DATA folder as the release's tables come: no images/
    tables.mkdir(exist_ok=True)
    (tables / "metadata.csv").write_text("id,target_prompt,file_name,image_source,rank\n", encoding="utf-8")
    env = _env(hub, root / "hf-empty", HF_HUB_OFFLINE="1", TS2_DATA=str(tables))
    done = _score(["clip_score", "--model", clip, "--out", "offline.csv", "--no-progress"], env, root)
    assert done.returncode == 2
    error = [line for line in done.stderr.splitlines() if line.startswith("ts2 score: error:")]
    assert len(error) == 1, done.stderr
    assert "--data-dir DIR" in error[0] and "data_dir=" not in error[0]
    assert f"$TS2_DATA={tables}" in error[0] and "no images/" in error[0]


def test_encoded_images_are_the_files_bytes_and_pickle(hub_fixture, monkeypatch):
    """In process: hub_segs' metadata is the data dir's, its images the files' exact bytes; DataLoader workers get
    the sequence by pickling it."""
    from scorers.ts2.dataset import hub_segs
    from scorers.tables.pandas_tables import read_metadata

    root, data, _, hub = hub_fixture
    home = root / "hf-c"
    point_hub_at(monkeypatch, hub.base, home / "hub")
    metadata, images = hub_segs(cache_dir=home / "datasets")
    expected = read_metadata(data / "metadata.csv")
    for column in ("seg_id", "prompt", "file_name", "node"):
        assert metadata[column].tolist() == expected[column].tolist()
    assert len(images) == len(expected)
    for k in (0, 17, len(images) - 1):
        assert images[k] == (data / expected["file_name"][k]).read_bytes()
    copy = pickle.loads(pickle.dumps(images))
    assert copy[5] == images[5]


def test_item_stamp_of_encoded_bytes_follows_their_content():
    from scorers.scoring.cache import item_stamp

    a, b = b"\xff\xd8jpeg-one", b"\xff\xd8jpeg-two"
    assert item_stamp(a, "p") == item_stamp(bytes(a), "p")
    assert item_stamp(a, "p") != item_stamp(b, "p")
    assert item_stamp(a, "p") != item_stamp(a, "q")


def test_unreachable_hub_with_nothing_cached_is_one_clear_error(hub_fixture):
    """No answer from the endpoint (a closed loopback port): one line naming the dataset, the endpoint and
    --data-dir, after one probe instead of huggingface_hub's retries."""
    from tests.helpers.environment import refused_port

    root, _, clip, hub = hub_fixture
    with refused_port() as port:  # held until the subprocess is done: nothing else can listen there meanwhile
        closed = f"http://127.0.0.1:{port}"
        env = _env(hub, root / "hf-unreachable", HF_ENDPOINT=closed)
        done = _score(["clip_score", "--model", clip, "--out", "unreachable.csv", "--no-progress"], env, root)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("ts2 score: error:")]
    assert len(error) == 1 and "saxon/T2IScoreScore" in error[0] and closed in error[0] and "--data-dir" in error[0]


def test_two_accelerate_processes_from_the_hub_equal_one(hub_fixture):
    """Under `accelerate launch` (2 CPU processes, gloo) the main process downloads and prepares the dataset first,
    then both score disjoint halves; the rows equal the one-process data_dir run's."""
    import socket

    root, data, clip, hub = hub_fixture
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    env = _env(hub, root / "hf-two", ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")
    common = ["clip_score", "--model", clip, "--form", "cosine", "--num-workers", "0", "--no-progress"]
    single = _score([*common, "--data-dir", str(data), "--out", "single.csv"], env, root)
    assert single.returncode == 0, single.stderr
    cache = root / "two.csv.cache"
    command = [console_script("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(port),
               "-m", "scorers.cli", "score", *common, "--out", "two.csv", "--batch-size", "4"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shards = {p.name: len(p.read_text().splitlines()) for p in cache.glob("*.jsonl")}
    assert shards == {"rank0.jsonl": 23, "rank1.jsonl": 22}  # both processes scored, disjoint halves
    two, one = pd.read_csv(root / "two.csv"), pd.read_csv(root / "single.csv")
    assert two[["seg_id", "file_name", "node"]].equals(one[["seg_id", "file_name", "node"]])
    # batches of 4 (two ranks) vs 32 (one): float32 sums in another order; 1e-6 is test_runner's bound for the same
    np.testing.assert_allclose(two["clip_score"], one["clip_score"], atol=1e-6)
