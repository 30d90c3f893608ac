"""Embedding scorers: the scoring rules by hand, every model class against its library's own forward pass,
batched = one-at-a-time, prompts embedded once, parity with torchmetrics' CLIPScore, and bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from scorers.metrics.embedding import (ALIGNScore, CLIPScore, SigLIPScore, apply_form, paired_cosine,
                               sigmoid_probability)
from tests.helpers.tiny_embed_models import tiny_models, torchmetrics_clip_score
from tests.helpers.ts2_fixture_data import make_data_dir

TOL = 1e-5  # float32 towers: batched vs single and ours vs the library's forward agree to ~1e-6


@pytest.fixture(scope="module")
def models():
    return tiny_models()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Six fixture images (varied colours) with their real TS2 prompts (2 distinct)."""
    import pandas as pd

    root = make_data_dir(tmp_path_factory.mktemp("data"), seg_ids=[0, 1], image_size=24, with_questions=False)
    meta = pd.read_csv(root / "metadata.csv")
    meta = pd.concat([meta[meta.id == 0].head(3), meta[meta.id == 1].head(3)])
    return [str(root / f) for f in meta.file_name], list(meta.target_prompt)


# ----------------------------------------------------------------------------------------------- rules, no models

def test_paired_cosine_by_hand():
    a = np.array([[1.0, 0.0], [3.0, 4.0], [1.0, 1.0]])
    b = np.array([[1.0, 1.0], [-3.0, -4.0], [2.0, 2.0]])
    np.testing.assert_allclose(paired_cosine(a, b), [1 / math.sqrt(2), -1.0, 1.0], atol=1e-12)
    with pytest.raises(ValueError, match="same shape"):
        paired_cosine(a, b[:2])


def test_forms_by_hand():
    cos = np.array([0.3, -0.2, 0.0])
    np.testing.assert_allclose(apply_form(cos, "cosine"), [0.3, -0.2, 0.0])
    np.testing.assert_allclose(apply_form(cos, "paper"), [0.3, 0.0, 0.0])
    np.testing.assert_allclose(apply_form(cos, "hessel"), [0.75, 0.0, 0.0])
    np.testing.assert_allclose(apply_form(cos, "hessel", w=2.0), [0.6, 0.0, 0.0])
    np.testing.assert_allclose(apply_form(cos, "x100"), [30.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="form 'bogus'"):
        apply_form(cos, "bogus")


def test_sigmoid_probability_by_hand():
    # cos 0.1, scale 10, bias -1 -> logit 0 -> 0.5; cos 0.3 -> logit 2 -> 1/(1+e^-2)
    np.testing.assert_allclose(sigmoid_probability([0.1, 0.3], 10.0, -1.0), [0.5, 1 / (1 + math.exp(-2))],
                               atol=1e-12)


# ----------------------------------------------------------------------------------------------- every model class

def _pixels(processor, paths):
    return processor(images=[Image.open(p).convert("RGB") for p in paths], return_tensors="pt")["pixel_values"]


def _hf_forward(model_class, processor_class, path, paths, prompts):
    """The transformers model at ``path`` and its own forward pass on the images and prompts (the reference)."""
    import torch

    model, processor = model_class.from_pretrained(path), processor_class.from_pretrained(path)
    with torch.no_grad():
        out = model(**processor(text=prompts, images=[Image.open(p).convert("RGB") for p in paths],
                                return_tensors="pt", padding=True))
    return model, out


def test_hf_clip_matches_model_forward(models, data):
    from transformers import CLIPModel, CLIPProcessor

    paths, prompts = data
    ours = CLIPScore(models["clip"], form="cosine").score(paths, prompts)
    model, out = _hf_forward(CLIPModel, CLIPProcessor, models["clip"], paths, prompts)
    expected = (out.logits_per_image / model.logit_scale.detach().exp()).diagonal().numpy()
    np.testing.assert_allclose(ours, expected, atol=TOL)
    # the reference itself spreads far beyond the tolerance, so agreeing with it cannot happen by being constant
    assert np.ptp(expected) > 100 * TOL


def test_open_clip_matches_model_forward(models, data):
    import open_clip
    import torch

    paths, prompts = data
    scorer = CLIPScore(models["open_clip"], form="cosine")
    assert scorer.embedder.family == "open_clip"
    ours = scorer.score(paths, prompts)
    model, _, preprocess = open_clip.create_model_and_transforms(models["open_clip"])
    tokens = open_clip.get_tokenizer(models["open_clip"])(prompts)
    images = torch.stack([preprocess(Image.open(p).convert("RGB")) for p in paths])
    with torch.no_grad():
        image, text = model.encode_image(images, normalize=True), model.encode_text(tokens, normalize=True)
    np.testing.assert_allclose(ours, (image * text).sum(-1).numpy(), atol=TOL)


def test_open_clip_folder_path_without_schema(models, data):
    """A plain path to a folder saved by open_clip works like ``local-dir:PATH`` (not mistaken for transformers)."""
    paths, prompts = data
    folder = models["open_clip"].removeprefix("local-dir:")
    plain = CLIPScore(folder, form="cosine")
    assert plain.embedder.family == "open_clip"
    reference = CLIPScore(models["open_clip"], form="cosine").score(paths, prompts)
    np.testing.assert_array_equal(plain.score(paths, prompts), reference)


@pytest.mark.filterwarnings("ignore:`max_length` is ignored")  # AlignProcessor's own defaults in the reference call
def test_align_matches_model_forward(models, data):
    from transformers import AlignModel, AlignProcessor

    paths, prompts = data
    ours = ALIGNScore(models["align"], form="cosine").score(paths, prompts)
    model, out = _hf_forward(AlignModel, AlignProcessor, models["align"], paths, prompts)
    expected = (out.logits_per_image * model.temperature.detach()).diagonal().numpy()
    np.testing.assert_allclose(ours, expected, atol=TOL)


def test_siglip_matches_model_forward_and_probability(models, data):
    import torch
    from transformers import SiglipModel, SiglipProcessor

    paths, prompts = data
    scorer = SigLIPScore(models["siglip"], form="cosine")
    model, processor = SiglipModel.from_pretrained(models["siglip"]), SiglipProcessor.from_pretrained(models["siglip"])
    tokens = processor.tokenizer(prompts, padding="max_length", truncation=True, max_length=16, return_tensors="pt")
    with torch.no_grad():
        out = model(input_ids=tokens["input_ids"], pixel_values=_pixels(processor, paths))
    logits = out.logits_per_image.diagonal()
    cosine = ((logits - model.logit_bias.detach()) / model.logit_scale.detach().exp()).numpy()
    np.testing.assert_allclose(scorer.score(paths, prompts), cosine, atol=TOL)
    np.testing.assert_allclose(scorer.probability(paths, prompts), torch.sigmoid(logits).numpy(), atol=TOL)
    scores, records = scorer.score_with_records(paths, prompts)
    np.testing.assert_allclose([r["siglip_probability"] for r in records], torch.sigmoid(logits).numpy(), atol=TOL)


@pytest.mark.parametrize("kind", ["clip", "open_clip", "align", "siglip"])
def test_batched_equals_one_at_a_time(models, data, kind):
    cls = {"clip": CLIPScore, "open_clip": CLIPScore, "align": ALIGNScore, "siglip": SigLIPScore}[kind]
    paths, prompts = data
    batched = cls(models[kind], form="cosine").score(paths, prompts)
    single = np.array([cls(models[kind], form="cosine").score([p], [t])[0] for p, t in zip(paths, prompts)])
    np.testing.assert_allclose(batched, single, atol=TOL)


def test_forms_and_inputs_agree(models, data):
    paths, prompts = data
    scorer = CLIPScore(models["clip"], form="cosine")
    cosine = scorer.score(paths, prompts)
    pil = [Image.open(p) for p in paths]
    np.testing.assert_allclose(scorer.score(pil, prompts), cosine, atol=1e-7)
    for form, expected in [("paper", np.maximum(cosine, 0)), ("hessel", 2.5 * np.maximum(cosine, 0)),
                           ("x100", 100 * np.maximum(cosine, 0))]:
        scorer.set_form(form)
        np.testing.assert_allclose(scorer.score(paths, prompts), expected, atol=1e-7)


def test_each_distinct_prompt_embedded_once(models, data):
    paths, prompts = data
    scorer = CLIPScore(models["clip"])
    seen: list[str] = []
    encode = scorer.embedder.encode_texts
    scorer.embedder.encode_texts = lambda texts: (seen.extend(texts), encode(texts))[1]
    scorer.score(paths[:4], prompts[:4])
    scorer.score(paths, prompts)
    scorer.score(paths[::-1], prompts[::-1])
    assert sorted(seen) == sorted(set(prompts)) and len(set(prompts)) == 2


def test_bf16_close_to_fp32(models, data):
    paths, prompts = data
    fp32 = CLIPScore(models["clip"], form="cosine").score(paths, prompts)
    bf16 = CLIPScore(models["clip"], form="cosine", precision="bf16").score(paths, prompts)
    np.testing.assert_allclose(bf16, fp32, atol=0.05)  # bf16 keeps ~3 significant digits


# ----------------------------------------------------------------------------------------------- torchmetrics peer

@pytest.mark.filterwarnings("ignore:`max_length` is ignored")  # torchmetrics' own processor call
def test_parity_with_torchmetrics_clipscore(models, data):
    import torch

    path = models["clip"]
    peer = torchmetrics_clip_score(path)
    paths, prompts = data
    ours = CLIPScore(path, form="cosine")
    raw, clamped = [], []
    for image_path, prompt in zip(paths, prompts):
        image = torch.from_numpy(np.array(Image.open(image_path).convert("RGB"))).permute(2, 0, 1)
        peer.reset()
        peer.update(image, prompt)
        raw.append(float(peer.score))  # 100 * cos before torchmetrics' clamp
        clamped.append(float(peer.compute()))  # max(100 * cos, 0)
    cosine = ours.score(paths, prompts)
    np.testing.assert_allclose(100 * cosine, raw, atol=100 * TOL)
    ours.set_form("x100")
    np.testing.assert_allclose(ours.score(paths, prompts), clamped, atol=100 * TOL)


# ----------------------------------------------------------------------------------------------- bad input

def test_bad_input_errors(models, data, tmp_path):
    paths, prompts = data
    scorer = CLIPScore(models["clip"])
    with pytest.raises(ValueError, match=r"item 1: empty prompt '  '"):
        scorer.score(paths[:2], [prompts[0], "  "])
    with pytest.raises(ValueError, match="2 images but 1 prompts"):
        scorer.score(paths[:2], prompts[:1])
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not a jpeg")
    with pytest.raises(ValueError, match="broken.jpg"):
        scorer.score([str(broken)], ["a prompt"])
    with pytest.raises(ValueError, match="precision 'fp8'"):
        CLIPScore(models["clip"], precision="fp8")
    with pytest.raises(ValueError, match="form 'bogus'"):
        CLIPScore(models["clip"], form="bogus")
