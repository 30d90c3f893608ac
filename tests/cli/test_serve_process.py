"""The real ``ts2 serve`` process: the local Ray it starts listens on loopback only, a
kill -9 of the driver leaves no Ray process behind (the watchdog), SIGTERM and Ctrl-C during start-up stop it with one
line and no traceback or Ray C++ stack, and a redirected log carries no ANSI colour codes. Bounded: each service must
be up within ``READY_S``; every process started is killed at the end whatever happens."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.environment import skip_module_without

skip_module_without("ray")

from scorers.rewards.ray_local import descendants  # noqa: E402
from tests.helpers.listeners import beyond_loopback, have_ss, listeners  # noqa: E402
from tests.helpers.tiny_embed_models import tiny_models  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
READY_S = 150
GONE_S = 45  # the watchdog polls every 0.5 s, then SIGTERM, 3 s grace, SIGKILL; on a loaded 2-CPU machine
CPP_STACK = re.compile(r"^\s*@\s+0x|^\*\*\* SIG|^PC: @", re.M)

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """``python -m scorers.cli serve clip_score --model TINY --port P`` with its output piped (not a TTY)."""

    def __init__(self):
        self.port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                   OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1")
        command = [sys.executable, "-m", "scorers.cli", "serve", "clip_score", "--model", tiny_models()["clip"],
                   "--port", str(self.port)]
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, start_new_session=True)
        self.output: list[str] = []
        self.reader = threading.Thread(target=lambda: self.output.extend(iter(self.process.stdout.readline, "")),
                                       daemon=True)
        self.reader.start()
        self.seen: set[int] = set()

    def text(self) -> str:
        return "".join(self.output)

    def note_processes(self) -> set[int]:
        self.seen |= descendants(self.process.pid)
        return self.seen

    def wait_for(self, condition, what: str, limit: float = READY_S) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            self.note_processes()
            if condition():
                return
            if self.process.poll() is not None:
                raise AssertionError(f"ts2 serve exited ({self.process.returncode}) before {what}:\n{self.text()}")
            time.sleep(0.2)
        raise AssertionError(f"no {what} within {limit} s:\n{self.text()[-3000:]}")

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=5) as response:
                return response.status == 200 and "POST http://127.0.0.1" in self.text()
        except OSError:
            return False

    def kill_all(self) -> None:
        for pid in self.note_processes() | {self.process.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.process.wait(timeout=30)


def _alive(pids) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(") ")[1].split()[0] != "Z":  # a zombie is gone, not yet reaped
                    alive.add(pid)
        except OSError:
            pass
    return alive


def _wait_gone(pids, limit: float = GONE_S) -> set[int]:
    deadline = time.monotonic() + limit
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.5)
    return _alive(pids)


def test_local_ray_listens_on_loopback_and_dies_with_a_killed_driver():
    serve = Serve()
    try:
        serve.wait_for(serve.ready, "ready service")
        time.sleep(2)  # the agents' late listeners
        ours = serve.note_processes() | {serve.process.pid}
        if have_ss():
            found = listeners(ours)
            assert any(listener.process.startswith("ray::ServeRepli") for listener in found), found
            outside = beyond_loopback(found)  # the replica's inter-deployment gRPC server included
            assert not outside, f"listening beyond loopback: {outside}"
        assert "\x1b[" not in serve.text(), "ANSI colour codes in a redirected log"
        os.kill(serve.process.pid, signal.SIGKILL)  # the driver only: what a crash or an OOM kill does
        serve.process.wait(timeout=30)
        left = _wait_gone(ours - {serve.process.pid})
        assert not left, f"still running {GONE_S} s after the driver died: {left}"
    finally:
        serve.kill_all()


def test_sigterm_stops_cleanly_with_one_line():
    serve = Serve()
    try:
        serve.wait_for(serve.ready, "ready service")
        ours = serve.note_processes()
        serve.process.send_signal(signal.SIGTERM)
        assert serve.process.wait(timeout=90) == 0, serve.text()
        serve.reader.join(timeout=10)
        text = serve.text()
        assert text.rstrip().splitlines()[-1] == "ts2 serve: stopped (SIGTERM)", text[-2000:]
        assert "Traceback" not in text and not CPP_STACK.search(text), text[-3000:]
        assert "\x1b[" not in text
        assert not _wait_gone(ours)
    finally:
        serve.kill_all()


@pytest.mark.parametrize("moment", ["loading the model", "Ray starting"])
def test_ctrl_c_during_start_up_stops_cleanly_with_one_line(moment):
    """Ctrl-C as a terminal sends it (SIGINT to the whole process group) while the model loads in the driver, and
    while Ray starts (its GCS running, Serve not yet answering)."""
    serve = Serve()
    try:
        if moment == "loading the model":
            serve.wait_for(lambda: "loading the model" in serve.text(), "model loading")
        else:
            serve.wait_for(lambda: any(_name(p) == "gcs_server" for p in serve.note_processes()), "Ray start")
        ours = serve.note_processes()
        os.killpg(serve.process.pid, signal.SIGINT)
        assert serve.process.wait(timeout=90) == 0, serve.text()
        serve.reader.join(timeout=10)
        text = serve.text()
        assert text.rstrip().splitlines()[-1] == "ts2 serve: stopped (Ctrl-C)", text[-2000:]
        assert "Traceback" not in text and not CPP_STACK.search(text), text[-3000:]
        assert not _wait_gone(ours | serve.note_processes())
    finally:
        serve.kill_all()


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as handle:
            return handle.read().strip()
    except OSError:
        return ""
