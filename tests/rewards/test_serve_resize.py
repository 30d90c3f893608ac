"""``ts2 serve`` resizes images to the model's input size right after decoding only where the reward stays the same to
the bit: PickScore and ImageReward (their preprocessing starts with ``ResizeCropUint8``, which the
service applies itself, so the model's own pass is the identity); none for HPSv2 or a sum of rewards with different
preprocessing. Expected values: the reward of the full-size images, computed by the same model in-process."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from scorers.rewards.api import load
from scorers.rewards.serve import input_resizer


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from tests.helpers.tiny_reward_models import tiny_reward_models

    return tiny_reward_models(tmp_path_factory.mktemp("tiny-rewards"))


def _images():
    rng = np.random.default_rng(5)
    sizes = [(100, 37), (640, 480), (33, 200), (32, 32), (20, 9), (301, 300)]  # odd crops, upscaling, already S
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in sizes]


@pytest.mark.parametrize("name", ["pickscore", "imagereward"])
def test_resizing_on_decode_leaves_the_reward_bit_identical(models, name):
    reward = load(name, model=models[name], device="cpu")
    resize = input_resizer(reward)
    assert resize is not None
    images = _images()
    prompts = [f"prompt {i}" for i in range(len(images))]
    small = [resize(im) for im in images]
    side = 32  # the tiny models' input size
    assert {im.size for im in small} == {(side, side)}
    np.testing.assert_array_equal(reward(small, prompts).numpy(), reward(images, prompts).numpy())


def test_no_resizing_where_it_would_change_the_reward(models):
    assert input_resizer(load("hpsv2", model=models["hpsv2"], device="cpu")) is None  # a float-tensor resize
    both = load({"pickscore": 1.0, "imagereward": 1.0},
                model={"pickscore": models["pickscore"], "imagereward": models["imagereward"]}, device="cpu")
    assert input_resizer(both) is None  # floor vs round crop offsets: no one image serves both
