"""Images/s of the two ``ts2 score`` engines on the same tiny CLIP: accelerate (1 process, the default) vs Ray Data
(``--engine ray``, N CPU actors on a local Ray started here), and the ratio ray / accelerate.

Data: generated TS2-layout images (``tests.helpers.ts2_fixture_data.make_data_dir``, SEGs 0..K, ``--image-size`` px) scored
with ``clip_score`` on the tiny CLIP of ``tests.helpers.tiny_embed_models`` (random seeded weights: timing only). No cache (each
engine scores everything). Ray's start-up (``ray.init`` + the driver's one-worker scorer
description) is timed apart; the Ray scoring time includes starting the actor pool and loading one model per actor
(paid once per run: Ray Data makes a new pool for each dataset) and the driver's collect. With a tiny model that
overhead dominates; the ratio grows with the model's cost per image and the number of images.

    OMP_NUM_THREADS=1 python benchmarks/bench_engines.py [--segs 6] [--workers 2] [--batch-size 16] [--image-size 256]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segs", type=int, default=6, help="SEGs 0..N-1 of the TS2 layout (about 15 images each)")
    parser.add_argument("--workers", type=int, default=2, help="Ray CPU actors")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=256)
    from benchmarks.release_tables import add_data_dir

    add_data_dir(parser)  # metadata.csv for the layout
    args = parser.parse_args()
    if args.data_dir is not None:  # tests.helpers.release_data reads TS2_DATA when first imported (below)
        os.environ["TS2_DATA"] = str(Path(args.data_dir).resolve())

    import ray

    from scorers.scoring.engines.ray_data import RayScorer, run_ray
    from scorers.scoring.engines.ray_loopback import start_local_ray
    from scorers.tables.pandas_tables import read_metadata
    from scorers.ts2.scoring import score_table
    from scorers.scoring.registry import build_scorer
    from tests.helpers.tiny_embed_models import tiny_models
    from tests.helpers.ts2_fixture_data import make_data_dir

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = make_data_dir(Path(tmp) / "data", seg_ids=list(range(args.segs)), image_size=args.image_size,
                                 with_questions=False)
        metadata = read_metadata(data_dir / "metadata.csv")
        n = len(metadata)
        clip = tiny_models()["clip"]
        options = {"form": "cosine"}

        scorer = build_scorer("clip_score", model=clip, device="cpu", **options)
        start = time.perf_counter()
        frame_a, _ = score_table(scorer, metadata, data_dir, batch_size=args.batch_size, num_workers=0,
                                 progress=False)
        accelerate_s = time.perf_counter() - start

        start = time.perf_counter()
        start_local_ray(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray_scorer = RayScorer({"name": "clip_score", "model": clip, "options": options}, workers=args.workers)
        startup_s = time.perf_counter() - start
        start = time.perf_counter()
        frame_r, _ = score_table(ray_scorer, metadata, data_dir, engine=run_ray, batch_size=args.batch_size,
                                 progress=False)
        ray_s = time.perf_counter() - start
        ray.shutdown()

    diff = float((frame_a["clip_score"] - frame_r["clip_score"]).abs().max())
    a_rate, r_rate = n / accelerate_s, n / ray_s
    print(f"{n} images, {args.image_size} px, tiny CLIP, batch {args.batch_size}, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} CPUs")
    print(f"accelerate (1 process):      {a_rate:8.1f} images/s")
    print(f"ray ({args.workers} CPU actors):         {r_rate:8.1f} images/s  (+ {startup_s:.1f} s Ray start-up; includes actor start)")
    print(f"ratio ray / accelerate:      {r_rate / a_rate:8.2f}x   (max |score difference| {diff:.1e})")


if __name__ == "__main__":
    main()
