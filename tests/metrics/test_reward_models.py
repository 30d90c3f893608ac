"""Reward / preference scorers: rules, preprocessing, parity with the official definitions, converters, CLI.

Every reference below is written here from the official code (read at the commits named in the evaluate modules'
cards), independently of ``scorers``: PickScore's README inference snippet, ``hpsv2.score`` (its open_clip fork's
``preprocess_val`` with ``light_augmentation=True``) and ``ImageReward.score`` with BLIP's ``vit.py``/``med.py``.
Tolerances: 1e-5 relative for float32 forwards of the same weights in a different operation order; 1/255 per pixel
for preprocessing (the issue's bound: one uint8 step).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from scorers.metrics.reward_models import scaled_cosine, standardise

ROOT = Path(__file__).resolve().parents[2]
MEAN = np.array([0.48145466, 0.4578275, 0.40821073])
STD = np.array([0.26862954, 0.26130258, 0.27577711])
ODD_SIZES = [(301, 227), (225, 399), (513, 511), (97, 131), (224, 301), (33, 47), (640, 480)]


def noise_image(width, height, seed=0):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from tests.helpers.tiny_reward_models import tiny_reward_models

    return tiny_reward_models(tmp_path_factory.mktemp("rewards"))


# ----------------------------------------------------------------------------- rules

def test_scaled_cosine_is_scale_times_cosine_by_hand():
    image = np.array([[3.0, 4.0], [1.0, 0.0]])
    text = np.array([[4.0, 3.0], [0.0, 2.0]])
    np.testing.assert_allclose(scaled_cosine(image, text, 100.0), [100 * 24 / 25, 0.0])


def test_standardise_uses_the_official_constants():
    from scorers.models.imagereward import IMAGEREWARD_MEAN, IMAGEREWARD_STD

    assert (IMAGEREWARD_MEAN, IMAGEREWARD_STD) == (0.16717362830052426, 1.0333394966054072)  # ImageReward.py
    np.testing.assert_allclose(standardise([1.2, 0.2], 0.2, 0.5), [2.0, 0.0])
    with pytest.raises(ValueError, match="std must be > 0"):
        standardise([1.0], 0.0, 0.0)


# ----------------------------------------------------------------------------- preprocessing vs the official pipelines

def clip_processor_v4_reference(image, size):
    """transformers 4.27 ``CLIPImageProcessor`` (PickScore's pin): PIL bicubic resize so the short side is ``size``
    (long side ``int(size * long / short)``), centre crop at ``(h - size) // 2``, /255, mean/std."""
    image = image.convert("RGB")
    w, h = image.size
    short, long = (w, h) if w <= h else (h, w)
    if short != size:
        nl = int(size * long / short)
        image = image.resize((size, nl) if w <= h else (nl, size), resample=Image.BICUBIC)
    a = np.asarray(image).astype(np.float32)
    top, left = (a.shape[0] - size) // 2, (a.shape[1] - size) // 2
    a = a[top:top + size, left:left + size] * (1 / 255)
    return ((a - MEAN) / STD).transpose(2, 0, 1)


def imagereward_reference(image, size):
    """ImageReward's ``_transform(n_px)``, the official torchvision objects themselves."""
    from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Normalize, Resize, ToTensor

    return Compose([Resize(size, interpolation=InterpolationMode.BICUBIC), CenterCrop(size),
                    lambda im: im.convert("RGB"), ToTensor(), Normalize(tuple(MEAN), tuple(STD))])(image).numpy()


def hpsv2_reference(image, size):
    """HPSv2 ``preprocess_val`` (``light_augmentation=True``): RGB, ToTensor, ``ResizeMaxSize`` (bicubic tensor resize
    of the longer side to ``size``, ``round`` of the other, zero pad split ``pad // 2`` before), Normalize."""
    from torchvision.transforms import functional as TF
    from torchvision.transforms import InterpolationMode

    x = TF.to_tensor(image.convert("RGB"))
    h, w = x.shape[1:]
    scale = size / float(max(h, w))
    if scale != 1.0:
        nh, nw = round(h * scale), round(w * scale)
        x = TF.resize(x, [nh, nw], InterpolationMode.BICUBIC)
        ph, pw = size - nh, size - nw
        x = TF.pad(x, padding=[pw // 2, ph // 2, pw - pw // 2, ph - ph // 2], fill=0)
    return TF.normalize(x, tuple(MEAN), tuple(STD)).numpy()


def to_normalised(uint8):
    return (uint8.numpy().astype(np.float64) / 255 - MEAN[:, None, None]) / STD[:, None, None]


def max_pixel_error(ours, reference):
    """Largest difference in [0, 1] pixel units (normalised values times std)."""
    return float(np.max(np.abs((np.asarray(ours) - np.asarray(reference)) * STD[:, None, None])))


@pytest.mark.parametrize("size", [224, 32])
@pytest.mark.parametrize("crop, reference", [("floor", clip_processor_v4_reference),  # PickScore
                                             ("round", imagereward_reference)], ids=["pickscore", "imagereward"])
def test_resize_crop_preprocessing_equals_the_official_pil_pipeline(size, crop, reference):
    from scorers.models.pixels import ResizeCropUint8

    ours = ResizeCropUint8(size, crop=crop)
    for i, (w, h) in enumerate(ODD_SIZES):
        image = noise_image(w, h, seed=i)
        assert max_pixel_error(to_normalised(ours(image)), reference(image, size)) <= 1 / 255


@pytest.mark.parametrize("size", [224, 32])
def test_hpsv2_preprocessing_equals_the_official_pipeline(size):
    from scorers.models.pixels import HPSv2Transform

    ours = HPSv2Transform(size)
    for i, (w, h) in enumerate(ODD_SIZES):
        image = noise_image(w, h, seed=i)
        assert max_pixel_error(ours(image).numpy(), hpsv2_reference(image, size)) <= 1e-6  # same float ops


# ----------------------------------------------------------------------------- PickScore

def pickscore_reference(model_dir, image, prompt):
    """The official README's ``calc_probs`` before the softmax, for one image and one prompt."""
    import torch
    from transformers import AutoModel, AutoProcessor

    processor = AutoProcessor.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    size = processor.image_processor.crop_size["height"]
    pixels = torch.tensor(clip_processor_v4_reference(image, size), dtype=torch.float32)[None]
    text = processor(text=prompt, padding=True, truncation=True, max_length=77, return_tensors="pt")
    with torch.no_grad():
        image_embs = model.get_image_features(pixel_values=pixels).pooler_output
        image_embs = image_embs / torch.norm(image_embs, dim=-1, keepdim=True)
        text_embs = model.get_text_features(input_ids=text["input_ids"],
                                            attention_mask=text["attention_mask"]).pooler_output
        text_embs = text_embs / torch.norm(text_embs, dim=-1, keepdim=True)
        return float(model.logit_scale.exp() * (text_embs @ image_embs.T)[0, 0])


PAIRS_PROMPTS = ["a red cube on a table", "two cats", "a red cube on a table", "a photo of a dog in the snow"]


def pair_images():
    """Odd crop margins at 32 px (47-32, 43-32, 59-32 are odd), so a floor vs round crop offset shows."""
    return [noise_image(w, h, seed=10 + i) for i, (w, h) in enumerate([(47, 32), (32, 43), (59, 32), (45, 37)])]


def test_pickscore_matches_the_official_definition_one_score_per_pair(models):
    from scorers.metrics.reward_models import PickScore

    scorer = PickScore(models["pickscore"], device="cpu")
    images = pair_images()
    batched = scorer.score(images, PAIRS_PROMPTS)
    reference = [pickscore_reference(models["pickscore"], im, p) for im, p in zip(images, PAIRS_PROMPTS)]
    assert batched.shape == (4,)
    np.testing.assert_allclose(batched, reference, rtol=1e-5, atol=1e-5)
    assert len(set(np.round(batched, 6))) == 4  # the repeated prompt still gives one score per image


# ----------------------------------------------------------------------------- HPSv2

def hpsv2_official_scores(folder, images, prompt_list):
    """``hpsv2.score`` one image per call: ``preprocess_val``, tokenizer, ``model(image, text)`` normalised features,
    ``diag(image_features @ text_features.T)``."""
    import open_clip
    import torch

    model, _, _ = open_clip.create_model_and_transforms(folder)
    tokenizer = open_clip.get_tokenizer(folder)
    model.eval()
    out = []
    for image, prompt in zip(images, prompt_list):
        size = model.visual.image_size
        size = size[0] if isinstance(size, (tuple, list)) else size
        pixels = torch.tensor(hpsv2_reference(image, size))[None]
        with torch.no_grad():
            outputs = model(pixels, tokenizer([prompt]))
            image_features, text_features = outputs[0], outputs[1]
            out.append(float(torch.diagonal(image_features @ text_features.T)[0]))
    return out


def test_hpsv2_matches_the_official_definition_one_score_per_pair(models):
    from scorers.metrics.reward_models import HPSv2Score

    scorer = HPSv2Score(models["hpsv2"], device="cpu")
    images = pair_images()
    np.testing.assert_allclose(scorer.score(images, PAIRS_PROMPTS),
                               hpsv2_official_scores(models["hpsv2"], images, PAIRS_PROMPTS), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- ImageReward

def _linear(x, sd, name):
    import torch.nn.functional as F

    return F.linear(x, sd[f"{name}.weight"], sd[f"{name}.bias"])


def _ln(x, sd, name, eps):
    import torch.nn.functional as F

    return F.layer_norm(x, x.shape[-1:], sd[f"{name}.weight"], sd[f"{name}.bias"], eps)


def imagereward_official_reward(sd, pixels, input_ids, attention_mask, heads_v, heads_t,
                                mean=0.16717362830052426, std=1.0333394966054072):
    """``ImageReward.score`` from its official state dict: BLIP ``VisionTransformer.forward`` (timm blocks, LayerNorm
    eps 1e-6), ``med.BertModel`` in ``mode="multimodal"`` (self-attention with the (1 - mask) * -10000 extended mask,
    cross-attention to all image tokens, LayerNorm eps 1e-12), ``MLP`` on token 0, then ``(r - mean) / std``."""
    import torch
    import torch.nn.functional as F

    v = "blip.visual_encoder"
    p = sd[f"{v}.patch_embed.proj.weight"].shape[-1]
    x = F.conv2d(pixels, sd[f"{v}.patch_embed.proj.weight"], sd[f"{v}.patch_embed.proj.bias"], stride=p)
    x = x.flatten(2).transpose(1, 2)
    x = torch.cat([sd[f"{v}.cls_token"].expand(x.shape[0], -1, -1), x], dim=1)
    x = x + sd[f"{v}.pos_embed"][:, :x.shape[1]]
    n_blocks = len({k.split(".")[3] for k in sd if k.startswith(f"{v}.blocks.")})
    for i in range(n_blocks):
        b = f"{v}.blocks.{i}"
        B, N, C = x.shape
        qkv = _linear(_ln(x, sd, f"{b}.norm1", 1e-6), sd, f"{b}.attn.qkv")
        q, k, val = qkv.reshape(B, N, 3, heads_v, C // heads_v).permute(2, 0, 3, 1, 4)
        attn = ((q @ k.transpose(-2, -1)) * (C // heads_v) ** -0.5).softmax(dim=-1)
        x = x + _linear((attn @ val).transpose(1, 2).reshape(B, N, C), sd, f"{b}.attn.proj")
        hidden = F.gelu(_linear(_ln(x, sd, f"{b}.norm2", 1e-6), sd, f"{b}.mlp.fc1"))
        x = x + _linear(hidden, sd, f"{b}.mlp.fc2")
    image_embeds = _ln(x, sd, f"{v}.norm", 1e-6)

    t = "blip.text_encoder"
    seq = input_ids.shape[1]
    h = sd[f"{t}.embeddings.word_embeddings.weight"][input_ids] + sd[f"{t}.embeddings.position_embeddings.weight"][:seq]
    h = _ln(h, sd, f"{t}.embeddings.LayerNorm", 1e-12)
    self_mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0

    def attention(hidden, context, prefix, mask):
        B, L, H = hidden.shape
        hd = H // heads_t
        q = _linear(hidden, sd, f"{prefix}.self.query").view(B, L, heads_t, hd).transpose(1, 2)
        k = _linear(context, sd, f"{prefix}.self.key").view(B, -1, heads_t, hd).transpose(1, 2)
        val = _linear(context, sd, f"{prefix}.self.value").view(B, -1, heads_t, hd).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        if mask is not None:
            scores = scores + mask
        context_layer = (scores.softmax(-1) @ val).transpose(1, 2).reshape(B, L, H)
        return _ln(_linear(context_layer, sd, f"{prefix}.output.dense") + hidden, sd, f"{prefix}.output.LayerNorm",
                   1e-12)

    n_layers = len({k.split(".")[4] for k in sd if k.startswith(f"{t}.encoder.layer.")})
    for i in range(n_layers):
        b = f"{t}.encoder.layer.{i}"
        h = attention(h, h, f"{b}.attention", self_mask)
        h = attention(h, image_embeds, f"{b}.crossattention", None)  # image_atts: all ones
        inner = F.gelu(_linear(h, sd, f"{b}.intermediate.dense"))
        h = _ln(_linear(inner, sd, f"{b}.output.dense") + h, sd, f"{b}.output.LayerNorm", 1e-12)
    r = h[:, 0, :]
    for index in (0, 2, 4, 6, 7):
        r = _linear(r, sd, f"mlp.layers.{index}")
    return ((r - mean) / std).squeeze(-1)


def imagereward_reference_scores(official_pt, tokenizer_dir, images, prompt_list):
    import torch
    from transformers import BertTokenizer

    from tests.helpers.tiny_reward_models import TINY_MED, TINY_VISION

    sd = torch.load(official_pt, weights_only=True)
    tokenizer = BertTokenizer.from_pretrained(tokenizer_dir)
    out = []
    for image, prompt in zip(images, prompt_list):  # one image per call, as ImageReward.score
        tokens = tokenizer(prompt, padding="max_length", truncation=True, max_length=35, return_tensors="pt")
        pixels = torch.tensor(imagereward_reference(image, TINY_VISION["image_size"]))[None]
        with torch.no_grad():
            out.append(float(imagereward_official_reward(sd, pixels, tokens["input_ids"], tokens["attention_mask"],
                                                         TINY_VISION["num_attention_heads"],
                                                         TINY_MED["num_attention_heads"])[0]))
    return np.array(out)


def test_imagereward_official_checkpoint_matches_the_official_forward(tmp_path):
    """Converter + forward: an official-layout state dict, loaded through the converter, gives the official rewards;
    one reward per (image, prompt) pair with 2 images x 2 prompts (4 pairs -> 4 rewards, not 8 or 2)."""
    from scorers.metrics.reward_models import ImageRewardScore
    from tests.helpers.tiny_reward_models import TINY_VISION, build_official_imagereward

    official, tokenizer_dir = build_official_imagereward(tmp_path / "official")
    scorer = ImageRewardScore(str(official), tokenizer=str(tokenizer_dir), device="cpu",
                              vision_heads=TINY_VISION["num_attention_heads"])
    a, b = noise_image(47, 32, seed=1), noise_image(32, 43, seed=2)  # odd crop margins: floor != round offsets
    images, prompt_list = [a, a, b, b], ["a red cube", "two dogs running", "a red cube", "two dogs running"]
    ours = scorer.score(images, prompt_list)
    assert ours.shape == (4,)
    np.testing.assert_allclose(ours, imagereward_reference_scores(official, tokenizer_dir, images, prompt_list),
                               rtol=1e-5, atol=1e-5)
    assert len(set(np.round(ours, 6))) == 4 and np.std(ours) > 1e-3  # the random weights do tell pairs apart


def test_imagereward_converted_folder_round_trips(tmp_path, models):
    """save_pretrained -> load gives the same rewards as loading the official .pt directly."""
    from scorers.metrics.reward_models import ImageRewardScore
    from tests.helpers.tiny_reward_models import TINY_VISION

    official = Path(models["imagereward"]).parent / "official"
    images, prompt_list = pair_images(), PAIRS_PROMPTS
    from_folder = ImageRewardScore(models["imagereward"], device="cpu").score(images, prompt_list)
    from_pt = ImageRewardScore(str(official / "ImageReward.pt"), tokenizer=str(official / "tokenizer"), device="cpu",
                               vision_heads=TINY_VISION["num_attention_heads"]).score(images, prompt_list)
    np.testing.assert_allclose(from_folder, from_pt, rtol=1e-6, atol=1e-6)


def test_imagereward_converter_rejects_unknown_keys():
    import torch
    from scorers.models.imagereward import convert_official_state_dict

    with pytest.raises(ValueError, match="unexpected key 'blip.itm_head.weight'"):
        convert_official_state_dict({"blip.itm_head.weight": torch.zeros(1)})


# ----------------------------------------------------------------------------- batched == one at a time

@pytest.mark.parametrize("name", ["pickscore", "hpsv2", "imagereward"])
def test_batched_equals_one_pair_per_call(models, name):
    from scorers.scoring.registry import build_scorer

    scorer = build_scorer(name, model=models[name], device="cpu")
    images = pair_images()
    batched = scorer.score(images, PAIRS_PROMPTS)
    single = np.concatenate([scorer.score([im], [p]) for im, p in zip(images, PAIRS_PROMPTS)])
    np.testing.assert_allclose(batched, single, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- CLI acceptance

@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    from tests.helpers.ts2_fixture_data import make_data_dir

    return make_data_dir(tmp_path_factory.mktemp("reward-data"), seg_ids=[0, 1])


def ts2_score(*args):
    """``ts2 score ...`` in this process (the same parser and handler as the command; no second torch import)."""
    from scorers.cli import main

    return main(["score", *map(str, args), "--num-workers", "0", "--no-progress"])


@pytest.mark.parametrize("name", ["pickscore", "hpsv2", "imagereward"])
def test_ts2_score_writes_one_finite_score_per_image(models, data_dir, tmp_path, name, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / f"{name}.csv"
    code = ts2_score(name, "--data-dir", data_dir, "--out", out, "--model", models[name], "--batch-size", 8)
    assert code == 0, capsys.readouterr().err[-2000:]
    frame = pd.read_csv(out)
    metadata = pd.read_csv(Path(data_dir) / "metadata.csv")
    assert len(frame) == len(metadata) and name in frame.columns
    assert np.isfinite(frame[name]).all()


@pytest.mark.parametrize("name", ["pickscore", "hpsv2", "imagereward"])
def test_evaluate_modules_equal_the_library(models, name, tmp_path, monkeypatch):
    import evaluate

    from scorers.scoring.registry import build_scorer

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    module = evaluate.load(str(ROOT / "evaluate_modules" / name), config_name=models[name], device="cpu")
    images = pair_images()
    out = module.compute(images=images, prompts=PAIRS_PROMPTS)
    expected = build_scorer(name, model=models[name], device="cpu").score(images, PAIRS_PROMPTS)
    np.testing.assert_allclose(out["scores"], expected, rtol=1e-5, atol=1e-6)
