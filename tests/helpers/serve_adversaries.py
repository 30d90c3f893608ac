"""Clients that try to break ``ts2 serve``: a breaking image, slow clients, large images; used by
``tests/rewards/test_serve_adversarial.py`` and ``benchmarks/bench_serve.py --adversaries``. Loopback only."""
from __future__ import annotations

import base64
import io
import json
import socket
import threading
import time
import urllib.error
import urllib.request

#: the issue's slow client: announces a 100 kB body and sends one byte a second
SLOW_DECLARED_BYTES = 100_000


def png_b64(width: int, height: int, seed: int | None = None) -> str:
    """A PNG (base64): random pixels with ``seed``, else blank (compresses to almost nothing: a 4096x4096 blank PNG
    is about 50 kB of body and 50 MB decoded)."""
    import numpy as np
    from PIL import Image

    if seed is None:
        image = Image.new("RGB", (width, height), (255, 255, 255))
    else:
        image = Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def body(images: list[str], prompt: str = "a red square") -> bytes:
    return json.dumps({"prompts": [prompt] * len(images), "images": images}).encode()


def post(url: str, data: bytes, timeout: float = 120.0) -> tuple:
    """``(status, JSON reply, headers)`` of a POST (headers: case-insensitive ``get``)."""
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as error:
        raw = error.read() or b"{}"
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = {"raw": raw[:200].decode(errors="replace")}
        return error.code, reply, error.headers


def post_retrying(url: str, data: bytes, deadline_s: float = 120.0) -> tuple[int, dict, int]:
    """POST, waiting ``Retry-After`` after each 503 until ``deadline_s``: ``(status, reply, 503s seen)``."""
    stop, busy = time.monotonic() + deadline_s, 0
    while True:
        status, reply, headers = post(url, data)
        if status != 503 or time.monotonic() > stop:
            return status, reply, busy
        busy += 1
        time.sleep(float(headers.get("Retry-After", "1")))


class SlowClient(threading.Thread):
    """One connection that announces ``declared`` bytes of body and sends one byte every ``interval`` s, until the
    server answers (``status``) or ``stop`` is set. ``status`` stays None when no answer came."""

    def __init__(self, host: str, port: int, stop: threading.Event, *, path: str = "/score",
                 declared: int = SLOW_DECLARED_BYTES, interval: float = 1.0):
        super().__init__(daemon=True)
        self.address, self.path, self.declared, self.interval, self.stop = (host, port), path, declared, interval, stop
        self.status: int | None = None
        self.answered_after: float | None = None

    def run(self) -> None:
        started = time.monotonic()
        try:
            with socket.create_connection(self.address, timeout=5) as conn:
                conn.sendall((f"POST {self.path} HTTP/1.1\r\nHost: {self.address[0]}\r\nContent-Type: "
                              f"application/json\r\nContent-Length: {self.declared}\r\n\r\n").encode())
                conn.settimeout(self.interval)
                sent = 0
                while not self.stop.is_set() and sent < self.declared:
                    try:
                        reply = conn.recv(4096)
                    except socket.timeout:
                        conn.sendall(b"[" if sent == 0 else b" ")
                        sent += 1
                        continue
                    if reply:
                        self.status = int(reply.split(b" ", 2)[1])
                        self.answered_after = time.monotonic() - started
                    return
        except OSError:
            return


def start_slow_clients(host: str, port: int, n: int, stop: threading.Event, **options) -> list[SlowClient]:
    clients = [SlowClient(host, port, stop, **options) for _ in range(n)]
    for client in clients:
        client.start()
    return clients
