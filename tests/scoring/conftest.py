"""Fixtures of the scoring/ tests: a data dir of SEGs 0, 1, 2 and the tiny CLIP, built once per session (read-only:
a test that changes files copies the folder first), and the CLIPScore scorer on them."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """A data dir of SEGs 0, 1, 2 (45 images of 16 px), no question tables."""
    from tests.helpers.ts2_fixture_data import make_data_dir

    return make_data_dir(tmp_path_factory.mktemp("data"), seg_ids=[0, 1, 2], image_size=16, with_questions=False)


@pytest.fixture(scope="session")
def clip_path() -> str:
    """The tiny random CLIP checkpoint (``tests.helpers.tiny_embed_models``)."""
    from tests.helpers.tiny_embed_models import tiny_models

    return tiny_models()["clip"]


@pytest.fixture(scope="module")
def metadata(data_dir):
    from scorers.tables.pandas_tables import read_metadata

    return read_metadata(data_dir / "metadata.csv")


@pytest.fixture(scope="module")
def scorer(clip_path):
    from scorers.metrics.embedding import CLIPScore

    return CLIPScore(clip_path, form="cosine")
