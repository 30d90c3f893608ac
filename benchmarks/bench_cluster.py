"""Wall time of ``ts2 score clip_score --engine ray --ray-address 127.0.0.1:PORT`` on a Ray cluster of one node vs two
nodes of this machine, on loopback (tests/helpers/ray_cluster.py: Ray's ``ray.cluster_utils.Cluster``, each node its
own raylet with ``--cpus`` CPUs), and the ratio two / one.

Data: generated TS2-layout images (``tests.helpers.ts2_fixture_data.make_data_dir``, SEGs 0..K-1, ``--image-size``
px) scored with the tiny CLIP of ``tests.helpers.tiny_embed_models`` (random seeded weights: timing only), one actor
per CPU of the cluster. Each run is the ``ts2 score`` command as a user types it (a process: Python start, joining,
the scorer described on a worker, the actor pool started, one model per actor, the driver's collect, the CSV), no
cache. Cluster start-up is timed apart. Both nodes share this machine's cores: a second node adds actors, not
cores, so on one machine the ratio shows the cost of the second node's processes, not a speed-up; on a real cluster
each node brings its own.

    OMP_NUM_THREADS=1 python benchmarks/bench_cluster.py [--segs 6] [--cpus 1] [--batch-size 16] [--image-size 64]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _score(data_dir: Path, out: Path, clip: str, address: str, batch_size: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1")
    command = [sys.executable, "-m", "scorers.cli", "score", "clip_score", "--model", clip, "--option", "form=cosine",
               "--data-dir", str(data_dir), "--out", str(out), "--batch-size", str(batch_size), "--no-progress",
               "--engine", "ray", "--ray-address", address, "--cache-dir", str(out) + ".cache"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ts2 score failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segs", type=int, default=6, help="SEGs 0..N-1 of the TS2 layout (about 15 images each)")
    parser.add_argument("--cpus", type=int, default=1, help="CPUs (scorer actors) per node")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--image-size", type=int, default=64)
    args = parser.parse_args()

    import pandas as pd

    from tests.helpers.ray_cluster import LoopbackCluster
    from tests.helpers.tiny_embed_models import tiny_models
    from tests.helpers.ts2_fixture_data import make_data_dir

    with tempfile.TemporaryDirectory() as tmp:
        data_dir = make_data_dir(Path(tmp) / "data", seg_ids=list(range(args.segs)), image_size=args.image_size,
                                 with_questions=False)
        n = len(pd.read_csv(data_dir / "metadata.csv"))
        clip = tiny_models()["clip"]
        figures = {}
        for nodes in (1, 2):
            start = time.perf_counter()
            with LoopbackCluster(head_cpus=args.cpus, worker_cpus=args.cpus if nodes == 2 else 0) as cluster:
                up = time.perf_counter() - start
                out = Path(tmp) / f"nodes{nodes}.csv"
                wall = _score(data_dir, out, clip, cluster.address, args.batch_size)
                actors = cluster.actor_nodes("_ScoreActor")
            figures[nodes] = (up, wall, len(set(actors) - {None}))
        one, two = pd.read_csv(Path(tmp) / "nodes1.csv"), pd.read_csv(Path(tmp) / "nodes2.csv")
        diff = float((one["clip_score"] - two["clip_score"]).abs().max())
    print(f"{n} images, {args.image_size} px, tiny CLIP, batch {args.batch_size}, {args.cpus} CPU(s) per node, "
          f"{os.cpu_count()} cores on this machine")
    for nodes, (up, wall, used) in figures.items():
        print(f"{nodes} node(s): cluster start {up:.1f} s (apart), ts2 score {wall:.1f} s = {n / wall:.1f} img/s, "
              f"scorer actors on {used} node(s)")
    print(f"ratio two / one nodes (ts2 score wall time): {figures[2][1] / figures[1][1]:.2f}x; "
          f"max |score difference| {diff:.1e} "
          f"(Ray Data bundles blocks into batches as they arrive: float32 rounding)")


if __name__ == "__main__":
    main()
