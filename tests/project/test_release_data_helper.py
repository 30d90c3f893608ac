"""tests/helpers/release_data.py finds a release file as the package does: TS2_DATA, then the cache, then the pinned download.

The file looked up is a made-up release file (``made_up.csv``: a few known bytes, their sha256 computed here with
hashlib, a GitHub-style URL) added to ``RELEASE_FILES`` for the test, so no release data is needed: the download comes
from a loopback HTTP server (``tests/helpers/loopback_http.py``: 127.0.0.1 only, answers 503 beyond a few requests, stopped
at the end of each test), the cache is a fresh ``HF_HOME``, and the environment is a mapping handed to the helper.
"""
from __future__ import annotations

import hashlib
import time

import pytest

from scorers.tables import release, release_download
from scorers.tables.release import PinnedFile
from tests.helpers import release_data
from tests.helpers.environment import refused_port
from tests.helpers.loopback_http import LoopbackServer

NAME = "made_up.csv"
BYTES = b"id,score\n0,1.5\n1,2.5\n"
SHA = hashlib.sha256(BYTES).hexdigest()
COMMIT = "0123456789abcdef0123456789abcdef01234567"
URL_PATH = f"/someone/somewhere/{COMMIT}/made_up.csv"
NO_DOWNLOAD = "hand_made.csv"


class OneFile(LoopbackServer):
    """Serves ``BYTES`` at ``URL_PATH`` (404 elsewhere); at most 10 requests are answered, then 503."""

    def __init__(self, data: bytes = BYTES):
        self.data = data
        super().__init__(max_requests=10)

    def route(self, path):
        return (200, {"Content-Type": "text/csv"}, self.data) if self.path_of(path) == URL_PATH else (404, {}, b"")

    def gets(self) -> int:
        return sum(1 for method, path in self.requests if method == "GET" and self.path_of(path) == URL_PATH)


@pytest.fixture(autouse=True)
def made_up_release(monkeypatch):
    """RELEASE_FILES plus ``made_up.csv`` (a GitHub URL pinned to ``SHA``) and ``hand_made.csv`` (no download)."""
    files = dict(release.RELEASE_FILES)
    files[NAME] = PinnedFile(f"{release.GITHUB_RAW}{URL_PATH}", SHA, NAME, COMMIT)
    files[NO_DOWNLOAD] = PinnedFile(None, SHA, NO_DOWNLOAD, note="made by hand")
    monkeypatch.setattr(release, "RELEASE_FILES", files)


@pytest.fixture
def server():
    with OneFile() as running:
        yield running


def env_for(tmp_path, server=None, **extra) -> dict:
    env = {"HF_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "0" if server else "1"}
    if server is not None:
        env["TS2_GITHUB_URL"] = server.base
    return {**env, **extra}


def cached_copy(tmp_path):
    return tmp_path / "home" / "ts2-evaluate" / SHA / NAME  # the package's cache layout: <HF_HOME>/ts2-evaluate/<sha>


def test_download_goes_to_the_users_cache_then_the_cache_answers(tmp_path, server):
    env = env_for(tmp_path, server)
    found, where = release_data.locate(NAME, env=env)
    assert (found, where) == (cached_copy(tmp_path), "download")
    assert found.read_bytes() == BYTES and server.gets() == 1
    again, where = release_data.locate(NAME, env=env)
    assert (again, where) == (cached_copy(tmp_path), "cache")
    assert server.gets() == 1  # no second download


def test_ts2_data_comes_first(tmp_path, server):
    folder = tmp_path / "release"
    folder.mkdir()
    (folder / NAME).write_bytes(b"a local copy, used as is\n")
    release_data.locate(NAME, env=env_for(tmp_path, server))  # cached now
    requests = len(server.requests)
    found, where = release_data.locate(NAME, env=env_for(tmp_path, server, TS2_DATA=str(folder)))
    assert (found, where) == (folder.resolve() / NAME, "TS2_DATA")
    assert len(server.requests) == requests  # no request at all


def test_a_ts2_data_folder_without_the_file_falls_back_to_cache_and_download(tmp_path, server):
    folder = tmp_path / "partial"
    folder.mkdir()
    found, where = release_data.locate(NAME, env=env_for(tmp_path, server, TS2_DATA=str(folder)))
    assert (found, where) == (cached_copy(tmp_path), "download")


def test_the_cache_comes_before_the_download(tmp_path, server):
    cached_copy(tmp_path).parent.mkdir(parents=True)
    cached_copy(tmp_path).write_bytes(BYTES)
    found, where = release_data.locate(NAME, env=env_for(tmp_path, server))
    assert (found, where) == (cached_copy(tmp_path), "cache") and server.requests == []


def test_a_damaged_cached_copy_is_not_used(tmp_path):
    cached_copy(tmp_path).parent.mkdir(parents=True)
    cached_copy(tmp_path).write_bytes(BYTES + b"9,9\n")
    found, why = release_data.locate(NAME, env=env_for(tmp_path))  # offline: no download to repair it
    assert found is None and why == "offline (HF_HUB_OFFLINE=1) and not cached"


def test_a_download_with_another_sha256_is_refused_and_not_kept(tmp_path):
    with OneFile(BYTES.replace(b"2.5", b"2.6")) as changed:
        found, why = release_data.locate(NAME, env=env_for(tmp_path, changed))
    assert found is None and "does not match the pinned" in why and SHA in why
    assert not cached_copy(tmp_path).exists()


def test_offline_and_not_cached_makes_no_request(tmp_path, server):
    env = {**env_for(tmp_path, server), "HF_HUB_OFFLINE": "1"}
    assert release_data.locate(NAME, env=env) == (None, "offline (HF_HUB_OFFLINE=1) and not cached")
    assert server.requests == []


def test_an_unreachable_host_is_one_fast_probe(tmp_path):
    with refused_port() as port:
        env = {**env_for(tmp_path), "HF_HUB_OFFLINE": "0", "TS2_GITHUB_URL": f"http://127.0.0.1:{port}"}
        start = time.perf_counter()
        found, why = release_data.locate(NAME, env=env)
    assert found is None and why == f"not cached and the download failed (127.0.0.1:{port} refused the connection)"
    assert time.perf_counter() - start < release_download.PROBE_TIMEOUT_S  # refused at once, no retries


def test_a_file_without_public_download_comes_only_from_ts2_data(tmp_path, server):
    assert release_data.locate(NO_DOWNLOAD, env=env_for(tmp_path, server)) == (None, "no public download")
    folder = tmp_path / "release"
    folder.mkdir()
    (folder / NO_DOWNLOAD).write_bytes(BYTES)
    assert release_data.locate(NO_DOWNLOAD, env=env_for(tmp_path, TS2_DATA=str(folder)))[1] == "TS2_DATA"
    assert server.requests == []


def test_default_data_dir_only_when_ts2_data_is_unset(tmp_path):
    src = release_data.sources({"HF_HOME": str(tmp_path)})
    expected = release_data.DEFAULT_DATA if release_data.DEFAULT_DATA.is_dir() else None
    assert src.data_dir == expected
    assert src.hub_cache == tmp_path / "hub" and src.cache_dir == tmp_path / "ts2-evaluate" and src.download
    chosen = release_data.sources({"TS2_DATA": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert chosen.data_dir == tmp_path.resolve() and chosen.published is None and not chosen.download


def test_skip_reasons_name_the_file_and_the_fix():
    assert release_data.skip_reason(NAME) == (
        "release table made_up.csv not found: set TS2_DATA to a release folder or run `ts2 release fetch --all`")
    assert release_data.skip_reason(NO_DOWNLOAD) == (
        "release table hand_made.csv not found: set TS2_DATA to a release folder holding it (it has no public "
        "download)")


def test_the_code_under_test_does_not_see_the_runs_ts2_data():
    import os

    assert release.DATA_ENV not in os.environ  # tests/conftest.py removed it; a test sets it itself when it needs it


def test_run_from_clone_summary_lists_failures_errors_and_skips_per_reason():
    from tests.helpers.run_from_clone import summarise

    output = "\n".join([
        "....sF.E",
        "------------------------- skips by reason (3) -------------------------",
        "    2  release table metadata.csv not found: set TS2_DATA to a release folder or run `ts2 release fetch --all`",
        "    1  torch is not installed",
        "=========================== short test summary info ============================",
        "FAILED tests/test_a.py::test_one - AssertionError: assert 1 == 2",
        "ERROR tests/test_b.py::test_two - FileNotFoundError",
        "1 failed, 4 passed, 3 skipped, 1 error in 2.00s",
    ])
    assert summarise(output).splitlines() == [
        "failures and errors: 2",
        "FAILED tests/test_a.py::test_one - AssertionError: assert 1 == 2",
        "ERROR tests/test_b.py::test_two - FileNotFoundError",
        "skips by reason (3)",
        "    2  release table metadata.csv not found: set TS2_DATA to a release folder or run `ts2 release fetch --all`",
        "    1  torch is not installed",
        "result: 1 failed, 4 passed, 3 skipped, 1 error in 2.00s",
    ]


def test_run_from_clone_copies_the_listed_files_only(tmp_path):
    from tests.helpers.run_from_clone import REPO, copy_repository

    copy = copy_repository(tmp_path / "repo")
    assert (copy / "tests" / "helpers" / "release_data.py").read_bytes() == (REPO / "tests" / "helpers" / "release_data.py").read_bytes()
    assert (copy / "pyproject.toml").is_file() and not (copy / ".git").exists() and not (copy / ".venv").exists()
    assert not (copy.parent / "shared").exists()
