"""A loopback stand-in for the release's download sources: the Hub (``HF_ENDPOINT``) and raw GitHub
(``TS2_GITHUB_URL``) in one HTTP server on 127.0.0.1 that serves the release files under their real URL paths and
records every request (the ``sources`` fixture of tests/plugins/shared_fixtures.py starts one per test)."""
from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

from scorers.tables.release import RELEASE_FILES
from tests.helpers.loopback_http import LoopbackServer
from tests.helpers.ts2_fixture_data import release_bytes

DOWNLOADABLE = [name for name, f in RELEASE_FILES.items() if f.url is not None]
HUB_NAMES = [name for name in DOWNLOADABLE if RELEASE_FILES[name].url.startswith("https://huggingface.co/")]
MAX_REQUESTS = 200  # the server answers 503 beyond this: a runaway retry loop cannot hang a test


class FakeSources(LoopbackServer):
    """Routes URL path -> bytes; ``requests`` lists (method, path) of every request received."""

    def __init__(self, routes: dict[str, bytes], hub_commits: dict[str, str]):
        self.routes = dict(routes)
        self.hub_commits = hub_commits
        super().__init__(max_requests=MAX_REQUESTS)

    def route(self, path: str) -> tuple[int, dict, bytes]:
        data = self.routes.get(path)
        if data is None:
            return 404, {}, b""
        headers = {"Content-Type": "text/plain"}
        if path in self.hub_commits:  # what huggingface_hub needs from a Hub endpoint
            headers["X-Repo-Commit"] = self.hub_commits[path]
            headers["ETag"] = '"' + hashlib.sha256(data).hexdigest() + '"'
        return 200, headers, data

    def count(self, name: str | None = None) -> int:
        if name is None:
            return len(self.requests)
        path = urlsplit(RELEASE_FILES[name].url).path
        return sum(1 for _, p in self.requests if p == path)

    def corrupt(self, name: str) -> None:
        path = urlsplit(RELEASE_FILES[name].url).path
        data = bytearray(self.routes[path])
        data[len(data) // 2] ^= 0x01  # one flipped bit
        self.routes[path] = bytes(data)


def start_sources() -> FakeSources:
    """A FakeSources serving every downloadable release file (its bytes from the test run's release folder)."""
    routes, commits = {}, {}
    for name in DOWNLOADABLE:
        file = RELEASE_FILES[name]
        url_path = urlsplit(file.url).path
        routes[url_path] = release_bytes(name)
        if name in HUB_NAMES:
            commits[url_path] = file.revision
    return FakeSources(routes, commits)
