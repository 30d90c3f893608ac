"""Where the tests run from: the installed console scripts beside ``sys.executable``, loopback ports, the Hugging Face
home of a test, and modules skipped when an optional dependency is missing."""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

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


def skip_module_without(module: str, reason: str | None = None) -> None:
    """At the top of a test module: skip the whole module when ``module`` is not installed. Unlike
    ``pytest.importorskip`` it does not import it, so collecting the tests stays light (the tests import it)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(reason or f"{module} is not installed", allow_module_level=True)


def env_with_scripts(env: dict | None = None) -> dict:
    """``env`` (default os.environ) with this interpreter's scripts folder first on PATH, for shell commands."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = os.pathsep.join([str(SCRIPTS), env.get("PATH", "")])
    return env
