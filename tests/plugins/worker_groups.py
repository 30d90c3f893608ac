"""Which tests share a pytest-xdist worker (a plugin; tests/conftest.py registers it). Under ``-n N --dist
loadgroup`` (``pytest.ini``):

* every test on the session's local Ray (``local_ray``, ``serve_port``) runs on one worker, so a run starts one Ray;
* the tests of a module that uses a module- or class-scoped fixture (a tiny model's checkpoints, a served app and its
  browser page, a scored release) run on one worker, so that fixture is built once, not once per worker.

The other tests go to whichever worker is free. The groups are handed out first, the heaviest first (a test that the
quick tier's rule finds slow weighs ten), and the single tests last, filling the workers' gaps: a big group left to
the end would keep one worker busy while the other waits. Without xdist the marker does nothing."""
from __future__ import annotations

import pytest

from tests.plugins.code_reading import item_code
from tests.plugins.slow_tier import slow_reason

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


def _weight(item) -> int:
    return 10 if slow_reason(item_code(item)) else 1


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    groups = {item: worker_group(item) for item in items}
    weights: dict[str, int] = {}
    for item, group in groups.items():
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            weights[group] = weights.get(group, 0) + _weight(item)
    position = {item: k for k, item in enumerate(items)}
    items.sort(key=lambda item: (groups[item] is None, -weights.get(groups[item], 0), groups[item] or "",
                                 position[item]))
