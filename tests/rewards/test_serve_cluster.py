"""``ts2 serve ... --ray-address 127.0.0.1:PORT`` on a real two-node Ray cluster of this machine
(tests/helpers/ray_cluster.py, every process on 127.0.0.1): the service deploys onto that cluster and answers, nothing
listens beyond loopback (``ss``: the replica's inter-deployment gRPC server included), and when it stops (SIGTERM)
the cluster keeps running: both nodes alive (Ray's state API) and a new ``ray.init(address=...)`` joins it. Without
an address ``ts2 serve`` starts its own local Ray (tests/cli/test_serve_process.py). Bounded: the service must be
ready within ``READY_S``; the cluster is shut down at the end and no process of it is left (checked)."""
from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.environment import free_port, skip_module_without

skip_module_without("ray")

from tests.helpers.listeners import beyond_loopback, have_ss, listeners, process_tree  # noqa: E402
from tests.helpers.ray_cluster import ROOT, LoopbackCluster  # noqa: E402
from tests.helpers.tiny_embed_models import tiny_models  # noqa: E402

pytestmark = pytest.mark.skipif(not (Path("/proc").is_dir() and have_ss()), reason="reads /proc and runs ss (Linux)")

READY_S = 240  # a safety bound, not a speed check
LATE_S = 2  # the agents open some listeners a moment after the start

#: a second driver joining the cluster after the service stopped: the nodes it sees alive
JOIN = """
import sys
import ray
from scorers.scoring.engines.ray_loopback import join_ray

join_ray(sys.argv[1], include_dashboard=False, log_to_driver=False, configure_logging=False)
print("ALIVE", sorted(node["NodeID"] for node in ray.nodes() if node["Alive"]), flush=True)
ray.shutdown()
"""


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1")
    return env


def _png() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), (200, 40, 90)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _score(port: int) -> dict:
    body = json.dumps({"prompts": ["a red square"], "images": [_png()]}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/score", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def test_serve_deploys_onto_a_two_node_cluster_and_leaves_it_running():
    port = free_port()
    with LoopbackCluster() as cluster:
        command = [sys.executable, "-m", "scorers.cli", "serve", "clip_score", "--model", tiny_models()["clip"],
                   "--port", str(port), "--ray-address", cluster.address]
        process = subprocess.Popen(command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, start_new_session=True)
        output: list[str] = []
        threading.Thread(target=lambda: output.extend(iter(process.stdout.readline, "")), daemon=True).start()
        ours: set[int] = set()
        try:
            deadline = time.monotonic() + READY_S
            while not any(f"POST http://127.0.0.1:{port}/score" in line for line in output):
                ours |= process_tree(process.pid)
                assert process.poll() is None, "".join(output)[-4000:]
                assert time.monotonic() < deadline, f"not ready within {READY_S} s:\n{''.join(output)[-4000:]}"
                time.sleep(0.3)
            answer = _score(port)
            assert len(answer["rewards"]) == 1 and isinstance(answer["rewards"][0], float), answer
            time.sleep(LATE_S)
            found = listeners(process_tree(process.pid) | cluster.pids())
            names = {listener.process for listener in found}
            assert {"gcs_server", "raylet"} <= names and any(n.startswith("ray::ServeRepli") for n in names), names
            outside = beyond_loopback(found)
            assert not outside, f"listening beyond loopback: {outside}"
            replicas = cluster.actor_nodes("ServeReplica")
            assert replicas and set(replicas) <= {cluster.head_id, cluster.worker_id}, replicas
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=90) == 0, "".join(output)[-4000:]
        finally:
            for pid in ours - cluster.seen | {process.pid}:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            process.wait(timeout=30)
        # the cluster is still there: both nodes alive, and a new driver joins it
        assert cluster.alive_nodes() == {cluster.head_id, cluster.worker_id}
        assert {cluster.nodes[0]["raylet_pid"], cluster.nodes[1]["raylet_pid"]} <= cluster.alive()
        joined = subprocess.run([sys.executable, "-c", JOIN, cluster.address], cwd=ROOT, env=_env(),
                                capture_output=True, text=True, timeout=120)
        assert joined.returncode == 0, joined.stdout[-2000:] + joined.stderr[-2000:]
        alive = next(line for line in joined.stdout.splitlines() if line.startswith("ALIVE "))
        assert alive == f"ALIVE {sorted([cluster.head_id, cluster.worker_id])}", joined.stdout
    cluster.stop()
    assert not cluster.alive(), f"Ray processes left after the cluster stopped: {cluster.alive()}"
