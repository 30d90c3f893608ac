"""Prefix cache for the Qwen2-VL family: each image's prefix (system text + image tokens) is prefilled
once with its 3-D multimodal rotary positions, and every question continues from it with the positions its whole
prompt would get (``rope_deltas``). Reference: the plain path (``prefix_cache=False``), one question per forward.
Tiny fp32 random Qwen2-VL / Qwen2.5-VL on CPU; mixed question lengths; batch 1, 4 and 32."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.helpers.prefix_cache_checks import RTOL, assert_equals_plain, items, plain_answers
from tests.helpers.tiny_qwen_models import make_qwen_chat

IMAGES = [Image.new("RGB", (56, 84), (250, 10, 10)), Image.fromarray(
    np.random.default_rng(0).integers(0, 256, (60, 60, 3), dtype=np.uint8)), Image.new("RGB", (84, 56), (30, 30, 200))]
QUESTIONS = ["is there a cat?", "what color is the table?", "how many dogs are on the table in the image?",
             "is it red?", "does this figure show a person or a tree in the blue image?"]
FAMILIES = ["qwen2_vl", "qwen2_5_vl"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-qwen")
    return {family: make_qwen_chat(root, family) for family in FAMILIES}


def _backend(path, **options):
    from scorers.models.vqa_base import load_vqa_backend

    return load_vqa_backend(str(path), "chat_vlm", device="cpu", **{"batch_size": 4, "max_new_tokens": 4, **options})


@pytest.fixture(scope="module")
def plain_reference(checkpoints):
    return {family: plain_answers(_backend(checkpoints[family], prefix_cache=False), IMAGES, QUESTIONS)
            for family in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("batch_size", [1, 4, 32])
@pytest.mark.parametrize("order_seed", [None, 3])
def test_prefix_cache_equals_plain_path(checkpoints, plain_reference, family, batch_size, order_seed):
    backend = _backend(checkpoints[family], batch_size=batch_size)
    assert backend.prefix_cache, backend.prefix_cache_note
    images, questions = items(IMAGES, QUESTIONS, order_seed)
    assert_equals_plain(backend, plain_reference[family], images, IMAGES, questions)
    assert backend.prefix_cache_note == "on"  # no window fell back to the plain path


def test_without_the_position_fix_the_answers_differ(checkpoints, plain_reference, monkeypatch):
    """Continuing the cache with plain 1-D positions (no ``rope_deltas``): the answers or probabilities move."""
    import torch
    from scorers.models import vqa_base

    monkeypatch.setattr(vqa_base.SharedPrefix, "positions", lambda self, rows, mask: vqa_base._position_ids(mask))
    monkeypatch.setattr(vqa_base.SharedPrefix, "before_generate", lambda self, rows: setattr(
        self.backend.model.model, "rope_deltas", torch.zeros(len(rows), 1, dtype=torch.long)))
    backend = _backend(checkpoints["qwen2_vl"], batch_size=4)
    images, questions = items(IMAGES, QUESTIONS)
    expected = [plain_reference["qwen2_vl"][(IMAGES.index(im), q)] for im, q in zip(images, questions)]
    probabilities = backend.yes_probability(images, questions)
    assert not np.allclose(probabilities, [p for _, p in expected], rtol=RTOL, atol=0)


def test_the_benchmark_command_runs_and_answers_identically(capsys):
    """``benchmarks/bench_vqa.py --compare prefix-cache --family qwen2_vl`` with 1 image and 1 repeat (the full run
    is minutes of CPU)."""
    import importlib.util
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("bench_vqa", root / "benchmarks" / "bench_vqa.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    argv = ["--compare", "prefix-cache", "--family", "qwen2_vl", "--images", "1", "--repeats", "1",
            "--max-new-tokens", "2"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "144 image tokens" in out
    assert re.search(r"speed-up \d+\.\dx; answers identical: True", out)
