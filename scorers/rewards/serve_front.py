"""``ts2 serve``'s front door: a small TCP relay on the service's address that gives each connection
``header_timeout_s`` seconds to send its request head, then hands the request to Serve's HTTP proxy (on a loopback
port of its own) and relays both ways.

Why: Ray Serve's proxy is uvicorn, which has no deadline on a request head (``keep_alive_timeout_s``, the one
timeout Serve exposes, runs only between requests and is reset by every byte received), so 64 clients sending one
header byte a second each hold a connection for ever. Here a head that is not complete in time is answered 408 and
closed; a head over ``max_head_bytes`` is a 431. Every relayed request carries ``Connection: close``, so that a
connection carries one request and the next head gets its own deadline. The body's own deadline is the replica's
(``body_timeout_s``, 408)."""
from __future__ import annotations

import asyncio
import json
import threading

__all__ = ["Front", "MAX_HEAD_BYTES", "start_front"]

#: the largest request head relayed (uvicorn's h11 refuses heads over 16 KiB in the same way)
MAX_HEAD_BYTES = 16 * 1024
_CHUNK = 256 * 1024
_HOP_HEADERS = (b"connection", b"keep-alive", b"proxy-connection")


def _reply(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


def closing_head(head: bytes) -> bytes:
    """A request head (ending in a blank line) with its hop-by-hop headers replaced by ``Connection: close``."""
    lines = head[:-4].split(b"\r\n")
    kept = [lines[0]] + [line for line in lines[1:] if line.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS]
    return b"\r\n".join(kept) + b"\r\nConnection: close\r\n\r\n"


class Front:
    """The relay, serving on its own event loop in a daemon thread: ``port`` (bound), :meth:`close`."""

    def __init__(self, host: str, port: int, backend_port: int, header_timeout_s: float,
                 max_head_bytes: int = MAX_HEAD_BYTES):
        self.host, self.port, self.backend_port = host, port, backend_port
        self.header_timeout_s, self.max_head_bytes = header_timeout_s, max_head_bytes
        self.stats = {"connections": 0, "head_timeouts": 0, "head_too_large": 0}
        self.loop = asyncio.new_event_loop()
        self._server = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        # the connections' tasks, held here: asyncio keeps only weak references to tasks, and Python 3.11's
        # start_server keeps none to the handler it starts, so a handler waiting while its socket's reading is paused
        # (nothing else refers to it) was garbage-collected mid-request and its client waited for a reply forever
        self._handlers: set[asyncio.Task] = set()
        self.thread = threading.Thread(target=self._run, name="ts2-serve-front", daemon=True)

    def start(self) -> "Front":
        self.thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self._server = self.loop.run_until_complete(asyncio.start_server(
                self._handle, self.host, self.port, limit=self.max_head_bytes, reuse_address=True))
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as error:  # the address cannot be bound: said by start()
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    def close(self) -> None:
        if self._server is None or self.loop.is_closed():
            return

        async def stop():  # no new connections; the open ones end (cancelled) before the loop stops
            self._server.close()
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            if tasks:
                await asyncio.wait(tasks, timeout=5)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        if not self.thread.is_alive():
            left = asyncio.all_tasks(self.loop)  # connections accepted while stopping: cancelled and finished here,
            for task in left:  # so that none is destroyed pending (a warning per connection at shutdown)
                task.cancel()
            if left:
                self.loop.run_until_complete(asyncio.wait(left, timeout=5))
            self.loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.stats["connections"] += 1
        handler = asyncio.current_task()
        self._handlers.add(handler)
        backend = None
        try:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.header_timeout_s)
            except asyncio.TimeoutError:
                self.stats["head_timeouts"] += 1
                writer.write(_reply(408, "Request Timeout", f"the request head did not arrive within "
                                                            f"{self.header_timeout_s:g} s"))
                return
            except asyncio.LimitOverrunError:
                self.stats["head_too_large"] += 1
                writer.write(_reply(431, "Request Header Fields Too Large",
                                    f"the request head is over {self.max_head_bytes:,} bytes"))
                return
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            try:
                backend_reader, backend = await asyncio.open_connection("127.0.0.1", self.backend_port,
                                                                        limit=_CHUNK)
            except OSError:
                writer.write(_reply(503, "Service Unavailable", "the service is starting or stopping"))
                return
            backend.write(closing_head(head))
            upstream = asyncio.ensure_future(self._pump(reader, backend))
            try:
                await self._pump(backend_reader, writer)  # the reply, until the proxy closes (Connection: close)
            finally:
                upstream.cancel()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._handlers.discard(handler)
            for stream in (backend, writer):
                if stream is not None:
                    try:
                        stream.close()
                    except Exception:
                        pass

    @staticmethod
    async def _pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while True:
                data = await source.read(_CHUNK)
                if not data:
                    return
                sink.write(data)
                await sink.drain()
        except (ConnectionError, OSError):
            return


def start_front(host: str, port: int, backend_port: int, header_timeout_s: float) -> Front:
    """A running :class:`Front` on ``host:port`` (``port`` 0: a free one, read back from ``.port``)."""
    return Front(host, port, backend_port, header_timeout_s).start()
