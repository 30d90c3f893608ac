"""Requests/s of ``ts2 serve`` (Ray Serve, dynamic batching on) at concurrency 1 vs 16, and the ratio; with
``--http-ceiling``, also a no-op Serve deployment's requests/s on the same requests (what Serve's HTTP path alone
allows on this machine: no service can do better).

Model: the tiny CLIP of ``tests.helpers.tiny_embed_models`` (random seeded weights: timing only) with ``--layers`` transformer
layers per tower (default 2: the forward is ~3 ms, negligible next to the HTTP path, so batching has little to
merge). ``--layers 24`` keeps the model narrow but makes each forward call cost tens of ms of per-call work that a
batch shares (the regime of a GPU forward at small batch, where batching matters), imitated on CPU.

Each request is one 64 px PNG image + prompt (an RL rollout's single sample, the case batching is for); the clients
are threads using :class:`scorers.rewards.RemoteReward` over loopback HTTP. The service: one replica, max batch 16,
``--batch-wait-ms`` (default 10, as ``ts2 serve``; with 0, only the requests that arrive while a forward runs form
the next batch).

    OMP_NUM_THREADS=1 python benchmarks/bench_serve.py [--requests 160] [--batch-wait-ms 10] [--layers 2] \
        [--http-ceiling]

``--adversaries``: instead, the requests/s of good requests (8 concurrent clients) with nobody else on the service,
then while one client keeps sending a breaking image (1x1000 PNG: a 400 before batching) and 32 slow clients keep
connections open (each announces a 100 kB body and sends a byte a second until its 408, then reconnects), printed
as a ratio to the clean run of the same run (issue 33's acceptance).

    OMP_NUM_THREADS=1 python benchmarks/bench_serve.py --adversaries [--requests 160] [--slow-clients 32]
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
    parser.add_argument("--adversaries", action="store_true",
                        help="good requests/s with a breaking-image client and slow clients present, vs clean")
    parser.add_argument("--slow-clients", type=int, default=32, help="slow clients with --adversaries")
    parser.add_argument("--body-timeout-s", type=float, default=10.0, help="as ts2 serve --body-timeout-s")
    args = parser.parse_args()

    import ray
    from PIL import Image
    from ray import serve

    from scorers.rewards import RemoteReward
    from scorers.rewards.serve import ServiceOptions, build_app
    from scorers.scoring.engines.ray_loopback import start_local_ray
    from tests.helpers.tiny_embed_models import tiny_models

    model = tiny_models()["clip"] if args.layers == 2 else _deep_clip(args.layers)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start_local_ray(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(build_app("clip_score", model=model, max_batch_size=16, batch_wait_ms=args.batch_wait_ms,
                        service=ServiceOptions(body_timeout_s=args.body_timeout_s)),
              name="bench", route_prefix="/", blocking=False)
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
    if args.adversaries:
        _adversaries(args, rate, port, url)
        serve.shutdown()
        ray.shutdown()
        return
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


def _adversaries(args, rate, port: int, url: str) -> None:
    """Good requests/s at concurrency 8, clean and then with the adversaries present; prints both and the ratio."""
    from tests.helpers.serve_adversaries import body, png_b64, post, start_slow_clients

    clean, clean_batch = rate(8)
    stop = threading.Event()
    counts = {"breaking": 0, "breaking_400": 0, "slow_408": 0}

    def breaking():
        data = body([png_b64(1, 1000)])
        while not stop.is_set():
            status = post(f"{url}/score", data)[0]
            counts["breaking"] += 1
            counts["breaking_400"] += status == 400

    def slow_pool():  # keep --slow-clients connections open: a new one as soon as one gets its 408
        clients = start_slow_clients("127.0.0.1", port, args.slow_clients, stop)
        while not stop.is_set():
            for i, client in enumerate(clients):
                if not client.is_alive() and not stop.is_set():
                    counts["slow_408"] += client.status == 408
                    clients[i] = start_slow_clients("127.0.0.1", port, 1, stop)[0]
            time.sleep(0.2)

    threads = [threading.Thread(target=breaking, daemon=True), threading.Thread(target=slow_pool, daemon=True)]
    for thread in threads:
        thread.start()
    time.sleep(2.0)  # the slow clients connected and holding their connections
    attacked, attacked_batch = rate(8)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    print(f"tiny CLIP ({args.layers} layers per tower), 1 image per request, 8 good clients, max batch 16, batch wait "
          f"{args.batch_wait_ms} ms, {args.requests} good requests per run, {os.cpu_count()} CPUs")
    print(f"clean:            {clean:7.1f} good requests/s  (mean {clean_batch:.1f} requests per forward)")
    print(f"with adversaries: {attacked:7.1f} good requests/s  (mean {attacked_batch:.1f} requests per forward; "
          f"1 breaking-image client sent {counts['breaking']} ({counts['breaking_400']} answered 400), "
          f"{args.slow_clients} slow clients held open ({counts['slow_408']} answered 408 so far))")
    print(f"ratio adversaries / clean: {attacked / clean:.2f}")


def _deep_clip(layers: int) -> str:
    """The tiny CLIP's checkpoint with ``layers`` layers per tower (saved once in a temp folder)."""
    import atexit
    import shutil
    import tempfile

    from transformers import CLIPModel

    from tests.helpers.tiny_embed_models import tiny_models

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
