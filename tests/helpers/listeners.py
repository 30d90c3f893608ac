"""Who listens where: the listening TCP and UDP sockets of given processes, read from ``ss -H -ltnup`` (Linux,
iproute2), and which of them are reachable from beyond this machine (not on a loopback address)."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

#: the addresses that only this machine reaches: IPv4 127/8, IPv4-mapped 127/8 and IPv6 ::1
_LOOPBACK = re.compile(r"^(127\.\d+\.\d+\.\d+|\[::ffff:127\.\d+\.\d+\.\d+\]|\[::1\])$")
_PROCESS = re.compile(r'\("([^"]*)",pid=(\d+),')


@dataclass(frozen=True)
class Listener:
    protocol: str  # tcp / udp
    address: str  # as ss prints it: 127.0.0.1, *, 0.0.0.0, [::], [::ffff:127.0.0.1], 192.0.2.2, [fe80::1]%eth0
    port: int
    pid: int
    process: str  # the process's short name (ss reports /proc/PID/comm)

    @property
    def loopback(self) -> bool:
        return bool(_LOOPBACK.match(self.address))


def have_ss() -> bool:
    return shutil.which("ss") is not None


def parse_ss(text: str) -> list[Listener]:
    """The rows of ``ss -H -l -t -u -n -p`` output (``Netid State Recv-Q Send-Q Local:Port Peer:Port Process``), one
    :class:`Listener` per (socket, process) pair; rows without a process (another user's) are left out."""
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6:
            continue
        address, _, port = fields[4].rpartition(":")
        if not port.isdigit():
            continue
        for name, pid in _PROCESS.findall(line):
            found.append(Listener(fields[0], address, int(port), int(pid), name))
    return found


def listeners(pids) -> list[Listener]:
    """The listening TCP sockets and bound UDP sockets of the processes ``pids``, now."""
    out = subprocess.run(["ss", "-H", "-l", "-t", "-u", "-n", "-p"], capture_output=True, text=True, check=True,
                         timeout=30).stdout
    wanted = set(pids)
    return [listener for listener in parse_ss(out) if listener.pid in wanted]


def beyond_loopback(found) -> list[Listener]:
    """Those of ``found`` that another machine can reach: any address but loopback (``*``, ``0.0.0.0``, ``[::]``, a
    LAN address)."""
    return [listener for listener in found if not listener.loopback]


def process_tree(pid: int) -> set[int]:
    """``pid`` and every process below it (a driver and the Ray it started: GCS, raylet, agents, workers)."""
    from scorers.rewards.ray_local import descendants

    return descendants(pid) | {pid}
