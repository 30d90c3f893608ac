"""Requests/s of ``ts2 serve`` (Ray Serve, dynamic batching on) at concurrency 1 vs 16, on the tiny CLIP of
``tests.tiny_embed_models`` (random seeded weights: timing only), and the ratio.

Each request is one 64 px PNG image + prompt (an RL rollout's single sample, the case batching is for); the clients
are threads using :class:`scorers.rewards.RemoteReward` over loopback HTTP. The service: one replica, max batch 16,
``--batch-wait-ms`` (default 5 ms).

    OMP_NUM_THREADS=1 python benchmarks/bench_serve.py [--requests 160] [--batch-wait-ms 5]
"""
from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=160, help="requests per concurrency level")
    parser.add_argument("--batch-wait-ms", type=float, default=5.0)
    args = parser.parse_args()

    import ray
    from PIL import Image
    from ray import serve

    from scorers.rewards import RemoteReward
    from scorers.serve import build_app
    from tests.tiny_embed_models import tiny_models

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(build_app("clip_score", model=tiny_models()["clip"], max_batch_size=16,
                        batch_wait_ms=args.batch_wait_ms), name="bench", route_prefix="/", blocking=False)
    url = f"http://127.0.0.1:{port}"
    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))

    def rate(concurrency: int) -> tuple[float, float]:
        per_client = args.requests // concurrency
        batch_sizes: list[int] = []

        def client():
            reward = RemoteReward(url)
            for _ in range(per_client):
                reward([image], ["a photo of a cat"])
                batch_sizes.append(reward.last_info.stats["timing"]["batch_requests"])

        threads = [threading.Thread(target=client) for _ in range(concurrency)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return per_client * concurrency / (time.perf_counter() - start), float(np.mean(batch_sizes))

    rate(4)  # warm-up (replica, HTTP proxy, first forwards)
    one, b1 = rate(1)
    sixteen, b16 = rate(16)
    serve.shutdown()
    ray.shutdown()
    print(f"tiny CLIP, 1 image per request, max batch 16, batch wait {args.batch_wait_ms} ms, {args.requests} requests")
    print(f"concurrency  1: {one:7.1f} requests/s  (mean {b1:.1f} requests per forward)")
    print(f"concurrency 16: {sixteen:7.1f} requests/s  (mean {b16:.1f} requests per forward)")
    print(f"ratio 16 / 1:   {sixteen / one:7.2f}x")


if __name__ == "__main__":
    main()
