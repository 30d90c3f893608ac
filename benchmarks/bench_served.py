"""Requests/s of the served backend at concurrency 1 vs N against a loopback chat-completions server with injected
latency, same run, same requests.

Each request is a VQAScore request (one image as a base64 PNG data URL, logprobs asked for) scored through the
runner (batches, request cache on disk, per-item usage records), exactly as ``ts2 score vqa_score --model
openai:MODEL`` runs it. The server (``tests/helpers/loopback_chat_server.py``, standard library) runs in its own process
and sleeps ``--latency`` seconds before each reply, standing in for a model server's response time. Prints both
rates, the ratio, and checks that both runs give the same scores.

    python benchmarks/bench_served.py                               # 2,000 requests, 50 ms, concurrency 1 vs 32
    python benchmarks/bench_served.py --requests 2000 --baseline-requests 200 --concurrency 64
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _reply(body):
    from tests.helpers.loopback_chat_server import body_hash, chat_reply

    p = 0.05 + 0.9 * (int(body_hash(body)[:6], 16) / 0xFFFFFF)
    return chat_reply("Yes", top_logprobs=[{"token": "Yes", "logprob": math.log(p)},
                                           {"token": "No", "logprob": math.log(1 - p)}])


def _serve(latency: float, queue, stop) -> None:
    from tests.helpers.loopback_chat_server import ChatServer

    server = ChatServer(_reply, latency=latency, lifetime=3600)
    queue.put(server.url)
    stop.wait()
    server.close()


def score(url: str, images, prompts, concurrency: int) -> tuple[float, np.ndarray, int]:
    """Seconds to score ``images`` through the runner at ``concurrency``, the scores, and the requests sent."""
    from scorers.models.openai_compat import OpenAIChat
    from scorers.metrics.qga.vqascore import VQAScorer
    from scorers.scoring.runner import run
    from scorers.scoring.usage import MeteredScorer

    backend = OpenAIChat("tiny", api_base=url, max_concurrency=concurrency)
    scorer = MeteredScorer(VQAScorer(backend=backend))
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        result = run(scorer, images, prompts, cache_dir=cache, batch_size=max(512, 16 * concurrency),
                     num_workers=0, progress=False)
        seconds = time.perf_counter() - start
    backend.close()
    return seconds, result.scores, backend.requests_sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--baseline-requests", type=int, default=None,
                        help="requests for the concurrency-1 run (default: --requests); its rate is per request")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the server waits before each reply")
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()

    images = [Image.new("RGB", (32, 32), (i % 256, (i // 256) % 256, 128)) for i in range(args.requests)]
    prompts = [f"a photo number {i}" for i in range(args.requests)]
    baseline_n = args.baseline_requests or args.requests

    context = multiprocessing.get_context("spawn")
    queue, stop = context.Queue(), context.Event()
    server = context.Process(target=_serve, args=(args.latency, queue, stop), daemon=True)
    server.start()
    url = queue.get(timeout=120)
    try:
        fast_s, fast_scores, fast_sent = score(url, images, prompts, args.concurrency)
        slow_s, slow_scores, slow_sent = score(url, images[:baseline_n], prompts[:baseline_n], 1)
    finally:
        stop.set()
        server.join(10)
    assert fast_sent == args.requests and slow_sent == baseline_n, (fast_sent, slow_sent)
    assert np.array_equal(fast_scores[:baseline_n], slow_scores), "concurrency changed the scores"
    slow_rate, fast_rate = baseline_n / slow_s, args.requests / fast_s
    print(f"server latency {args.latency * 1000:.0f} ms per request, loopback, VQAScore requests through the runner")
    print(f"concurrency 1: {baseline_n} requests in {slow_s:.1f} s = {slow_rate:.1f} requests/s")
    print(f"concurrency {args.concurrency}: {args.requests} requests in {fast_s:.1f} s = {fast_rate:.1f} requests/s")
    print(f"ratio: {fast_rate / slow_rate:.1f}x (same scores: yes)")


if __name__ == "__main__":
    main()
