"""Fixtures of the ts2/ tests: the full fixture data dir and a ``datasets`` cache folder per module."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def data_dir(full_data_dir) -> Path:
    """The full fixture data dir (the session's ``full_data_dir``: every release row, tiny images; read-only)."""
    return full_data_dir


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    """A fresh ``datasets`` cache folder for the module's ``load_ts2`` / export calls."""
    return tmp_path_factory.mktemp("ts2-cache")
