"""Prefix cache for the Qwen2-VL family (issue 26 item 6): each image's prefix (system text + image tokens) is prefilled
once with its 3-D multimodal rotary positions, and every question continues from it with the positions its whole
prompt would get (``rope_deltas``). Reference: the plain path (``prefix_cache=False``), one question per forward.
Tiny fp32 random Qwen2-VL / Qwen2.5-VL on CPU; mixed question lengths; batch 1, 4 and 32."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

RTOL = 1e-5  # as tests/test_prefix_cache.py: fp32 reduction order only
IMAGES = [Image.new("RGB", (56, 84), (250, 10, 10)), Image.fromarray(
    np.random.default_rng(0).integers(0, 256, (60, 60, 3), dtype=np.uint8)), Image.new("RGB", (84, 56), (30, 30, 200))]
QUESTIONS = ["is there a cat?", "what color is the table?", "how many dogs are on the table in the image?",
             "is it red?", "does this figure show a person or a tree in the blue image?"]
FAMILIES = ["qwen2_vl", "qwen2_5_vl"]


def make_qwen_chat(root: Path, family: str, seed: int = 0) -> Path:
    """A tiny Qwen2-VL (or Qwen2.5-VL) chat checkpoint: loads through AutoModelForImageTextToText/AutoProcessor."""
    import transformers

    from tests.tiny_reward_models import QWEN2VL_CHAT_TEMPLATE
    from tests.tiny_vqa_models import _bpe_tokenizer

    torch.manual_seed(seed)
    specials = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
    tokenizer = _bpe_tokenizer(extra_special=specials)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in specials}
    prefix = "Qwen2VL" if family == "qwen2_vl" else "Qwen2_5_VL"
    image_processor = transformers.Qwen2VLImageProcessor(min_pixels=28 * 28, max_pixels=28 * 28 * 16)
    processor = getattr(transformers, f"{prefix}Processor")(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=transformers.Qwen2VLVideoProcessor(),
        chat_template=QWEN2VL_CHAT_TEMPLATE)
    vision = dict(depth=2, hidden_size=32, num_heads=2, patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                  in_chans=3)
    vision.update(dict(embed_dim=32, mlp_ratio=2) if family == "qwen2_vl" else
                  dict(intermediate_size=64, out_hidden_size=32, window_size=56, fullatt_block_indexes=[1]))
    config = getattr(transformers, f"{prefix}Config")(
        text_config=dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                         rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]}, initializer_range=0.2,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None),
        vision_config=vision, image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    model = getattr(transformers, f"{prefix}ForConditionalGeneration")(config).eval()
    out = Path(root) / family
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-qwen")
    return {family: make_qwen_chat(root, family) for family in FAMILIES}


def _backend(path, **options):
    from scorers.models.vqa_base import load_vqa_backend

    return load_vqa_backend(str(path), "chat_vlm", device="cpu", **{"batch_size": 4, "max_new_tokens": 4, **options})


def _items(order_seed=None):
    items = [(im, q) for im in IMAGES for q in QUESTIONS]
    if order_seed is not None:
        items = [items[i] for i in np.random.default_rng(order_seed).permutation(len(items))]
    return [im for im, _ in items], [q for _, q in items]


@pytest.fixture(scope="module")
def plain_reference(checkpoints):
    out = {}
    for family in FAMILIES:
        plain = _backend(checkpoints[family], prefix_cache=False)
        out[family] = {(i, q): (plain.answer([im], [q])[0], plain.yes_probability([im], [q])[0])
                       for i, im in enumerate(IMAGES) for q in QUESTIONS}
    return out


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("batch_size", [1, 4, 32])
@pytest.mark.parametrize("order_seed", [None, 3])
def test_prefix_cache_equals_plain_path(checkpoints, plain_reference, family, batch_size, order_seed):
    backend = _backend(checkpoints[family], batch_size=batch_size)
    assert backend.prefix_cache, backend.prefix_cache_note
    images, questions = _items(order_seed)
    expected = [plain_reference[family][(IMAGES.index(im), q)] for im, q in zip(images, questions)]
    answers = backend.answer(images, questions)
    assert backend.prefix_cache_note == "on"  # no window fell back to the plain path
    assert answers == [a for a, _ in expected]
    assert len(set(answers)) > 1  # the tiny models do react to their input
    np.testing.assert_allclose(backend.yes_probability(images, questions), [p for _, p in expected], rtol=RTOL,
                               atol=0)


def test_without_the_position_fix_the_answers_differ(checkpoints, plain_reference, monkeypatch):
    """Continuing the cache with plain 1-D positions (no ``rope_deltas``): the answers or probabilities move."""
    from scorers.models import vqa_base

    monkeypatch.setattr(vqa_base.SharedPrefix, "positions", lambda self, rows, mask: vqa_base._position_ids(mask))
    monkeypatch.setattr(vqa_base.SharedPrefix, "before_generate", lambda self, rows: setattr(
        self.backend.model.model, "rope_deltas", torch.zeros(len(rows), 1, dtype=torch.long)))
    backend = _backend(checkpoints["qwen2_vl"], batch_size=4)
    images, questions = _items()
    expected = [plain_reference["qwen2_vl"][(IMAGES.index(im), q)] for im, q in zip(images, questions)]
    probabilities = backend.yes_probability(images, questions)
    assert not np.allclose(probabilities, [p for _, p in expected], rtol=RTOL, atol=0)
