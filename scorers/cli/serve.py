"""``ts2 serve SCORER[=WEIGHT]... [--host 127.0.0.1] [--port P]``: rewards as an HTTP service (Ray Serve, batched)."""
from __future__ import annotations

import argparse

from scorers.cli._options import add_command
from scorers.cli._validate import count, models_by_name, reward_weights


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "serve", run_serve,
                         help="serve rewards over HTTP (POST /score, JSON + base64 images) on Ray Serve, with "
                              "dynamic batching")
    parser.add_argument("rewards", nargs="+", metavar="SCORER[=WEIGHT]",
                        help="reward(s) to serve, e.g. pickscore or pickscore=1 hpsv2=0.5 (weighted sum)")
    parser.add_argument("--model", action="append", default=[], metavar="[SCORER=]MODEL",
                        help="checkpoint (Hub id or local folder); SCORER=MODEL with several rewards (repeatable)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=count(1, 65535), default=8000, help="HTTP port of the service")
    parser.add_argument("--max-batch-size", type=count(1), default=16, help="requests merged into one forward")
    parser.add_argument("--batch-wait-ms", type=float, default=10.0,
                        help="how long a request waits for others to batch with")
    parser.add_argument("--max-images", type=count(1), default=64, help="images per request (413 above)")
    parser.add_argument("--max-pixels", type=count(1), default=4096 * 4096, help="pixels per image (413 above)")
    parser.add_argument("--max-request-mb", type=float, default=32.0, help="request body size (413 above)")
    parser.add_argument("--token-env", metavar="VAR",
                        help="require `Authorization: Bearer $VAR` on every request (the token is never logged)")
    parser.add_argument("--num-gpus", type=float, default=0, help="GPUs for the service's replica")
    parser.add_argument("--ray-address", metavar="auto|ADDR",
                        help="the Ray cluster to join (auto: the one `ray start` made on this machine); default: "
                             "$RAY_ADDRESS, else a local Ray")


def parse_rewards(items: list[str], models: list[str]):
    """``(reward, model)`` for :func:`scorers.rewards.serve.serve_rewards`: a bare name when one reward weighs 1, else
    ``{name: weight}``; ``{name: model}`` from ``--model`` (None when not given)."""
    weights = reward_weights(items, "reward")
    model = models_by_name(models, weights, "rewards") or None
    return (next(iter(weights)) if len(weights) == 1 and next(iter(weights.values())) == 1.0 else weights), model


def run_serve(args: argparse.Namespace) -> int:
    """A reward service on Ray Serve (the ray extra): POST /score with JSON {"prompts": [...], "images": [base64
    PNG/JPEG, ...]} answers {"rewards": [...], "components": {...}, "timing": {...}}. Concurrent requests are
    batched into one forward. Never unpickles; requests are size-limited; binds 127.0.0.1 unless --host says
    otherwise. Client: scorers.rewards.api.RemoteReward(URL).
    """

    from scorers.rewards.serve import Limits, serve_rewards

    weights, model = parse_rewards(args.rewards, args.model)
    limits = Limits(max_request_bytes=int(args.max_request_mb * 1024 * 1024), max_images=args.max_images,
                    max_pixels=args.max_pixels)
    serve_rewards(weights, host=args.host, port=args.port, model=model, max_batch_size=args.max_batch_size,
                  batch_wait_ms=args.batch_wait_ms, limits=limits, token_env=args.token_env, num_gpus=args.num_gpus,
                  address=args.ray_address)
    return 0
