"""Shared test settings: offline Hub, private HF caches, and the TS2 release tables found as the package finds them
(``tests/helpers/release_data.py``: TS2_DATA, else ../shared/ts2 when it exists; the release cache; the pinned
download). The quick tier's rule, the release-file rule, the skip summary and the fixtures shared across folders are
plugins in ``tests/plugins/``, registered here."""
from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import release_data  # first: it keeps the environment the run started with (TS2_DATA, HF_HOME...)
from tests.plugins import release_files, shared_fixtures, skip_summary, slow_tier, worker_groups

_CACHE = tempfile.mkdtemp(prefix="ts2-tests-hf-")
# Code under test sees a TS2_DATA only when a test sets one (monkeypatch.setenv(release.DATA_ENV, str(shared_ts2))):
# the tests' own release folder is release_data's business, so a test of the default lookup stays honest.
os.environ.pop(release_data.DATA_ENV, None)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["HF_HOME"] = _CACHE
os.environ["HF_DATASETS_CACHE"] = os.path.join(_CACHE, "datasets")


def pytest_configure(config):
    for plugin in (slow_tier, release_files, skip_summary, shared_fixtures, worker_groups):
        if not config.pluginmanager.is_registered(plugin):
            config.pluginmanager.register(plugin, plugin.__name__)
    from tests.helpers.reference_meta import RUN_CACHE_ENV

    if RUN_CACHE_ENV not in os.environ:  # the run's first process; pytest-xdist's workers inherit the folder
        os.environ[RUN_CACHE_ENV] = tempfile.mkdtemp(prefix="ts2-tests-run-")
        config.add_cleanup(functools.partial(_remove_run_cache, os.environ[RUN_CACHE_ENV]))


def _remove_run_cache(folder: str) -> None:
    """At the end of the run: the run's shared folder goes, and with it what no later run may reuse."""
    from tests.helpers.reference_meta import RUN_CACHE_ENV

    shutil.rmtree(folder, ignore_errors=True)
    os.environ.pop(RUN_CACHE_ENV, None)


@pytest.fixture(autouse=True)
def _fresh_hub_reachability(monkeypatch):
    """Each test probes the Hub afresh: ``scorers.models.loading.hub_reachable`` remembers every endpoint's answer
    for the life of the process, so a test pointing the Hub at a loopback port would otherwise inherit the answer an
    earlier test got from a server that happened to have the same host and port."""
    loading = sys.modules.get("scorers.models.loading")
    if loading is not None:  # not imported yet: nothing remembered yet
        monkeypatch.setattr(loading, "_reachable", {})


@pytest.fixture(scope="session")
def shared_ts2() -> Path:
    """A read-only folder laid out like the TS2 release (``tests/helpers/release_data.py``: ``$TS2_DATA`` or
    ``../shared/ts2`` itself when it holds every file found, else links to each file where it was found: that folder,
    the release cache, the pinned download). Skips (one reason, naming the fix) when ``metadata.csv`` cannot be had."""
    folder = release_data.release_dir()
    if folder is None:
        pytest.skip(release_data.skip_reason("metadata.csv"))
    return folder


@pytest.fixture(scope="session")
def full_data_dir(tmp_path_factory, shared_ts2) -> Path:
    """A data_dir with all 2,840 release rows and tiny generated images (built once per test session; read-only)."""
    from tests.helpers.ts2_fixture_data import make_data_dir

    return make_data_dir(tmp_path_factory.mktemp("ts2-data"))
