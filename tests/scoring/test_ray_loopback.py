"""Every Ray this package starts on its own listens on 127.0.0.1 only (scorers/scoring/engines/ray_loopback.py),
checked with ``ss`` on the listening sockets of that Ray's processes (the driver and the processes below it): the Ray
Data engine's local Ray (``ensure_ray``, what ``ts2 score --engine ray`` runs, in a process of its own) and the tests'
session Ray (``local_ray``) with a Ray Data job and a Serve deployment on it. ``ts2 serve``'s:
tests/cli/test_serve_process.py. Without starting a Ray: the start refuses a Ray that came up on another address, a
cluster to join (``--ray-address``, ``$RAY_ADDRESS``) is joined as before, and the workers' hook moves a gRPC server
that Ray opens on every interface to 127.0.0.1. Bounded: the engine's process must be ready within ``READY_S`` and is killed at the
end whatever happens."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.environment import skip_module_without
from tests.helpers.listeners import beyond_loopback, have_ss, listeners, process_tree

skip_module_without("ray")

ROOT = Path(__file__).resolve().parents[2]
READY_S = 180
LATE_S = 2  # the agents open some listeners a moment after the start

pytestmark = pytest.mark.skipif(not (Path("/proc").is_dir() and have_ss()), reason="reads /proc and runs ss (Linux)")

#: the Ray Data engine's start (ensure_ray with no address, as `ts2 score --engine ray` calls it), a Ray Data job on
#: an actor (workers up), then it waits for its stdin to close
ENGINE = """
import sys
from scorers.scoring.engines.ray_data import ensure_ray

ray = ensure_ray()

class Echo:
    def __call__(self, batch):
        return batch

rows = ray.data.range(8).map_batches(Echo, compute=ray.data.ActorPoolStrategy(size=1), batch_size=4).take_all()
print("READY", len(rows), flush=True)
sys.stdin.readline()
ray.shutdown()
"""


def test_the_ray_data_engine_listens_on_loopback_only():
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}  # no loopback switch inherited
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0")
    process = subprocess.Popen([sys.executable, "-c", ENGINE], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(iter(process.stdout.readline, "")), daemon=True)
    reader.start()
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + READY_S
        while not any(line.startswith("READY 8") for line in output):
            seen |= process_tree(process.pid)
            assert process.poll() is None, "".join(output)[-3000:]
            assert time.monotonic() < deadline, f"not ready within {READY_S} s:\n{''.join(output)[-3000:]}"
            time.sleep(0.2)
        time.sleep(LATE_S)
        seen |= process_tree(process.pid)
        found = listeners(seen)
        assert {"gcs_server", "raylet"} <= {listener.process for listener in found}, found
        outside = beyond_loopback(found)
        assert not outside, f"listening beyond loopback: {outside}"
        process.stdin.close()
        assert process.wait(timeout=90) == 0, "".join(output)[-3000:]
    finally:
        for pid in seen | {process.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        process.wait(timeout=30)


def test_the_session_ray_listens_on_loopback_only(local_ray, serve_port):
    """The fixture's Ray (``ray`` was imported before it started), with a Ray Data job and a Serve replica up."""
    import ray.data
    from ray import serve

    @serve.deployment
    class Answer:
        async def __call__(self, request):
            return "ok"

    serve.run(Answer.bind(), name="loopback_check", route_prefix="/loopback_check")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{serve_port}/loopback_check", timeout=60) as response:
            assert response.read() == b"ok"
        assert len(ray.data.range(8).map_batches(lambda batch: batch, batch_size=4).take_all()) == 8
        time.sleep(LATE_S)
        found = listeners(process_tree(os.getpid()))
        names = {listener.process for listener in found}
        assert {"gcs_server", "raylet"} <= names and any(name.startswith("ray::ServeRepli") for name in names), found
        outside = beyond_loopback(found)
        assert not outside, f"listening beyond loopback: {outside}"
    finally:
        serve.delete("loopback_check")


class FakeContext:
    def __init__(self, node):
        self.address_info = {"node_ip_address": node, "session_dir": "/tmp/ray/session_x"}


def test_a_local_ray_on_another_address_is_shut_down_and_refused(monkeypatch):
    import ray

    from scorers.scoring.engines import ray_loopback

    calls = []
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append(kwargs) or FakeContext("192.0.2.2"))
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    from ray._private import ray_constants

    monkeypatch.setenv(ray_loopback.LOOPBACK_ENV, "1")  # put back after the test, as the constant below
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)  # ray imported before the switch
    with pytest.raises(RuntimeError, match="192.0.2.2.*not 127.0.0.1"):
        ray_loopback.start_local_ray(num_cpus=1)
    assert calls[-1] == "shutdown"
    init = calls[0]
    assert init["address"] == "local" and init["_node_ip_address"] == "127.0.0.1" and init["num_cpus"] == 1
    assert init["runtime_env"]["worker_process_setup_hook"] == "scorers.scoring.engines.ray_loopback.loopback_grpc"
    assert os.environ[ray_loopback.LOOPBACK_ENV] == "0" and ray_constants.ENABLE_RAY_CLUSTER is False


@pytest.mark.parametrize("address, env, joins", [(None, None, None), ("auto", None, "auto"),
                                                  (None, "ray://head:10001", None),
                                                  ("ray://head:10001", None, "ray://head:10001")])
def test_the_engine_starts_a_loopback_ray_or_joins_the_cluster_it_is_given(monkeypatch, address, env, joins):
    import ray

    from scorers.scoring.engines import ray_data

    started, joined = [], []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: joined.append(kwargs))
    monkeypatch.setattr(ray_data, "start_local_ray", lambda **kwargs: started.append(kwargs))
    if env is None:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    else:
        monkeypatch.setenv("RAY_ADDRESS", env)
    ray_data.ensure_ray(address)
    if address is None and env is None:
        assert len(started) == 1 and not joined
    else:  # joining stays as it was: ray.init with the address (None: Ray reads $RAY_ADDRESS)
        assert not started and [kwargs["address"] for kwargs in joined] == [joins]


def test_the_workers_hook_opens_every_interface_grpc_server_on_loopback(monkeypatch):
    from ray._common import tls_utils

    from scorers.scoring.engines.ray_loopback import loopback_grpc

    seen = []
    monkeypatch.setattr(tls_utils, "add_port_to_grpc_server", lambda server, address: seen.append(address) or 1)
    loopback_grpc()
    loopback_grpc()  # idempotent: one wrapper
    for address in ("[::]:0", "0.0.0.0:5000", "127.0.0.1:7", "10.0.0.5:9"):
        tls_utils.add_port_to_grpc_server(object(), address)
    assert seen == ["127.0.0.1:0", "127.0.0.1:5000", "127.0.0.1:7", "10.0.0.5:9"]


@pytest.mark.parametrize("address, loopback", [("127.0.0.1:6379", True), ("localhost:6379", True),
                                               ("ray://127.0.0.1:10001", False), ("[::1]:6379", True),
                                               ("10.0.0.5:6379", False), ("ray://head:10001", False),
                                               ("auto", False), (None, False)])
def test_a_cluster_on_a_loopback_address_is_joined_on_loopback(monkeypatch, address, loopback):
    """Ray turns 127.0.0.1 into this machine's LAN address (and then waits for ever on a cluster that listens on
    loopback only) unless its loopback switch is set: ``join_ray`` sets it, and the workers' hook, for a loopback
    address only; any other address is joined as given."""
    import ray
    from ray._private import ray_constants

    from scorers.scoring.engines import ray_loopback

    joined = []
    monkeypatch.setattr(ray, "init", lambda **kwargs: joined.append(kwargs) or "context")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv(ray_loopback.LOOPBACK_ENV, "1")  # put back after the test, as the constant below
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    assert ray_loopback.is_loopback_address(address) is loopback
    assert ray_loopback.join_ray(address, include_dashboard=False) == "context"
    (init,) = joined
    assert init["address"] == address and init["include_dashboard"] is False
    if loopback:
        assert init["runtime_env"] == {"worker_process_setup_hook": ray_loopback.SETUP_HOOK}
        assert os.environ[ray_loopback.LOOPBACK_ENV] == "0" and ray_constants.ENABLE_RAY_CLUSTER is False
    else:
        assert "runtime_env" not in init
        assert os.environ[ray_loopback.LOOPBACK_ENV] == "1" and ray_constants.ENABLE_RAY_CLUSTER is True
