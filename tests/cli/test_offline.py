"""Offline without HF_HUB_OFFLINE: the download hosts refuse connections (a closed loopback port
stands in for a machine with no network). Each command makes one probe per host, then fails in seconds with one line
naming the files, the endpoint tried and the fix, and does not blame HF_HUB_OFFLINE, which was not set. Local
arguments are checked before any network."""
from __future__ import annotations

import socket
import time

import pytest

from scorers.tables import release, release_download
from scorers.cli import main
from tests.helpers.environment import refused_port

#: the issue's bound for an offline failure, seconds (the retries took 24-30 s)
BOUND_S = 5


@pytest.fixture
def no_network(fresh_cache, monkeypatch):  # noqa: F811
    """Online mode (HF_HUB_OFFLINE unset), both download hosts pointed at a port that refuses connections."""
    from huggingface_hub import constants

    with refused_port() as port:  # held for the whole test: refused, never taken by another socket meanwhile
        base = f"http://127.0.0.1:{port}"
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("HF_ENDPOINT", base)
        monkeypatch.setenv(release.GITHUB_ENV, base)
        yield base


def _timed(argv, capsys):
    start = time.monotonic()
    code = main(argv)
    return code, capsys.readouterr().err, time.monotonic() - start


def _check_line(err: str, base: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    line = lines[0]
    assert f"download from {base} failed" in line and "refused the connection" in line
    assert "TS2_DATA" in line and "`ts2 release fetch --all` once with network access" in line
    assert "HF_HUB_OFFLINE" not in line
    return line


def test_release_fetch_all_fails_fast_naming_files_endpoint_and_fix(no_network, capsys):
    code, err, seconds = _timed(["release", "fetch", "--all", "--quiet"], capsys)
    assert code == 2
    line = _check_line(err, no_network)
    assert "metadata.csv" in line and "released_scores.csv" in line  # a Hub file and a GitHub file
    assert seconds < BOUND_S


def test_meta_without_metadata_fails_fast(no_network, tmp_path, capsys):
    scores = tmp_path / "x.csv"
    scores.write_text("seg_id,file_name,node,x\n0,a.jpg,0,1\n")
    code, err, seconds = _timed(["meta", str(scores)], capsys)
    assert code == 2
    assert "metadata.csv: not cached" in _check_line(err, no_network)
    assert seconds < BOUND_S


def test_meta_names_a_missing_scores_file_before_any_network(no_network, tmp_path, capsys, monkeypatch):
    def no_probe(url):  # any network attempt would be a failure of this test
        raise AssertionError(f"network probe of {url} before the local arguments were checked")

    monkeypatch.setattr(release_download, "probe", no_probe)
    code, err, _ = _timed(["meta", str(tmp_path / "nonexist.csv")], capsys)
    assert code == 2
    assert err.strip() == f"ts2 meta: error: argument SCORES: {tmp_path / 'nonexist.csv'}: no such file"


def test_demo_tables_fail_fast_with_the_same_line(no_network):
    from scorers.demo.config import AppConfig
    from scorers.demo.sources import load_tables

    start = time.monotonic()
    tables = load_tables(AppConfig.resolve())
    assert time.monotonic() - start < BOUND_S
    (problem,) = tables.problems
    assert "metadata.csv, released_scores.csv: not cached" in _check_line(problem, no_network)


def test_one_probe_per_host(no_network, monkeypatch):
    probed = []
    real = release_download.probe

    def counting(url):
        probed.append(url)
        return real(url)

    monkeypatch.setattr(release_download, "probe", counting)
    with pytest.raises(release.ReleaseFileUnavailable):
        release_download.paths(progress=False)
    assert probed == [no_network]  # both hosts point at the same closed port here: one origin, one probe


def test_dns_failure_names_the_host_and_the_fix(fresh_cache, monkeypatch):  # noqa: F811
    """A GitHub-source download on a machine without DNS: the resolver's error becomes the reason, with the fix."""
    from huggingface_hub import constants

    def no_dns(address, timeout=None):
        raise socket.gaierror(-3, "Temporary failure in name resolution")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv(release.GITHUB_ENV, raising=False)
    monkeypatch.setattr(socket, "create_connection", no_dns)
    with pytest.raises(release.ReleaseFileUnavailable) as caught:
        release_download.fetch(release.RELEASE_FILES["released_scores.csv"], progress=False)
    message = str(caught.value)
    assert message.startswith("released_scores.csv: not cached, and the download from "
                              "https://raw.githubusercontent.com failed (cannot resolve raw.githubusercontent.com")
    assert "TS2_DATA" in message and "ts2 release fetch --all" in message
