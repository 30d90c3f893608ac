"""``ts2 serve``'s request checks, before anything is batched: the limits of one request (:class:`Limits`), the
service-wide bounds (:class:`ServiceOptions`, with a floor under each so that no setting refuses every request), the
shape of a body before it is parsed, the prompts and images of a request, and what decoding its images will hold.

Ray-free: the service (:mod:`scorers.rewards.serve`) runs these on worker threads of its replica, and tests run them
as they are."""
from __future__ import annotations

import base64
import binascii
import io
import json
import math
import re
from dataclasses import dataclass

from scorers.errors import ParameterError

__all__ = ["BODY_TIMEOUT_FLOOR_S", "DECODED_MP_FLOOR", "HEADER_TIMEOUT_FLOOR_S", "Limits", "REQUEST_MB_FLOOR",
           "RequestError", "ServiceOptions", "check_body_shape", "check_finite", "check_positive_int",
           "decode_images", "decode_request", "decoded_cost", "parse_request"]

#: the floors under the service's settings (a smaller value starts a service that refuses everything): a body of
#: 0.01 MiB holds one small PNG; a budget of 0.01 MP one 100 x 100 image; half a second for a body or a request head
REQUEST_MB_FLOOR = 0.01
DECODED_MP_FLOOR = 0.01
BODY_TIMEOUT_FLOOR_S = 0.5
HEADER_TIMEOUT_FLOOR_S = 0.5


def check_positive_int(name: str, value, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParameterError("{%s} must be an integer >= %s, got {value!r}" % (name, f"{low:,}"), value=value)


def check_finite(name: str, value, *, low: float, high: float = math.inf, low_open: bool = False) -> None:
    """``value`` a finite real number in ``[low, high]`` (``(low, high]`` when ``low_open``)."""
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
          and (value > low if low_open else value >= low) and value <= high)
    if not ok:
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        span = bound if high == math.inf else f"{bound} and <= {high:g}"
        raise ParameterError("{%s} must be a finite number %s, got {value!r}" % (name, span), value=value)


@dataclass(frozen=True)
class Limits:
    """What one request may hold. ``max_request_bytes`` (at least :data:`REQUEST_MB_FLOOR` MiB), ``max_images``,
    ``max_pixels`` (per image): a breach is a 413 naming the limit. ``min_side`` (pixels) and ``max_aspect`` (long
    side / short side): an image outside them is a 400 naming it, refused before it joins a batch (a 1x1000 image
    would otherwise break the resize of a merged forward)."""

    max_request_bytes: int = 32 * 1024 * 1024
    max_images: int = 64
    max_pixels: int = 4096 * 4096
    min_side: int = 8
    max_aspect: float = 20.0

    def __post_init__(self):
        check_positive_int("max_request_bytes", self.max_request_bytes, math.ceil(REQUEST_MB_FLOOR * 2 ** 20))
        for name in ("max_images", "max_pixels", "min_side"):
            check_positive_int(name, getattr(self, name))
        check_finite("max_aspect", self.max_aspect, low=1.0)


@dataclass(frozen=True)
class ServiceOptions:
    """Service-wide bounds (not per request). ``body_timeout_s``: seconds a request body may take to arrive (408
    after); ``header_timeout_s``: seconds a connection may take to send its request head (closed after, with a 408;
    ``ts2 serve``'s own front, :mod:`scorers.rewards.serve_front`); ``max_connections``: requests the replica holds at
    once (as many more wait in Serve's queue; 503 beyond), so that slow clients cannot take every slot;
    ``max_decoded_mp``: decoded megapixels held at once across requests (:func:`decoded_cost`); ``max_parsing_mb``:
    MiB of request bodies parsed and decoded at once across requests; ``admission_wait_s``: how long a request that
    fits waits, first in first out, for either budget (503 with ``Retry-After`` after)."""

    body_timeout_s: float = 10.0
    max_connections: int = 256
    max_decoded_mp: float = 64.0
    header_timeout_s: float = 10.0
    max_parsing_mb: float = 128.0
    admission_wait_s: float = 30.0

    def __post_init__(self):
        check_finite("body_timeout_s", self.body_timeout_s, low=BODY_TIMEOUT_FLOOR_S, high=3600.0)
        check_finite("header_timeout_s", self.header_timeout_s, low=HEADER_TIMEOUT_FLOOR_S, high=3600.0)
        check_positive_int("max_connections", self.max_connections)
        if self.max_connections > 65535:
            raise ParameterError("{max_connections} must be <= 65535, got {value!r}", value=self.max_connections)
        check_finite("max_decoded_mp", self.max_decoded_mp, low=DECODED_MP_FLOOR, high=1e6)
        check_finite("max_parsing_mb", self.max_parsing_mb, low=REQUEST_MB_FLOOR, high=1e6)
        check_finite("admission_wait_s", self.admission_wait_s, low=0.0, high=3600.0)


class RequestError(Exception):
    """A request's own problem: ``status`` (4xx, or 503 for a full budget) and a message naming it."""

    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


#: a JSON string (escapes included), found without backtracking: the unrolled ``"[^"\\]*(?:\\.[^"\\]*)*"``
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_WHITESPACE = b" \t\r\n"
_WINDOW = 64 * 1024


def check_body_shape(body: bytes, limits: Limits) -> None:
    """Refuse, before ``json.loads``, a body that cannot be a request of at most ``limits.max_images`` images: its
    skeleton (every string emptied, whitespace removed) is bounded by the item count, whatever the images weigh.
    Parsing what passes holds about the body's own size again in strings: a body of ``{}`` or ``[]`` items (some
    thirty times its size once parsed) is a 400 here. The skeleton is measured a window at a time and the scan stops
    at the bound: refusing costs a few kB, not a copy of the body."""
    bound = 1024 + 8 * limits.max_images  # ``{"prompts":["",...],"images":["",...]}`` and a few more keys
    skeleton, size, position = bytearray(), 0, 0

    def structure(start: int, stop: int) -> bool:  # add body[start:stop] without whitespace; False past the bound
        nonlocal size
        for left in range(start, stop, _WINDOW):
            piece = body[left:min(stop, left + _WINDOW)].translate(None, _WHITESPACE)
            size += len(piece)
            if len(skeleton) <= bound:
                skeleton.extend(piece[:bound + 1])
            if size > bound:
                return False
        return True

    within = True
    while within:
        start = body.find(b'"', position)
        if start < 0:
            within = structure(position, len(body)) and size <= bound
            break
        within = structure(position, start)
        stop = body.find(b'"', start + 1)
        if stop >= 0 and body.find(b"\\", start + 1, stop) >= 0:  # escapes: the regex finds the string's end
            match = _JSON_STRING.match(body, start)
            stop = match.end() - 1 if match else -1
        if stop < 0:  # an unterminated string: json.loads names it
            break
        size += 2
        skeleton.extend(b'""')
        position = stop + 1
    if not within:
        if b"[" * 64 in skeleton or b'{"":' * 64 in skeleton:
            raise RequestError(400, "request body is not usable JSON: nested too deeply")
        raise RequestError(400, f"request body is not a request: over {bound:,} characters of JSON structure "
                                f"outside its strings; a request of at most {limits.max_images} images has at most "
                                f"{bound:,}")


#: bytes per pixel of a PIL image by mode (PIL stores every multi-band mode in 4 bytes a pixel, RGB included)
_MODE_BYTES = {"1": 1, "L": 1, "P": 1, "I;16": 2, "I;16L": 2, "I;16B": 2, "I;16N": 2, "I": 4, "F": 4}


def decoded_cost(width: int, height: int, mode: str) -> int:
    """What decoding one image holds at its peak, in RGB pixels (PIL keeps an RGB pixel in 4 bytes): ``width *
    height`` for an RGB image; an image in another mode holds itself and its RGB copy while it is converted, and a
    high-bit one (16-bit grey...) also its 8-bit grey step and a numpy copy
    (:func:`scorers.models.images.to_rgb`): e.g. 1.25 RGB pixels a pixel for ``L`` and ``P``, 2 for ``RGBA`` and
    16-bit grey, 2.5 for 32-bit ``I`` and ``F``."""
    from scorers.models.images import HIGH_BIT_MODES

    pixels = width * height
    if mode == "RGB":
        return pixels
    source = _MODE_BYTES.get(mode, 4)
    steps = 2 if mode in HIGH_BIT_MODES else 0  # the 8-bit grey image and its numpy twin
    return -(-pixels * (source + steps + 4) // 4)


def _check_prompts(prompts) -> None:
    """The reward API's own prompt rule (:func:`scorers.rewards.api.check_prompts`), as 400s naming the prompt."""
    from scorers.rewards.api import check_prompts

    for i, prompt in enumerate(prompts):
        if not isinstance(prompt, str) or not prompt.strip():
            raise RequestError(400, f"prompts[{i}] must be a non-empty string")
    try:
        check_prompts(prompts)
    except (TypeError, ValueError) as error:
        raise RequestError(400, str(error).removeprefix("reward: ")) from None


def parse_request(body: bytes, limits: Limits):
    """``(prompts, raw image bytes, decoded cost per image)`` of a request body (:func:`decoded_cost`), read from
    the images' headers (nothing decoded yet), or :class:`RequestError` (4xx) naming what is wrong."""
    from PIL import Image

    if len(body) > limits.max_request_bytes:
        raise RequestError(413, f"request is {len(body)} bytes; the limit is {limits.max_request_bytes}")
    check_body_shape(body, limits)
    try:
        payload = json.loads(body)
    except RecursionError:  # e.g. 100,000 '[': deeper than the parser's recursion limit
        raise RequestError(400, "request body is not usable JSON: nested too deeply") from None
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
    _check_prompts(prompts)
    raws, costs = [], []
    for i, text in enumerate(images):
        if not isinstance(text, str):
            raise RequestError(400, f"images[{i}] must be a base64 string (PNG or JPEG)")
        try:
            raw = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise RequestError(400, f"images[{i}] is not valid base64") from None
        try:
            with Image.open(io.BytesIO(raw)) as handle:
                fmt, mode, (width, height) = handle.format, handle.mode, handle.size
        except Exception as error:  # PIL's UnidentifiedImageError, truncated headers...
            raise RequestError(400, f"images[{i}] is not a readable PNG/JPEG: {type(error).__name__}") from None
        if fmt not in ("PNG", "JPEG"):
            raise RequestError(400, f"images[{i}] is {fmt}; send PNG or JPEG")
        if width * height > limits.max_pixels:
            raise RequestError(413, f"images[{i}] is {width}x{height} pixels; the limit is {limits.max_pixels} "
                                    "pixels per image")
        if min(width, height) < limits.min_side:
            raise RequestError(400, f"images[{i}] is {width}x{height} pixels; each side must be at least "
                                    f"{limits.min_side} pixels")
        if max(width, height) > limits.max_aspect * min(width, height):
            raise RequestError(400, f"images[{i}] is {width}x{height} pixels, an aspect ratio of "
                                    f"{max(width, height) / min(width, height):.1f}; the limit is "
                                    f"{limits.max_aspect:g}")
        raws.append(raw)
        costs.append(decoded_cost(width, height, mode))
    return prompts, raws, costs


def decode_images(raws, prepare=None) -> list:
    """RGB PIL images of the raw PNG/JPEG bytes :func:`parse_request` checked; :class:`RequestError` 400 naming the
    first one that does not decode (a truncated body, a decompression bomb...). ``prepare``: applied to each image as
    soon as it is decoded (``scorers.rewards.serve.input_resizer``), so that only one full-size image is held at a
    time."""
    from PIL import Image

    from scorers.models.images import to_rgb  # the one image -> RGB conversion (16-bit PNGs scaled, not clipped)

    decoded = []
    for i, raw in enumerate(raws):
        try:
            image = Image.open(io.BytesIO(raw))  # in memory: nothing to close, and the image stays usable
            image.load()
            image = to_rgb(image)
        except Exception as error:
            raise RequestError(400, f"images[{i}] is not a readable PNG/JPEG: {type(error).__name__}") from None
        decoded.append(prepare(image) if prepare is not None else image)
    return decoded


def decode_request(body: bytes, limits: Limits):
    """``(prompts, PIL images)`` of a request body, or :class:`RequestError` (4xx) naming what is wrong."""
    prompts, raws, _ = parse_request(body, limits)
    return prompts, decode_images(raws)
