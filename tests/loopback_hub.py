"""A loopback stand-in for one Hugging Face Hub dataset repo at one commit, for ``snapshot_download`` /
``hf_hub_download`` (and so ``load_ts2()`` / ``ts2 score`` without ``--data-dir``), started on 127.0.0.1.

It answers the two endpoints huggingface_hub uses for a pinned commit: the tree listing
(``/api/datasets/<repo>/tree/<commit>``) and file downloads (``/datasets/<repo>/resolve/<commit>/<path>``, HEAD and
GET, with the ``X-Repo-Commit`` and ``ETag`` headers the client needs). ``requests`` records every request; beyond
``max_requests`` it answers 503, so a runaway retry loop cannot hang a test. Use it as a context manager.
"""
from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class LoopbackHubDataset:
    def __init__(self, folder: str | Path, repo_id: str, commit: str, *, max_requests: int = 2000):
        self.files = {p.relative_to(folder).as_posix(): p.read_bytes()
                      for p in sorted(Path(folder).rglob("*")) if p.is_file()}
        self.repo_id, self.commit, self.max_requests = repo_id, commit, max_requests
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

            def _answer(self, body: bool):
                with hub.lock:
                    hub.requests.append((self.command, self.path))
                    overloaded = len(hub.requests) > hub.max_requests
                status, headers, data = (503, {}, b"") if overloaded else hub.route(unquote(urlsplit(self.path).path))
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

    def route(self, path: str) -> tuple[int, dict, bytes]:
        tree = f"/api/datasets/{self.repo_id}/tree/{self.commit}"
        resolve = f"/datasets/{self.repo_id}/resolve/{self.commit}/"
        if path.rstrip("/") == tree:
            listing = [{"type": "file", "path": name, "size": len(data), "oid": self._oid(data)}
                       for name, data in self.files.items()]
            return 200, {"Content-Type": "application/json"}, json.dumps(listing).encode()
        if path.startswith(resolve) and path[len(resolve):] in self.files:
            data = self.files[path[len(resolve):]]
            return 200, {"Content-Type": "application/octet-stream", "X-Repo-Commit": self.commit,
                         "ETag": f'"{self._oid(data)}"'}, data
        return 404, {}, b""

    @staticmethod
    def _oid(data: bytes) -> str:  # git's blob id, as the Hub reports it for non-LFS files
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    def count(self, prefix: str = "") -> int:
        return sum(1 for _, p in self.requests if urlsplit(p).path.startswith(prefix))

    def __enter__(self) -> "LoopbackHubDataset":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
