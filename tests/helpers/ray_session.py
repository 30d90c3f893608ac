"""One local Ray per test session for every Ray test (engines and the service), on 127.0.0.1 only (the package's
:func:`scorers.scoring.engines.ray_loopback.start_local_ray`): start-up takes seconds. The fixtures are global
(tests/plugins/shared_fixtures.py), and tests/plugins/worker_groups.py keeps every test that uses them on one
pytest-xdist worker, so a run starts one Ray."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def local_ray():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        from scorers.scoring.engines.ray_loopback import start_local_ray

        start_local_ray(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    if started:
        try:
            from ray import serve

            serve.shutdown()
        except Exception:  # Serve was never started
            pass
        ray.shutdown()


#: the port of the session's Serve proxy, once started
_SERVE_PORT: list[int] = []


@pytest.fixture(scope="session")
def serve_port(local_ray):
    """The one Serve HTTP proxy of the session, on loopback. Serve keeps the proxy of its first ``serve.start``
    for the life of the Ray session (a later ``serve.start`` with another port is ignored), so every module that
    deploys apps shares this port."""
    if not _SERVE_PORT:
        import socket

        from ray import serve

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        _SERVE_PORT.append(port)
    yield _SERVE_PORT[0]
