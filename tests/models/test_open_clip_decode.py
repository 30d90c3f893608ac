"""open_clip preprocessing paths: uint8 worker output normalised on the device (== open_clip's float transform) and
the opt-in ``decode="device"`` path (JPEG bytes from the workers, batched decode + resize + crop on the device).
Runs on CPU (same code as CUDA, with ``torchvision.io.decode_jpeg`` on libjpeg-turbo); the CUDA case runs when a GPU
is present."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scorers.metrics.embedding import CLIPScore
from scorers.scoring.runner import run
from tests.helpers.tiny_embed_models import build_open_clip, tiny_models

UINT8_TOL = 1e-6  # uint8 + normalise on the device vs open_clip's float transform: same float32 ops, same order
DEVICE_TOL = 5e-3  # decode="device" vs PIL decoding, tiny random model (5.7e-4 seen on CPU): decoders differ slightly
#: max / mean |crop difference| (uint8 levels) of decode="device" vs PIL crops. CPU: libjpeg-turbo on both sides
#: (2 / 0.15 seen). CUDA: nvJPEG's IDCT and chroma upsampling differ more (23 / 1.69 measured on an H100 with
#: torchvision 0.26; the ViT-B-32 benchmark there saw 1.5e-3 max score difference in fp32).
PIXEL_LEVELS = {"cpu": (3, 0.5), "cuda": (32, 2.5)}

DEVICES = ["cpu", "cuda"]  # "cuda" skips where torch sees no GPU (see needs)
PROMPTS = ["a red bicycle leaning against a brick wall", "two cats sleeping on a blue sofa"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return build_open_clip(tmp_path_factory.mktemp("oc"))


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """Noisy gradient JPEGs of several sizes/aspects, a greyscale JPEG, a PNG and a CMYK JPEG (the last two take
    the PIL fallback in the workers)."""
    root = tmp_path_factory.mktemp("img")
    rng = np.random.default_rng(0)
    paths = []
    for i, (h, w) in enumerate([(64, 64), (96, 64), (64, 120), (64, 64), (50, 75), (64, 64)]):
        base = np.stack([np.add.outer(np.linspace(0, 255, h), np.linspace(0, 128, w)) / 1.5,
                         np.full((h, w), 40.0 * i), np.add.outer(np.linspace(255, 0, h), np.zeros(w))], axis=-1)
        pixels = np.clip(base + rng.normal(0, 25, base.shape), 0, 255).astype(np.uint8)
        paths.append(str(root / f"{i}.jpg"))
        Image.fromarray(pixels).save(paths[-1], quality=90)
    Image.open(paths[1]).convert("L").save(root / "grey.jpg", quality=90)
    Image.open(paths[2]).save(root / "png.png")
    Image.open(paths[4]).convert("CMYK").save(root / "cmyk.jpg", quality=90)
    return paths + [str(root / "grey.jpg"), str(root / "png.png"), str(root / "cmyk.jpg")]


def needs(device: str) -> None:
    """Skip the test when ``device`` is CUDA and torch sees no GPU."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA")


def _prompts(n):
    return [PROMPTS[i % 2] for i in range(n)]


def test_uint8_transform_equals_open_clip_float_transform(model, images):
    import torch

    embedder = CLIPScore(model, form="cosine").embedder
    for path in images:
        image = Image.open(path).convert("RGB")
        crop = embedder.image_transform(image)
        assert crop.dtype == torch.uint8 and crop.shape[0] == 3
        reference = embedder.reference_transform(image)
        ours = (crop.float() / 255 - embedder._mean.cpu()) / embedder._std.cpu()
        np.testing.assert_allclose(ours.numpy(), reference.numpy(), atol=UINT8_TOL)
        a = embedder.encode_images(crop[None]).float().cpu().numpy()
        b = embedder.encode_images(reference[None]).float().cpu().numpy()  # float input: taken as normalised
        np.testing.assert_allclose(a, b, atol=UINT8_TOL)


@pytest.mark.parametrize("device", DEVICES)
def test_device_decode_crops_close_to_pil(model, images, device):
    import torch

    needs(device)
    embedder = CLIPScore(model, form="cosine", decode="device", device=device).embedder
    pil = torch.stack([embedder.image_transform(Image.open(p).convert("RGB")) for p in images]).int()
    items = [embedder.image_loader(p) for p in images]
    assert [x.dim() for x in items] == [1] * 7 + [3, 3]  # JPEG bytes (RGB, grey); PNG + CMYK decoded in the worker
    ours = embedder.decode_images(items).cpu().int()
    assert ours.shape == pil.shape and ours.dtype == torch.int32
    diff = (ours - pil).abs()
    worst, mean = PIXEL_LEVELS[device]
    assert int(diff.max()) <= worst and float(diff.float().mean()) < mean, (int(diff.max()), diff.float().mean())


@pytest.mark.parametrize("device", DEVICES)
def test_device_decode_scores_close_to_pil_and_batched_equals_single(model, images, device):
    needs(device)
    prompts = _prompts(len(images))
    pil = CLIPScore(model, form="cosine", device=device).score(images, prompts)
    scorer = CLIPScore(model, form="cosine", decode="device", device=device)
    ours = scorer.score(images, prompts)
    atol = DEVICE_TOL if device == "cpu" else 4 * DEVICE_TOL
    np.testing.assert_allclose(ours, pil, atol=atol)
    assert np.ptp(pil) > 5 * atol  # the PIL reference spreads well beyond the tolerance: agreement is informative
    single = np.array([scorer.score([p], [t])[0] for p, t in zip(images, prompts)])
    np.testing.assert_allclose(ours, single, atol=1e-5)
    pil_images = [Image.open(p) for p in images]  # PIL images in: decoded by PIL, crops as the default path
    np.testing.assert_allclose(scorer.score(pil_images, prompts), pil, atol=1e-5)


def test_device_decode_through_runner_with_workers(model, images, tmp_path):
    paths = images + [images[0], images[0], images[3]]  # equal-length byte strings in one batch get stacked (2-D)
    prompts = _prompts(len(paths))
    scorer = CLIPScore(model, form="cosine", decode="device")
    assert scorer.config["decode"] == "device" and "decode" not in CLIPScore(model).config
    direct = scorer.score(paths, prompts)
    result = run(scorer, paths, prompts, batch_size=4, num_workers=2, progress=False, cache_dir=tmp_path / "c")
    np.testing.assert_allclose(result.scores, direct, atol=1e-5)
    stacked = run(scorer, [images[0]] * 3, [prompts[0]] * 3, batch_size=3, num_workers=0, progress=False)
    np.testing.assert_allclose(stacked.scores, [direct[0]] * 3, atol=1e-5)
    with pytest.raises(ValueError, match="different scorer configuration"):
        run(CLIPScore(model, form="cosine"), paths, prompts, progress=False, cache_dir=tmp_path / "c")
    with pytest.raises(ValueError, match="jpeg_draft"):
        run(scorer, paths, prompts, progress=False, jpeg_draft=224)


def test_device_decode_bad_files_are_reported(model, images, tmp_path):
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(Path(images[0]).read_bytes()[:400])
    junk = tmp_path / "junk.jpg"
    junk.write_bytes(b"not a jpeg")
    scorer = CLIPScore(model, form="cosine", decode="device")
    paths, prompts = [images[0], str(truncated), str(junk)], _prompts(3)
    with pytest.raises(ValueError, match="truncated.jpg"):
        run(scorer, paths, prompts, num_workers=0, progress=False)
    result = run(scorer, paths, prompts, num_workers=0, progress=False, on_error="skip")
    assert np.isfinite(result.scores[0]) and np.isnan(result.scores[1:]).all()
    assert "truncated.jpg" in result.errors[1] and "junk.jpg" in result.errors[2]
    with pytest.raises(ValueError, match="junk.jpg"):
        scorer.score([str(junk)], ["a prompt"])


def test_decode_option_errors(model):
    with pytest.raises(ValueError, match="decode 'gpu'"):
        CLIPScore(model, decode="gpu")
    with pytest.raises(ValueError, match="open_clip backend only"):
        CLIPScore(tiny_models()["clip"], decode="device")


def test_cli_decode_device(model, tmp_path):
    import pandas as pd

    from scorers.cli import main
    from tests.helpers.ts2_fixture_data import make_data_dir

    data_dir = make_data_dir(tmp_path / "data", seg_ids=[0], image_size=40, with_questions=False)
    args = ["score", "clip_score", "--data-dir", str(data_dir), "--model", model, "--form", "cosine",
            "--num-workers", "0", "--no-progress"]
    assert main(args + ["--out", str(tmp_path / "pil.csv")]) == 0
    assert main(args + ["--out", str(tmp_path / "dev.csv"), "--decode", "device"]) == 0
    fingerprint = (tmp_path / "dev.csv.cache" / "fingerprint.json").read_text()
    assert '"decode": "device"' in fingerprint
    pil, dev = pd.read_csv(tmp_path / "pil.csv"), pd.read_csv(tmp_path / "dev.csv")
    assert len(dev) == len(pil) > 0
    np.testing.assert_allclose(dev["clip_score"], pil["clip_score"], atol=DEVICE_TOL)
