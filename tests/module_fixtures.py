"""Fixtures that several test modules share, declared once. A test module imports the ones it uses under the name
its tests ask for (``from tests.module_fixtures import tiny_clip_path as clip_path``); pytest then makes one instance
per module, as if the module had declared it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_embed_models import tiny_models
from tests.ts2_fixture_data import make_data_dir


@pytest.fixture(scope="module")
def full_data_dir_of_module(full_data_dir) -> Path:
    """The full fixture data dir (the session's ``full_data_dir``)."""
    return full_data_dir


@pytest.fixture(scope="module")
def ts2_cache_dir(tmp_path_factory) -> Path:
    """A fresh ``datasets`` cache folder for the module's ``load_ts2`` / export calls."""
    return tmp_path_factory.mktemp("ts2-cache")


@pytest.fixture(scope="module")
def tiny_clip_path():
    """The tiny random CLIP checkpoint (``tests.tiny_embed_models``)."""
    return tiny_models()["clip"]


@pytest.fixture(scope="module")
def three_seg_data_dir(tmp_path_factory) -> Path:
    """A data dir of SEGs 0, 1, 2 (45 images of 16 px), no question tables."""
    return make_data_dir(tmp_path_factory.mktemp("data"), seg_ids=[0, 1, 2], image_size=16, with_questions=False)
