"""Opt-in: the official packages' own code against ``scorers`` on the same tiny weights (HPSv2; ImageReward below).

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
from PIL import Image

SRC = os.environ.get("TS2_HPSV2_SRC")

TINY = ('{"embed_dim": 16, "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, '
        '"patch_size": 8}, "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, '
        '"layers": 2}}')


@pytest.mark.skipif(not SRC, reason="set TS2_HPSV2_SRC to an unpacked hpsv2 wheel to run")
def test_official_hpsv2_package_equals_ours(tmp_path, monkeypatch):
    import open_clip
    import torch

    from scorers.metrics.reward_models import HPSv2Score
    from tests.helpers.tiny_embed_models import build_open_clip

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


IR_SRC = os.environ.get("TS2_IMAGEREWARD_SRC")


@pytest.mark.skipif(not IR_SRC, reason="set TS2_IMAGEREWARD_SRC to an unpacked image-reward wheel to run")
def test_official_imagereward_blip_code_equals_ours(tmp_path, monkeypatch):
    """The ``image-reward`` 1.5 wheel's own BLIP ``VisionTransformer`` and ``med.BertModel`` (``ImageReward.score``'s
    steps, one image per call) on a random official-layout checkpoint vs ours loading the same ``ImageReward.pt``.
    Shims, because the wheel pins transformers 4.x, timm 0.6 and fairscale: ``fairscale``'s checkpoint wrapper (unused
    without gradient checkpointing) stubbed; in med.py, two transformers 4.x imports re-pointed and ``init_weights()``
    skipped (the weights come from the state dict); the 4.x ``invert_attention_mask`` / ``get_head_mask`` helpers
    re-added as 4.x defines them. Measured 2026-11-24: rewards within 1.3e-6."""
    import torch
    from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Normalize, Resize, ToTensor
    from transformers import BertTokenizer

    from scorers.metrics.reward_models import ImageRewardScore
    from tests.helpers.tiny_reward_models import TINY_VISION, build_official_imagereward

    package = tmp_path / "blip_official"
    shutil.copytree(Path(IR_SRC) / "ImageReward" / "models" / "BLIP", package)
    med = (package / "med.py").read_text()
    med = med.replace("from transformers.modeling_utils import (\n    PreTrainedModel,\n    apply_chunking_to_forward,\n"
                      "    find_pruneable_heads_and_indices,\n    prune_linear_layer,\n)",
                      "from transformers.modeling_utils import PreTrainedModel\n"
                      "from transformers.pytorch_utils import apply_chunking_to_forward\n"
                      "find_pruneable_heads_and_indices = prune_linear_layer = None\n")
    (package / "med.py").write_text(med.replace("self.init_weights()", "pass"))
    for name in ("fairscale", "fairscale.nn", "fairscale.nn.checkpoint", "fairscale.nn.checkpoint.checkpoint_activations"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules["fairscale.nn.checkpoint.checkpoint_activations"].checkpoint_wrapper = lambda module, *a, **k: module
    monkeypatch.syspath_prepend(str(tmp_path))
    from blip_official.med import BertConfig, BertModel
    from blip_official.vit import VisionTransformer

    def invert_attention_mask(self, mask):  # transformers 4.x ModuleUtilsMixin
        mask = (mask[:, None, None, :] if mask.dim() == 2 else mask[:, None, :, :]).to(torch.float32)
        return (1.0 - mask) * torch.finfo(torch.float32).min

    monkeypatch.setattr(BertModel, "invert_attention_mask", invert_attention_mask, raising=False)
    monkeypatch.setattr(BertModel, "get_head_mask", lambda self, head_mask, n, *a: [None] * n, raising=False)

    pt, tokenizer_dir = build_official_imagereward(tmp_path / "checkpoint")
    config = BertConfig(**__import__("json").loads((pt.parent / "med_config.json").read_text()))
    config.encoder_width = TINY_VISION["hidden_size"]
    blip = torch.nn.Module()
    blip.visual_encoder = VisionTransformer(img_size=TINY_VISION["image_size"], patch_size=TINY_VISION["patch_size"],
                                            embed_dim=TINY_VISION["hidden_size"], depth=2, num_heads=2)
    blip.text_encoder = BertModel(config=config, add_pooling_layer=False)
    reward = torch.nn.Module()
    reward.blip = blip
    reward.mlp = torch.nn.Module()
    reward.mlp.layers = torch.nn.Sequential(
        torch.nn.Linear(config.hidden_size, 1024), torch.nn.Dropout(0.2), torch.nn.Linear(1024, 128),
        torch.nn.Dropout(0.2), torch.nn.Linear(128, 64), torch.nn.Dropout(0.1), torch.nn.Linear(64, 16),
        torch.nn.Linear(16, 1))
    state = torch.load(pt, weights_only=True)
    missing, unexpected = reward.load_state_dict(state, strict=False)
    assert not missing and set(unexpected) <= {k for k in state if k.startswith(("blip.vision_proj", "blip.text_proj"))}
    reward.eval()
    tokenizer = BertTokenizer.from_pretrained(tokenizer_dir)
    size = TINY_VISION["image_size"]
    preprocess = Compose([Resize(size, interpolation=InterpolationMode.BICUBIC), CenterCrop(size),
                          lambda im: im.convert("RGB"), ToTensor(),
                          Normalize((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))])
    rng = np.random.default_rng(0)
    pictures = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
                for w, h in [(47, 32), (32, 43), (59, 32), (45, 37)]]
    prompts = ["a red cube", "two dogs running", "a red cube", "a photo of a dog in the snow"]
    official = []
    for image, prompt in zip(pictures, prompts):  # ImageReward.score, step by step
        text = tokenizer(prompt, padding="max_length", truncation=True, max_length=35, return_tensors="pt")
        with torch.no_grad():
            image_embeds = blip.visual_encoder(preprocess(image).unsqueeze(0))
            atts = torch.ones(image_embeds.size()[:-1], dtype=torch.long)
            out = blip.text_encoder(text.input_ids, attention_mask=text.attention_mask,
                                    encoder_hidden_states=image_embeds, encoder_attention_mask=atts, return_dict=True)
            r = reward.mlp.layers(out.last_hidden_state[:, 0, :].float())
            official.append(float((r - 0.16717362830052426) / 1.0333394966054072))
    ours = ImageRewardScore(str(pt), tokenizer=str(tokenizer_dir), device="cpu", vision_heads=2)
    np.testing.assert_allclose(ours.score(pictures, prompts), official, rtol=1e-5, atol=1e-5)
