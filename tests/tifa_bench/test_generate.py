"""``ts2 tifa-bench generate``: a tiny Stable Diffusion pipeline built from configs (no Hub); batched images equal
one-at-a-time images, reruns skip existing files, settings changes are refused, two accelerate processes give the
same images as one."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from scorers.models.diffusion import image_seed, load_pipeline  # noqa: E402
from scorers.tifa_bench.generate import generate_images  # noqa: E402
from tests.helpers.tifa_v1_files import TEXTS, write_tifa_files  # noqa: E402
from tests.helpers.environment import console_script, free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
IDS = [t["id"] for t in TEXTS]
CAPTIONS = [t["caption"] for t in TEXTS]
CALL = {"num_inference_steps": 2, "guidance_scale": 3.0, "height": 32, "width": 32}


@pytest.fixture(autouse=True, scope="module")
def extra_installed():
    """The [generate] extra is a test dependency, never skipped: missing, each test here fails. Imported when the
    first test runs, not at collection."""
    import diffusers  # noqa: F401


@pytest.fixture(scope="module")
def pipeline(pipeline_dir):
    return load_pipeline(str(pipeline_dir), device="cpu")


def _pixels(folder: Path) -> dict[str, np.ndarray]:
    from PIL import Image

    return {str(p.relative_to(folder)): np.asarray(Image.open(p)) for p in sorted(folder.rglob("*.png"))}


def test_image_seed_depends_on_all_three():
    seeds = {image_seed(s, t, k) for s in (0, 1) for t in ("coco_1", "coco_2") for k in (0, 1)}
    assert len(seeds) == 8 and all(0 <= s < 2**63 for s in seeds)


def test_batched_equals_one_at_a_time_and_resume(pipeline, tmp_path):
    one = generate_images(pipeline, IDS, CAPTIONS, tmp_path / "one", seed=7, images_per_prompt=2, batch_size=1,
                          model_name="tiny", call_kwargs=CALL, progress=False)
    batched = generate_images(pipeline, IDS, CAPTIONS, tmp_path / "batched", seed=7, images_per_prompt=2,
                              batch_size=3, model_name="tiny", call_kwargs=CALL, progress=False)
    assert one == batched == {"generated": 10, "existing": 0, "total": 10, "processes": 1}
    a, b = _pixels(tmp_path / "one"), _pixels(tmp_path / "batched")
    assert sorted(a) == sorted(f"{t}/{k}.png" for t in IDS for k in (0, 1))
    # batch 3 vs batch 1: float32 kernels chosen per batch shape (and per thread count) may round differently, and
    # PNG quantisation turns a ~1e-6 difference at a .5 boundary into one level. Seen with 2 threads: 1 of 3,072
    # values, 1 level (bit-identical with 1 thread). So: at most 1 level, on at most 1% of the values.
    for name in a:
        diff = np.abs(a[name].astype(int) - b[name].astype(int))
        assert diff.max() <= 1 and np.count_nonzero(diff) <= 0.01 * diff.size, name
    assert not np.array_equal(a["coco_1/0.png"], a["coco_1/1.png"])  # k has its own seed
    # resume: a deleted image is generated again, identical; the others are skipped
    (tmp_path / "batched" / "coco_2" / "1.png").unlink()
    again = generate_images(pipeline, IDS, CAPTIONS, tmp_path / "batched", seed=7, images_per_prompt=2,
                            batch_size=3, model_name="tiny", call_kwargs=CALL, progress=False)
    assert again == {"generated": 1, "existing": 9, "total": 10, "processes": 1}
    np.testing.assert_array_equal(_pixels(tmp_path / "batched")["coco_2/1.png"], a["coco_2/1.png"])
    with pytest.raises(ValueError, match="other settings.*seed"):
        generate_images(pipeline, IDS, CAPTIONS, tmp_path / "batched", seed=8, images_per_prompt=2,
                        model_name="tiny", call_kwargs=CALL, progress=False)
    with pytest.raises(ValueError, match="other settings.*images_per_prompt"):
        generate_images(pipeline, IDS, CAPTIONS, tmp_path / "batched", seed=7, images_per_prompt=1,
                        model_name="tiny", call_kwargs=CALL, progress=False)


def test_cli_generate_two_processes_equal_one(pipeline_dir, pipeline, tmp_path):
    texts, _ = write_tifa_files(tmp_path / "tifa")
    reference = tmp_path / "ref"
    generate_images(pipeline, IDS, CAPTIONS, reference, seed=3, batch_size=2, model_name=str(pipeline_dir),
                    call_kwargs=CALL, progress=False)
    env = dict(os.environ, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")
    out = tmp_path / "gen"
    # `accelerate launch --cpu --num_processes 2` silently runs ONE process; this form really starts two (gloo)
    command = [console_script("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(free_port()),
               console_script("ts2"), "tifa-bench", "generate", "--text-inputs", str(texts), "--pipeline",
               str(pipeline_dir), "--out", str(out), "--seed", "3", "--batch-size", "2", "--steps", "2",
               "--guidance-scale", "3.0", "--height", "32", "--width", "32", "--no-progress"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "5 images wanted, 0 existed, 5 generated now by 2 process(es)" in done.stderr  # both shares counted
    a, b = _pixels(reference), _pixels(out)
    assert sorted(a) == sorted(b) == sorted(f"{t}.png" for t in IDS)
    # Sharding changes which prompts share a batch here (process 0: [coco_1, coco_2], [drawbench_5]; the reference:
    # [..., drawbench_5, paintskill_7]); float32 kernels picked per batch shape may then round differently, and PNG
    # quantisation turns a ~1e-6 difference at a .5 boundary into one level. Seen: 1 of 3,072 values, 1 level.
    for name in a:
        diff = np.abs(a[name].astype(int) - b[name].astype(int))
        assert diff.max() <= 1 and np.count_nonzero(diff) <= 0.01 * diff.size, name
