"""Requests/s of ``ts2 serve`` (Ray Serve, dynamic batching on) at concurrency 1 vs 16, and the ratio; with
``--http-ceiling``, also a no-op Serve deployment's requests/s on the same requests (what Serve's HTTP path alone
allows on this machine: no service can do better).

Model: the tiny CLIP of ``tests.tiny_embed_models`` (random seeded weights: timing only) with ``--layers`` transformer
layers per tower (default 2: the forward is ~3 ms, negligible next to the HTTP path, so batching has little to
merge). ``--layers 24`` keeps the model narrow but makes each forward call cost tens of ms of per-call work that a
batch shares (the regime of a GPU forward at small batch, where batching matters), imitated on CPU.

Each request is one 64 px PNG image + prompt (an RL rollout's single sample, the case batching is for); the clients
are threads using :class:`scorers.rewards.RemoteReward` over loopback HTTP. The service: one replica, max batch 16,
``--batch-wait-ms`` (default 10, as ``ts2 serve``; with 0, only the requests that arrive while a forward runs form
the next batch).

    OMP_NUM_THREADS=1 python benchmarks/bench_serve.py [--requests 160] [--batch-wait-ms 10] [--layers 2] \
        [--http-ceiling]
"""
from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--batch-wait-ms", type=float, default=10.0, help="as ts2 serve --batch-wait-ms (its default)")
    parser.add_argument("--layers", type=int, default=2, help="transformer layers per tower of the tiny CLIP")
    parser.add_argument("--http-ceiling", action="store_true",
                        help="also measure a no-op Serve deployment (the HTTP path's own limit)")
    args = parser.parse_args()

    import ray
    from PIL import Image
    from ray import serve

    from scorers.rewards import RemoteReward
    from scorers.rewards.serve import build_app
    from tests.tiny_embed_models import tiny_models

    model = tiny_models()["clip"] if args.layers == 2 else _deep_clip(args.layers)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(build_app("clip_score", model=model, max_batch_size=16,
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
    serve.delete("bench")
    ceiling = None
    if args.http_ceiling:
        serve.run(_noop_app(), name="noop", route_prefix="/", blocking=False)
        rate(4)
        ceiling = (rate(1)[0], rate(16)[0])
    serve.shutdown()
    ray.shutdown()
    print(f"tiny CLIP ({args.layers} layers per tower), 1 image per request, max batch 16, batch wait "
          f"{args.batch_wait_ms} ms, {args.requests} requests, {os.cpu_count()} CPUs")
    print(f"concurrency  1: {one:7.1f} requests/s  (mean {b1:.1f} requests per forward)")
    print(f"concurrency 16: {sixteen:7.1f} requests/s  (mean {b16:.1f} requests per forward)")
    print(f"ratio 16 / 1:   {sixteen / one:7.2f}x")
    if ceiling:
        print(f"no-op deployment (HTTP path only): concurrency 1 {ceiling[0]:.1f}, concurrency 16 {ceiling[1]:.1f} "
              f"requests/s; the service reaches {sixteen / ceiling[1]:.0%} of it at 16")


def _deep_clip(layers: int) -> str:
    """The tiny CLIP's checkpoint with ``layers`` layers per tower (saved once in a temp folder)."""
    import atexit
    import shutil
    import tempfile

    from transformers import CLIPModel

    from tests.tiny_embed_models import tiny_models

    source = tiny_models()["clip"]
    model = CLIPModel.from_pretrained(source)
    config = model.config
    config.text_config.num_hidden_layers = config.vision_config.num_hidden_layers = layers
    import torch

    torch.manual_seed(0)
    deep = CLIPModel(config).eval()
    folder = tempfile.mkdtemp(prefix="ts2-bench-clip-")
    atexit.register(shutil.rmtree, folder, True)
    deep.save_pretrained(folder)
    for name in Path(source).iterdir():  # the processor and tokenizer files
        if not (Path(folder) / name.name).exists():
            shutil.copy(name, folder)
    return folder


def _noop_app():
    from ray import serve
    from starlette.responses import JSONResponse

    @serve.deployment(max_ongoing_requests=32)
    class NoOp:  # reads the body and answers the reply's shape: the HTTP path alone
        async def __call__(self, request):
            await request.body()
            return JSONResponse({"rewards": [0.0], "components": {}, "timing": {"batch_requests": 1}})

    return NoOp.bind()

if __name__ == "__main__":
    main()
