"""HPSv3: the official resize, preprocessing, forward and converter on a tiny random Qwen2-VL.

The references are written here from the official ``hpsv3`` 1.0.0 package (``inference.py``, ``model/qwen2vl_trainer.py``,
``dataset/utils.py``: ``smart_resize``/``fetch_image``) and transformers 4.45's ``Qwen2VLImageProcessor`` (rescale,
normalise with the CLIP mean/std, patchify), independently of ``scorers``. Tolerances: 1e-5 for float32 forwards of
the same weights in another operation order; 1/255 per pixel for preprocessing.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

MEAN = np.array([0.48145466, 0.4578275, 0.40821073])
STD = np.array([0.26862954, 0.26130258, 0.27577711])
PROMPTS = ["a red cube on a table", "two cats", "a red cube on a table"]


def noise(width, height, seed):
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8))


def images():
    return [noise(50, 40, 1), noise(45, 61, 2), noise(70, 33, 3)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from tests.helpers.tiny_reward_models import build_hpsv3

    return build_hpsv3(tmp_path_factory.mktemp("hpsv3"))


@pytest.fixture(scope="module")
def backend(folder):
    from scorers.models.hpsv3 import HPSv3Backend

    return HPSv3Backend(folder, device="cpu")


def official_smart_resize(height, width, factor, min_pixels, max_pixels):
    """``hpsv3/dataset/utils.py`` ``smart_resize``."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar, w_bar = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar, w_bar = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def official_pixel_values(image, pixels, patch=14, merge=2, temporal=2):
    """``fetch_image`` (RGB, smart_resize with min = max = ``pixels``, PIL bicubic), then transformers 4.45
    ``Qwen2VLImageProcessor``: /255, CLIP mean/std, the frame repeated ``temporal`` times, patchified."""
    w, h = image.size
    nh, nw = official_smart_resize(h, w, 28, pixels, pixels)
    a = np.asarray(image.convert("RGB").resize((nw, nh), Image.BICUBIC), dtype=np.float32) / 255
    a = ((a - MEAN) / STD).transpose(2, 0, 1)[None]
    a = np.tile(a, (temporal, 1, 1, 1))
    gh, gw = nh // patch, nw // patch
    a = a.reshape(1, temporal, 3, gh // merge, merge, patch, gw // merge, merge, patch)
    a = a.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return a.reshape(gh * gw, 3 * temporal * patch * patch), (1, gh, gw)


def test_smart_resize_matches_the_official_rule_and_the_7b_setting():
    from scorers.models.hpsv3 import PIXELS, smart_resize

    assert PIXELS == 200704  # HPSv3_7B.yaml: max_pixels = min_pixels = 256 * 28 * 28
    assert smart_resize(1024, 1024) == (448, 448)  # by hand: 200704 = 448^2
    for h, w in [(1024, 768), (512, 513), (33, 47), (2000, 300), (448, 448)]:
        assert smart_resize(h, w) == official_smart_resize(h, w, 28, PIXELS, PIXELS)


def test_preprocessing_equals_the_official_pipeline(backend):
    from tests.helpers.tiny_reward_models import TINY_HPSV3_PIXELS

    for i, image in enumerate(images()):
        ours = backend.inputs([backend.image_transform(image)], ["x"])
        reference, grid = official_pixel_values(image, TINY_HPSV3_PIXELS)
        assert tuple(ours["image_grid_thw"][0].tolist()) == grid
        step = np.abs(ours["pixel_values"].numpy() - reference) * np.tile(np.repeat(STD, 14 * 14), 2)
        assert step.max() <= 1 / 255, i


def reference_rewards(folder, pictures, prompts):
    """The official ``HPSv3RewardInferencer.reward`` + ``Qwen2VLRewardModelBT.forward`` one pair per call: the
    official message and texts, embeddings with image features scattered in, the language model without position ids,
    ``rm_head`` in float32 at the ``<|Reward|>`` token."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoProcessor, Qwen2VLForConditionalGeneration

    from scorers.models.hpsv3 import INSTRUCTION, PROMPT_WITH_SPECIAL_TOKEN
    from tests.helpers.tiny_reward_models import TINY_HPSV3_PIXELS

    official = load_file(str(Path(folder) / "HPSv3.safetensors"))
    config = AutoConfig.from_pretrained(folder)
    processor = AutoProcessor.from_pretrained(folder, padding_side="right")
    model = Qwen2VLForConditionalGeneration(config).eval()
    renamed = {}
    for key, value in official.items():  # 4.45 names -> 5.x names, written here independently of the converter
        if key.startswith("visual."):
            renamed["model.visual." + key[7:]] = value
        elif key.startswith("model."):
            renamed["model.language_model." + key[6:]] = value
        elif key.startswith("lm_head."):
            renamed[key] = value
    model.load_state_dict(renamed, strict=True)
    head = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Dropout(0.05), torch.nn.Linear(64, 16),
                               torch.nn.ReLU(), torch.nn.Linear(16, 2)).eval()
    head.load_state_dict({k[8:]: v for k, v in official.items() if k.startswith("rm_head.")})
    reward_id = processor.tokenizer.convert_tokens_to_ids("<|Reward|>")
    out = []
    for image, prompt in zip(pictures, prompts):
        w, h = image.size
        nh, nw = official_smart_resize(h, w, 28, TINY_HPSV3_PIXELS, TINY_HPSV3_PIXELS)
        resized = image.convert("RGB").resize((nw, nh), Image.BICUBIC)
        message = [{"role": "user", "content": [
            {"type": "image"}, {"type": "text", "text": INSTRUCTION.format(text_prompt=prompt) + PROMPT_WITH_SPECIAL_TOKEN}]}]
        text = processor.apply_chat_template(message, tokenize=False, add_generation_prompt=True)
        batch = processor(text=[text], images=[resized], padding=True, return_tensors="pt")
        with torch.no_grad():
            embeds = model.model.language_model.embed_tokens(batch["input_ids"])
            features = model.model.visual(batch["pixel_values"], grid_thw=batch["image_grid_thw"]).pooler_output
            mask = (batch["input_ids"] == config.image_token_id).unsqueeze(-1).expand_as(embeds)
            embeds = embeds.masked_scatter(mask, features)
            hidden = model.model.language_model(inputs_embeds=embeds,
                                                attention_mask=batch["attention_mask"]).last_hidden_state
            logits = head(hidden.float())
            out.append(logits[batch["input_ids"] == reward_id].view(1, -1)[0].numpy())
    return np.array(out)


def test_batched_rewards_equal_the_official_forward_one_pair_per_call(folder):
    from scorers.metrics.reward_models import HPSv3Score

    scorer = HPSv3Score(folder, device="cpu")
    pictures = images()
    scores, records = scorer.score_with_records(pictures, PROMPTS)
    reference = reference_rewards(folder, pictures, PROMPTS)
    np.testing.assert_allclose(scores, reference[:, 0], rtol=1e-5, atol=1e-5)  # mu
    np.testing.assert_allclose([r["hpsv3_sigma"] for r in records], reference[:, 1], rtol=1e-5, atol=1e-5)
    assert scores.shape == (3,) and len(set(np.round(scores, 6))) == 3


def test_multimodal_positions_change_the_rewards(backend):
    """Why a port through the stock Qwen2-VL forward is off: the official forward gives sequential positions; the 3-D
    multimodal positions (``get_rope_index``) give other rewards."""
    import torch

    pictures = [backend.image_transform(im) for im in images()]
    inputs = backend.inputs(pictures, PROMPTS)
    official = backend.forward(inputs)
    positions, _ = backend.model.model.get_rope_index(inputs["input_ids"], inputs["mm_token_type_ids"],
                                                      image_grid_thw=inputs["image_grid_thw"],
                                                      attention_mask=inputs["attention_mask"])
    multimodal = backend.forward(inputs, positions=positions)
    assert not torch.allclose(official, multimodal, atol=1e-4)


def test_converter_rejects_unknown_keys():
    import torch
    from scorers.models.hpsv3 import convert_official_state_dict

    with pytest.raises(ValueError, match="unexpected key 'score.weight'"):
        convert_official_state_dict({"score.weight": torch.zeros(1)})


def test_ts2_score_writes_one_finite_score_per_image(folder, tmp_path, monkeypatch, capsys):
    from scorers.cli import main
    from tests.helpers.ts2_fixture_data import make_data_dir

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    data_dir = make_data_dir(tmp_path / "data", seg_ids=[0])
    out = tmp_path / "hpsv3.csv"
    code = main(["score", "hpsv3", "--data-dir", str(data_dir), "--out", str(out), "--model", folder,
                 "--num-workers", "0", "--no-progress", "--batch-size", "8"])
    assert code == 0, capsys.readouterr().err[-2000:]
    frame = pd.read_csv(out)
    assert len(frame) == len(pd.read_csv(Path(data_dir) / "metadata.csv"))
    assert np.isfinite(frame["hpsv3"]).all() and np.isfinite(frame["hpsv3_sigma"]).all()


def test_evaluate_module_equals_the_library(folder, tmp_path, monkeypatch):
    import evaluate

    from scorers.metrics.reward_models import HPSv3Score

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    root = Path(__file__).resolve().parents[2]
    module = evaluate.load(str(root / "evaluate_modules" / "hpsv3"), config_name=folder, device="cpu")
    out = module.compute(images=images(), prompts=PROMPTS)
    scores, records = HPSv3Score(folder, device="cpu").score_with_records(images(), PROMPTS)
    np.testing.assert_allclose(out["scores"], scores, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["hpsv3_sigma"], [r["hpsv3_sigma"] for r in records], rtol=1e-5, atol=1e-6)
