"""Loopback stand-ins for the Hugging Face Hub, started on 127.0.0.1 (``HF_ENDPOINT`` = their ``base``).

* :class:`LoopbackHubDataset`: one dataset repo at one commit, read-only, for ``snapshot_download`` /
  ``hf_hub_download`` (and so ``load_ts2()`` / ``ts2 score`` without ``--data-dir``);
* :class:`LoopbackHub`: one repo that can be written, for ``create_commit(..., create_pr=True)`` (``ts2 submit
  --push``) and ``snapshot_download`` at ``main``, ``refs/pr/N`` or a commit (``ts2 leaderboard --submissions
  OWNER/NAME@REV``); it records the pull requests it was sent.

The first:

It answers the two endpoints huggingface_hub uses for a pinned commit: the tree listing
(``/api/datasets/<repo>/tree/<commit>``) and file downloads (``/datasets/<repo>/resolve/<commit>/<path>``, HEAD and
GET, with the ``X-Repo-Commit`` and ``ETag`` headers the client needs). The server is ``tests/helpers/loopback_http.py``'s
(request log, 503 beyond ``max_requests``); use it as a context manager.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import urlsplit

from tests.helpers.loopback_http import LoopbackServer


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


class LoopbackHub(LoopbackServer):
    """A loopback stand-in for one Hub repository that can be written: commits, pull requests and reads at any
    revision (``main``, ``refs/pr/N``, a commit sha), for ``create_commit(..., create_pr=True)`` and
    ``snapshot_download(..., revision=...)`` with ``HF_ENDPOINT`` set to :attr:`base`.

    The endpoints ``huggingface_hub`` (2.x) calls for those two, and only them:

    * ``POST /api/<type>s/<repo>/preupload/<rev>``: every file is uploaded "regular" (inline in the commit; no LFS,
      no Xet: a submission's files are small);
    * ``POST /api/<type>s/<repo>/commit/<rev>[?create_pr=1]``: the ndjson commit (``header``, ``file`` base64,
      ``deletedFile``); with ``create_pr`` a new pull request ``refs/pr/N`` on top of ``<rev>``, else ``<rev>`` moves;
      answers ``commitUrl``, ``commitOid`` and ``pullRequestUrl``;
    * ``GET /api/<type>s/<repo>/revision/<rev>`` (repo info: ``sha``, ``siblings``), ``GET .../tree/<sha>`` (the
      recursive listing) and ``HEAD``/``GET /<type>s/<repo>/resolve/<rev>/<path>`` (downloads).

    ``token``: when given, writes without ``Authorization: Bearer <token>`` get 401 (reads stay public).
    :attr:`pull_requests` lists each PR (``num``, ``title``, ``description``, ``sha``, ``files`` added). Bounded:
    503 beyond ``max_requests``, and the server stops by itself ``lifetime`` seconds after it started.
    """

    def __init__(self, repo_id: str, *, files: dict | str | Path | None = None, repo_type: str = "dataset",
                 token: str | None = None, max_requests: int = 500, lifetime: float = 120.0):
        import threading

        if isinstance(files, (str, Path)):
            files = {p.relative_to(files).as_posix(): p.read_bytes() for p in sorted(Path(files).rglob("*"))
                     if p.is_file()}
        self.repo_id, self.repo_type, self.token = repo_id, repo_type, token
        self.commits: dict[str, dict[str, bytes]] = {}
        self.refs: dict[str, str] = {"main": self._commit(dict(files or {}), "initial commit")}
        self.pull_requests: list[dict] = []
        self.authorizations: list[str] = []
        super().__init__(max_requests=max_requests)
        self.timer = threading.Timer(lifetime, self._expire)
        self.timer.daemon = True
        self.timer.start()

    def _expire(self) -> None:  # the lifetime is over: stop answering and close the port
        self.server.shutdown()
        self.server.server_close()

    def stop(self) -> None:
        self.timer.cancel()
        super().stop()

    # --- the repository ------------------------------------------------------------------------------------------

    def _commit(self, files: dict[str, bytes], message: str) -> str:
        digest = hashlib.sha1(json.dumps([message, len(self.commits), sorted(
            (p, hashlib.sha1(d).hexdigest()) for p, d in files.items())]).encode()).hexdigest()
        self.commits[digest] = files
        return digest

    def files_at(self, revision: str = "main") -> dict[str, bytes]:
        """The files at ``revision`` (a ref or a commit sha)."""
        return self.commits[self.refs.get(revision, revision)]

    def _sha(self, revision: str) -> str | None:
        sha = self.refs.get(revision, revision)
        return sha if sha in self.commits else None

    # --- HTTP --------------------------------------------------------------------------------------------------

    def respond(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
        query = urlsplit(path).query
        path = self.path_of(path)
        api = f"/api/{self.repo_type}s/{self.repo_id}/"
        resolve = f"/{self.repo_type}s/{self.repo_id}/resolve/" if self.repo_type != "model" \
            else f"/{self.repo_id}/resolve/"
        if method == "POST":
            authorization = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
            with self.lock:
                self.authorizations.append(authorization)
            if self.token is not None and authorization != f"Bearer {self.token}":
                return self._json(401, {"error": "Invalid credentials in Authorization header"})
            for action in ("preupload", "commit"):
                if path.startswith(api + action + "/"):
                    revision = path[len(api + action + "/"):]
                    with self.lock:
                        return (self._preupload if action == "preupload" else self._commit_post)(
                            revision, body, "create_pr=1" in query)
            return 404, {}, b""
        if path.rstrip("/") in (api.rstrip("/"), ) or path.startswith(api + "revision/"):
            revision = path[len(api + "revision/"):] if path.startswith(api + "revision/") else "main"
            sha = self._sha(revision)
            if sha is None:
                return self._json(404, {"error": f"Invalid rev id: {revision}"}, {"X-Error-Code": "RevisionNotFound"})
            return self._json(200, {"id": self.repo_id, "sha": sha, "private": False,
                                    "siblings": [{"rfilename": p} for p in sorted(self.commits[sha])]})
        if path.startswith(api + "tree/"):
            revision, _, folder = path[len(api + "tree/"):].partition("/")
            sha = self._sha(revision)
            if sha is None:
                return self._json(404, {"error": f"Invalid rev id: {revision}"}, {"X-Error-Code": "RevisionNotFound"})
            listing = [{"type": "file", "path": p, "size": len(d), "oid": LoopbackHubDataset._oid(d)}
                       for p, d in sorted(self.commits[sha].items()) if p.startswith(folder)]
            return self._json(200, listing)
        if path.startswith(resolve):
            rest = path[len(resolve):]
            for ref in sorted(self.refs, key=len, reverse=True):  # refs/pr/1 holds slashes
                if rest.startswith(ref + "/"):
                    revision, name = ref, rest[len(ref) + 1:]
                    break
            else:
                revision, _, name = rest.partition("/")
            sha = self._sha(revision)
            if sha is None or name not in self.commits[sha]:
                return 404, {"X-Error-Code": "EntryNotFound"}, b""
            data = self.commits[sha][name]
            return 200, {"Content-Type": "application/octet-stream", "X-Repo-Commit": sha,
                         "ETag": f'"{LoopbackHubDataset._oid(data)}"'}, data
        return 404, {}, b""

    @staticmethod
    def _json(status: int, payload, headers: dict | None = None) -> tuple[int, dict, bytes]:
        return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(payload).encode()

    def _preupload(self, revision: str, body: bytes, create_pr: bool):
        if self._sha(revision) is None:
            return self._json(404, {"error": f"Invalid rev id: {revision}"}, {"X-Error-Code": "RevisionNotFound"})
        files = json.loads(body)["files"]
        return self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                                           "oid": None} for f in files]})

    def _commit_post(self, revision: str, body: bytes, create_pr: bool):
        import base64

        base = self._sha(revision)
        if base is None:
            return self._json(404, {"error": f"Invalid rev id: {revision}"}, {"X-Error-Code": "RevisionNotFound"})
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        header = next((line["value"] for line in lines if line["key"] == "header"), {})
        files, added = dict(self.commits[base]), {}
        for line in lines:
            key, value = line["key"], line["value"]
            if key == "file":
                added[value["path"]] = files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                files.pop(value["path"], None)
            elif key != "header":
                return self._json(400, {"error": f"the loopback Hub takes regular files only, not {key!r}"})
        sha = self._commit(files, header.get("summary", ""))
        prefix = f"{self.base}/{self.repo_type}s/{self.repo_id}" if self.repo_type != "model" \
            else f"{self.base}/{self.repo_id}"
        answer = {"commitUrl": f"{prefix}/commit/{sha}", "commitOid": sha, "success": True}
        if create_pr:
            num = len(self.pull_requests) + 1
            self.refs[f"refs/pr/{num}"] = sha
            self.pull_requests.append({"num": num, "title": header.get("summary"),
                                       "description": header.get("description"), "sha": sha, "files": added})
            answer["pullRequestUrl"] = f"{prefix}/discussions/{num}"
        else:
            self.refs[revision] = sha
        return self._json(200, answer)


def point_hub_at(monkeypatch, base: str, hub_cache: Path | None = None) -> None:
    """Point ``huggingface_hub`` at the loopback Hub ``base`` for the rest of the test, in this process (its
    ``constants``: endpoint, download URL template, online) and in its subprocesses (``HF_ENDPOINT``); with
    ``hub_cache``, downloads land there instead of the test session's Hub cache."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_ENDPOINT", base)
    monkeypatch.setattr(constants, "ENDPOINT", base)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", base + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    if hub_cache is not None:
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache))
