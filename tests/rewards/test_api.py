"""The in-process reward API ``scorers.rewards.api`` on tiny seeded models (no Hub).

Expected values come from outside the code under test: each scorer's own ``score`` (the PIL pipelines,
checked there against the official code), single rewards loaded separately, NumPy hand computations.

Tolerances:
* 1.125/255 per pixel between the tensor and the PIL preprocessing (one uint8 step, with PIL's two roundings
  spelled out): torch's antialiased bicubic (``antialias=True``) uses PIL's own kernel (a = -0.5) and the tensor path
  makes PIL's two separable passes with its clip between them (``scorers.models.pixels.pil_bicubic_resize``); what
  remains is PIL's uint8 rounding, 0.5/255 at the end plus 0.5/255 after the horizontal pass carried through the
  vertical kernel (absolute weights summing to <= 1.25). Measured: 1.07/255 at most over 200 noise and smooth images.
* 1e-5 relative (+1e-6 absolute) for the same float32 forward in another batch shape or operation order.
"""
from __future__ import annotations

import base64
import io
import math
import re

import numpy as np
import pytest
from PIL import Image

from scorers import rewards

CLIP_FAMILY = ("pickscore", "hpsv2", "imagereward", "clip_score")
#: test case -> reward name (clip_score twice: the transformers backend and the open_clip one)
CASES = {**{name: name for name in CLIP_FAMILY}, "clip_score_open_clip": "clip_score"}
SIZES = [(47, 61), (61, 47), (32, 32), (20, 27), (97, 131)]  # (height, width): down, up, identity, odd
PROMPTS = ["a cat", "a dog", "a cat", "a red chair", "a cat"]  # repeated prompts on purpose
PIXEL_TOL = 1.125 / 255 + 1e-6  # see the module docstring; + float32 rounding


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from tests.helpers.tiny_embed_models import build_hf_clip, build_open_clip
    from tests.helpers.tiny_reward_models import tiny_reward_models

    root = tmp_path_factory.mktemp("reward-api")
    out = tiny_reward_models(root)
    out["clip_score"] = build_hf_clip(root / "clip_score", seed=3)
    out["clip_score_open_clip"] = build_open_clip(root / "clip_score_oc", seed=4)
    return out


@pytest.fixture(scope="module")
def singles(models):
    """Each reward alone, loaded once (clip_score in its signed ``cosine`` form so gradients are never clipped)."""
    return {case: rewards.load(name, model=models[case], device="cpu", options=_options(name))
            for case, name in CASES.items()}


def _options(name):
    return {"form": "cosine"} if name == "clip_score" else None


def _batch(height, width, n=len(PROMPTS), seed=0):
    """uint8 images as PIL and as the float tensor ``uint8 / 255`` (the same pixels)."""
    import torch

    array = np.random.default_rng(seed).integers(0, 256, (n, height, width, 3), dtype=np.uint8)
    return [Image.fromarray(a) for a in array], torch.from_numpy(array).permute(0, 3, 1, 2).float() / 255


def _pil_pixels(scorer, image):
    """The scorer's own PIL preprocessing -> [3, S, S] in [0, 1] (un-normalised where the transform normalises)."""
    import torch

    out = scorer.image_transform(image)
    if out.dtype == torch.uint8:
        return out.float() / 255
    mean, std = _mean_std(scorer)
    return out * torch.tensor(std).view(-1, 1, 1) + torch.tensor(mean).view(-1, 1, 1)


def _mean_std(scorer):
    """Each scorer's own normalisation constants, read from its PIL pipeline's objects."""
    from scorers.models.pixels import CLIP_MEAN, CLIP_STD

    if scorer.name == "imagereward":
        return CLIP_MEAN, CLIP_STD
    embedder = scorer.embedder
    if scorer.name == "hpsv2":
        return embedder.image_transform.mean, embedder.image_transform.std
    if embedder.family == "open_clip":
        return embedder._mean.flatten().tolist(), embedder._std.flatten().tolist()
    return embedder.image_mean, embedder.image_std


def _tensor_pixels(reward, name, pixels):
    """The tensor path's preprocessing -> [B, 3, S, S] in [0, 1] (its normalisation undone)."""
    import torch

    out = reward._paths[name].preprocess(pixels).float()
    mean, std = _mean_std(reward.scorers[name])
    return out * torch.tensor(std).view(-1, 1, 1) + torch.tensor(mean).view(-1, 1, 1)


# ----------------------------------------------------------------------------- tensor path == PIL path

@pytest.mark.parametrize("case", CASES)
def test_tensor_preprocessing_equals_the_pil_pipeline_within_one_uint8_step(singles, case):
    import torch

    reward, name = singles[case], CASES[case]
    scorer = reward.scorers[name]
    for height, width in SIZES:
        pil, pixels = _batch(height, width, n=2)
        expected = torch.stack([_pil_pixels(scorer, im) for im in pil])
        got = _tensor_pixels(reward, name, pixels)
        assert got.shape == expected.shape, (name, height, width)
        assert float((got - expected).abs().max()) <= PIXEL_TOL, (name, height, width)


def test_clip_processor_resizing_past_its_crop(models, tmp_path):
    """A CLIP processor with ``shortest_edge`` 40 and ``crop_size`` 32 (the 256/224 shape of many checkpoints): the
    tensor path resizes to 40 and crops 32, as the processor does on PIL images."""
    import torch
    import shutil

    from transformers import CLIPImageProcessor

    folder = tmp_path / "clip40"
    shutil.copytree(models["clip_score"], folder)
    CLIPImageProcessor(size={"shortest_edge": 40}, crop_size={"height": 32, "width": 32}).save_pretrained(folder)
    reward = rewards.load("clip_score", model=str(folder), device="cpu", options={"form": "cosine"})
    scorer = reward.scorers["clip_score"]
    for height, width in SIZES:
        pil, pixels = _batch(height, width, n=2)
        expected = torch.stack([_pil_pixels(scorer, im) for im in pil])
        got = _tensor_pixels(reward, "clip_score", pixels)
        assert got.shape == expected.shape == (2, 3, 32, 32)
        assert float((got - expected).abs().max()) <= PIXEL_TOL, (height, width)


@pytest.mark.parametrize("case", CASES)
def test_tensor_path_reward_equals_pil_path(singles, case):
    """Two parts: (1) fed the PIL path's own crops, the tensor path gives the scorer's ``score`` to float32
    rounding -- so the models and rules are the same; (2) on raw images the rewards differ by no more than the
    first-order effect of the pixel difference (|g . d| with g the reward's gradient w.r.t. the crop, d the measured
    pixel difference, bounded by 1.125/255 above), times 2 for curvature."""
    import torch

    reward, name = singles[case], CASES[case]
    scorer = reward.scorers[name]
    pil, pixels = _batch(47, 61)
    expected = torch.as_tensor(scorer.score(pil, PROMPTS), dtype=torch.float32)
    crops = torch.stack([_pil_pixels(scorer, im) for im in pil])
    torch.testing.assert_close(reward(crops, PROMPTS), expected, rtol=1e-5, atol=1e-6)
    assert torch.equal(reward(pil, PROMPTS), expected)  # PIL input goes through the scorer itself

    got = reward(pixels, PROMPTS)
    crops.requires_grad_(True)
    path = reward._paths[name]
    with torch.enable_grad():
        out = path.forward(path.preprocess(crops), PROMPTS)
        grad, = torch.autograd.grad(out.sum(), crops)
    diff = (_tensor_pixels(reward, name, pixels) - crops.detach())
    assert float(diff.abs().max()) <= PIXEL_TOL
    first_order = (grad * diff).flatten(1).sum(1).abs()
    bound = (grad.abs().flatten(1).sum(1) / 255)
    assert torch.all((got - expected).abs() <= 2 * first_order + 1e-5), (got - expected, first_order)
    assert torch.all(first_order <= bound + 1e-7)


# ----------------------------------------------------------------------------- weighted sums

def test_weighted_sum_equals_its_parts(models, singles):
    import torch

    weights = {"pickscore": 1.0, "hpsv2": 0.5, "imagereward": -0.25, "clip_score": 0.2}
    combined = rewards.load(weights, model={k: models[k] for k in weights}, device="cpu",
                            options={"clip_score": {"form": "cosine"}})
    _, pixels = _batch(47, 61)
    parts = {name: singles[name](pixels, PROMPTS).double() for name in weights}
    expected = sum(weights[name] * parts[name] for name in weights)
    torch.testing.assert_close(combined(pixels, PROMPTS).double(), expected, rtol=1e-6, atol=1e-6)
    info = combined.last_info
    assert info.weights == weights and info.stats == {}
    for name in weights:
        assert torch.equal(info.components[name].double(), parts[name])
    log = info.log_dict()
    assert log["reward/hpsv2_weight"] == 0.5 and math.isclose(log["reward/total"], float(expected.mean()),
                                                               rel_tol=1e-5)


def test_fixed_affine_normalisation_is_shift_then_scale(models, singles):
    import torch

    affine = {"pickscore": (-4.0, 2.0), "imagereward": (0.5, 0.25)}
    weights = {"pickscore": 1.0, "imagereward": 2.0}
    reward = rewards.load(weights, model={k: models[k] for k in weights}, device="cpu", normalize=affine)
    _, pixels = _batch(47, 61)
    parts = {name: singles[name](pixels, PROMPTS).double() for name in weights}
    expected = 1.0 * (parts["pickscore"] + 4.0) / 2.0 + 2.0 * (parts["imagereward"] - 0.5) / 0.25
    torch.testing.assert_close(reward(pixels, PROMPTS).double(), expected, rtol=1e-6, atol=1e-6)
    assert reward.last_info.stats == {"pickscore": {"shift": -4.0, "scale": 2.0},
                                      "imagereward": {"shift": 0.5, "scale": 0.25}}


def test_running_normalisation_equals_a_hand_computation(models, singles):
    reward = rewards.load({"pickscore": 1.0, "hpsv2": 3.0}, model={k: models[k] for k in ("pickscore", "hpsv2")},
                          device="cpu", normalize="running")
    seen = {"pickscore": [], "hpsv2": []}
    for seed in range(3):
        _, pixels = _batch(40, 40, seed=seed)
        got = reward(pixels, PROMPTS)
        normalised = {}
        for name in seen:
            raw = singles[name](pixels, PROMPTS).double().numpy()
            seen[name].extend(raw.tolist())
            values = np.array(seen[name])
            mean, std = values.mean(), values.std()  # population std (ddof 0), all batches so far
            stats = reward.last_info.stats[name]
            assert stats["count"] == len(values)
            assert math.isclose(stats["mean"], mean, rel_tol=1e-12, abs_tol=1e-12)
            assert math.isclose(stats["std"], std, rel_tol=1e-9, abs_tol=1e-12)
            normalised[name] = (raw - mean) / std
        np.testing.assert_allclose(got.double().numpy(), normalised["pickscore"] + 3.0 * normalised["hpsv2"],
                                   rtol=1e-5, atol=1e-5)
    reward.reset_stats()
    assert reward.stats["hpsv2"] == {"count": 0, "mean": 0.0, "std": 0.0}


def test_running_normalisation_of_one_value_only_centres():
    import torch

    reward = rewards.Reward({"x": None}, {"x": 1.0}, normalize="running")
    value = torch.tensor([2.5])
    assert torch.equal(reward._normalise("x", value), torch.tensor([0.0]))  # std 0: r - mean


# ----------------------------------------------------------------------------- order, batches, determinism

@pytest.mark.parametrize("case", CASES)
def test_a_batch_gives_one_reward_per_pair_in_order_with_repeated_prompts(singles, case):
    """B images + B prompts (three of them the same) -> B rewards, each equal to that pair scored alone; reversing
    the batch reverses the rewards (ImageReward's package returned images x prompts rewards for repeated prompts)."""
    import torch

    reward = singles[case]
    pil, pixels = _batch(47, 61)
    for images in (pixels, pil):
        batch = reward(images, PROMPTS)
        assert batch.shape == (len(PROMPTS),)
        alone = torch.cat([reward(images[i:i + 1], PROMPTS[i:i + 1]) for i in range(len(PROMPTS))])
        torch.testing.assert_close(batch, alone, rtol=1e-5, atol=1e-6)
        flipped = reward(pixels.flip(0) if images is pixels else pil[::-1], PROMPTS[::-1])
        torch.testing.assert_close(flipped, batch.flip(0), rtol=1e-5, atol=1e-6)
    same_image = pixels[:1].expand(3, -1, -1, -1)
    out = reward(same_image, ["a cat", "a dog", "a cat"])
    assert out.shape == (3,) and out[0] == out[2]


def test_same_inputs_give_bitwise_the_same_output(models):
    import torch

    weights = {"pickscore": 1.0, "hpsv2": 0.5, "imagereward": 0.25}
    reward = rewards.load(weights, model={k: models[k] for k in weights}, device="cpu")
    pil, pixels = _batch(47, 61)
    assert torch.equal(reward(pixels, PROMPTS), reward(pixels.clone(), list(PROMPTS)))
    assert torch.equal(reward(pil, PROMPTS), reward(pil, PROMPTS))
    out = reward(pixels, PROMPTS)
    assert not out.requires_grad and not out.is_inference()
    assert not any(c.is_inference() for c in reward.last_info.components.values())
    out[0] = 0.0  # callers may modify the result in place


def test_the_prompt_cache_stays_bounded_in_a_long_loop(models):
    import torch

    reward = rewards.load("pickscore", model=models["pickscore"], device="cpu")
    reward.max_cached_prompts = 6
    cache = reward.scorers["pickscore"]._text_cache
    _, pixels = _batch(32, 32, n=4)
    first = reward(pixels, ["p0", "p1", "p2", "p3"])
    for step in range(1, 4):
        reward(pixels, [f"p{4 * step + i}" for i in range(4)])
        assert len(cache) <= 6 + 4
    assert torch.equal(reward(pixels, ["p0", "p1", "p2", "p3"]), first)  # recomputed after the clear: same numbers


# ----------------------------------------------------------------------------- gradients

@pytest.mark.parametrize("case", CASES)
def test_differentiable_gradients_reach_the_input_pixels(models, case):
    import torch

    name = CASES[case]
    reward = rewards.load(name, model=models[case], device="cpu", differentiable=True, options=_options(name))
    _, pixels = _batch(47, 61)
    pixels.requires_grad_(True)
    out = reward(pixels, PROMPTS)
    assert out.requires_grad and out.shape == (len(PROMPTS),)
    out.sum().backward()
    assert pixels.grad is not None and torch.isfinite(pixels.grad).all()
    per_image = pixels.grad.abs().flatten(1).sum(1)
    assert torch.all(per_image > 0), per_image  # every image gets a gradient from its own reward
    module = reward._paths[name].module
    assert all(p.grad is None and not p.requires_grad for p in module.parameters())  # the reward model is frozen


def test_differentiable_weighted_sum_backpropagates(models):
    import torch

    weights = {"pickscore": 1.0, "hpsv2": 0.5}
    reward = rewards.load(weights, model={k: models[k] for k in weights}, device="cpu", differentiable=True,
                          normalize="running")
    _, pixels = _batch(32, 32)
    pixels.requires_grad_(True)
    reward(pixels, PROMPTS).mean().backward()
    assert torch.isfinite(pixels.grad).all() and pixels.grad.abs().sum() > 0


def test_differentiable_is_refused_for_judges_and_pil_input(models):
    with pytest.raises(ValueError, match="differentiable=True is available for pickscore, hpsv2, clip_score, "
                                         "imagereward only; unifiedreward"):
        rewards.load({"pickscore": 1.0, "unifiedreward": 1.0}, differentiable=True)
    reward = rewards.load("hpsv2", model=models["hpsv2"], device="cpu", differentiable=True)
    pil, _ = _batch(32, 32, n=1)
    with pytest.raises(ValueError, match="needs images as a float tensor"):
        reward(pil, ["a cat"])


def test_rewards_without_a_tensor_path_take_tensors_as_pil_images(tmp_path):
    """HPSv3 (Qwen2-VL processor on the CPU): a tensor of ``uint8 / 255`` pixels scores exactly as the PIL images
    of those pixels do through the scorer itself (the conversion rounds back to the same uint8 values)."""
    import torch
    from tests.helpers.tiny_reward_models import build_hpsv3

    reward = rewards.load("hpsv3", model=build_hpsv3(tmp_path), device="cpu")
    pil, pixels = _batch(40, 56, n=3)
    prompts = ["a cat", "a dog", "a cat"]
    expected = torch.as_tensor(reward.scorers["hpsv3"].score(pil, prompts), dtype=torch.float32)
    assert torch.equal(reward(pixels, prompts), expected)
    with pytest.raises(ValueError, match="hpsv3 has no differentiable path"):
        rewards.load("hpsv3", differentiable=True)


# ----------------------------------------------------------------------------- VLM judges, served

def test_unifiedreward_through_a_served_judge_with_the_same_interface(models):
    import torch
    from tests.helpers.loopback_chat_server import ChatServer, chat_reply

    def respond(body):
        content = body["messages"][-1]["content"]
        url = next(part["image_url"]["url"] for part in content if part.get("type") == "image_url")
        image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")
        return chat_reply(f"Alignment Score (1-5): {1 + image.getpixel((0, 0))[1] // 64}\nCoherence Score (1-5): 3")

    greens = [0, 64, 200, 130]  # -> ratings 1, 2, 4, 3
    pixels = torch.zeros(len(greens), 3, 16, 16)
    for i, green in enumerate(greens):
        pixels[i, 1] = green / 255
    with ChatServer(respond, model="UnifiedReward") as server:
        reward = rewards.load({"unifiedreward": 2.0, "hpsv2": 1.0},
                              model={"unifiedreward": "openai:UnifiedReward", "hpsv2": models["hpsv2"]},
                              options={"unifiedreward": {"api_base": server.url}}, device="cpu")
        out = reward(pixels, ["a cat", "a cat", "a dog", "a cat"])
    np.testing.assert_array_equal(reward.last_info.components["unifiedreward"].numpy(), [1, 2, 4, 3])
    hps = reward.last_info.components["hpsv2"]
    torch.testing.assert_close(out, 2.0 * torch.tensor([1.0, 2, 4, 3]) + hps)


def test_vqa_score_through_a_served_vlm_with_the_same_interface():
    """``vqa_score`` on a served chat VLM: P(yes) from the reply's top logprobs, one per pair, in order."""
    import torch
    from tests.helpers.loopback_chat_server import ChatServer, chat_reply, request_text

    def respond(body):
        p_yes = 0.8 if "cat" in request_text(body) else 0.3
        top = [{"token": "Yes", "logprob": math.log(p_yes)}, {"token": "No", "logprob": math.log(1 - p_yes)}]
        return chat_reply("Yes", top_logprobs=top)

    pixels = torch.rand(3, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    with ChatServer(respond) as server:
        reward = rewards.load("vqa_score", model="openai:tiny", options={"api_base": server.url}, device="cpu")
        out = reward(pixels, ["a cat", "a dog", "a cat"])
    torch.testing.assert_close(out, torch.tensor([0.8, 0.3, 0.8]), rtol=1e-6, atol=1e-7)  # hand: the scripted P(yes)


def test_cuda_tensors_stay_on_the_device(models, singles):
    """A CUDA batch is preprocessed and scored on the GPU (the result lives there) and matches the CPU path to
    float32 rounding across devices (1e-4 relative: different kernels)."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    _, pixels = _batch(47, 61)
    for name in ("pickscore", "hpsv2", "imagereward"):
        gpu = rewards.load(name, model=models[name], device="cuda")
        out = gpu(pixels.cuda(), PROMPTS)
        assert out.device.type == "cuda"
        torch.testing.assert_close(out.cpu(), singles[name](pixels, PROMPTS), rtol=1e-4, atol=1e-4)


# ----------------------------------------------------------------------------- input checks

def test_bad_arguments_get_one_clear_line(models, singles):
    with pytest.raises(ValueError, match="unknown reward 'pickscor'"):
        rewards.load("pickscor")
    with pytest.raises(ValueError, match="weight of 'hpsv2' must be a finite number"):
        rewards.load({"hpsv2": float("nan")})
    with pytest.raises(ValueError, match="model must be a mapping"):
        rewards.load({"hpsv2": 1.0, "pickscore": 1.0}, model="x")
    with pytest.raises(ValueError, match=r"model names \['imagereward'\]"):
        rewards.load({"hpsv2": 1.0, "pickscore": 1.0}, model={"imagereward": "x"})
    with pytest.raises(ValueError, match="normalize must be"):
        rewards.load("hpsv2", normalize="zscore")
    with pytest.raises(ValueError, match="non-zero scale"):
        rewards.load("hpsv2", normalize={"hpsv2": (0.0, 0.0)})
    reward = singles["hpsv2"]
    _, pixels = _batch(32, 32, n=2)
    with pytest.raises(ValueError, match="got 2 images but 1 prompts"):
        reward(pixels, ["a cat"])
    with pytest.raises(TypeError, match="not one string"):
        reward(pixels, "a cat")
    with pytest.raises(ValueError, match=r"lie in \[\d+, \d+\], outside input_range=\(0, 1\).*input_range=\(0, 255\)"):
        reward((pixels * 255).byte(), ["a", "b"])  # uint8 pixels read in the default [0, 1]: the range is named
    with pytest.raises(ValueError, match=r"real numbers \(floats, or integers such as uint8\) .*got torch.bool"):
        reward(pixels > 0.5, ["a", "b"])
    assert reward(pixels[:0], []).shape == (0,)


def test_a_uint8_tensor_read_in_0_255_scores_as_its_float_pixels(models, singles):
    import torch

    reward = singles["pickscore"]
    images, pixels = _batch(32, 32, n=2)
    as_uint8 = torch.from_numpy(np.stack([np.asarray(image) for image in images])).permute(0, 3, 1, 2)
    assert as_uint8.dtype == torch.uint8
    expected = reward(pixels, PROMPTS[:2])  # the same pixels as float32 ``uint8 / 255`` (_batch)
    # before: "image tensors must be floats in [0, 1], got torch.uint8", although input_range said (0, 255)
    torch.testing.assert_close(reward(as_uint8, PROMPTS[:2], input_range=(0, 255)), expected, rtol=1e-6, atol=1e-6)
    loaded = rewards.load("pickscore", model=models["pickscore"], device="cpu", input_range=(0, 255))
    torch.testing.assert_close(loaded(as_uint8, PROMPTS[:2]), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("bad", [(0, 1e-300), (-1e308, 1e308), (0, 1e39), (1e6, 1e6 + 1)])
def test_an_input_range_float32_pixels_cannot_be_read_in_is_refused_as_a_range(singles, bad):
    reward = singles["pickscore"]
    _, pixels = _batch(32, 32, n=2)
    message = rf"^reward: input_range={re.escape(repr(bad))} is no pixel range that float32 can read"
    with pytest.raises(ValueError, match=message):  # before: "image tensor holds NaN or infinite values"
        reward(pixels, PROMPTS[:2], input_range=bad)
    with pytest.raises(ValueError, match=message):
        rewards.load("pickscore", input_range=bad)
