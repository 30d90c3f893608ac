"""A total deadline per HTTP attempt for httpx (the transport of ``scorers.models.openai_compat`` and of
``scorers.rewards.remote.RemoteReward``).

httpx's ``timeout`` bounds each socket operation, so a server that trickles one byte every half second keeps a request
alive forever. :func:`deadline_transport` builds an ``httpx.HTTPTransport`` whose connections read, write and connect
with ``min(httpx's timeout, time left before the deadline)``, where the deadline is set per thread by
:func:`attempt_deadline` around one attempt. Past it, a read raises ``httpcore.ReadTimeout`` (``httpx.ReadTimeout``
for the caller), a write ``WriteTimeout``, a connect ``ConnectTimeout``: the same errors the caller already retries.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Iterator

__all__ = ["attempt_deadline", "deadline_transport", "read_capped"]

_local = threading.local()


def _left() -> float | None:
    """Seconds left before this thread's deadline (None: no deadline)."""
    deadline = getattr(_local, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


def _bound(timeout: float | None, error) -> float | None:
    left = _left()
    if left is None:
        return timeout
    if left <= 0:
        raise error(f"the attempt's total deadline of {getattr(_local, 'seconds', 0):g} s passed")
    return left if timeout is None else min(timeout, left)


@contextlib.contextmanager
def attempt_deadline(seconds: float) -> Iterator[None]:
    """Every socket operation of this thread inside the block ends ``seconds`` after entering it at the latest."""
    previous = getattr(_local, "deadline", None), getattr(_local, "seconds", None)
    _local.deadline, _local.seconds = time.monotonic() + float(seconds), float(seconds)
    try:
        yield
    finally:
        _local.deadline, _local.seconds = previous


def deadline_transport(max_connections: int, verify: Any = True):
    """An ``httpx.HTTPTransport`` (no proxy) whose connections honour :func:`attempt_deadline`."""
    import httpcore
    import httpx

    class Stream(httpcore.NetworkStream):
        def __init__(self, stream):
            self._stream = stream

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._stream.read(max_bytes, _bound(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._stream.write(buffer, _bound(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._stream.close()

        def start_tls(self, ssl_context, server_hostname=None, timeout=None):
            return Stream(self._stream.start_tls(ssl_context, server_hostname,
                                                 _bound(timeout, httpcore.ConnectTimeout)))

        def get_extra_info(self, info: str):
            return self._stream.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        def __init__(self):
            self._backend = httpcore.SyncBackend()

        def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
            return Stream(self._backend.connect_tcp(host, port, _bound(timeout, httpcore.ConnectTimeout),
                                                    local_address, socket_options))

        def connect_unix_socket(self, path, timeout=None, socket_options=None):  # pragma: no cover
            return Stream(self._backend.connect_unix_socket(path, _bound(timeout, httpcore.ConnectTimeout),
                                                            socket_options))

        def sleep(self, seconds: float) -> None:  # pragma: no cover
            self._backend.sleep(seconds)

    transport = httpx.HTTPTransport(verify=verify, limits=httpx.Limits(max_connections=max_connections,
                                                                       max_keepalive_connections=max_connections))
    transport._pool = httpcore.ConnectionPool(  # the same pool httpx builds, with the deadline-aware backend
        ssl_context=httpx.create_ssl_context(verify=verify), max_connections=max_connections,
        max_keepalive_connections=max_connections, network_backend=Backend())
    return transport


def read_capped(response, limit: int) -> bytes | None:
    """The body of a streamed httpx ``response`` (``client.stream(...)``), or None as soon as it is known to be larger
    than ``limit`` bytes: a declared ``Content-Length`` above it is refused before any byte is read, and the reading
    stops at the first chunk past it (a service cannot make its client hold more than ``limit`` bytes)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
