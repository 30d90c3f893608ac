"""``ts2 serve``: the rewards of :mod:`scorers.rewards.api` as an HTTP service on Ray Serve, with dynamic batching.

``POST /score`` with JSON ``{"prompts": [...], "images": [base64 PNG or JPEG, ...]}`` answers
``{"rewards": [...], "components": {name: [...]}, "timing": {"queue_s", "forward_s", "batch_items",
"batch_requests"}}``; ``GET /stats`` answers ``{"forward_calls", "requests", "items"}`` (how well batching merges).
Requests waiting together (up to ``max_batch_size`` requests, ``batch_wait_ms``) go through one forward of the
reward; each request gets back its own rows, in order.

Safety: a request is JSON, never a pickle; its size (``max_request_bytes``), its number of images
(``max_images``) and each image's pixels (``max_pixels``, read from the header before decoding) are limited, each with
a 413 naming the limit; anything malformed is a 400 and the service stays up. It binds 127.0.0.1 unless told
otherwise. With ``token_env`` naming a set environment variable, every request needs ``Authorization: Bearer
<token>`` (401 otherwise); only the token's SHA-256 reaches the replicas and it is never logged.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import io
import json
import os
import time
from dataclasses import asdict, dataclass

from scorers.errors import ParameterError

__all__ = ["Limits", "build_app", "serve_rewards"]


@dataclass(frozen=True)
class Limits:
    """Per-request limits (each breach is a 413 naming it)."""

    max_request_bytes: int = 32 * 1024 * 1024
    max_images: int = 64
    max_pixels: int = 4096 * 4096


class RequestError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def decode_request(body: bytes, limits: Limits):
    """``(prompts, PIL images)`` of a request body, or :class:`RequestError` (4xx) naming what is wrong."""
    from PIL import Image

    from scorers.models.images import to_rgb

    if len(body) > limits.max_request_bytes:
        raise RequestError(413, f"request is {len(body)} bytes; the limit is {limits.max_request_bytes}")
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise RequestError(400, f"request body is not JSON: {error}") from None
    if not isinstance(payload, dict):
        raise RequestError(400, 'request body must be a JSON object {"prompts": [...], "images": [...]}')
    prompts, images = payload.get("prompts"), payload.get("images")
    if not isinstance(prompts, list) or not isinstance(images, list):
        raise RequestError(400, '"prompts" and "images" must both be lists')
    if len(prompts) != len(images):
        raise RequestError(400, f"got {len(prompts)} prompts for {len(images)} images; expected one per image")
    if not images:
        raise RequestError(400, "no images")
    if len(images) > limits.max_images:
        raise RequestError(413, f"{len(images)} images in one request; the limit is {limits.max_images}")
    decoded = []
    for i, (prompt, text) in enumerate(zip(prompts, images)):
        if not isinstance(prompt, str) or not prompt.strip():
            raise RequestError(400, f"prompts[{i}] must be a non-empty string")
        if not isinstance(text, str):
            raise RequestError(400, f"images[{i}] must be a base64 string (PNG or JPEG)")
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise RequestError(400, f"images[{i}] is not valid base64") from None
        try:
            with Image.open(io.BytesIO(raw)) as handle:
                if handle.format not in ("PNG", "JPEG"):
                    raise RequestError(400, f"images[{i}] is {handle.format}; send PNG or JPEG")
                width, height = handle.size
                if width * height > limits.max_pixels:
                    raise RequestError(413, f"images[{i}] is {width}x{height} pixels; the limit is "
                                            f"{limits.max_pixels} pixels per image")
                rgb = to_rgb(handle)  # 16-bit PNGs scaled, not clipped
                decoded.append(rgb.copy() if rgb is handle else rgb)  # loaded: it outlives the file handle
        except RequestError:
            raise
        except Exception as error:  # PIL's UnidentifiedImageError, truncated files, decompression bombs...
            raise RequestError(400, f"images[{i}] is not a readable PNG/JPEG: {type(error).__name__}") from None
    return prompts, decoded


def _deployment_class():
    """The Serve deployment (built on first use: importing this module does not import Ray)."""
    from ray import serve
    from starlette.responses import JSONResponse

    @serve.deployment
    class RewardService:
        def __init__(self, weights, model, max_batch_size: int, batch_wait_s: float, limits: dict,
                     token_sha256: str | None):
            from scorers.rewards.api import load

            from concurrent.futures import ThreadPoolExecutor

            self.reward = load(weights, model=model, device="cpu" if not _has_cuda() else None)
            # the forward runs on this one thread, off the event loop: requests arriving meanwhile are read, decoded
            # and queued, and the next batch takes them all at once (serve.batch runs one batch at a time)
            self._forward_thread = ThreadPoolExecutor(1, thread_name_prefix="ts2-forward")
            self.limits, self.token_sha256 = Limits(**limits), token_sha256
            self.score_batch.set_max_batch_size(max_batch_size)
            self.score_batch.set_batch_wait_timeout_s(batch_wait_s)
            # a lone request does not wait for company: the wait applies while requests overlap (another one in
            # flight, or the last forward merged several); serve.batch reads it when a batch's first request arrives
            self.batch_wait_s, self.in_flight, self.last_batch_requests = batch_wait_s, 0, 0
            self.stats = {"forward_calls": 0, "requests": 0, "items": 0}

        @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.01)
        async def score_batch(self, requests: list) -> list:
            started = time.perf_counter()
            images = [im for _, ims, _ in requests for im in ims]
            prompts = [p for ps, _, _ in requests for p in ps]
            info = await asyncio.get_running_loop().run_in_executor(self._forward_thread, self.reward.detailed,
                                                                    images, prompts)
            self.stats["forward_calls"] += 1
            self.last_batch_requests = len(requests)
            forward_s = time.perf_counter() - started
            rewards = info.rewards.detach().float().cpu().tolist()
            components = {n: v.detach().float().cpu().tolist() for n, v in info.components.items()}
            out, start = [], 0
            for ps, _, arrived in requests:
                stop = start + len(ps)
                out.append({"rewards": rewards[start:stop],
                            "components": {n: v[start:stop] for n, v in components.items()},
                            "timing": {"queue_s": started - arrived, "forward_s": forward_s,
                                       "batch_items": len(prompts), "batch_requests": len(requests)}})
                start = stop
            return out

        async def __call__(self, request):
            if request.method == "GET" and request.url.path.rstrip("/").endswith("/stats"):
                if not self._authorised(request):
                    return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
                return JSONResponse(self.stats)
            if request.method != "POST" or not request.url.path.rstrip("/").endswith("/score"):
                return JSONResponse({"error": "POST /score (or GET /stats)"}, status_code=404)
            if not self._authorised(request):
                return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
            try:
                declared = int(request.headers.get("content-length") or 0)
            except ValueError:
                declared = 0
            if declared > self.limits.max_request_bytes:
                return JSONResponse({"error": f"request is {declared} bytes; the limit is "
                                              f"{self.limits.max_request_bytes}"}, status_code=413)
            body = bytearray()
            async for chunk in request.stream():
                body += chunk
                if len(body) > self.limits.max_request_bytes:
                    return JSONResponse({"error": f"request is over {self.limits.max_request_bytes} bytes "
                                                  "(the limit)"}, status_code=413)
            try:  # JSON + base64 + PNG/JPEG decode on a worker thread: the event loop keeps accepting requests
                prompts, images = await asyncio.to_thread(decode_request, bytes(body), self.limits)
            except RequestError as error:
                return JSONResponse({"error": error.message}, status_code=error.status)
            self.stats["requests"] += 1
            self.stats["items"] += len(prompts)
            self.in_flight += 1
            try:
                busy = self.in_flight > 1 or self.last_batch_requests > 1
                self.score_batch.set_batch_wait_timeout_s(self.batch_wait_s if busy else 0.0)
                reply = await self.score_batch((prompts, images, time.perf_counter()))
            finally:
                self.in_flight -= 1
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


def build_app(weights, *, model=None, max_batch_size: int = 16, batch_wait_ms: float = 10.0,
              limits: Limits = Limits(), token_env: str | None = None, num_gpus: float = 0):
    """The Serve application (``serve.run`` it). ``weights``: a reward name or ``{name: weight}`` as
    :func:`scorers.rewards.api.load` takes; ``token_env``: the environment variable holding the bearer token."""
    if not isinstance(max_batch_size, int) or max_batch_size < 1:
        raise ParameterError("{max_batch_size} must be an integer >= 1, got {value!r}", value=max_batch_size)
    if batch_wait_ms < 0:
        raise ParameterError("{batch_wait_ms} must be >= 0, got {value!r}", value=batch_wait_ms)
    token_sha256 = None
    if token_env:
        token = os.environ.get(token_env)
        if not token:
            raise ParameterError("{token_env} {name}: that environment variable is not set or empty", name=token_env)
        token_sha256 = hashlib.sha256(token.encode()).hexdigest()
    # max_ongoing_requests: Serve's default (5) would cap a batch at 5 requests; room for the batch in the forward
    # and a full one queueing behind it
    service = _deployment_class().options(ray_actor_options={"num_cpus": 1, "num_gpus": num_gpus},
                                          max_ongoing_requests=2 * max_batch_size)
    return service.bind(weights, model, max_batch_size, batch_wait_ms / 1000.0, asdict(limits), token_sha256)


def serve_rewards(weights, *, host: str = "127.0.0.1", port: int = 8000, blocking: bool = True, name: str = "ts2",
                  address: str | None = None, **app_options):
    """Start Serve on ``host:port`` and run the app: on the Ray this process already joined, else the cluster at
    ``address`` (``auto``, ``HOST:6379``, ``ray://HOST:10001``; default ``$RAY_ADDRESS``, else a local Ray)."""
    import ray
    from ray import serve

    app = build_app(weights, **app_options)
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, configure_logging=False)
    serve.start(http_options={"host": host, "port": port})
    handle = serve.run(app, name=name, route_prefix="/", blocking=False)
    if blocking:
        print(f"ts2 serve: POST http://{host}:{port}/score (Ctrl-C stops)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            serve.shutdown()
    return handle
