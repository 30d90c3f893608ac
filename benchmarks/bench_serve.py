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
directly on Serve's proxy and through ``ts2 serve``'s front (:mod:`scorers.rewards.serve_front`, the header deadline:
what the front costs), then, through the front, under each hostile mix in turn, printed as a ratio to the clean run
of the same process: one client sending a breaking image (1x1000 PNG: a 400 before batching) and 32 slow-body clients
(each announces a 100 kB body and sends a byte a second until its 408, then reconnects: issue 33); 64 clients sending
their request head a byte a second (408 at ``--header-timeout-s``, then reconnect); a client sending a prompt with a
lone surrogate (a 400 before batching, so no batch is split); two clients sending images of 90% of the decoded-pixel
budget (``--max-decoded-mp``, default 4 here) while the good requests share what is left, first in first out.

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
    parser.add_argument("--header-timeout-s", type=float, default=2.0, help="as ts2 serve --header-timeout-s")
    parser.add_argument("--max-decoded-mp", type=float, default=None,
                        help="as ts2 serve --max-decoded-mp (default 64, and 4 with --adversaries)")
    parser.add_argument("--num-gpus", type=float, default=0, help="GPUs the replica reserves (as ts2 serve --num-gpus)")
    args = parser.parse_args()

    import ray
    from PIL import Image
    from ray import serve

    from scorers.rewards import RemoteReward
    from scorers.rewards.serve import build_app
    from scorers.rewards.serve_checks import ServiceOptions
    from scorers.scoring.engines.ray_loopback import start_local_ray
    from tests.helpers.tiny_embed_models import tiny_models

    model = tiny_models()["clip"] if args.layers == 2 else _deep_clip(args.layers)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start_local_ray(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    budget = args.max_decoded_mp or (4.0 if args.adversaries else 64.0)
    args.max_decoded_mp = budget
    serve.run(build_app("clip_score", model=model, max_batch_size=16, batch_wait_ms=args.batch_wait_ms,
                        service=ServiceOptions(body_timeout_s=args.body_timeout_s, max_decoded_mp=budget),
                        num_gpus=args.num_gpus),
              name="bench", route_prefix="/", blocking=False)
    url = f"http://127.0.0.1:{port}"
    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8))

    def rate(concurrency: int, base: str = url) -> tuple[float, float]:
        per_client = args.requests // concurrency
        batch_sizes: list[int] = []

        def client():
            reward = RemoteReward(base)
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
          f"{args.batch_wait_ms} ms, {args.requests} requests, {os.cpu_count()} CPUs, {args.num_gpus:g} GPU(s)")
    print(f"concurrency  1: {one:7.1f} requests/s  (mean {b1:.1f} requests per forward)")
    print(f"concurrency 16: {sixteen:7.1f} requests/s  (mean {b16:.1f} requests per forward)")
    print(f"ratio 16 / 1:   {sixteen / one:7.2f}x")
    if ceiling:
        print(f"no-op deployment (HTTP path only): concurrency 1 {ceiling[0]:.1f}, concurrency 16 {ceiling[1]:.1f} "
              f"requests/s; the service reaches {sixteen / ceiling[1]:.0%} of it at 16")


def _adversaries(args, rate, port: int, url: str) -> None:
    """Good requests/s at concurrency 8: clean (directly, then through the front), then under each hostile mix
    through the front; prints each and its ratio to the clean run through the front."""
    import json

    from scorers.rewards.serve_front import start_front
    from tests.helpers.serve_adversaries import (body, png_b64, post, start_slow_clients,
                                                 start_slow_header_clients)

    front = start_front("127.0.0.1", 0, port, args.header_timeout_s)
    via = f"http://127.0.0.1:{front.port}"
    direct, direct_batch = rate(8)
    rate(8, via)  # warm-up of the front's path
    clean, clean_batch = rate(8, via)
    counts: dict[str, int] = {}

    def looping(name: str, data: bytes, expected: int, pause: float = 0.0):
        def run(stop):  # one request after another (``pause`` s apart: a rate, not a flood)
            while not stop.is_set():
                status = post(f"{via}/score", data)[0]
                counts[name] = counts.get(name, 0) + 1
                counts[f"{name} {status}"] = counts.get(f"{name} {status}", 0) + (status == expected)
                stop.wait(pause)
        return run

    def pool(name: str, start, n: int, **options):
        def run(stop):  # keep n clients connected: a new one as soon as one is answered
            clients = start("127.0.0.1", front.port, n, stop, **options)
            while not stop.is_set():
                for i, client in enumerate(clients):
                    if not client.is_alive() and not stop.is_set():
                        counts[f"{name} 408"] = counts.get(f"{name} 408", 0) + (client.status == 408)
                        clients[i] = start("127.0.0.1", front.port, 1, stop, **options)[0]
                time.sleep(0.2)
        return run

    side = int((args.max_decoded_mp * 0.9 * 1e6) ** 0.5)
    bad_prompt = json.dumps({"prompts": ["a cat \ud800"], "images": [png_b64(64, 64, 5)]}).encode()
    mixes = [
        ("breaking image + slow bodies", [looping("breaking", body([png_b64(1, 1000)]), 400),
                                          pool("slow bodies", start_slow_clients, args.slow_clients)]),
        ("slow headers", [pool("slow heads", start_slow_header_clients, 64)]),
        # one bad prompt per forward of the clean run (its requests per forward / requests per second apart): an
        # unpaced loop in this process competes with the front and the good clients for this process (its GIL)
        ("one bad prompt per batch", [looping("bad prompt", bad_prompt, 400, pause=clean_batch / clean)]),
        (f"large ({side}x{side}, 90% of {args.max_decoded_mp:g} MP) + small at the budget",
         [looping("large", body([png_b64(side, side)]), 200), looping("large", body([png_b64(side, side)]), 200)]),
    ]
    print(f"tiny CLIP ({args.layers} layers per tower), 1 image per request, 8 good clients, max batch 16, batch wait "
          f"{args.batch_wait_ms} ms, {args.requests} good requests per run, {os.cpu_count()} CPUs")
    print(f"clean, Serve's proxy directly: {direct:7.1f} good requests/s  (mean {direct_batch:.1f} requests per "
          "forward)")
    print(f"clean, through the front:      {clean:7.1f} good requests/s  (mean {clean_batch:.1f} requests per "
          f"forward; front / direct {clean / direct:.2f})")
    for name, attackers in mixes:
        stop = threading.Event()
        threads = [threading.Thread(target=attack, args=(stop,), daemon=True) for attack in attackers]
        for thread in threads:
            thread.start()
        time.sleep(2.0)  # the attackers connected and sending
        attacked, attacked_batch = rate(8, via)
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        print(f"{name + ':':<56} {attacked:7.1f} good requests/s  (mean {attacked_batch:.1f} per forward; ratio to "
              f"clean {attacked / clean:.2f})")
    print("attackers' answers:", {k: v for k, v in sorted(counts.items())})
    front.close()


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
