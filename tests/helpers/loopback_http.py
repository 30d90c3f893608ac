"""A small HTTP server on 127.0.0.1 for tests that download: ``route(path) -> (status, headers, body)``.

Every request is recorded in ``requests`` as ``(method, path)``; beyond ``max_requests`` it answers 503, so a runaway
retry loop cannot hang a test. HEAD answers like GET without the body. Subclasses define :meth:`route`, or
:meth:`respond` to see the method, headers and body too (POST is answered through it). Started on construction;
:meth:`stop` (or leaving the ``with`` block) shuts it down.
"""
from __future__ import annotations

import http.server
import threading
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


class LoopbackServer:
    def __init__(self, *, max_requests: int = 200):
        self.max_requests = max_requests
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def do_POST(self):
                self._answer(body=True)

            def _answer(self, body: bool):
                with server.lock:
                    server.requests.append((self.command, self.path))
                    overloaded = len(server.requests) > server.max_requests
                sent = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if self.command == "POST" else b""
                status, headers, data = (503, {}, b"") if overloaded else server.respond(
                    self.command, self.path, dict(self.headers.items()), sent)
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(data))}.items():
                    self.send_header(key, value)
                self.end_headers()
                if body:
                    self.wfile.write(data)

            def log_message(self, *args):  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def route(self, path: str) -> tuple[int, dict, bytes]:  # pragma: no cover - subclasses answer
        return 404, {}, b""

    def respond(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        """The answer to one request (default: :meth:`route` for HEAD/GET, 405 for POST)."""
        return self.route(path) if method in ("GET", "HEAD") else (405, {}, b"")

    @staticmethod
    def path_of(request_path: str) -> str:
        """The URL path of a request line's target, without the query and with %-escapes decoded."""
        return unquote(urlsplit(request_path).path)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def poll_url(url: str, process, deadline: float) -> str:
    """The body of ``url`` once the server that ``process`` (a ``Popen``) starts answers it, polled every 0.5 s until
    ``deadline`` (a ``time.time()``) or the process's exit; ``""`` when it never answered."""
    import time
    import urllib.request

    while time.time() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return response.read().decode()
        except OSError:
            time.sleep(0.5)
    return ""


class FolderServer:
    """A loopback HTTP server over one folder, counting requests; ``stop()`` ends it."""

    def __init__(self, folder: Path):
        counter = self
        self.requests = 0

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(folder), **kwargs)

            def do_GET(self):  # noqa: N802
                counter.requests += 1
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
