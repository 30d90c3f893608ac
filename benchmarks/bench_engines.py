"""Wall time, images/s and peak memory of the two ``ts2 score`` engines on a real-size CLIP, in one run: the default
engine (accelerate, 1 process + DataLoader decode workers) vs Ray Data (``--engine ray``, N CPU actors on a local
Ray started here), their ratio, and that both give the same scores.

Model: open_clip ViT-B-32 built from its config with seeded random weights, saved once to a file that both engines
load (``--pretrained FILE``), so every Ray actor holds the same weights and the compute is the real model's. Data: the
TS2 layout (``tests.helpers.ts2_fixture_data.make_data_dir``; all 165 SEGs = 2,840 images by default) with noisy
gradient JPEGs of ``--image-size`` px (``benchmarks/bench_embedding.make_images``: decoding costs what a photo's
does; ``--unique-images`` distinct files, copied to every name). No cache: each engine scores everything.

Each engine runs in a fresh child process (same imports, clean memory); this process samples the child's whole
process tree (DataLoader workers; Ray's GCS, raylet and actors) every 0.2 s and reports the peak of its summed PSS
(each shared page counted once, split between its processes) as the peak RSS. Ray's start-up (``ray.init`` of a local
loopback Ray, then the driver building the scorer to describe it) is timed apart from its scoring, which includes
starting the actor pool and loading the model once per actor.

    python benchmarks/bench_engines.py                 # 2,840 images of 512 px, ViT-B-32 (minutes on 2 cores)
    python benchmarks/bench_engines.py --quick         # 2 SEGs: checks the script in well under a minute
    python benchmarks/bench_engines.py --model tiny    # the tiny test CLIP instead of ViT-B-32
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ENGINES = ("default", "ray")


def build_weights(model: str, folder: Path) -> dict:
    """The scorer options for ``model``: ``ViT-B-32`` (or another open_clip architecture) with seeded random weights
    saved to a file, or ``tiny`` (the tests' tiny transformers CLIP)."""
    if model == "tiny":
        from tests.helpers.tiny_embed_models import tiny_models

        return {"model": tiny_models()["clip"], "options": {"form": "cosine"}}
    import open_clip
    import torch

    torch.manual_seed(0)
    weights = folder / f"{model}-random.pt"
    torch.save(open_clip.create_model(model).state_dict(), weights)
    return {"model": model, "options": {"form": "cosine", "pretrained": str(weights)}}


def make_data(folder: Path, segs: int | None, image_size: int, unique: int) -> Path:
    """The TS2 layout for SEGs ``0..segs-1`` (all when ``None``) with ``unique`` noisy JPEGs copied to every name."""
    from benchmarks.bench_embedding import make_images
    from tests.helpers.ts2_fixture_data import make_data_dir

    data_dir = make_data_dir(folder / "data", seg_ids=None if segs is None else list(range(segs)), image_size=8,
                             with_questions=False)
    sources = make_images(folder, unique, image_size)
    names = [line.split(",") for line in (data_dir / "metadata.csv").read_text().splitlines()]
    column = names[0].index("file_name")
    for i, row in enumerate(names[1:]):
        shutil.copyfile(sources[i % len(sources)], data_dir / row[column])
    return data_dir


def child(args) -> None:
    """One engine, timed in this fresh process; prints one JSON line."""
    from scorers.tables.pandas_tables import read_metadata
    from scorers.ts2.scoring import score_table

    spec = json.loads(args.spec)
    metadata = read_metadata(Path(args.data) / "metadata.csv")
    times = {}
    if args.child == "default":
        from scorers.scoring.registry import build_scorer

        start = time.perf_counter()
        scorer = build_scorer("clip_score", model=spec["model"], device="cpu", **spec["options"])
        times["load_s"] = time.perf_counter() - start
        start = time.perf_counter()
        frame, _ = score_table(scorer, metadata, args.data, batch_size=args.batch_size, num_workers=args.num_workers,
                               progress=False)
        times["score_s"] = time.perf_counter() - start
    else:
        import ray

        from scorers.scoring.engines.ray_data import RayScorer, run_ray
        from scorers.scoring.engines.ray_loopback import start_local_ray

        start = time.perf_counter()
        start_local_ray(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        times["init_s"] = time.perf_counter() - start
        start = time.perf_counter()
        scorer = RayScorer({"name": "clip_score", "model": spec["model"], "options": spec["options"]},
                           workers=args.workers)
        times["load_s"] = time.perf_counter() - start  # the driver builds the scorer to describe it (local Ray)
        start = time.perf_counter()
        frame, _ = score_table(scorer, metadata, args.data, engine=run_ray, batch_size=args.batch_size,
                               progress=False)
        times["score_s"] = time.perf_counter() - start
        ray.shutdown()
    frame[["file_name", "clip_score"]].to_csv(args.out, index=False)
    print(json.dumps(times))


def tree_pss(process) -> int:
    """Summed PSS (bytes) of ``process`` and its descendants (RSS where PSS cannot be read)."""
    import psutil

    total = 0
    for p in [process, *process.children(recursive=True)]:
        try:
            info = p.memory_full_info()
            total += getattr(info, "pss", info.rss)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return total


def run_engine(engine: str, args, spec: dict, data_dir: Path, out: Path) -> dict:
    """Run one engine in a child process; its timings, wall time and peak tree memory."""
    import psutil

    command = [sys.executable, __file__, "--child", engine, "--data", str(data_dir), "--spec", json.dumps(spec),
               "--out", str(out), "--batch-size", str(args.batch_size), "--num-workers", str(args.num_workers),
               "--workers", str(args.workers)]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                   p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
                                    "RAY_USAGE_STATS_ENABLED": "0"})
    peak, watched = 0, psutil.Process(process.pid)
    stop = threading.Event()

    def sample():
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, tree_pss(watched))
            stop.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = process.communicate(timeout=args.timeout)
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"bench_engines: the {engine} engine failed:\n{stderr[-3000:]}")
    times = json.loads(stdout.strip().splitlines()[-1])
    return {**times, "process_s": wall, "peak_bytes": peak}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="ViT-B-32", help="open_clip architecture (random weights), or 'tiny'")
    parser.add_argument("--segs", type=int, default=None, help="SEGs 0..N-1 of the TS2 layout (default all 165)")
    parser.add_argument("--quick", action="store_true", help="2 SEGs (about 30 images): checks the script")
    parser.add_argument("--image-size", type=int, default=512)
    parser.add_argument("--unique-images", type=int, default=64, help="distinct JPEGs generated (copied to all names)")
    parser.add_argument("--workers", type=int, default=2, help="Ray CPU actors")
    parser.add_argument("--num-workers", type=int, default=2, help="the default engine's DataLoader workers")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=3600, help="seconds allowed to each engine")
    parser.add_argument("--child", choices=ENGINES, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    from benchmarks.release_tables import add_data_dir

    add_data_dir(parser)  # metadata.csv for the layout
    args = parser.parse_args(argv)
    if args.data_dir is not None:  # tests.helpers.release_data reads TS2_DATA when first imported (below)
        os.environ["TS2_DATA"] = str(Path(args.data_dir).resolve())
    if args.child:
        child(args)
        return 0
    segs = 2 if args.quick and args.segs is None else args.segs

    import pandas as pd

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        spec = build_weights(args.model, tmp)
        data_dir = make_data(tmp, segs, args.image_size, args.unique_images)
        results, frames = {}, {}
        for engine in ENGINES:
            results[engine] = run_engine(engine, args, spec, data_dir, tmp / f"{engine}.csv")
            frames[engine] = pd.read_csv(tmp / f"{engine}.csv")
    n = len(frames["default"])
    assert list(frames["default"]["file_name"]) == list(frames["ray"]["file_name"])
    diff = float((frames["default"]["clip_score"] - frames["ray"]["clip_score"]).abs().max())
    a, r = results["default"], results["ray"]
    a_wall = a["load_s"] + a["score_s"]
    r_wall = r["init_s"] + r["load_s"] + r["score_s"]
    gib = 2 ** 30
    load = os.getloadavg()
    print(f"{n} images, {args.image_size} px JPEGs ({args.unique_images} distinct), {args.model} "
          f"({'random weights from its config' if args.model != 'tiny' else 'tiny test CLIP'}), batch "
          f"{args.batch_size}, {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"default engine (1 process, {args.num_workers} decode workers): wall {a_wall:7.1f} s (model load "
          f"{a['load_s']:.1f} s + scoring {a['score_s']:.1f} s)  {n / a_wall:7.1f} images/s  peak RSS "
          f"{a['peak_bytes'] / gib:.2f} GiB  (process {a['process_s']:.1f} s with imports)")
    print(f"ray engine ({args.workers} CPU actors):            wall {r_wall:7.1f} s (start-up {r['init_s']:.1f} s "
          f"+ describe {r['load_s']:.1f} s + scoring {r['score_s']:.1f} s)  {n / r_wall:7.1f} images/s  peak RSS "
          f"{r['peak_bytes'] / gib:.2f} GiB  (process {r['process_s']:.1f} s with imports)")
    print(f"ratio ray / default wall time: {r_wall / a_wall:.2f}x (goal <= 1.25x); without Ray's start-up "
          f"(init + describe): {r['score_s'] / a_wall:.2f}x; max |score difference| {diff:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
