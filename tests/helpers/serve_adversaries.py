"""Clients that try to break ``ts2 serve``: a breaking image, slow clients (slow bodies, slow heads), large images;
and :class:`ServeProcess`, the real ``ts2 serve`` command on loopback, bounded. Used by
``tests/rewards/test_serve_adversarial.py``, ``tests/rewards/test_serve_hostile.py`` and
``benchmarks/bench_serve.py --adversaries``. Loopback only."""
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


def post(url: str, data: bytes, timeout: float = 120.0, headers: dict | None = None) -> tuple:
    """``(status, JSON reply, headers)`` of a POST (headers: case-insensitive ``get``)."""
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})},
                                     method="POST")
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


def post_retrying(url: str, data: bytes, deadline_s: float = 120.0, headers: dict | None = None) -> tuple:
    """POST, waiting ``Retry-After`` after each 503 until ``deadline_s``: ``(status, reply, 503s seen)``."""
    stop, busy = time.monotonic() + deadline_s, 0
    while True:
        status, reply, headers_back = post(url, data, headers=headers)
        if status != 503 or time.monotonic() > stop:
            return status, reply, busy
        busy += 1
        time.sleep(float(headers_back.get("Retry-After", "1")))


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


class SlowHeaderClient(threading.Thread):
    """One connection that sends its request head one byte every ``interval`` s (slowloris), until the server closes
    it or answers (``status``, ``closed_after`` seconds) or ``stop`` is set (``status`` and ``closed_after`` stay
    None: it was still open)."""

    def __init__(self, host: str, port: int, stop: threading.Event, *, interval: float = 1.0, path: str = "/score"):
        super().__init__(daemon=True)
        self.address, self.stop, self.interval = (host, port), stop, interval
        self.head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                     + "X-Padding: " + "a" * 4000 + "\r\n\r\n").encode()
        self.status: int | None = None
        self.closed_after: float | None = None

    def run(self) -> None:
        started = time.monotonic()
        try:
            with socket.create_connection(self.address, timeout=5) as conn:
                conn.settimeout(self.interval)
                for i in range(len(self.head)):
                    if self.stop.is_set():
                        return
                    try:
                        reply = conn.recv(4096)
                    except socket.timeout:
                        try:
                            conn.sendall(self.head[i:i + 1])
                        except OSError:  # closed by the server between two bytes
                            self.closed_after = time.monotonic() - started
                            return
                        continue
                    self.closed_after = time.monotonic() - started
                    if reply.startswith(b"HTTP/"):
                        self.status = int(reply.split(b" ", 2)[1])
                    return
        except OSError:
            if self.closed_after is None:
                self.closed_after = time.monotonic() - started


def start_slow_header_clients(host: str, port: int, n: int, stop: threading.Event, **options) -> list:
    clients = [SlowHeaderClient(host, port, stop, **options) for _ in range(n)]
    for client in clients:
        client.start()
    return clients


class ServeProcess:
    """``python -m scorers.cli serve clip_score --model TINY --port P *args`` (the tiny CLIP), output piped; ``env``
    added to its environment. :meth:`wait_ready` within ``ready_s``; :meth:`kill_all` SIGKILLs it and every process
    seen below it (call it in a ``finally``)."""

    def __init__(self, *args: str, env: dict | None = None):
        import os
        import subprocess
        import sys
        from pathlib import Path

        from tests.helpers.tiny_embed_models import tiny_models

        root = Path(__file__).resolve().parents[2]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        environment = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        environment.update(PYTHONPATH=os.pathsep.join([str(root), environment.get("PYTHONPATH", "")]).rstrip(":"),
                           OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", RAY_USAGE_STATS_ENABLED="0",
                           HF_HUB_OFFLINE="1", **(env or {}))
        command = [sys.executable, "-m", "scorers.cli", "serve", "clip_score", "--model", tiny_models()["clip"],
                   "--port", str(self.port), *args]
        self.process = subprocess.Popen(command, cwd=root, env=environment, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.output: list[str] = []
        self.reader = threading.Thread(target=lambda: self.output.extend(iter(self.process.stdout.readline, "")),
                                       daemon=True)
        self.reader.start()
        self.seen: set[int] = set()
        self.url = f"http://127.0.0.1:{self.port}"

    def text(self) -> str:
        return "".join(self.output)

    def processes(self) -> set[int]:
        from scorers.rewards.ray_local import descendants

        self.seen |= descendants(self.process.pid)
        return self.seen

    def replicas(self) -> list[int]:
        """The pids of the service's Serve replicas (``ray::ServeReplica...``)."""
        return [pid for pid in sorted(self.processes()) if process_name(pid).startswith("ray::ServeRepli")]

    def wait_ready(self, headers: dict | None = None, ready_s: float = 180.0) -> None:
        deadline = time.monotonic() + ready_s
        while time.monotonic() < deadline:
            self.processes()
            if self.process.poll() is not None:
                raise AssertionError(f"ts2 serve exited ({self.process.returncode}):\n{self.text()[-3000:]}")
            try:
                request = urllib.request.Request(f"{self.url}/stats", headers=headers or {})
                with urllib.request.urlopen(request, timeout=5) as response:
                    if response.status == 200 and "POST http://" in self.text():
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"ts2 serve not ready within {ready_s} s:\n{self.text()[-3000:]}")

    def stats(self, headers: dict | None = None) -> dict:
        request = urllib.request.Request(f"{self.url}/stats", headers=headers or {})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def kill_all(self) -> None:
        import os
        import signal

        for pid in self.processes() | {self.process.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.process.wait(timeout=30)


def process_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def memory_kib(pid: int, field: str = "VmHWM") -> int:
    """``VmHWM`` (peak resident memory) or ``VmRSS`` of a process, in KiB (``/proc/PID/status``)."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)
