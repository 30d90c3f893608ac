"""Which tests share a pytest-xdist worker (a plugin; tests/conftest.py registers it). Under ``-n N --dist
loadgroup`` (``pytest.ini``):

* every test on the session's local Ray (``local_ray``, ``serve_port``) runs on one worker, so a run starts one Ray;
* the tests of a module that uses a module- or class-scoped fixture (a tiny model's checkpoints, a served app and its
  browser page, a scored release) run on one worker, so that fixture is built once, not once per worker.

The other tests go to whichever worker is free. Without xdist the marker does nothing."""
from __future__ import annotations

import pytest

RAY_FIXTURES = {"local_ray", "serve_port"}
SHARED_SCOPES = {"module", "class", "package"}


def worker_group(item) -> str | None:
    """The xdist group of ``item``: ``"ray"``, its module's name, or None (any worker)."""
    names = set(getattr(item, "fixturenames", ()))
    if RAY_FIXTURES & names:
        return "ray"
    fixturedefs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    if any(definition.scope in SHARED_SCOPES for definitions in fixturedefs.values() for definition in definitions):
        return item.module.__name__
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        group = worker_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
