"""``ts2 serve SCORER[=WEIGHT]... [--host 127.0.0.1] [--port P]``: rewards as an HTTP service (Ray Serve, batched)."""
from __future__ import annotations

import argparse
import math
import sys

from scorers.cli._help import DefaultsHelpFormatter
from scorers.cli._options import add_command
from scorers.cli._validate import count, models_by_name, number, reward_weights
from scorers.rewards.serve_checks import (BODY_TIMEOUT_FLOOR_S, DECODED_MP_FLOOR, HEADER_TIMEOUT_FLOOR_S,
                                          REQUEST_MB_FLOOR)

LIMITS_HELP = """\
limits (each bad request gets its own status; the service stays up):
  400  malformed JSON (nesting too deep, or more JSON structure than --max-images images need), bad base64, not
       PNG/JPEG, a prompt that is not valid Unicode (a lone surrogate), an image side under --min-side or an aspect
       ratio over --max-aspect (all checked before batching, so they never reach a merged forward)
  408  the request head did not arrive within --header-timeout-s, or the body within --body-timeout-s
  413  body over --max-request-mb, more than --max-images images, an image over --max-pixels, or a request whose
       decoded images alone exceed --max-decoded-mp
  422  the request's own forward failed (when a merged forward raises, its requests are scored one by one: the
       neighbours get their rewards)
  503  the decoded-pixel budget (--max-decoded-mp) or the parsing budget (--max-parsing-mb), across requests,
       stayed full for --admission-wait-s: Retry-After: 1; or more than 2 x --max-connections requests are waiting
budgets: requests wait for them first in, first out, so a large request that fits is served however many small
ones follow it. A decoded image counts in RGB pixels of memory: 1 per pixel for RGB, more for other modes (2 for
16-bit grey: the image and its RGB copy).
connections: the replica holds at most --max-connections requests at once (default 256; one waiting on its body
costs a coroutine, not a batch slot) and Serve queues as many more; 32 slow clients take 32 of them. A connection
carries one request; its head must arrive within --header-timeout-s (the local service's front: Serve's proxy has no
such deadline, so behind --ray-address put a proxy with one in front).
network: the HTTP service binds --host (default 127.0.0.1). The local Ray it starts (no --ray-address and no
$RAY_ADDRESS) listens on 127.0.0.1 only: its GCS, raylet, workers, agents, Serve's controller, proxy and replica
(its inter-deployment gRPC port included). A watchdog stops that local Ray if this process dies (kill -9
included). A Ray cluster you join keeps its own addresses: secure it with Ray's token authentication
(RAY_AUTH_MODE=token, Ray >= 2.52)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "serve", run_serve,
                         help="serve rewards over HTTP (POST /score, JSON + base64 images) on Ray Serve, with "
                              "dynamic batching")
    parser.formatter_class = _Formatter
    parser.epilog = LIMITS_HELP
    parser.add_argument("rewards", nargs="+", metavar="SCORER[=WEIGHT]",
                        help="reward(s) to serve, e.g. pickscore or pickscore=1 hpsv2=0.5 (weighted sum)")
    parser.add_argument("--model", action="append", default=[], metavar="[SCORER=]MODEL",
                        help="checkpoint (Hub id or local folder); SCORER=MODEL with several rewards (repeatable)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=count(1, 65535), default=8000,
                        help="HTTP port of the service (checked free before Ray starts)")
    parser.add_argument("--max-batch-size", type=count(1, 4096), default=16, help="requests merged into one forward")
    parser.add_argument("--batch-wait-ms", type=_milliseconds, default=10.0,
                        help="how long a request waits for others to batch with (0 to 60000)")
    parser.add_argument("--max-images", type=count(1), default=64, help="images per request (413 above)")
    parser.add_argument("--max-pixels", type=count(1), default=4096 * 4096, help="pixels per image (413 above)")
    parser.add_argument("--min-side", type=count(1), default=8, help="shortest image side in pixels (400 below)")
    parser.add_argument("--max-aspect", type=number(0.999, 1e6), default=20.0,
                        help="longest / shortest image side (400 above; >= 1)")
    parser.add_argument("--max-request-mb", type=_at_least(REQUEST_MB_FLOOR, 4096, "a smaller body holds no image"),
                        default=32.0, help="request body size in MiB (413 above)")
    parser.add_argument("--body-timeout-s", default=10.0,
                        type=_at_least(BODY_TIMEOUT_FLOOR_S, 3600, "time for a body to arrive"),
                        help="seconds a request body may take to arrive (408 after)")
    parser.add_argument("--header-timeout-s", default=10.0,
                        type=_at_least(HEADER_TIMEOUT_FLOOR_S, 3600, "time for a request head to arrive"),
                        help="seconds a connection may take to send its request head (408 and closed after)")
    parser.add_argument("--max-connections", type=count(1, 65535), default=256,
                        help="requests the replica holds at once; as many more wait in Serve's queue (503 beyond)")
    parser.add_argument("--max-decoded-mp", type=_at_least(DECODED_MP_FLOOR, 1e6, "one 100 x 100 image"),
                        default=64.0, help="decoded megapixels held at once across all requests (about 4 MB of "
                                           "memory per megapixel as RGB)")
    parser.add_argument("--max-parsing-mb", type=_at_least(REQUEST_MB_FLOOR, 1e6, "a smaller body holds no image"),
                        default=128.0, help="MiB of request bodies parsed and decoded at once across requests (at "
                                            "least one body of --max-request-mb)")
    parser.add_argument("--admission-wait-s", type=_at_least(0, 3600, "no wait"), default=30.0,
                        help="how long a request waits, first in first out, for room in the budgets (503 + "
                             "Retry-After after)")
    parser.add_argument("--token-env", metavar="VAR",
                        help="require `Authorization: Bearer $VAR` on every request (the token is never logged)")
    parser.add_argument("--num-gpus", type=number(-1e-9, 1e6), default=0, help="GPUs for the service's replica")
    parser.add_argument("--ray-address", metavar="auto|ADDR",
                        help="the Ray cluster to join (auto: the one `ray start` made on this machine); default: "
                             "$RAY_ADDRESS, else a local Ray on 127.0.0.1 that stops with this process")


class _Formatter(argparse.RawDescriptionHelpFormatter, DefaultsHelpFormatter):
    """Keeps the limits table's line breaks."""


def _at_least(low: float, high: float, why: str):
    """A ``type=`` for a finite number from ``low`` (the floor, with ``why``) to ``high``: a smaller one would start a
    service that refuses every request."""
    from scorers.checks import parse_float

    def check(text: str) -> float:
        value = parse_float(text)
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a number >= {low:g} (the floor: {why}) and <= {high:,g}, "
                                             f"got {text!r}")
        return value

    check.__name__ = "number"
    return check


def _milliseconds(text: str) -> float:
    """``--batch-wait-ms``: a finite number from 0 to 60000 (``inf`` would hold every request for ever)."""
    from scorers.checks import parse_float

    value = parse_float(text)
    if value is None or not 0 <= value <= 60_000:
        raise argparse.ArgumentTypeError(f"must be a number of milliseconds from 0 to 60000, got {text!r}")
    return value


def parse_rewards(items: list[str], models: list[str]):
    """``(reward, model)`` for :func:`scorers.rewards.serve.serve_rewards`: a bare name when one reward weighs 1, else
    ``{name: weight}``; ``{name: model}`` from ``--model`` (None when not given). Unknown names and missing model
    paths are refused here, before anything heavy is imported."""
    from scorers.models.loading import check_model_source
    from scorers.scoring.registry import SCORERS

    weights = reward_weights(items, "reward")
    for name in weights:
        if name not in SCORERS:
            import difflib

            close = difflib.get_close_matches(name, sorted(SCORERS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown reward {name!r}{hint} (available: {', '.join(sorted(SCORERS))})")
    model = models_by_name(models, weights, "rewards") or None
    for source in (model or {}).values():
        check_model_source(source, flag="--model")
    return (next(iter(weights)) if len(weights) == 1 and next(iter(weights.values())) == 1.0 else weights), model


def run_serve(args: argparse.Namespace) -> int:
    """A reward service on Ray Serve (the ray extra): POST /score with JSON {"prompts": [...], "images": [base64
    PNG/JPEG, ...]} answers {"rewards": [...], "components": {...}, "timing": {...}}. Concurrent requests are
    batched into one forward. Never unpickles; requests are size-limited and slow or broken ones cannot stall the
    others (see the limits below); binds 127.0.0.1 unless --host says otherwise. Names, model paths, the port and
    the limits are checked before Ray starts, and the model is loaded once here before it is deployed (a model that
    cannot load is one line). Ctrl-C or SIGTERM stops it cleanly at any moment. Client:
    scorers.rewards.remote.RemoteReward(URL).
    """
    import signal

    signal.signal(signal.SIGTERM, _stop)  # from the first moment: a SIGTERM during start-up stops cleanly too
    try:
        return _run(args)
    except KeyboardInterrupt as stop:
        reason = "SIGTERM" if type(stop).__name__ == "Stop" else "Ctrl-C"
        print(f"ts2 serve: stopped ({reason})", file=sys.stderr, flush=True)
        return 0


def _stop(signum, frame):
    from scorers.rewards.serve import Stop

    raise Stop()


def _run(args: argparse.Namespace) -> int:
    weights, model = parse_rewards(args.rewards, args.model)  # before importing the service module (asyncio...)
    from scorers.rewards.serve import check_app_options, check_port_free, serve_rewards
    from scorers.rewards.serve_checks import Limits, ServiceOptions

    limits = Limits(max_request_bytes=math.ceil(args.max_request_mb * 1024 * 1024), max_images=args.max_images,
                    max_pixels=args.max_pixels, min_side=args.min_side, max_aspect=max(1.0, args.max_aspect))
    service = ServiceOptions(body_timeout_s=args.body_timeout_s, max_connections=args.max_connections,
                             max_decoded_mp=args.max_decoded_mp, header_timeout_s=args.header_timeout_s,
                             max_parsing_mb=args.max_parsing_mb, admission_wait_s=args.admission_wait_s)
    check_app_options(max_batch_size=args.max_batch_size, batch_wait_ms=args.batch_wait_ms, limits=limits,
                      service=service, num_gpus=args.num_gpus)
    check_port_free(args.host, args.port)
    print("ts2 serve: loading the model(s) to check them", file=sys.stderr, flush=True)
    _check_loads(weights, model)
    serve_rewards(weights, host=args.host, port=args.port, model=model, max_batch_size=args.max_batch_size,
                  batch_wait_ms=args.batch_wait_ms, limits=limits, service=service, token_env=args.token_env,
                  num_gpus=args.num_gpus, address=args.ray_address)
    return 0


def _check_loads(weights, model) -> None:
    """Load the reward once in this process (then free it), so a model that cannot load is one line here rather
    than a replica's traceback after Ray started."""
    import gc

    from scorers.rewards.api import load

    reward = load(weights, model=model, device="cpu")
    del reward
    gc.collect()
