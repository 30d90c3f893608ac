"""A real two-node Ray cluster on this machine, on 127.0.0.1 only, for the tests and ``benchmarks/bench_cluster.py``.

Ray's multi-node helper :class:`ray.cluster_utils.Cluster` starts a head node (GCS, raylet, dashboard for the state
API) and a worker node (its own raylet and object store), each with one CPU and a custom resource of its own
(:data:`HEAD_RESOURCE`, :data:`WORKER_RESOURCE`), so they are two nodes of one cluster. Ray's loopback switch
(``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, :data:`scorers.scoring.engines.ray_loopback.LOOPBACK_ENV`) and
``node_ip_address=127.0.0.1`` keep every process on loopback (``ray start`` for a worker node refuses to run with that
switch; the helper starts the node's processes itself).

The cluster lives in a process of its own (``python -m tests.helpers.ray_cluster``), started in a session of its own:
it prints one JSON line (the GCS address, the node ids, each node's raylet pid), then runs until its stdin closes, and
then shuts the cluster down. :class:`LoopbackCluster` drives it: ``with LoopbackCluster() as cluster:`` ... and on
exit it closes stdin, waits at most ``STOP_S`` and then kills every process of the cluster's session that is left
(bounded: never a Ray process behind)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAD_RESOURCE, WORKER_RESOURCE = "ts2_head", "ts2_worker"
READY_S = 120
STOP_S = 30
LOOPBACK = "127.0.0.1"


def _serve_cluster(worker_cpus: int, head_cpus: int) -> None:
    """The cluster process: start, report, wait for stdin to close, shut down."""
    from tests.helpers.environment import free_port

    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before ray is imported: every process on 127.0.0.1
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "node_ip_address": LOOPBACK, "num_cpus": head_cpus, "resources": {HEAD_RESOURCE: 1},
        "include_dashboard": True, "dashboard_host": LOOPBACK, "dashboard_port": free_port(),
        "dashboard_agent_listen_port": free_port()})  # not Ray's fixed default: clusters of parallel tests coexist
    nodes = [cluster.head_node]
    if worker_cpus:
        nodes.append(cluster.add_node(node_ip_address=LOOPBACK, num_cpus=worker_cpus,
                                      resources={WORKER_RESOURCE: 1}))
    cluster.wait_for_nodes()
    # the helper wrote this cluster's address to /tmp/ray/ray_current_cluster, where a plain ray.init() or
    # "auto" of any process of the machine would find and join it: this cluster is joined by its address only
    from ray._common.utils import reset_ray_address

    reset_ray_address()
    facts = {"address": cluster.address, "dashboard": cluster.webui_url,
             "session_dir": cluster.head_node.get_session_dir_path(),
             "nodes": [{"node_id": node.node_id, "raylet_pid": _raylet_pid(node), "head": node is cluster.head_node}
                       for node in nodes]}
    print("CLUSTER " + json.dumps(facts), flush=True)
    sys.stdin.read()
    cluster.shutdown()
    print("STOPPED", flush=True)


def _raylet_pid(node) -> int:
    from ray._private import ray_constants

    return node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid


class LoopbackCluster:
    """``with LoopbackCluster() as cluster``: a two-node cluster (``worker_cpus=0``: the head alone), its GCS
    ``address`` (``127.0.0.1:PORT``: ``--ray-address``), ``head_id`` / ``worker_id`` (node ids), ``worker_raylet_pid``
    and ``pids()`` (every process of the cluster now)."""

    def __init__(self, *, head_cpus: int = 1, worker_cpus: int = 1):
        self.head_cpus, self.worker_cpus = head_cpus, worker_cpus
        self.process = None
        self.output: list[str] = []
        self.seen: set[int] = set()

    def __enter__(self) -> "LoopbackCluster":
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
                   OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.ray_cluster", str(self.worker_cpus), str(self.head_cpus)], cwd=ROOT,
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        threading.Thread(target=lambda: self.output.extend(iter(self.process.stdout.readline, "")),
                         daemon=True).start()
        try:
            deadline = time.monotonic() + READY_S
            while not any(line.startswith("CLUSTER ") for line in self.output):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the cluster did not start within {READY_S} s:\n{self.log()}")
                time.sleep(0.1)
        except BaseException:
            self.stop()
            raise
        facts = json.loads(next(line for line in self.output if line.startswith("CLUSTER "))[len("CLUSTER "):])
        self.address, self.dashboard, self.session_dir = facts["address"], facts["dashboard"], facts["session_dir"]
        self.nodes = facts["nodes"]
        self.head_id = next(n["node_id"] for n in self.nodes if n["head"])
        workers = [n for n in self.nodes if not n["head"]]
        self.worker_id = workers[0]["node_id"] if workers else None
        self.worker_raylet_pid = workers[0]["raylet_pid"] if workers else None
        self.pids()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def state_address(self) -> str:
        """The address of Ray's state API (the head's dashboard, on 127.0.0.1)."""
        return f"http://{self.dashboard}"

    def actor_nodes(self, class_part: str) -> dict[str, set[str]]:
        """Ray's state API: node id -> the states of the actors whose class name contains ``class_part`` (dead ones
        included: the state API keeps them; an actor that was never placed has no node and is left out)."""
        from ray.util.state import list_actors

        found: dict[str, set[str]] = {}
        for actor in list_actors(address=self.state_address(), detail=True, limit=10_000,
                                 raise_on_missing_output=False):
            if class_part in (actor.class_name or "") and actor.node_id:
                found.setdefault(actor.node_id, set()).add(actor.state)
        return found

    def task_nodes(self, name_part: str) -> dict[str, int]:
        """Ray's state API: node id -> how many tasks whose name contains ``name_part`` finished there."""
        from ray.util.state import list_tasks

        found: dict[str, int] = {}
        for task in list_tasks(address=self.state_address(), detail=True, limit=10_000, raise_on_missing_output=False):
            if name_part in (task.name or "") and task.state == "FINISHED" and task.node_id:
                found[task.node_id] = found.get(task.node_id, 0) + 1
        return found

    def alive_nodes(self) -> set[str]:
        """Ray's state API: the ids of the nodes alive now."""
        from ray.util.state import list_nodes

        return {node.node_id for node in list_nodes(address=self.state_address(), limit=100,
                                                    raise_on_missing_output=False) if node.state == "ALIVE"}

    def log(self) -> str:
        return "".join(self.output)[-4000:]

    def pids(self) -> set[int]:
        """The cluster's processes now (the helper process, what it started, and every process that names the
        session's folder); remembered, so that :meth:`stop` reaches them even after their parent died."""
        from scorers.rewards.ray_local import descendants, session_processes

        found = descendants(self.process.pid) | {self.process.pid}
        if getattr(self, "session_dir", None):
            found |= set(session_processes(self.session_dir))
        self.seen |= found
        return found

    def alive(self) -> set[int]:
        """Those of the cluster's processes (ever seen, or naming its session) that still run."""
        return {pid for pid in self.pids() | self.seen if _running(pid)}

    def stop(self) -> None:
        """Shut the cluster down (stdin closed: Ray's own shutdown), at most ``STOP_S``; then kill what is left."""
        if self.process is None:
            return
        try:
            self.pids()
        except Exception:
            pass
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 10
        while True:
            left = self.alive()
            if not left or time.monotonic() > deadline:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.2)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def _running(pid: int) -> bool:
    """``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


if __name__ == "__main__":
    _serve_cluster(int(sys.argv[1]), int(sys.argv[2]))
