"""``ts2 seg generate`` on several processes (``accelerate launch``, two CPU processes over gloo), offline.

The reference is one process (``ts2 seg generate`` as a plain subprocess) on a tiny random Stable Diffusion built
from configs (the session fixture ``pipeline_dir``). Which process wrote which image is witnessed from outside the
code under test (tests/helpers/image_writes.py: every rename onto an image, logged per rank). Every run uses one
thread and batches of one, so each image is computed by the same kernels in every run: equal means pixel-identical.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.environment import console_script, free_port
from tests.helpers.image_writes import image_writes, watched_env, written_twice

ROOT = Path(__file__).resolve().parents[2]
CALL = ["--steps", "2", "--guidance-scale", "3", "--height", "32", "--width", "32"]
#: two SEGs (ids 0 and 3), five nodes with a prompt, two images each: 10 images
PLAN = {"version": 1, "segs": [
    {"seg_id": 0, "prompt": "A red dog chases a ball.",
     "elements": [{"label": "dog", "type": "entity"}, {"label": "red", "type": "attribute", "of": ["dog"]},
                  {"label": "ball", "type": "entity"}],
     "nodes": [{"errors": [], "prompt": "A red dog chases a ball."},
               {"errors": ["red"], "prompt": "A dog chases a ball."}, {"errors": ["ball"], "prompt": "A red dog runs."}]},
    {"seg_id": 3, "prompt": "Two cats on a sofa.",
     "elements": [{"label": "cats", "type": "entity"}, {"label": "sofa", "type": "entity"}],
     "nodes": [{"errors": [], "prompt": "Two cats on a sofa."}, {"errors": ["sofa"], "prompt": "Two cats."}]}]}
IMAGES = 10
TIMEOUT = 400  # a safety bound on each run (seconds), not a speed check


def _generate(plan: Path, pipeline: Path, out: Path, env: dict, *, processes: int) -> subprocess.CompletedProcess:
    """``ts2 seg generate`` (seed 5, 2 images per node, batches of 1): a plain process, or ``accelerate launch`` of
    ``processes`` CPU processes (this form really starts two; ``--cpu --num_processes 2`` starts one)."""
    ts2 = [console_script("ts2"), "seg", "generate", str(plan), "--pipeline", str(pipeline), "--out", str(out),
           "--images-per-node", "2", "--seed", "5", "--batch-size", "1", "--no-progress", *CALL]
    launch = [] if processes == 1 else [
        console_script("accelerate"), "launch", "--multi_gpu", "--num_processes", str(processes), "--num_machines",
        "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port())]
    env = dict(env, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", ACCELERATE_USE_CPU="1")
    return subprocess.run(launch + ts2, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def _images(folder: Path) -> dict[str, np.ndarray]:
    """The visible PNGs under ``folder`` (a killed write's hidden temporary file is not an image), as pixel arrays."""
    from PIL import Image

    return {p.relative_to(folder).as_posix(): np.asarray(Image.open(p)) for p in sorted(folder.rglob("*.png"))
            if not p.name.startswith(".")}


def _same_images(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(json.dumps(PLAN), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def reference(plan_file, pipeline_dir, tmp_path_factory) -> Path:
    """The images and annotations of one uninterrupted single-process run."""
    import diffusers  # noqa: F401  (the [generate] extra is a test dependency: missing, these tests fail)

    out = tmp_path_factory.mktemp("one") / "raw"
    done = _generate(plan_file, pipeline_dir, out, dict(os.environ), processes=1)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{IMAGES} images (0 existed, {IMAGES} generated now)" in done.stdout
    return out


def test_two_processes_share_the_images_and_make_those_of_one(plan_file, pipeline_dir, reference, tmp_path):
    out, log = tmp_path / "raw", tmp_path / "writes.log"
    done = _generate(plan_file, pipeline_dir, out, watched_env(tmp_path / "site", log), processes=2)
    assert done.returncode == 0, done.stderr[-3000:]
    # one summary, from the main process, counting both processes' images
    assert done.stdout.count("wrote ") == 1, done.stdout
    assert f"{IMAGES} images (0 existed, {IMAGES} generated now by 2 processes)" in done.stdout
    writes = image_writes(log, out)
    assert written_twice(writes) == {}
    assert sorted(path for _, path in writes) == sorted(_images(out))
    # each process made its contiguous half of the 10 images: 5 each (np.array_split of the one list)
    assert sorted(rank for rank, _ in writes) == [0] * 5 + [1] * 5
    _same_images(_images(reference), _images(out))
    for name in ("annotations.csv", "generation.json", "plan.json"):  # the seeds are the image's, not the rank's
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name


def test_killed_run_resumes_without_making_an_image_twice(plan_file, pipeline_dir, reference, tmp_path):
    out, log = tmp_path / "raw", tmp_path / "writes.log"
    # process 1 dies as it is about to rename its 3rd image (a kill between writing and renaming); the launcher
    # then stops process 0, wherever it is
    killed = _generate(plan_file, pipeline_dir, out, watched_env(tmp_path / "site", log, crash_rank=1, crash_at=3),
                       processes=2)
    assert killed.returncode != 0
    before = image_writes(log, out)
    assert sorted(path for _, path in before) == sorted(_images(out))
    assert 2 <= len(before) < IMAGES and not (out / "annotations.csv").exists()
    resumed = _generate(plan_file, pipeline_dir, out, watched_env(tmp_path / "site", log), processes=2)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    left = IMAGES - len(before)
    assert f"{IMAGES} images ({len(before)} existed, {left} generated now by 2 processes)" in resumed.stdout
    writes = image_writes(log, out)
    assert written_twice(writes) == {}  # nothing made twice, over both runs
    assert {rank for rank, _ in writes[len(before):]} == {0, 1}  # the rest shared again (at least 3 images)
    _same_images(_images(reference), _images(out))  # nothing lost, and the same images as one uninterrupted run
    assert (out / "annotations.csv").read_bytes() == (reference / "annotations.csv").read_bytes()
