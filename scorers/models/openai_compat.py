"""Served models behind the OpenAI chat-completions HTTP API (vLLM, SGLang, TGI, Ollama, OpenAI): one client that is
a VQA backend (``answer``, and ``first_token_logprobs``, which VQAScore reads as P(yes)) and a text LM (``generate``).

Transport only, no scoring rule: requests are built from the caller's text and images (base64 data URLs), sent
concurrently by a bounded thread pool, retried with exponential backoff and jitter on HTTP 429, 5xx, timeouts and
dropped connections (``Retry-After`` honoured), decoded greedily (``temperature 0`` and a ``seed``; a server that
refuses ``seed`` gets the request again without it). Answers come back in input order.

* ``use_request_cache(cache)`` (called by the runner): every answered request is stored under the SHA-256 of its body
  before the call returns, and a stored request is never sent again; the body never holds the API key.
* ``record()``: a context manager collecting one dict per request (request text with images as hashes, answer,
  token usage, whether it came from the cache), which ``scorers.scoring.usage.MeteredScorer`` turns into per-item records.
* The API key (``api_key`` or ``OPENAI_API_KEY``) is stripped when read (a key with whitespace or control characters
  inside is refused) and goes only into the ``Authorization`` header: never into a record, a cache entry, ``config``,
  ``repr`` or an error message (every message is passed through :func:`redact`, which also hides any ``Bearer ...``).
* Replies are validated before they are used or cached: logprobs <= 0 (and the listed tokens' probabilities summing
  to at most 1), token counts >= 0, a body of at most ``max_reply_bytes``; ``timeout`` is a total deadline per
  attempt (connect + send + every byte of the reply), not a per-read limit. Only valid replies are cached, and a cached
  reply that fails validation is sent again.
"""
from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import math
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from email.utils import parsedate_to_datetime
from typing import Any, Sequence

from scorers.errors import Wording
from scorers.json_safe import content_key
from scorers.models.chat_vlm import CONCISE_SYSTEM_PROMPT
from scorers.models.redaction import redact, redact_cut, redact_url, url_secrets
from scorers.models.vqa_base import check_pairs

__all__ = ["DEFAULT_BASE_URL", "DEFAULT_MAX_REPLY_BYTES", "OpenAIChat", "SERVED_OPTIONS", "SERVED_PREFIX",
           "ServedModelError", "clean_api_key", "is_served", "served_model_name"]

SERVED_PREFIX = "openai:"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: constructor options a caller (registry, CLI) may route to :class:`OpenAIChat`
SERVED_OPTIONS = ("api_base", "api_key", "max_concurrency", "timeout", "max_retries", "seed", "top_logprobs",
                  "backoff", "max_backoff", "max_reply_bytes")
#: a reply body larger than this is refused (a chat completion of a few hundred tokens, logprobs included, is a few kB)
DEFAULT_MAX_REPLY_BYTES = 2_000_000
#: a logprob above 0 by at most this much is float rounding of log(1) (taken as 0); more is an invalid reply
LOGPROB_TOLERANCE = 1e-6
#: the listed top tokens' probabilities may sum to 1 + this (float32 rounding of a softmax); more is invalid
MASS_TOLERANCE = 1e-3


def clean_api_key(key: str | None, source: str = "the API key") -> str | None:
    """``key`` stripped of surrounding whitespace (a CRLF ``.env`` file leaves a ``\\r``); None when empty. A key
    with whitespace, control or non-ASCII characters inside is refused (the message never shows the key)."""
    if key is None:
        return None
    key = str(key).strip()
    if not key:
        return None
    bad = [i for i, c in enumerate(key) if c.isspace() or not 33 <= ord(c) <= 126]
    if bad:
        raise ValueError(f"{source} has a whitespace, control or non-ASCII character inside it (at position "
                         f"{bad[0]} of {len(key)}); an API key is one word: check the file or variable it comes from")
    return key


class ServedModelError(ValueError):
    """A served model failed in a way retrying cannot fix (bad request, no logprobs, retries exhausted). A
    ``ValueError`` so the CLI prints its one-line message instead of a traceback."""


def is_served(model: Any) -> bool:
    """Whether ``model`` names a served model (``"openai:MODEL"``)."""
    return isinstance(model, str) and model.startswith(SERVED_PREFIX)


def served_model_name(model: str) -> str:
    """``"openai:Qwen/Qwen2-VL-7B-Instruct"`` -> ``"Qwen/Qwen2-VL-7B-Instruct"``."""
    name = model[len(SERVED_PREFIX):] if is_served(model) else model
    if not name.strip():
        raise ValueError(f"model {model!r}: expected openai:MODEL with the served model's name after the colon")
    return name


def image_data_url(image, image_format: str = "png") -> tuple[str, str]:
    """``(data URL, short sha256)`` of a PIL image or image path, encoded losslessly (PNG) by default."""
    from scorers.models.images import open_rgb

    image = open_rgb(image)  # 8-bit RGB: high-bit modes scaled (scorers.models.images)
    buffer = io.BytesIO()
    fmt = image_format.upper()
    image.save(buffer, format="JPEG" if fmt == "JPG" else fmt, **({"quality": 95} if fmt in
                                                                              ("JPEG", "JPG") else {}))
    data = buffer.getvalue()
    mime = "jpeg" if fmt in ("JPEG", "JPG") else fmt.lower()
    return f"data:image/{mime};base64,{base64.b64encode(data).decode('ascii')}", hashlib.sha256(data).hexdigest()[:16]


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), else None (also for inf/nan); the one
    reading of it, for served models here and for ``RemoteReward``."""
    if not value:
        return None
    try:
        seconds = float(value)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class OpenAIChat:
    """A model served behind ``{base_url}/chat/completions``.

    ``OpenAIChat("Qwen/Qwen2-VL-7B-Instruct", base_url="http://localhost:8000/v1")``. ``base_url`` defaults to
    ``OPENAI_BASE_URL``, then OpenAI's; ``api_key`` to ``OPENAI_API_KEY`` (optional for local servers).
    ``max_concurrency`` requests are in flight at most; each gets ``timeout`` seconds and ``max_retries`` retries.
    ``system_prompt`` (default: the local chat VLMs' short-answer prompt) and ``max_new_tokens`` shape
    :meth:`answer`; :meth:`generate` (``text_max_new_tokens``)
    sends the text alone. ``device``/``precision``/``batch_size`` are accepted and ignored (the server decides).
    """

    def __init__(self, model: str, *, api_base: str | None = None, base_url: str | None = None,
                 api_key: str | None = None, max_concurrency: int = 8, timeout: float = 60.0, max_retries: int = 5,
                 seed: int | None = 0, system_prompt: str | None = CONCISE_SYSTEM_PROMPT, max_new_tokens: int = 16,
                 text_max_new_tokens: int = 512, top_logprobs: int = 20, yes_word: str = "Yes",
                 image_format: str = "png", backoff: float = 0.5, max_backoff: float = 30.0,
                 max_retry_after: float = 120.0, verify: bool = True, max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
                 device: Any = None, precision: Any = None, batch_size: Any = None):
        import httpx

        from scorers.models.http_deadline import deadline_transport

        self.model = served_model_name(model)
        self.base_url = (api_base or base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"api_base {redact_url(self.base_url)!r}: expected an http(s):// URL such as "
                             "http://localhost:8000/v1")
        for option, value, low in (("max_concurrency", max_concurrency, 1), ("max_retries", max_retries, 0),
                                   ("max_new_tokens", max_new_tokens, 1), ("top_logprobs", top_logprobs, 1),
                                   ("text_max_new_tokens", text_max_new_tokens, 1),
                                   ("max_reply_bytes", max_reply_bytes, 1024)):
            if int(value) < low:
                raise ValueError(f"{option} must be >= {low}, got {value}")
        if not timeout or not 0 < float(timeout) < math.inf:
            raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout}")
        self.max_concurrency, self.timeout, self.max_retries = int(max_concurrency), float(timeout), int(max_retries)
        self.seed, self.system_prompt, self.max_new_tokens = seed, system_prompt, int(max_new_tokens)
        self.text_max_new_tokens, self.top_logprobs, self.yes_word = int(text_max_new_tokens), int(top_logprobs), yes_word
        self.image_format, self.backoff, self.max_backoff = image_format, float(backoff), float(max_backoff)
        self.max_retry_after, self.max_reply_bytes = float(max_retry_after), int(max_reply_bytes)
        self.name = SERVED_PREFIX + self.model
        key = clean_api_key(api_key, "api_key") if api_key is not None else \
            clean_api_key(os.environ.get("OPENAI_API_KEY"), "OPENAI_API_KEY")
        self._secrets = ((key,) if key else ()) + url_secrets(self.base_url)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        # timeout: httpx's per-operation limit; the transport also ends each attempt `timeout` s after it starts
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=self.timeout,
                                  transport=deadline_transport(self.max_concurrency, verify=True))
        self._pool: ThreadPoolExecutor | None = None
        self._cache = None
        self._recorders: list[list] = []
        self._send_seed = seed is not None
        self._random = random.Random()
        self._sleep = time.sleep  # the backoff wait (tests record it instead of waiting)
        self._lock = threading.Lock()
        self.requests_sent = 0  #: HTTP attempts made (retries included)
        if verify:
            self.check_server()

    # ------------------------------------------------------------------ description
    @property
    def where(self) -> str:
        return f"{redact_url(self.base_url)} (model {self.model!r})"

    @property
    def config(self) -> dict:
        """What fixes the answers (never the key or the URL: another replica of the same model may resume a run)."""
        return {"backend": "openai_compat", "model": self.model, "seed": self.seed, "temperature": 0,
                "system_prompt": self.system_prompt, "max_new_tokens": self.max_new_tokens,
                "image_format": self.image_format}

    def __repr__(self) -> str:
        return f"OpenAIChat({self.model!r}, base_url={redact_url(self.base_url)!r})"

    def check_server(self) -> None:
        """Fail fast with one line when the server cannot be reached, rejects the key or does not serve the model
        (``GET /models``; servers without that route are not checked)."""
        from scorers.models.http_deadline import attempt_deadline

        try:
            with attempt_deadline(min(self.timeout, 10.0)):
                response = self._http.get("/models", timeout=min(self.timeout, 10.0))
        except Exception as error:  # httpx errors, and anything else sending raised: one redacted line
            raise ServedModelError(Wording("cannot reach {what} (is the server running? check {api_base} / "
                                           "OPENAI_BASE_URL)",
                                           what=self._redact(f"{self.base_url}: {type(error).__name__}: {error}"))
                                   ) from None
        if response.status_code in (401, 403):
            raise ServedModelError(f"{redact_url(self.base_url)} refused the API key (HTTP {response.status_code}); "
                                   "set "
                                   "OPENAI_API_KEY or api_key")
        if response.status_code != 200:
            return
        try:
            served = [str(m.get("id")) for m in response.json().get("data", [])]
        except (ValueError, AttributeError):
            return
        if served and self.model not in served:
            raise ServedModelError(self._redact(f"{self.base_url} does not serve model {self.model!r}; it serves: "
                                                f"{', '.join(served[:20])}"))

    def _redact(self, text: object) -> str:
        return redact(text, self._secrets)

    # ------------------------------------------------------------------ runner hooks
    def use_request_cache(self, cache) -> None:
        """Answered requests go to / come from ``cache`` (a ``scorers.scoring.cache.RequestCache``; None detaches)."""
        self._cache = cache

    @contextlib.contextmanager
    def record(self):
        """Collect one dict per request made inside the block (see module docstring)."""
        log: list[dict] = []
        self._recorders.append(log)
        try:
            yield log
        finally:
            self._recorders.remove(log)

    # ------------------------------------------------------------------ public interfaces
    def answer(self, images: Sequence, questions: Sequence[str]) -> list[str]:
        """Greedy answer to ``questions[i]`` about ``images[i]`` (VQA backend interface)."""
        check_pairs(images, questions)
        requests = [self._vision_request(image, q, max_tokens=self.max_new_tokens) for image, q in
                    zip(images, questions)]
        return [r["text"] for r in self._run(requests, refs=list(images))]

    def first_token_logprobs(self, images: Sequence, questions: Sequence[str]) -> list[list[dict]]:
        """The server's ``top_logprobs`` of the first answer token to ``questions[i]`` about ``images[i]``: per item a
        list of ``{"token", "logprob"}`` (validated: logprobs <= 0, probabilities summing to at most 1). A server that
        returns no logprobs raises :class:`ServedModelError` naming the server and model (no silent fallback), and
        such replies are not cached. What a score makes of them is a rule: ``scorers.metrics.qga.vqascore``."""
        check_pairs(images, questions)
        requests = []
        for image, question in zip(images, questions):
            request = self._vision_request(image, question, max_tokens=1)
            request["body"].update(logprobs=True, top_logprobs=self.top_logprobs)
            requests.append(request)
        replies = self._run(requests, refs=list(images), validate=self._needs_logprobs)
        return [[dict(t) for t in reply["top_logprobs"]] for reply in replies]

    def _needs_logprobs(self, reply: dict) -> None:
        if not reply.get("top_logprobs"):
            raise ServedModelError(
                f"{self.where} returned no logprobs, so it cannot give VQAScore's P(yes); use a server that "
                "returns choices[0].logprobs.content[0].top_logprobs (vLLM does; start it with --max-logprobs >= "
                f"{self.top_logprobs}) or pick another scorer")

    def generate(self, prompts: Sequence[str], max_new_tokens: int | None = None, *,
                 refs: Sequence | None = None) -> list[str]:
        """Greedy continuation of each text prompt as one user message (text LM interface of ``TextLM``).
        ``refs`` (optional, one object per prompt) lets :meth:`record` attribute requests to items."""
        requests = []
        for prompt in prompts:
            body = self._body([{"role": "user", "content": str(prompt)}], max_new_tokens or self.text_max_new_tokens)
            requests.append({"body": body, "shown": {"messages": [{"role": "user", "text": str(prompt)}]}})
        return [r["text"] for r in self._run(requests, refs=list(refs) if refs is not None else None)]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._http.close()

    # ------------------------------------------------------------------ request building
    def _body(self, messages: list[dict], max_tokens: int) -> dict:
        body = {"model": self.model, "messages": messages, "temperature": 0, "max_tokens": int(max_tokens)}
        if self.seed is not None:
            body["seed"] = int(self.seed)
        return body

    def _vision_request(self, image, question: str, max_tokens: int) -> dict:
        url, digest = image_data_url(image, self.image_format)
        messages, shown = [], []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
            shown.append({"role": "system", "text": self.system_prompt})
        messages.append({"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                     {"type": "text", "text": str(question)}]})
        shown.append({"role": "user", "image_sha256": digest, "text": str(question)})
        return {"body": self._body(messages, max_tokens), "shown": {"messages": shown}}

    # ------------------------------------------------------------------ sending
    def _run(self, requests: list[dict], refs: list | None, validate=None) -> list[dict]:
        """Send ``requests`` (cached ones and repeats within the call are not sent), at most ``max_concurrency`` at
        a time; replies in order. ``validate(reply)`` (raising :class:`ServedModelError`) runs on every reply, sent
        or cached, before it is cached or used: a reply that fails it is never cached, and a cached one is sent again.
        Every request is finished (and valid ones cached) before the first failure, if any, is raised."""
        keys = [content_key(r["body"]) for r in requests]
        replies: list[dict | None] = [None] * len(requests)
        cached = [False] * len(requests)
        first: dict[str, int] = {}
        todo, repeats = [], {}
        for i, key in enumerate(keys):
            hit = self._cache.get(key) if self._cache is not None else None
            if hit is not None and not self._valid(hit, validate):
                hit = None  # stored by an older version or under other rules: ask again
            if hit is not None:
                replies[i], cached[i] = hit, True
            elif key in first:  # the same request twice in one call: sent once
                repeats[i] = first[key]
            else:
                first[key] = i
                todo.append(i)
        if todo:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="openai-compat")
            futures = {i: self._pool.submit(self._send, requests[i]["body"], keys[i], validate) for i in todo}
            failure = None
            for i, future in futures.items():
                try:
                    replies[i] = future.result()
                except Exception as error:  # keep collecting: finished requests are cached, then raise
                    failure = failure or error
            if failure is not None:
                raise failure
        for i, j in repeats.items():
            replies[i] = replies[j]
        for log in self._recorders:
            for i, request in enumerate(requests):
                billed = not cached[i] and i not in repeats
                log.append({"ref": id(refs[i]) if refs is not None else None,
                            "request": dict(request["shown"], model=self.model,
                                            max_tokens=request["body"]["max_tokens"]),
                            "answer": replies[i]["text"], "usage": replies[i].get("usage") or {},
                            "cached": not billed})
        return replies

    def _valid(self, reply, validate) -> bool:
        try:
            self._check_reply(reply)
            if validate is not None:
                validate(reply)
        except (ServedModelError, ValueError, TypeError, KeyError, AttributeError):
            return False
        return True

    def _send(self, body: dict, key: str, validate=None) -> dict:
        reply = self._post(body)  # parsed and checked (_check_reply)
        if validate is not None:
            validate(reply)
        if self._cache is not None:
            self._cache.put(key, reply)
        return reply

    def _post(self, body: dict) -> dict:
        import httpx

        from scorers.models.http_deadline import attempt_deadline

        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:  # never an unbounded generation
            raise ServedModelError(f"{self.where}: request without a max_tokens >= 1 (got {body.get('max_tokens')!r})")
        attempts = self.max_retries + 1
        problem = ""
        attempt = 0
        while attempt < attempts:
            send = body if self._send_seed or "seed" not in body else {k: v for k, v in body.items() if k != "seed"}
            wait = None
            with self._lock:
                self.requests_sent += 1
            try:
                with attempt_deadline(self.timeout):  # a total deadline for this attempt, not per socket read
                    status, headers, data = self._exchange(send)
            except ServedModelError:
                raise
            except (httpx.TimeoutException, httpx.TransportError) as error:
                problem = self._redact(f"{type(error).__name__}: {error}")
            except Exception as error:  # anything else sending raised (e.g. an illegal header): one redacted line
                raise ServedModelError(self._redact(f"{self.where}: the request failed: {type(error).__name__}: "
                                                    f"{error}")) from None
            else:
                text = data.decode("utf-8", errors="replace")
                if status == 200:
                    try:
                        reply = self._parse(json.loads(text))
                    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as error:
                        shown = redact_cut(text, 200, self._secrets)
                        raise ServedModelError(self._redact(f"{self.where}: unreadable chat-completions reply "
                                                            f"({error}): {shown!r}")) from None
                    self._check_reply(reply)
                    return reply
                if status in (400, 422) and "seed" in send and "seed" in text.lower():
                    self._send_seed = False  # this server refuses `seed`: greedy decoding is deterministic anyway
                    continue
                if status != 429 and status < 500:
                    raise ServedModelError(self._redact(f"{self.where}: HTTP {status}: "
                                                        f"{redact_cut(text, 300, self._secrets)}"))
                problem = f"HTTP {status}"
                wait = retry_after_seconds(headers.get("retry-after"))
            attempt += 1
            if attempt >= attempts:
                break
            delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * self._random.uniform(0.5, 1.0)
            if wait is not None:
                delay = max(delay, min(wait, self.max_retry_after))
            self._sleep(delay)
        raise ServedModelError(self._redact(f"{self.where}: giving up after {attempts} attempts; last: {problem}"))

    def _exchange(self, body: dict):
        """One POST: ``(status, headers, body bytes)``; a body above ``max_reply_bytes`` is refused while reading."""
        from scorers.models.http_deadline import read_capped

        with self._http.stream("POST", "/chat/completions", json=body) as response:
            raw = read_capped(response, self.max_reply_bytes)
            if raw is None:
                raise ServedModelError(
                    f"{self.where}: reply refused: its body is larger than max_reply_bytes={self.max_reply_bytes:,} "
                    f"(a chat completion of max_tokens={body.get('max_tokens')} is a few kB; is this the right "
                    "server?)")
            return response.status_code, response.headers, raw

    def _parse(self, data: dict) -> dict:
        choice = data["choices"][0]
        message = choice.get("message") or {}
        text = message.get("content") or ""
        reply = {"text": text.strip() if isinstance(text, str) else json.dumps(text),
                 "finish_reason": choice.get("finish_reason")}
        usage = data.get("usage") or {}
        reply["usage"] = {k: usage[k] for k in ("prompt_tokens", "completion_tokens") if usage.get(k) is not None}
        content = (choice.get("logprobs") or {}).get("content") or []
        if content:
            reply["top_logprobs"] = [{"token": str(t["token"]), "logprob": float(t["logprob"])}
                                     for t in content[0].get("top_logprobs") or []]
        return reply

    def _check_reply(self, reply: dict) -> None:
        """Refuse a reply no honest server sends (before it is used or cached): token counts that are not integers
        >= 0, logprobs above 0 or NaN, top tokens whose probabilities sum above 1, text above ``max_reply_bytes``.
        Logprobs in (0, LOGPROB_TOLERANCE] are float rounding of log(1) and are stored as 0."""
        where = f"{self.where}: invalid reply"
        if not isinstance(reply.get("text"), str) or len(reply["text"].encode("utf-8")) > self.max_reply_bytes:
            raise ServedModelError(f"{where}: the answer is not text of at most max_reply_bytes="
                                   f"{self.max_reply_bytes:,} bytes")
        for name, value in (reply.get("usage") or {}).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value != int(value) or value < 0:
                raise ServedModelError(f"{where}: usage.{name} = {value!r} is not a token count >= 0")
            reply["usage"][name] = int(value)
        top = reply.get("top_logprobs")
        if top:
            for entry in top:
                value = float(entry["logprob"])
                if math.isnan(value) or value > LOGPROB_TOLERANCE:
                    raise ServedModelError(f"{where}: logprob {value!r} of token {entry.get('token')!r} is above 0 "
                                           "(a log-probability is <= 0)")
                entry["logprob"] = min(value, 0.0)
            finite = [t["logprob"] for t in top if t["logprob"] > -math.inf]
            total = math.fsum(math.exp(v) for v in finite)
            if total > 1 + MASS_TOLERANCE:
                raise ServedModelError(f"{where}: its top_logprobs give probabilities summing to {total:.4g} > 1 "
                                       "(not a distribution over next tokens)")
