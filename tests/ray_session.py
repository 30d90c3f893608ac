"""One local Ray per test session for every Ray test (engines and the service): start-up takes seconds."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def local_ray():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    if started:
        try:
            from ray import serve

            serve.shutdown()
        except Exception:  # Serve was never started
            pass
        ray.shutdown()
