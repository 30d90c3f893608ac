"""A loopback stand-in for one Hugging Face Hub dataset repo at one commit, for ``snapshot_download`` /
``hf_hub_download`` (and so ``load_ts2()`` / ``ts2 score`` without ``--data-dir``), started on 127.0.0.1.

It answers the two endpoints huggingface_hub uses for a pinned commit: the tree listing
(``/api/datasets/<repo>/tree/<commit>``) and file downloads (``/datasets/<repo>/resolve/<commit>/<path>``, HEAD and
GET, with the ``X-Repo-Commit`` and ``ETag`` headers the client needs). The server is ``tests/loopback_http.py``'s
(request log, 503 beyond ``max_requests``); use it as a context manager.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import urlsplit

from tests.loopback_http import LoopbackServer


class LoopbackHubDataset(LoopbackServer):
    def __init__(self, folder: str | Path, repo_id: str, commit: str, *, max_requests: int = 2000):
        self.files = {p.relative_to(folder).as_posix(): p.read_bytes()
                      for p in sorted(Path(folder).rglob("*")) if p.is_file()}
        self.repo_id, self.commit = repo_id, commit
        super().__init__(max_requests=max_requests)

    def route(self, path: str) -> tuple[int, dict, bytes]:
        path = self.path_of(path)
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
