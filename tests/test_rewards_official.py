"""Opt-in: the official ``hpsv2`` package itself against ``scorers``' HPSv2 on the same tiny weights.

Set ``TS2_HPSV2_SRC`` to an unpacked ``hpsv2`` wheel (``pip download hpsv2==1.2.0 --no-deps`` then unzip); the test
copies its package to a temp folder, adds what the wheel lacks offline (open_clip's BPE vocabulary file, a tiny model
config; a stand-in for the progress-bar module ``clint`` that only its download helper uses), and runs the official
``create_model_and_transforms(..., light_augmentation=True)``, ``preprocess_val`` and ``model(image, text)`` one image
per call. Measured 2026-11-24: preprocessing identical (max difference 0.0), scores within 1.3e-7.
"""
from __future__ import annotations

import os
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

SRC = os.environ.get("TS2_HPSV2_SRC")
pytestmark = pytest.mark.skipif(not SRC, reason="set TS2_HPSV2_SRC to an unpacked hpsv2 wheel to run")

TINY = ('{"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, '
        '"patch_size": 8}, "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, '
        '"layers": 2}}')


def test_official_hpsv2_package_equals_ours(tmp_path, monkeypatch):
    import open_clip

    from scorers.preference import HPSv2Score
    from tests.tiny_embed_models import build_open_clip

    root = tmp_path / "official"
    shutil.copytree(Path(SRC) / "hpsv2", root / "hpsv2")
    fork = root / "hpsv2" / "src" / "open_clip"
    shutil.copy(Path(open_clip.__file__).parent / "bpe_simple_vocab_16e6.txt.gz", fork)
    (fork / "model_configs" / "TinyTS2.json").write_text(TINY)
    clint = types.ModuleType("clint")
    clint.textui = types.ModuleType("clint.textui")
    clint.textui.progress = None
    monkeypatch.setitem(sys.modules, "clint", clint)
    monkeypatch.setitem(sys.modules, "clint.textui", clint.textui)
    monkeypatch.syspath_prepend(str(root))
    from hpsv2.src.open_clip import create_model_and_transforms, get_tokenizer

    folder = build_open_clip(tmp_path / "tiny")
    model, _, preprocess_val = create_model_and_transforms(
        "TinyTS2", None, precision="fp32", device="cpu", jit=False, force_quick_gelu=False, force_custom_text=False,
        force_patch_dropout=False, force_image_size=None, pretrained_image=False, image_mean=None, image_std=None,
        light_augmentation=True, aug_cfg={}, output_dict=True, with_score_predictor=False,
        with_region_predictor=False)
    model.load_state_dict(torch.load(Path(folder[len("local-dir:"):]) / "open_clip_pytorch_model.bin"))
    model.eval()
    tokenizer = get_tokenizer("TinyTS2")
    rng = np.random.default_rng(0)
    pictures = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
                for w, h in [(47, 32), (32, 43), (59, 32), (45, 37), (301, 227), (97, 131)]]
    prompts = ["a red cube on a table", "two cats", "a red cube on a table", "a photo of a dog", "x", "y z"]
    official = []
    for image, prompt in zip(pictures, prompts):
        with torch.no_grad():
            out = model(preprocess_val(image).unsqueeze(0), tokenizer([prompt]))
            official.append(float(torch.diagonal(out["image_features"] @ out["text_features"].T)[0]))
    ours = HPSv2Score(folder, device="cpu")
    np.testing.assert_allclose(ours.score(pictures, prompts), official, rtol=1e-5, atol=1e-6)
    for image in pictures:
        assert torch.equal(ours.image_transform(image), preprocess_val(image))
