"""A local Ray that listens on 127.0.0.1 only: the one way this package starts a Ray of its own (the Ray Data engine's
:func:`scorers.scoring.engines.ray_data.ensure_ray`, ``ts2 serve``, the tests' ``local_ray`` fixture).

What binds where (Ray 2.60, measured with ``ss -ltnp``): a plain ``ray.init()`` puts the GCS, the raylet, the workers,
the metrics and dashboard agents on ``*`` / ``0.0.0.0``, the runtime-env and dashboard agents' HTTP on the LAN address;
``_node_ip_address="127.0.0.1"`` alone changes nothing (``ray.init`` turns a loopback address into the LAN one). What
moves them is Ray's single-node switch ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: Ray then takes 127.0.0.1 as its node
address and every process binds it. Ray reads it when ``ray`` is imported, so :func:`start_local_ray` sets it for the
processes Ray starts and, when this process imported ``ray`` before, sets the constant Ray read from it
(``ray._private.ray_constants.ENABLE_RAY_CLUSTER``). One listener ignores the node address: Ray Serve's replica opens
its inter-deployment gRPC server on ``[::]:0``, hard-coded; the workers' setup hook :func:`loopback_grpc` makes it
127.0.0.1. After the start, the node address is checked: a Ray that did not come up on 127.0.0.1 is shut down and
refused (fail closed). The same switch lets this process join a cluster on a loopback address
(:func:`join_ray`; ``ray start --head --node-ip-address 127.0.0.1``, a cluster of ``ray.cluster_utils.Cluster``):
without it ``ray.init(address="127.0.0.1:PORT")`` dials the LAN address instead and waits for ever. No ``ray``
import at module level.
"""
from __future__ import annotations

import os
import sys

__all__ = ["LOOPBACK_ENV", "LOOPBACK_HOST", "SETUP_HOOK", "is_loopback_address", "join_ray", "loopback_grpc",
           "start_local_ray"]

#: Ray's switch for a single-node Ray on 127.0.0.1 (read by ``ray._private.ray_constants`` at import)
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
LOOPBACK_HOST = "127.0.0.1"
#: the workers' setup hook (``runtime_env["worker_process_setup_hook"]``), by import path: :func:`loopback_grpc`
SETUP_HOOK = f"{__name__}.loopback_grpc"
_WILDCARDS = ("[::]:", "0.0.0.0:")
_LOOPBACK_HOSTS = ("localhost", "::1")


def _loopback_address(address: str) -> str:
    for wildcard in _WILDCARDS:
        if address.startswith(wildcard):
            return f"{LOOPBACK_HOST}:{address[len(wildcard):]}"
    return address


def loopback_grpc() -> None:
    """In a worker of a local Ray: the gRPC servers that Ray code opens on every interface through
    ``ray._common.tls_utils.add_port_to_grpc_server`` (Ray Serve's replica: ``[::]:0``) open on 127.0.0.1 instead.
    Patches the function where Ray keeps it (and in Serve's replica module if already imported). Idempotent."""
    from ray._common import tls_utils

    original = tls_utils.add_port_to_grpc_server
    if getattr(original, "loopback", False):
        return

    def add_port_on_loopback(server, address):
        return original(server, _loopback_address(address))

    add_port_on_loopback.loopback = True
    tls_utils.add_port_to_grpc_server = add_port_on_loopback
    replica = sys.modules.get("ray.serve._private.replica")
    if replica is not None:
        replica.add_port_to_grpc_server = add_port_on_loopback


def is_loopback_address(address: str | None) -> bool:
    """``address``, a cluster's GCS address (``HOST:PORT``), names this machine's loopback: 127.x.x.x, ``localhost``
    or ``::1``. A Ray Client address (``ray://HOST:PORT``) is not one, wherever it points: Ray dials it as given, and
    a port-forward to a remote cluster (``ray://127.0.0.1:10001``) leads to that cluster's own addresses."""
    if not address or "://" in address:
        return False
    host = address.rsplit(":", 1)[0].strip("[]").lower()
    return host.startswith("127.") or host in _LOOPBACK_HOSTS


def _loopback_switch() -> None:
    os.environ[LOOPBACK_ENV] = "0"  # the processes Ray starts import ray themselves: they read it
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False  # this process: read when ray was imported, maybe before the line above


def join_ray(address: str | None = None, **init_kwargs):
    """Join the Ray cluster at ``address`` (default ``$RAY_ADDRESS``, or the one ``ray start`` made on this machine):
    ``ray.init(address=address, **init_kwargs)``, and return its context. A cluster on a loopback address
    (:func:`is_loopback_address`) is joined with Ray's loopback switch and the workers' setup hook :data:`SETUP_HOOK`,
    as :func:`start_local_ray` starts one: its address is then dialled as given, and this job's processes listen on
    127.0.0.1 as the cluster does. Any other address is joined as Ray joins it."""
    import ray

    if is_loopback_address(address if address is not None else os.environ.get("RAY_ADDRESS")):
        _loopback_switch()
        runtime_env = dict(init_kwargs.pop("runtime_env", None) or {})
        runtime_env["worker_process_setup_hook"] = SETUP_HOOK
        init_kwargs["runtime_env"] = runtime_env
    return ray.init(address=address, **init_kwargs)


def start_local_ray(**init_kwargs):
    """Start a new local Ray on 127.0.0.1 (``ray.init(address="local", _node_ip_address="127.0.0.1",
    **init_kwargs)`` with Ray's loopback switch and the workers' setup hook :data:`SETUP_HOOK`) and return
    ``ray.init``'s context. ``RAY_ADDRESS`` and a ``ray start`` cluster of this machine are not joined (joining a
    cluster is ``ray.init(address=...)``). Raises ``RuntimeError`` (after shutting it down) when Ray came up on another
    node address anyway."""
    _loopback_switch()
    import ray

    runtime_env = dict(init_kwargs.pop("runtime_env", None) or {})
    runtime_env["worker_process_setup_hook"] = SETUP_HOOK
    context = ray.init(address="local", _node_ip_address=LOOPBACK_HOST, runtime_env=runtime_env, **init_kwargs)
    node = (getattr(context, "address_info", None) or {}).get("node_ip_address")
    if node != LOOPBACK_HOST:
        ray.shutdown()
        raise RuntimeError(f"the local Ray started on node address {node!r}, not {LOOPBACK_HOST}: refused (it "
                           f"would listen beyond this machine); set {LOOPBACK_ENV}=0 before Python imports ray")
    return context
