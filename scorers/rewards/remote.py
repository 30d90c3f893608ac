"""The client of a ``ts2 serve`` reward service: :class:`RemoteReward`, with :func:`scorers.rewards.load`'s callable
interface over HTTP (httpx, the ``served`` extra, imported when a ``RemoteReward`` is made, not with this module).
"""
from __future__ import annotations

import json
import math
import numbers
from typing import Sequence

from scorers.models.redaction import redact_cut, redact_url
from scorers.rewards.api import RewardOutput, check_images, check_input_range, check_prompts, to_pil, to_unit

__all__ = ["DEFAULT_MAX_REPLY_BYTES", "MAX_TIMEOUT", "RemoteReward", "score_url"]

#: the longest ``timeout`` (and ``backoff`` / ``max_retry_after``) a RemoteReward takes, in seconds (a day; beyond it
#: a socket's timer or ``time.sleep`` overflows)
MAX_TIMEOUT = 86_400.0
#: a reply body larger than this is refused while it is read (a reply carries a few numbers per image: ~100 bytes)
DEFAULT_MAX_REPLY_BYTES = 16 * 2**20


def score_url(url: str) -> str:
    """The ``/score`` endpoint of the service at ``url``: ``/score`` ends the URL's path (a query or fragment stays
    after it) unless it ends there already. One ``ValueError`` unless ``url`` is an ``http(s)://`` URL with a host."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(str(url))
        parts.port  # noqa: B018 -- a port that is not a number raises here, not at the first call
    except ValueError as error:
        raise ValueError(f"RemoteReward: url {redact_url(url)!r} is not a URL ({error})") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"RemoteReward: url {redact_url(url)!r}: expected an http:// or https:// URL with a host, "
                         "such as http://127.0.0.1:8000")
    path = parts.path.rstrip("/")
    if not path.endswith("/score"):
        path += "/score"
    return urlunsplit(parts._replace(path=path))


def _root_cause(error: BaseException) -> BaseException:
    """The innermost error under ``error`` (httpx wraps httpcore's, which wraps the socket's ``OSError``)."""
    seen = {id(error)}
    while (inner := error.__cause__ or error.__context__) is not None and id(inner) not in seen:
        seen.add(id(inner))
        error = inner
    return error


class RemoteReward:
    """A reward served by ``ts2 serve``, with :func:`load`'s callable interface: ``reward(images, prompts) ->
    torch.Tensor[B]`` (float32, CPU), ``detailed(...)`` / ``last_info`` (a :class:`RewardOutput` with the components;
    ``stats`` holds the service's timing). Images: PIL images, paths, or a float tensor ``[B, 3, H, W]`` read in
    ``input_range`` (default ``[0, 1]``, checked as :func:`load` checks it), sent as lossless 8-bit PNG (high-bit
    images scaled by :func:`scorers.models.images.to_rgb`). HTTP through httpx (the ``served`` extra); ``token`` (or
    ``$TS2_SERVE_TOKEN``) is sent as a bearer token and never shown in ``repr`` or a message (nor are credentials
    written into ``url``). ``/score`` is added to the URL's path (before a query string).

    Every reply is checked before it is returned: a JSON object whose ``rewards`` (and each of its ``components``)
    is a flat list of one finite number per image; anything else raises one ``ValueError`` saying what is wrong. A
    redirect is an error naming where it points (redacted), never followed: the token would go along. ``timeout``
    (seconds, finite, > 0, at most :data:`MAX_TIMEOUT`) bounds each attempt in total -- connecting, sending and the
    whole reply -- so a service that trickles its reply cannot hold a call longer. A refused connection, a timeout or
    a broken reply raises one ``ValueError`` naming the service. A busy service (HTTP 503 or 429) is asked again up
    to ``max_retries`` times, after its ``Retry-After`` (capped at ``max_retry_after`` seconds) or else an
    exponential backoff from ``backoff`` seconds (both at most :data:`MAX_TIMEOUT`). A reply body larger than
    ``max_reply_bytes`` is refused as it is read, so a hostile service cannot fill the client's memory."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 120.0, max_retries: int = 3,
                 backoff: float = 0.5, max_retry_after: float = 60.0, input_range: Sequence[float] = (0, 1),
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES):
        import os
        import time

        from scorers.errors import missing_extra_error

        try:
            import httpx  # noqa: F401 -- the served extra: checked here, imported by scorers.rewards only when used
        except ModuleNotFoundError as missing:
            error = missing_extra_error(missing)
            if error is None:
                raise
            raise ValueError(f"RemoteReward needs httpx: {error}") from None
        self.url = score_url(url)
        self._token = token if token is not None else os.environ.get("TS2_SERVE_TOKEN")
        if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) or \
                not 0 < float(timeout) <= MAX_TIMEOUT:
            raise ValueError(f"RemoteReward: timeout must be a number of seconds > 0 and at most {MAX_TIMEOUT:g}, "
                             f"got {timeout!r}")
        self.timeout, self.last_info = float(timeout), None
        for option, value, high in (("max_retries", max_retries, 1000), ("backoff", backoff, MAX_TIMEOUT),
                                    ("max_retry_after", max_retry_after, MAX_TIMEOUT)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) <= high:
                raise ValueError(f"RemoteReward: {option} must be a number >= 0 and at most {high:g}, got {value!r}")
        if isinstance(max_reply_bytes, bool) or not isinstance(max_reply_bytes, numbers.Integral) or \
                max_reply_bytes < 1024:
            raise ValueError(f"RemoteReward: max_reply_bytes must be a whole number >= 1024, got {max_reply_bytes!r}")
        self.max_retries, self.backoff, self.max_retry_after = int(max_retries), float(backoff), float(max_retry_after)
        self.max_reply_bytes = int(max_reply_bytes)
        self.input_range = check_input_range(input_range)
        self._sleep = time.sleep  # the wait between attempts (tests record it)
        self._http = None  # the httpx client, made at the first call

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_http": None}  # a connection pool does not travel; the copy makes its own

    def close(self) -> None:
        """Close the connections kept open to the service (a later call opens new ones)."""
        if self._http is not None:
            self._http.close()
            self._http = None

    @property
    def _secrets(self) -> tuple:
        from scorers.models.redaction import url_secrets

        return ((self._token,) if self._token else ()) + url_secrets(self.url)

    @property
    def where(self) -> str:
        """The service's URL, fit to print (credentials hidden)."""
        return redact_url(self.url)

    def __repr__(self) -> str:
        return f"RemoteReward({self.where!r})"

    def __call__(self, images, prompts: Sequence[str], *, input_range: Sequence[float] | None = None):
        return self.detailed(images, prompts, input_range=input_range).rewards

    def detailed(self, images, prompts: Sequence[str], *, input_range: Sequence[float] | None = None) -> RewardOutput:
        import base64
        import io

        import torch

        from scorers.models.images import open_rgb

        prompts = check_prompts(prompts)
        images = check_images(images)
        if len(images) != len(prompts):
            raise ValueError(f"reward: got {len(images)} images but {len(prompts)} prompts")
        if isinstance(images, torch.Tensor):
            images = to_pil(to_unit(images, self.input_range if input_range is None
                                    else check_input_range(input_range)))
        encoded = []
        for image in images:
            image = open_rgb(image)  # PIL image, path or file: 8-bit RGB (high-bit modes scaled)
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            encoded.append(base64.b64encode(buffer.getvalue()).decode("ascii"))
        body = json.dumps({"prompts": list(prompts), "images": encoded}).encode()
        reply = self._post(body)
        n = len(prompts)
        rewards = self._column(reply, "rewards", n)
        components = reply.get("components", {})
        if not isinstance(components, dict):
            raise ValueError(f"reward service {self.where}: invalid reply: 'components' is a "
                             f"{type(components).__name__}, expected an object {{name: [one number per image]}}")
        info = RewardOutput(rewards=rewards,
                            components={str(name): self._column(components, name, n, f"components[{name!r}]")
                                        for name in components},
                            stats={"timing": reply.get("timing", {})})
        self.last_info = info
        return info

    def _column(self, reply: dict, key: str, n: int, shown: str | None = None):
        """``reply[key]`` as a float32 tensor ``[n]``: a flat list of ``n`` finite numbers, else one ``ValueError``."""
        import torch

        shown = shown or repr(key)
        where = f"reward service {self.where}: invalid reply"
        if key not in reply:
            raise ValueError(f"{where}: no {shown} in it (keys: {sorted(map(str, reply))[:10]}); is this URL a "
                             "ts2 serve service?")
        values = reply[key]
        if not isinstance(values, list):
            raise ValueError(f"{where}: {shown} is a {type(values).__name__}, expected a list of {n} numbers")
        if len(values) != n:
            raise ValueError(f"{where}: {shown} has {len(values)} values for {n} images")
        for i, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{where}: {shown}[{i}] is {redact_cut(json.dumps(value), 80, self._secrets)}, "
                                 "expected one number per image (a flat list)")
            if not math.isfinite(value):
                raise ValueError(f"{where}: {shown}[{i}] is {value!r}, not a finite number")
        return torch.tensor(values, dtype=torch.float32)

    def _client(self):
        import httpx

        from scorers.models.http_deadline import deadline_transport

        if self._http is None:  # no proxy from the environment, no redirect followed, the deadline-aware transport
            self._http = httpx.Client(timeout=self.timeout, follow_redirects=False, trust_env=False,
                                      transport=deadline_transport(8))
        return self._http

    def _post(self, body: bytes) -> dict:
        """POST ``body``; the parsed JSON object of the reply. Busy answers (503, 429) are retried (class docstring);
        every failure is one ``ValueError`` naming the service, with secrets hidden."""
        import httpx

        from scorers.models.http_deadline import attempt_deadline, read_capped
        from scorers.models.openai_compat import retry_after_seconds

        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        attempt = 0
        while True:
            try:
                with attempt_deadline(self.timeout):  # one deadline for the whole attempt, not per socket read
                    with self._client().stream("POST", self.url, content=body, headers=headers) as response:
                        raw = read_capped(response, self.max_reply_bytes)
            except httpx.TimeoutException:
                raise ValueError(f"reward service {self.where}: no reply within timeout={self.timeout:g} s; is the "
                                 "service overloaded, or is this the right address?") from None
            except httpx.ConnectError as error:
                reason = _root_cause(error)
                raise ValueError(f"reward service {self.where}: cannot connect ("
                                 f"{redact_cut(f'{type(reason).__name__}: {reason}', 200, self._secrets)}); is "
                                 "ts2 serve running at that address?") from None
            except Exception as error:  # a broken reply (bad status line, cut body...) or anything else sending raised
                reason = redact_cut(f"{type(error).__name__}: {error}", 200, self._secrets)
                raise ValueError(f"reward service {self.where}: the exchange failed ({reason}); is this URL a ts2 "
                                 "serve service?") from None
            status = response.status_code
            if 300 <= status < 400:
                location = redact_cut(response.headers.get("location", "(no Location)"), 200, self._secrets)
                raise ValueError(f"reward service {self.where}: HTTP {status} redirect to {location}; RemoteReward "
                                 "follows no redirect (the token would go along): give the service's own URL")
            if raw is None:
                raise ValueError(f"reward service {self.where}: reply refused: its body is larger than "
                                 f"max_reply_bytes={self.max_reply_bytes:,} (a reply holds a few numbers per image; "
                                 "is this URL a ts2 serve service?)")
            if 200 <= status < 300:
                break
            if status in (429, 503) and attempt < self.max_retries:
                wait = retry_after_seconds(response.headers.get("retry-after"))
                delay = min(self.max_retry_after, wait if wait is not None else self.backoff * 2 ** attempt)
                attempt += 1
                self._sleep(delay)
                continue
            busy = f" (still busy after {attempt} retries)" if status in (429, 503) and attempt else ""
            raise ValueError(f"reward service {self.where}: HTTP {status}{busy}: "
                             f"{redact_cut(raw.decode('utf-8', 'replace'), 500, self._secrets)}")
        try:
            reply = json.loads(raw)
        except (ValueError, RecursionError):
            raise ValueError(f"reward service {self.where}: invalid reply: not JSON: "
                             f"{redact_cut(raw.decode('utf-8', 'replace'), 200, self._secrets)!r}") from None
        if not isinstance(reply, dict):
            raise ValueError(f"reward service {self.where}: invalid reply: a JSON {type(reply).__name__}, expected "
                             "an object with 'rewards'")
        return reply
