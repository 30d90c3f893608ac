"""``ts2 serve``: the rewards of :mod:`scorers.rewards.api` as an HTTP service on Ray Serve, with dynamic batching.

``POST /score`` with JSON ``{"prompts": [...], "images": [base64 PNG or JPEG, ...]}`` answers
``{"rewards": [...], "components": {name: [...]}, "timing": {"queue_s", "forward_s", "batch_items",
"batch_requests"}}``; ``GET /stats`` answers ``{"forward_calls", "requests", "items", "split_batches",
"decoded_pixels_held", "decoded_pixels_peak", "decoded_pixels_budget", "decoded_pixels_waiting",
"parsing_bytes_held", "parsing_bytes_peak", "parsing_bytes_budget"}`` (how well batching merges, how many merged
forwards raised and were scored request by request, and the budgets' use).
Requests waiting together (up to ``max_batch_size`` requests, ``batch_wait_ms``) go through one forward of the
reward; each request gets back its own rows, in order.

Safety: a request is JSON, never a pickle. What one request may hold is limited and checked before it joins a batch
(:mod:`scorers.rewards.serve_checks`: body size and shape, number of images, prompts, pixels per image read from the
header before decoding: 413 naming the limit; each image's shortest side and aspect ratio, a prompt that is not
valid Unicode: 400 naming it). Anything malformed is a 400 and the service stays up. A request head must arrive
within ``header_timeout_s`` (the front, :mod:`scorers.rewards.serve_front`) and a body within ``body_timeout_s``
(408 after either); the replica holds at most ``max_connections`` requests at once and queues as many more (503
beyond). Bodies being parsed and decoded pixels held at once across requests are bounded (``max_parsing_mb``,
``max_decoded_mp``: :class:`~scorers.rewards.serve_budget.Budget`, first in first out; 503 with ``Retry-After``
after ``admission_wait_s``; 413 for a request larger than a whole budget). When a merged forward raises, its
requests are scored one by one: the request whose own forward fails gets a 422 naming the error, its neighbours
their rewards.
It binds 127.0.0.1 unless told otherwise. With ``token_env`` naming a set environment variable, every request needs
``Authorization: Bearer <token>`` (401 otherwise); only the token's SHA-256 reaches the replicas (the variable is
removed from this process's environment before Ray starts, so no Ray process inherits it) and it is never logged.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import sys
import time
from dataclasses import asdict

from scorers.errors import ParameterError
from scorers.rewards.serve_budget import Budget
from scorers.rewards.serve_checks import (Limits, RequestError, ServiceOptions, check_finite, check_positive_int,
                                          decode_images, parse_request)

__all__ = ["Admission", "Stop", "build_app", "check_app_options", "check_port_free", "input_resizer", "score_requests",
           "serve_rewards"]

def input_resizer(reward):
    """A function giving each decoded image the size the reward's preprocessing would give it, bit-identically, or
    None where no such step exists.

    It exists when every component of ``reward`` preprocesses with :class:`scorers.models.pixels.ResizeCropUint8`
    (PickScore, ImageReward: a PIL bicubic resize of the short side, then a centre crop) with one size and crop rule:
    the image is put through that same transform right away (the one implementation, not a copy of it), and the
    model's own pass over the ``S x S`` result is then the identity (no resize when the short side is ``S``, a crop
    at offset 0), so the reward is unchanged to the bit. Others (HPSv2 resizes a float tensor of the full-size image;
    CLIP-style processors and VLMs resize with their own filters) get None: shrinking them first would change the
    reward."""
    from scorers.models.pixels import ResizeCropUint8

    found = set()
    for scorer in getattr(reward, "scorers", {}).values():
        transform = getattr(scorer, "image_transform", None)
        if transform is None:
            transform = getattr(getattr(scorer, "embedder", None), "image_transform", None)
        if type(transform) is not ResizeCropUint8:
            return None
        found.add((transform.size, transform.crop))
    if len(found) != 1:
        return None
    transform = ResizeCropUint8(*found.pop())

    def resize(image):
        from PIL import Image

        return Image.fromarray(transform(image).permute(1, 2, 0).numpy(), mode="RGB")

    return resize


def _failure(error: BaseException) -> dict:
    """A request's reply when its own forward raised: a 422 naming the error (its first line)."""
    from scorers.models.redaction import redact  # an error from a served judge may quote a key: hide it first

    text = redact(str(error)).strip().splitlines()
    detail = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    return {"error": f"scoring this request failed ({detail[:300]})", "status": 422}


def _as_list(values) -> list:
    """A tensor's (or a sequence's) values as floats."""
    if hasattr(values, "detach"):
        return values.detach().float().cpu().tolist()
    return [float(v) for v in values]


def _replies(info, requests, forward_started: float, batch_started: float) -> list:
    """Each request's own rows of one forward's output ``info`` (``rewards``, ``components``), in order."""
    forward_s = time.perf_counter() - forward_started
    rewards = _as_list(info.rewards)
    components = {n: _as_list(v) for n, v in info.components.items()}
    items = sum(len(ps) for ps, _, _ in requests)
    out, start = [], 0
    for ps, _, arrived in requests:
        stop = start + len(ps)
        out.append({"rewards": rewards[start:stop],
                    "components": {n: v[start:stop] for n, v in components.items()},
                    "timing": {"queue_s": batch_started - arrived, "forward_s": forward_s,
                               "batch_items": items, "batch_requests": len(requests)}})
        start = stop
    return out


async def score_requests(forward, requests: list, stats: dict) -> list:
    """One reply per request of a batch (``requests``: ``(prompts, images, arrival time)`` each): one merged
    ``await forward(images, prompts)`` (an object with ``rewards`` and ``components``), split back per request. When
    the merged forward raises, each request is scored on its own: a request whose own forward raises gets
    ``{"error", "status": 422}`` and the others their rewards. ``stats`` counts ``forward_calls`` and
    ``split_batches``."""
    started = time.perf_counter()
    images = [im for _, ims, _ in requests for im in ims]
    prompts = [p for ps, _, _ in requests for p in ps]
    try:
        info = await forward(images, prompts)
    except Exception as error:
        stats["forward_calls"] += 1
        if len(requests) == 1:
            return [_failure(error)]
        stats["split_batches"] += 1
        out = []
        for request in requests:
            alone = time.perf_counter()
            stats["forward_calls"] += 1
            try:
                one = await forward(request[1], request[0])
            except Exception as own:
                out.append(_failure(own))
                continue
            out.extend(_replies(one, [request], alone, started))
        return out
    stats["forward_calls"] += 1
    return _replies(info, requests, started, started)


class Admission:
    """What one replica lets in, Ray-free: a body is parsed (:func:`parse_request`) within the budget of bytes being
    parsed at once, then its images are decoded within the decoded-pixel budget (both :class:`Budget`: first in,
    first out, ``admission_wait_s`` at most, then 503 with ``Retry-After``). :meth:`images` gives back the decoded
    pixels' :class:`~scorers.rewards.serve_budget.Ticket`, which the caller releases once the request is answered."""

    def __init__(self, limits: Limits, options: ServiceOptions, resize=None):
        self.limits, self.options, self.resize = limits, options, resize
        self.pixels = Budget(int(options.max_decoded_mp * 1_000_000), "decoded pixels")
        parsing = max(int(options.max_parsing_mb * 2 ** 20), limits.max_request_bytes)  # one full body always fits
        self.parsing = Budget(parsing, "bytes of request bodies being parsed")

    async def images(self, body: bytes):
        """``(prompts, RGB images, pixel ticket)`` of a request body, or :class:`RequestError`."""
        wait = self.options.admission_wait_s
        parsing = await self.parsing.acquire(len(body), wait)
        try:
            # JSON + base64 + header checks, then the decode, on worker threads: the event loop keeps accepting
            prompts, raws, costs = await asyncio.to_thread(parse_request, body, self.limits)
            del body
            pixels = await self.pixels.acquire(sum(costs), wait)
            try:
                images = await asyncio.to_thread(decode_images, raws, self.resize)
            except BaseException:
                pixels.release()
                raise
        finally:
            parsing.release()
        pixels.shrink(sum(im.width * im.height for im in images))  # resized on decoding: what the RGB images hold
        return prompts, images, pixels

    def stats(self) -> dict:
        return {"decoded_pixels_held": self.pixels.held, "decoded_pixels_peak": self.pixels.peak,
                "decoded_pixels_budget": self.pixels.total, "decoded_pixels_waiting": len(self.pixels.queue),
                "parsing_bytes_held": self.parsing.held, "parsing_bytes_peak": self.parsing.peak,
                "parsing_bytes_budget": self.parsing.total}


def _deployment_class():
    """The Serve deployment (built on first use: importing this module does not import Ray)."""
    from ray import serve
    from starlette.responses import JSONResponse

    def error_reply(status: int, message: str, headers: dict | None = None):
        return JSONResponse({"error": message}, status_code=status, headers=headers or None)

    @serve.deployment
    class RewardService:
        def __init__(self, weights, model, max_batch_size: int, batch_wait_s: float, limits: dict,
                     token_sha256: str | None, service: dict | None = None):
            from concurrent.futures import ThreadPoolExecutor

            from scorers.rewards.api import load

            self.reward = load(weights, model=model, device="cpu" if not _has_cuda() else None)
            self.resize = input_resizer(self.reward)  # to the model's input size right after decoding, where exact
            # the forward runs on this one thread, off the event loop: requests arriving meanwhile are read, decoded
            # and queued, and the next batch takes them all at once (serve.batch runs one batch at a time)
            self._forward_thread = ThreadPoolExecutor(1, thread_name_prefix="ts2-forward")
            self.limits, self.token_sha256 = Limits(**limits), token_sha256
            self.options = ServiceOptions(**(service or {}))
            self.admission = Admission(self.limits, self.options, self.resize)
            self.score_batch.set_max_batch_size(max_batch_size)
            self.score_batch.set_batch_wait_timeout_s(batch_wait_s)
            # a lone request does not wait for company: the wait applies while requests overlap (another one in
            # flight, or the last forward merged several); serve.batch reads it when a batch's first request arrives
            self.batch_wait_s, self.in_flight, self.last_batch_requests = batch_wait_s, 0, 0
            self.stats = {"forward_calls": 0, "requests": 0, "items": 0, "split_batches": 0}

        async def _forward(self, images, prompts):
            return await asyncio.get_running_loop().run_in_executor(self._forward_thread, self.reward.detailed,
                                                                    images, prompts)

        @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.01)
        async def score_batch(self, requests: list) -> list:
            out = await score_requests(self._forward, requests, self.stats)
            self.last_batch_requests = len(requests) if not any("status" in r for r in out) else 1
            return out

        async def _read_body(self, request) -> bytearray:
            body = bytearray()  # parsed as it is (no bytes copy: the body is the largest thing a request holds)
            async for chunk in request.stream():
                body += chunk
                if len(body) > self.limits.max_request_bytes:
                    raise RequestError(413, f"request is over {self.limits.max_request_bytes} bytes (the limit)")
            return body

        async def __call__(self, request):
            if request.method == "GET" and request.url.path.rstrip("/").endswith("/stats"):
                if not self._authorised(request):
                    return error_reply(401, "missing or wrong bearer token")
                return JSONResponse({**self.stats, **self.admission.stats()})
            if request.method != "POST" or not request.url.path.rstrip("/").endswith("/score"):
                return error_reply(404, "POST /score (or GET /stats)")
            if not self._authorised(request):
                return error_reply(401, "missing or wrong bearer token")
            try:
                declared = int(request.headers.get("content-length") or 0)
            except ValueError:
                declared = 0
            if declared > self.limits.max_request_bytes:
                return error_reply(413, f"request is {declared} bytes; the limit is {self.limits.max_request_bytes}")
            pixels = None
            try:
                try:  # a slow client must not hold its slot for ever
                    body = await asyncio.wait_for(self._read_body(request), self.options.body_timeout_s)
                except asyncio.TimeoutError:
                    raise RequestError(408, f"the request body did not arrive within {self.options.body_timeout_s:g} "
                                            "s") from None
                prompts, images, pixels = await self.admission.images(body)
                del body
                self.stats["requests"] += 1
                self.stats["items"] += len(prompts)
                self.in_flight += 1
                try:
                    busy = self.in_flight > 1 or self.last_batch_requests > 1
                    self.score_batch.set_batch_wait_timeout_s(self.batch_wait_s if busy else 0.0)
                    reply = await self.score_batch((prompts, images, time.perf_counter()))
                finally:
                    self.in_flight -= 1
            except RequestError as error:
                return error_reply(error.status, error.message, error.headers)
            finally:
                if pixels is not None:  # only what this request was granted, once
                    pixels.release()
            if "status" in reply:
                return error_reply(reply["status"], reply["error"])
            return JSONResponse(reply)

        def _authorised(self, request) -> bool:
            if self.token_sha256 is None:
                return True
            header = request.headers.get("authorization", "")
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token:
                return False
            return hmac.compare_digest(hashlib.sha256(token.encode()).hexdigest(), self.token_sha256)

    return RewardService


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


def check_app_options(*, max_batch_size: int = 16, batch_wait_ms: float = 10.0, limits: Limits = Limits(),
                      service: ServiceOptions = ServiceOptions(), num_gpus: float = 0) -> None:
    """Refuse service options that would hang or break it (:class:`ParameterError` naming the parameter): a batch
    size below 1, a batch wait that is not a finite number of milliseconds in [0, 60000] (``inf`` would hold every
    request for ever), limits that are not :class:`Limits` / :class:`ServiceOptions`."""
    check_positive_int("max_batch_size", max_batch_size)
    check_finite("batch_wait_ms", batch_wait_ms, low=0.0, high=60_000.0)
    if not isinstance(limits, Limits):
        raise ParameterError("{limits} must be a Limits, got {value!r}", value=limits)
    if not isinstance(service, ServiceOptions):
        raise ParameterError("{service} must be a ServiceOptions, got {value!r}", value=service)
    check_finite("num_gpus", num_gpus, low=0.0)


def build_app(weights, *, model=None, max_batch_size: int = 16, batch_wait_ms: float = 10.0,
              limits: Limits = Limits(), service: ServiceOptions = ServiceOptions(), token_env: str | None = None,
              num_gpus: float = 0, num_cpus: float = 1):
    """The Serve application (``serve.run`` it). ``weights``: a reward name or ``{name: weight}`` as
    :func:`scorers.rewards.api.load` takes; ``token_env``: the environment variable holding the bearer token;
    ``limits``: per request (:class:`Limits`); ``service``: service-wide bounds (:class:`ServiceOptions`);
    ``num_cpus``/``num_gpus``: what the replica reserves."""
    check_app_options(max_batch_size=max_batch_size, batch_wait_ms=batch_wait_ms, limits=limits, service=service,
                      num_gpus=num_gpus)
    check_finite("num_cpus", num_cpus, low=0.0)
    token_sha256 = None
    if token_env:
        token = os.environ.get(token_env)
        if not token:
            raise ParameterError("{token_env} {name}: that environment variable is not set or empty", name=token_env)
        token_sha256 = hashlib.sha256(token.encode()).hexdigest()
    # max_ongoing_requests: Serve's default (5) would cap a batch at 5 requests, and 2 x the batch (the old bound)
    # let 32 slow clients hold every slot; the replica holds max_connections (requests waiting on their body cost
    # a coroutine each) and Serve queues as many more, answering 503 beyond
    deployment = _deployment_class().options(ray_actor_options={"num_cpus": num_cpus, "num_gpus": num_gpus},
                                             max_ongoing_requests=max(service.max_connections, 2 * max_batch_size),
                                             max_queued_requests=service.max_connections)
    return deployment.bind(weights, model, max_batch_size, batch_wait_ms / 1000.0, asdict(limits), token_sha256,
                           asdict(service))


def check_port_free(host: str, port: int) -> None:
    """Refuse a ``host:port`` that cannot be bound (in use, or not an address of this machine), before Ray starts:
    one :class:`ParameterError` naming the port."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise ParameterError("{host} {value!r}: not an address of this machine ({why})", value=host,
                             why=error.strerror if isinstance(error, OSError) else error) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no obstacle
        try:
            probe.bind(address)
        except OSError as error:
            raise ParameterError("{port} {value}: cannot listen on {host}:{value} ({why})", value=port, host=host,
                                 why=error.strerror or error) from None


class Stop(KeyboardInterrupt):
    """SIGTERM, raised where the service waits (as Ctrl-C raises KeyboardInterrupt)."""


def _raise_stop(signum, frame):
    raise Stop()


def serve_rewards(weights, *, host: str = "127.0.0.1", port: int = 8000, blocking: bool = True, name: str = "ts2",
                  address: str | None = None, ready_message: str | None = None, **app_options):
    """Start Serve on ``host:port`` and run the app: on the Ray this process already joined, else the cluster at
    ``address`` (``auto``, ``HOST:6379``, ``ray://HOST:10001``; default ``$RAY_ADDRESS``), else a local Ray that this
    function starts on 127.0.0.1 only (:func:`scorers.scoring.engines.ray_loopback.start_local_ray`) and
    watched so that it dies with this process, a kill -9 included; on that local Ray, Serve's proxy listens on a
    loopback port of its own and ``host:port`` is the front (:mod:`scorers.rewards.serve_front`: a deadline on each
    request head). ``blocking``: serve until Ctrl-C or SIGTERM, then shut down (``KeyboardInterrupt`` is raised to
    the caller after the shutdown). The port is checked before Ray starts."""
    import signal
    import threading

    from scorers.rewards import ray_local
    from scorers.scoring.engines.ray_loopback import join_ray, start_local_ray

    app_checks = {k: app_options[k] for k in ("max_batch_size", "batch_wait_ms", "limits", "service", "num_gpus")
                  if k in app_options}
    check_app_options(**app_checks)
    check_port_free(host, port)
    main_thread = threading.current_thread() is threading.main_thread()
    if blocking and main_thread:
        signal.signal(signal.SIGTERM, _raise_stop)
    local = address is None and not os.environ.get("RAY_ADDRESS")
    if not (sys.stdout.isatty() and sys.stderr.isatty()):
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")  # no ANSI colour codes in a redirected log (read per line)
    import ray
    from ray import serve

    app = build_app(weights, **app_options)
    if app_options.get("token_env"):  # read (its SHA-256 is in the app); no process that Ray starts inherits it
        os.environ.pop(app_options["token_env"], None)
    service = app_options.get("service") or ServiceOptions()
    started_here, front = False, None
    try:
        if not ray.is_initialized():
            started_here = True  # a Ctrl-C inside ray.init still shuts down what it started
            init = {"include_dashboard": False, "configure_logging": False}
            context = start_local_ray(**init) if local else join_ray(address, **init)
            if blocking and main_thread:
                signal.signal(signal.SIGTERM, _raise_stop)  # ray.init put its own (sys.exit) in place of ours
            session_dir = (getattr(context, "address_info", None) or {}).get("session_dir")
            if local and session_dir:
                ray_local.start_watchdog(os.getpid(), session_dir)
        backend = _free_loopback_port()
        if local:  # Serve's proxy on a loopback port of its own, behind the front (a deadline on request heads)
            serve.start(http_options={"host": "127.0.0.1", "port": backend})
        else:
            serve.start(http_options={"host": host, "port": port})
        handle = serve.run(app, name=name, route_prefix="/", blocking=False)
        if local:
            from scorers.rewards.serve_front import start_front

            try:
                front = start_front(host, port, backend, service.header_timeout_s)
            except OSError as error:  # taken since it was checked
                _shutdown(ray, started_here)
                raise ParameterError("{port} {value}: cannot listen on {host}:{value} ({why})", value=port,
                                     host=host, why=error.strerror or error) from None
        if not blocking:
            return handle
        print(ready_message or f"ts2 serve: POST http://{host}:{port}/score (Ctrl-C stops)", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        if front is not None:
            front.close()
        _shutdown(ray, started_here)
        raise


def _free_loopback_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _shutdown(ray, started_here: bool) -> None:
    """Serve and (when this process started it) Ray down, quietly; a second Ctrl-C meanwhile is ignored."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    try:
        try:
            from ray import serve

            serve.shutdown()
        except Exception:
            pass
        if started_here:
            try:
                ray.shutdown()
            except Exception:
                pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
