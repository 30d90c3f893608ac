"""Prefix cache of the prompted VQA backends: each image's vision tower (and, for LLaVA-architecture models,
its LLM prefill of system text + image tokens) runs once, and every question on it continues from there.

The reference is the plain path (``prefix_cache=False``), one question per forward, so no padding and no cache: the
model's own ``generate``/``forward`` on one unpadded prompt. Tiny fp32 models on CPU (tests/helpers/tiny_vqa_models.py).
"""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.helpers import tiny_vqa_models as tiny
from tests.helpers.prefix_cache_checks import RTOL, assert_equals_plain, items, plain_answers


@pytest.fixture(autouse=True, scope="module")
def extra_installed():
    """The [models] extra is a test dependency, never skipped: missing, each test here fails. Imported when the
    first test runs, not at collection."""
    import transformers  # noqa: F401


FAMILIES = ["llava", "chat_vlm", "instructblip"]
IMAGES = [Image.new("RGB", (40, 40), c) for c in ((250, 10, 10), (10, 250, 10), (30, 30, 200))]
# different lengths on the same image, so question batches need padding behind the shared prefix
QUESTIONS = ["is there a cat?", "what color is the table?", "how many dogs are on the table in the image?",
             "is it red?", "does this figure show a person or a tree in the blue image?"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-prefix")
    return {"instructblip": tiny.make_instructblip(root), "llava": tiny.make_llava(root),
            "chat_vlm": tiny.make_chat_vlm(root)}


def _backend(kind, path, **options):
    from scorers.models.vqa_base import load_vqa_backend

    return load_vqa_backend(str(path), kind, device="cpu", **{"batch_size": 4, "max_new_tokens": 4, **options})


@pytest.fixture(scope="module")
def plain_reference(checkpoints):
    """Per family: {(image index, question): (answer, P(yes))} from the plain path, one question per forward."""
    return {kind: plain_answers(_backend(kind, checkpoints[kind], prefix_cache=False), IMAGES, QUESTIONS)
            for kind in FAMILIES}


@pytest.mark.parametrize("kind", FAMILIES)
@pytest.mark.parametrize("batch_size", [1, 4, 32])
@pytest.mark.parametrize("order_seed", [None, 3])
def test_prefix_cache_equals_plain_path(checkpoints, plain_reference, kind, batch_size, order_seed):
    backend = _backend(kind, checkpoints[kind], batch_size=batch_size)
    assert backend.prefix_cache, backend.prefix_cache_note
    images, questions = items(IMAGES, QUESTIONS, order_seed)
    assert_equals_plain(backend, plain_reference[kind], images, IMAGES, questions)


def _count_batches(module):
    """Batch sizes of every call of ``module`` (a vision tower or projector)."""
    sizes = []
    module.register_forward_hook(lambda m, args, kwargs, out: sizes.append(
        (args[0] if args else next(iter(kwargs.values()))).shape[0]), with_kwargs=True)
    return sizes


@pytest.mark.parametrize("kind", FAMILIES)
def test_each_image_encoded_once_at_most_batch_size_at_a_time(checkpoints, kind):
    """3 images x 5 questions, batch_size 2: images encoded in windows of <= 2, 3 encodings in all (plain: 15)."""
    images, questions = items(IMAGES, QUESTIONS, order_seed=5)
    counts = {}
    for prefix_cache in (True, False):
        backend = _backend(kind, checkpoints[kind], batch_size=2, prefix_cache=prefix_cache)
        # LLaVA: the projector runs exactly where image features enter the LLM prefill
        module = backend.model.vision_model if kind == "instructblip" else backend.model.model.multi_modal_projector
        sizes = _count_batches(module)
        backend.answer(images, questions)
        counts[prefix_cache] = sizes
    assert sum(counts[True]) == len(IMAGES) and max(counts[True]) <= 2
    assert sum(counts[False]) == len(questions)


def test_llava_prefill_runs_image_tokens_once_per_image(checkpoints):
    """The LLM sees each image's prefix tokens once: the prefix forward, then only question tokens."""
    backend = _backend("llava", checkpoints["llava"], batch_size=8, max_new_tokens=1)
    lengths = []
    backend.model.model.language_model.register_forward_hook(
        lambda m, args, kwargs, out: lengths.append(tuple(kwargs["inputs_embeds"].shape[:2])), with_kwargs=True)
    images, questions = [IMAGES[0]] * 3, QUESTIONS[:3]
    backend.answer(images, questions)
    prefix_tokens = backend.processor(images=IMAGES[0], text="USER: <image>", return_tensors="pt")["input_ids"].shape[1]
    suffix_tokens = [len(backend.processor.tokenizer(f"\n{q}\nAnswer the question using a single word or phrase. "
                                                     "ASSISTANT:", add_special_tokens=False)["input_ids"])
                     for q in questions]
    # one prefix row for the one image, then the 3 questions (left-padded to the longest) behind it
    assert lengths == [(1, prefix_tokens), (3, max(suffix_tokens))]


def test_chat_vlm_outside_verified_architectures_uses_plain_path(checkpoints, monkeypatch):
    from scorers.models import chat_vlm

    monkeypatch.setattr(chat_vlm, "SHARED_PREFIX_MODEL_TYPES", frozenset({"qwen2_vl"}))
    backend = _backend("chat_vlm", checkpoints["chat_vlm"])
    assert not backend.prefix_cache and "verified for ['qwen2_vl'] only" in backend.prefix_cache_note
    sizes = _count_batches(backend.model.model.multi_modal_projector)
    images, questions = items(IMAGES, QUESTIONS)
    plain = _backend("chat_vlm", checkpoints["chat_vlm"], prefix_cache=False)
    assert backend.answer(images, questions) == [plain.answer([im], [q])[0] for im, q in zip(images, questions)]
    assert sum(sizes) == len(questions)


def test_prompt_without_shared_prefix_falls_back(checkpoints):
    """A prompt with the question before the image has no question-free prefix: the plain path answers."""
    from scorers.models.llava import LlavaVQA

    class QuestionFirst(LlavaVQA):
        def prompt(self, question):
            return f"USER: {question} <image>\nASSISTANT:"

    backend = QuestionFirst(str(checkpoints["llava"]), device="cpu", batch_size=4, max_new_tokens=4)
    plain = QuestionFirst(str(checkpoints["llava"]), device="cpu", batch_size=4, max_new_tokens=4, prefix_cache=False)
    images, questions = items(IMAGES, QUESTIONS, order_seed=1)
    assert backend.answer(images, questions) == [plain.answer([im], [q])[0] for im, q in zip(images, questions)]
    assert backend.prefix_cache_note.startswith("plain path for some questions")
    np.testing.assert_allclose(backend.yes_probability(images, questions),
                               [plain.yes_probability([im], [q])[0] for im, q in zip(images, questions)], rtol=RTOL)


def test_image_windows_hand_computed():
    from scorers.models.vqa_base import image_windows

    a, b, c = object(), object(), object()
    windows = image_windows([a, b, a, c, b, c, a], size=2)
    assert windows == [([a, b], [0, 1, 2, 4, 6], [0, 1, 0, 1, 0]), ([c], [3, 5], [0, 0])]
    assert image_windows([], size=2) == []


def test_bench_command_in_readme_runs(capsys):
    """The prefix-cache benchmark command of docs/scorers/qga.md runs (1 image, 1 repeat): 576 image tokens, answers
    identical, a ``speed-up N.Nx`` line. Wall time is not asserted (benchmarks report it)."""
    import importlib.util
    import re
    import shlex
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    line = next(line for line in (root / "docs" / "scorers" / "qga.md").read_text().splitlines()
                if "bench_vqa.py --compare prefix-cache" in line)
    argv = shlex.split(line.split("bench_vqa.py", 1)[1].split("#")[0])
    spec = importlib.util.spec_from_file_location("bench_vqa", root / "benchmarks" / "bench_vqa.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(argv + ["--images", "1", "--repeats", "1", "--max-new-tokens", "2"]) == 0
    out = capsys.readouterr().out
    assert "576 image tokens" in out
    assert re.search(r"speed-up \d+\.\dx; answers identical: True", out)
