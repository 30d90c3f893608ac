"""The quick tier (``pytest -m "not slow"``): the rule in tests/plugins/slow_tier.py that marks tests ``slow`` by what their code
runs, checked on fake items whose code is known; and collection imports no heavy module."""
from __future__ import annotations

import subprocess
import sys
import types

import pytest

from tests.plugins.slow_tier import HEAVY_AT_COLLECTION, HEAVY_MODULES, pytest_collection_modifyitems


# ------------------------------------------------------- code of known kind, for fake items (names start with "_")

def _runs_a_process():
    return subprocess.run([sys.executable, "-c", "pass"], check=True)


def _calls_a_helper_that_runs_a_process():
    return _runs_a_process()


def _imports_a_process_module_in_its_body():
    from multiprocessing import get_context

    return get_context


def _pure():
    """Says subprocess.run, sys.executable and raw_answers only in words."""
    # subprocess.run([sys.executable, "-c", "pass"]) in a comment
    return sum(range(3))


def _reads_raw_answers(shared):
    return sorted((shared / "raw_answers").glob("*.csv"))


def _names_raw_answers_files_only():
    return ["metadata.csv", "raw_answers/llava_dsg.csv"]  # a file's name, not the folder read whole


def _starts_ray():  # used as a fixture
    import ray

    ray.init(num_cpus=1)


def _builds_a_tiny_model(tmp_path):
    from tests.helpers.tiny_embed_models import build_hf_clip  # followed: its code seeds torch

    return build_hf_clip(tmp_path)


def _imports_the_ray_fixture_in_its_body():
    from tests.helpers.ray_session import local_ray  # followed: the fixture's function starts Ray

    return local_ray


def _uses_a_browser():
    from playwright import sync_api

    return sync_api.sync_playwright


class _FakeItem:
    """What the rule reads of a pytest item: the test function, its fixtures' functions, and add_marker."""

    def __init__(self, function, fixtures=()):
        self.function = function
        self._fixtureinfo = types.SimpleNamespace(
            name2fixturedefs={f.__name__: [types.SimpleNamespace(func=f)] for f in fixtures})
        self.markers = []

    def add_marker(self, marker):
        self.markers.append(marker)


@pytest.mark.parametrize("function, fixtures, reason", [
    ("_runs_a_process", [], "starts a process"),
    ("_calls_a_helper_that_runs_a_process", [], "starts a process"),
    ("_imports_a_process_module_in_its_body", [], "starts a process"),
    ("_pure", [], None),
    ("_pure", ["_pure"], None),
    ("_pure", ["_starts_ray"], "starts Ray"),
    ("_uses_a_browser", [], "starts a browser"),
    ("_builds_a_tiny_model", [], "runs a model"),
    ("_imports_the_ray_fixture_in_its_body", [], "starts Ray"),
    ("_reads_raw_answers", [], "reads the release's raw answer files whole"),
    ("_names_raw_answers_files_only", [], None),
])
def test_the_rule_marks_slow_what_the_code_runs(function, fixtures, reason):
    namespace = globals()  # looked up by name: this test's own code names none of them, so it stays quick
    item = _FakeItem(namespace[function], [namespace[name] for name in fixtures])
    pytest_collection_modifyitems(None, [item])
    assert [(m.name, m.kwargs) for m in item.markers] == ([("slow", {"reason": reason})] if reason else [])


def test_this_test_is_quick_and_the_marker_is_registered(request):
    assert request.node.get_closest_marker("slow") is None
    assert any(line.startswith("slow:") for line in request.config.getini("markers"))


def test_collection_imports_no_heavy_module(request):
    """Collecting the test modules (all of them in a full run) imported none of HEAVY_MODULES: a test module imports
    them in a test body or a fixture."""
    assert "torch" in HEAVY_MODULES
    assert request.config.stash[HEAVY_AT_COLLECTION] == []
