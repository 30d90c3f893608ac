"""Shared test settings: offline Hub, private HF caches, and the path of the shared TS2 release tables."""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

import pytest

_CACHE = tempfile.mkdtemp(prefix="ts2-tests-hf-")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["HF_HOME"] = _CACHE
os.environ["HF_DATASETS_CACHE"] = os.path.join(_CACHE, "datasets")

SHARED_TS2 = Path(__file__).resolve().parents[1].parent / "shared" / "ts2"
# The scripts folder of the interpreter running the tests (a venv's bin/, activated or not): tests start `ts2`,
# `accelerate`... from here, never from PATH, so they test what this interpreter has installed.
SCRIPTS = Path(sys.executable).parent


def console_script(name: str) -> str:
    """The console script ``name`` installed beside ``sys.executable`` (not looked up on PATH)."""
    path = SCRIPTS / name
    assert path.exists(), f"{name} is not installed beside {sys.executable} (pip install -e .)"
    return str(path)


def use_hf_home(patch: pytest.MonkeyPatch, home: Path) -> Path:
    """Point this process (``huggingface_hub`` constants) and its subprocesses (``HF_HOME``) at the Hugging Face
    home ``home`` (its Hub cache ``home/hub``) for the rest of the test; returns ``home``."""
    from huggingface_hub import constants

    patch.setenv("HF_HOME", str(home))
    patch.setattr(constants, "HF_HOME", str(home))
    patch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    return home


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago (bound to port 0, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def refused_port():
    """A 127.0.0.1 port that refuses connections for the whole ``with`` block (yields the port number).

    The socket stays bound and never listens: a connect is refused at once, no other socket can bind the port, and
    the kernel never gives it to a client socket as its own source port. A port bound then released (``free_port``)
    guarantees none of this: another process may listen on it before the test connects, and a client whose
    ephemeral source port happens to be that port connects to itself (a TCP self-connect) instead of being refused.
    """
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def env_with_scripts(env: dict | None = None) -> dict:
    """``env`` (default os.environ) with this interpreter's scripts folder first on PATH, for shell commands."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = os.pathsep.join([str(SCRIPTS), env.get("PATH", "")])
    return env


@pytest.fixture(autouse=True)
def _fresh_hub_reachability(monkeypatch):
    """Each test probes the Hub afresh: ``scorers.models.loading.hub_reachable`` remembers every endpoint's answer
    for the life of the process, so a test pointing the Hub at a loopback port would otherwise inherit the answer an
    earlier test got from a server that happened to have the same host and port."""
    loading = sys.modules.get("scorers.models.loading")
    if loading is not None:  # not imported yet: nothing remembered yet
        monkeypatch.setattr(loading, "_reachable", {})


@pytest.fixture(scope="session")
def shared_ts2() -> Path:
    """Path of the read-only TS2 release tables (``../shared/ts2``)."""
    if not SHARED_TS2.is_dir():
        pytest.skip("../shared/ts2 is not available")
    return SHARED_TS2


@pytest.fixture(scope="session")
def full_data_dir(tmp_path_factory, shared_ts2) -> Path:
    """A data_dir with all 2,840 release rows and tiny generated images (built once per test session; read-only)."""
    from tests.ts2_fixture_data import make_data_dir

    return make_data_dir(tmp_path_factory.mktemp("ts2-data"))
