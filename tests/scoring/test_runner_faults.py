"""Fault injection on the runner: kill -9 at random batches then a byte-identical resume, a concurrent second run on
one ``--out``, changed images under the same ``--out``, and a killed ``accelerate launch`` (its ranks must stop).

Every test scores a 45-image data_dir with a tiny random CLIP; the reference is an uninterrupted run written by the
same ``write_outputs``, so "byte-identical" compares the CSV files themselves.
"""
from __future__ import annotations

import io
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest

from scorers.scoring.cache import ScoreCache
from scorers.scoring.rows import write_outputs
from scorers.ts2.scoring import score_table
from tests.helpers.counting_scorer import Counting
from tests.helpers.environment import console_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "helpers" / "embed_run_script.py"
N_IMAGES, BATCH = 45, 4  # SEGs 0, 1, 2
N_BATCHES = math.ceil(N_IMAGES / BATCH)


def _write(scorer, metadata, data_dir, out: Path, cache: Path | None = None) -> tuple[bytes, object]:
    frame, result = score_table(scorer, metadata, data_dir, cache_dir=cache, batch_size=BATCH, num_workers=0,
                                progress=False)
    write_outputs(frame, result, out)
    return out.read_bytes(), result


@pytest.fixture(scope="module")
def reference_csv(scorer, metadata, data_dir, tmp_path_factory) -> bytes:
    """An uninterrupted run without cache."""
    return _write(scorer, metadata, data_dir, tmp_path_factory.mktemp("ref") / "scores.csv")[0]


@pytest.fixture()
def reference_file(reference_csv, tmp_path) -> Path:
    path = tmp_path / "ref.csv"
    path.write_bytes(reference_csv)
    return path


def _script(data_dir, clip_path, out, cache, *extra) -> list[str]:
    return [sys.executable, str(SCRIPT), "--data-dir", str(data_dir), "--model", clip_path, "--out", str(out),
            "--cache-dir", str(cache), "--batch-size", str(BATCH), *map(str, extra)]


def _wait_for(path: Path, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"process ended early (rc {process.returncode}): {process.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {seconds} s")
        time.sleep(0.05)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kill9_at_a_random_batch_then_byte_identical_resume(seed, scorer, metadata, data_dir, clip_path,
                                                            reference_csv, tmp_path):
    finished_batches = random.Random(seed).randrange(0, N_BATCHES)  # killed inside batch finished_batches + 1
    out, cache = tmp_path / "scores.csv", tmp_path / "cache"
    killed = subprocess.run(_script(data_dir, clip_path, out, cache, "--kill-after", finished_batches), cwd=ROOT,
                            capture_output=True, text=True, timeout=240)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not out.exists()  # nothing reported as complete
    assert len(ScoreCache(cache, scorer.config).finished()) == finished_batches * BATCH

    counting = Counting(scorer)
    resumed, result = _write(counting, metadata, data_dir, out, cache)
    assert counting.items == result.computed == N_IMAGES - finished_batches * BATCH  # only the missing images
    assert resumed == reference_csv


def _ts2_score(data_dir, out, clip_path, capsys) -> tuple[int, str]:
    """``ts2 score`` in this process (the CLI's own code path, without a second interpreter start-up)."""
    from scorers.cli import main

    code = main(["score", "clip_score", "--data-dir", str(data_dir), "--out", str(out), "--model", clip_path,
                 "--form", "cosine", "--batch-size", str(BATCH), "--num-workers", "0", "--no-progress"])
    return code, capsys.readouterr().err


def test_concurrent_second_run_stops_and_leaves_one_entry_per_image(scorer, metadata, data_dir, clip_path,
                                                                    reference_csv, tmp_path, capsys):
    out, cache, gate = tmp_path / "scores.csv", tmp_path / "scores.csv.cache", tmp_path / "gate"
    gate.mkdir()
    first = subprocess.Popen(_script(data_dir, clip_path, out, cache, "--pause-after", 2, "--gate", gate), cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(gate / "ready-0", first)  # the first run is mid-way, holding the cache
        code, err = _ts2_score(data_dir, out, clip_path, capsys)
        assert code == 2 and f"ts2 score: error: cache {cache} is in use by another run (pid {first.pid})" in err
        (gate / "go").touch()
        assert first.wait(timeout=240) == 0, first.stderr.read()[-2000:]
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    keys = [entry["key"] for entry in ScoreCache(cache, scorer.config).entries()]
    assert len(keys) == len(set(keys)) == N_IMAGES  # nobody scored anything twice
    assert out.read_bytes() == reference_csv
    counting = Counting(scorer)  # the lock is free again once the first run ended
    assert _write(counting, metadata, data_dir, out, cache)[0] == reference_csv and counting.items == 0


def test_changed_images_under_the_same_out_are_rescored(scorer, metadata, data_dir, clip_path, reference_csv,
                                                        reference_file, tmp_path, capsys):
    from PIL import Image

    own = tmp_path / "data"
    shutil.copytree(data_dir, own)
    out = tmp_path / "scores.csv"
    assert _ts2_score(own, out, clip_path, capsys)[0] == 0
    assert out.read_bytes() == reference_csv
    changed = [0, 17, 44]
    for i, name in enumerate(metadata["file_name"][changed]):  # same names, same pixel size, other content
        Image.new("RGB", (16, 16), (255 - 40 * i, 10, 40 * i)).save(own / name, quality=90)
    code, err = _ts2_score(own, out, clip_path, capsys)
    assert code == 0 and "45 rows (3 scored now, 42 from cache, 0 skipped)" in err
    fresh_bytes = _write(scorer, metadata, own, tmp_path / "fresh.csv")[0]  # the changed set, no cache at all
    lines, fresh_lines, old_lines = (x.splitlines() for x in (out.read_bytes(), fresh_bytes, reference_csv))
    unchanged = [i for i in range(N_IMAGES) if i not in changed]
    assert [lines[i + 1] for i in unchanged] == [old_lines[i + 1] for i in unchanged]  # served from the cache
    new, fresh, old = (pd.read_csv(p)["clip_score"].to_numpy()[changed] for p in (out, tmp_path / "fresh.csv",
                                                                                   tmp_path / "ref.csv"))
    # rescored in a batch of 3 instead of batches of 4: equal up to float32 rounding of the tiny model
    np.testing.assert_allclose(new, fresh, atol=1e-6)
    assert np.abs(new - old).min() > 1e-3  # the changed images really score differently
    # another data dir under the same --out is refused, naming both folders, and writes nothing
    code, err = _ts2_score(data_dir, out, clip_path, capsys)
    assert code == 2 and "holds scores of other inputs: data_dir" in err
    assert str(own.resolve()) in err and str(data_dir.resolve()) in err
    assert pd.read_csv(out)["clip_score"].to_numpy()[changed].tolist() == new.tolist()


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_killing_the_accelerate_launcher_stops_its_ranks(scorer, metadata, data_dir, clip_path, reference_csv,
                                                        tmp_path):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out, cache, gate = tmp_path / "scores.csv", tmp_path / "cache", tmp_path / "gate"
    gate.mkdir()
    ranks: list[int] = []
    env = dict(os.environ, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")
    launcher = subprocess.Popen(
        [console_script("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
         "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(port),
         *_script(data_dir, clip_path, out, cache, "--pause-after", 1, "--gate", gate, "--expect-processes", 2)[1:]],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(gate / "ready-0", launcher, 240)
        _wait_for(gate / "ready-1", launcher, 60)
        ranks = [int((gate / f"ready-{r}").read_text()) for r in (0, 1)]
        # torch's launcher starts each rank in a session of its own: killing the launcher's group misses them
        assert all(psutil.Process(pid).ppid() == launcher.pid for pid in ranks)
        launcher.kill()  # SIGKILL: no chance to clean up its children
        launcher.wait()
        killed_at = time.monotonic()
        deadline = time.monotonic() + 60  # the ranks poll their parent every second
        while not all(_gone(pid) for pid in ranks) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(_gone(pid) for pid in ranks), "ranks kept running after their launcher was killed"
        print(f"ranks gone {time.monotonic() - killed_at:.1f} s after the launcher's SIGKILL")
    finally:  # whatever this test started and is still alive
        for pid in ([launcher.pid] if launcher.poll() is None else []) + [p for p in ranks if not _gone(p)]:
            os.kill(pid, signal.SIGKILL)
        launcher.wait()
    assert not out.exists()
    assert len(ScoreCache(cache, scorer.config).finished()) == 2 * BATCH  # one finished batch per rank
    counting = Counting(scorer)
    _write(counting, metadata, data_dir, out, cache)
    assert counting.items == N_IMAGES - 2 * BATCH
    # the two ranks batched other groups of images than one process does: equal up to float32 rounding
    np.testing.assert_allclose(pd.read_csv(out)["clip_score"], pd.read_csv(io.BytesIO(reference_csv))["clip_score"],
                               atol=1e-6)
