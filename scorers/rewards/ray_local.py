"""A local Ray that dies with its driver (``ts2 serve``; no Ray import here). It is started on 127.0.0.1 only by
:func:`scorers.scoring.engines.ray_loopback.start_local_ray`.

* :func:`start_watchdog` starts a small process (``python -m scorers.rewards.ray_local DRIVER_PID SESSION_DIR``, in
  its own session so a Ctrl-C to the terminal's group does not reach it) that, once the driver is gone (a kill -9
  included), stops every process of that Ray session: the driver's last known descendants and any process whose
  command line names the session's folder. SIGTERM first, SIGKILL after ``GRACE_S``. Linux (``/proc``) only; elsewhere
  it does nothing.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

__all__ = ["GRACE_S", "POLL_S", "descendants", "session_processes", "start_watchdog"]

POLL_S = 0.5
GRACE_S = 3.0


def _children() -> dict[int, list[int]]:
    """parent pid -> child pids, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        tree.setdefault(int(fields[1]), []).append(int(entry))
    return tree


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[19]


def descendants(pid: int) -> set[int]:
    """The pids below ``pid`` in the process tree (children, their children...), from /proc."""
    tree, found, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def session_processes(session_dir: str) -> set[int]:
    """Pids whose command line names ``session_dir`` (Ray passes it to the raylet, the agents and the workers)."""
    found = set()
    needle = os.path.basename(session_dir.rstrip("/")).encode()
    if not needle:
        return found
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if needle in handle.read():
                        found.add(int(entry))
            except OSError:
                pass
    return found


def start_watchdog(driver_pid: int, session_dir: str) -> subprocess.Popen | None:
    """Start the watchdog of the Ray session ``session_dir`` started by ``driver_pid`` (None off Linux)."""
    if not os.path.isdir("/proc"):
        return None
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.Popen([sys.executable, "-m", "scorers.rewards.ray_local", str(driver_pid), session_dir],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, env=env, close_fds=True)


def _alive(pid: int, started: str | None) -> bool:
    return started is not None and _start_time(pid) == started


def watch(driver_pid: int, session_dir: str) -> int:
    """Wait for ``driver_pid`` to go, then stop what its Ray session left. Returns how many processes it signalled."""
    me = os.getpid()
    driver_started = _start_time(driver_pid)
    known: dict[int, str] = {}
    while _alive(driver_pid, driver_started) and os.getppid() == driver_pid:
        for pid in descendants(driver_pid) - {me}:
            if pid not in known:
                started = _start_time(pid)
                if started is not None:
                    known[pid] = started
        time.sleep(POLL_S)
    targets = {pid: started for pid, started in known.items() if _alive(pid, started)}
    for pid in session_processes(session_dir) - {me}:
        targets.setdefault(pid, _start_time(pid))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, started in targets.items():
            if _alive(pid, started):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        deadline = time.monotonic() + GRACE_S
        while sig == signal.SIGTERM and time.monotonic() < deadline and any(
                _alive(p, s) for p, s in targets.items()):
            time.sleep(0.1)
    return len(targets)


if __name__ == "__main__":  # pragma: no cover - run as the watchdog process
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(int(sys.argv[1]), sys.argv[2])
