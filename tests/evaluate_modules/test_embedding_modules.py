"""The three ``evaluate`` modules load from their folders offline and return the library's numbers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scorers.metrics.embedding import ALIGNScore, CLIPScore, SigLIPScore
from tests.helpers.tiny_embed_models import tiny_models

MODULES = Path(__file__).resolve().parents[2] / "evaluate_modules"


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("imgs")
    paths = []
    for i, colour in enumerate([(200, 30, 30), (30, 200, 30), (30, 30, 200)]):
        paths.append(str(root / f"{i}.png"))
        Image.new("RGB", (20, 28), colour).save(paths[-1])
    return paths, ["a red square", "a green field", "the blue sea"]


@pytest.mark.parametrize("module, kind, cls", [("clip_score", "clip", CLIPScore),
                                                ("clip_score", "open_clip", CLIPScore),
                                                ("align_score", "align", ALIGNScore),
                                                ("siglip_score", "siglip", SigLIPScore)])
def test_module_equals_library(module, kind, cls, pairs):
    import evaluate

    paths, prompts = pairs
    model = tiny_models()[kind]
    metric = evaluate.load(str(MODULES / module), config_name=model)
    images = [Image.open(paths[0]), paths[1], paths[2]]  # PIL images and paths both accepted
    out = metric.compute(images=images, prompts=prompts, form="cosine", batch_size=2)
    expected = cls(model, form="cosine").score(paths, prompts)
    np.testing.assert_allclose(out["scores"], expected, atol=1e-5)
    assert out["mean"] == pytest.approx(float(np.mean(out["scores"])))
    if module == "siglip_score":
        np.testing.assert_allclose(out["siglip_probability"], cls(model).probability(paths, prompts), atol=1e-5)
    metric.add_batch(images=paths[:2], prompts=prompts[:2])
    clipped = metric.compute(form="paper")
    np.testing.assert_allclose(clipped["scores"], np.maximum(expected[:2], 0), atol=1e-5)


def test_unknown_load_option_is_named():
    import evaluate

    with pytest.raises(ValueError, match=r"unknown option\(s\) \['bogus'\].*'precision'"):
        evaluate.load(str(MODULES / "clip_score"), bogus=1)


def test_unknown_compute_option_is_named(pairs):
    import evaluate

    paths, prompts = pairs
    metric = evaluate.load(str(MODULES / "clip_score"), config_name=tiny_models()["clip"])
    with pytest.raises(ValueError, match=r"ClipScore.compute: unknown option\(s\) \['fom'\]; options are "
                                         r"\['batch_size', 'form', 'w'\]"):
        metric.compute(images=paths, prompts=prompts, fom="cosine")
