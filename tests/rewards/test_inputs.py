"""Reward inputs read as users pass them, and no key fragment in a message.

Expected values come from outside the code under test: hand-built 8-bit twins of 16-bit images, torchvision's and
PIL's own steps written out here (ImageReward's official ``_transform`` order), PIL's JPEG encoder, and the texts a
loopback server was made to send. Tolerances are stated where they are used.
"""
from __future__ import annotations

import base64
import io
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scorers import rewards
from scorers.models.images import open_image, open_rgb, to_rgb

ROOT = Path(__file__).resolve().parents[2]
#: no four characters of it in a row can appear in a loopback URL (no run of digits, dots or colons): the fragment
#: checks below would otherwise match a random port such as 34567
KEY = "sk-TESTMARKER-0a1b2c3d4e5f6g7h8i9jQRST"


# ----------------------------------------------------------------------------- helpers

def _eight_bit(seed=0, shape=(24, 20)):
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def _sixteen_bit_twin(a8, seed=1):
    """A 16-bit image whose 8-bit reading is ``a8``: ``257 * k`` (an 8-bit value widened exactly) plus noise in
    [-128, 128] in the low bits, so ``round(v * 255 / 65535) = k + round(d / 257) = k`` exactly (|d| / 257 < 0.5)
    while a clip (PIL's convert) or a truncation would not give ``k``."""
    noise = np.random.default_rng(seed).integers(-128, 129, a8.shape)
    return np.clip(a8.astype(np.int64) * 257 + noise, 0, 65535).astype(np.uint16)


def _png(image: Image.Image, path: Path) -> Path:
    image.save(path)
    return path


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Replies:
    """A loopback HTTP server answering each POST with the next ``(status, headers, body)`` of ``answers`` (the last
    one repeated), recording the request bodies; GET answers 404. Stopped on leaving the ``with`` block."""

    def __init__(self, answers):
        self.answers, self.bodies, self.lock = list(answers), [], threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with owner.lock:
                    owner.bodies.append(body)
                    status, headers, data = owner.answers[min(len(owner.bodies), len(owner.answers)) - 1]
                data = data if isinstance(data, bytes) else json.dumps(data).encode()
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(data))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _remote(url, **kw):
    reward = rewards.RemoteReward(url, **kw)
    reward.sleeps = []
    reward._sleep = reward.sleeps.append  # record the waits instead of sleeping
    return reward


def _rgb_images(n=3, size=8):
    return [Image.fromarray(np.full((size, size, 3), 40 * i, np.uint8)) for i in range(n)]


# ----------------------------------------------------------------------------- item 7: high-bit images

@pytest.mark.parametrize("mode", ["I;16", "I;16B", "I", "F"])
def test_high_bit_modes_are_scaled_not_clipped(mode):
    a8 = _eight_bit()
    a16 = _sixteen_bit_twin(a8)
    if mode == "I;16":
        image = Image.fromarray(a16)
    elif mode == "I;16B":
        image = Image.frombytes("I;16B", a16.shape[::-1], a16.astype(">u2").tobytes())
    elif mode == "I":
        image = Image.fromarray(a16.astype(np.int32))
    else:  # 32-bit float in [0, 1]: k / 255 reads back as k (float32 rounding is ~1e-8 of a step)
        image = Image.fromarray((a8 / 255.0).astype(np.float32))
    assert image.mode == mode
    rgb = np.asarray(to_rgb(image))
    assert rgb.shape == a8.shape + (3,)
    for channel in range(3):
        np.testing.assert_array_equal(rgb[..., channel], a8)


def test_a_16_bit_png_reads_as_its_8_bit_twin_on_every_path(tmp_path):
    """The file path of the runner (open_rgb), the scorers' open_image, the service's decoder, the demo's upload
    reader, and what RemoteReward sends: all the 8-bit twin's pixels, exactly (see _sixteen_bit_twin)."""
    from scorers.demo.upload_scoring import open_upload
    from scorers.rewards.serve_checks import Limits, decode_request

    a8 = _eight_bit(seed=3)
    p16 = _png(Image.fromarray(_sixteen_bit_twin(a8)), tmp_path / "sixteen.png")
    p8 = _png(Image.fromarray(a8), tmp_path / "eight.png")
    with Image.open(p16) as handle:
        assert handle.mode == "I;16"
        assert np.asarray(handle.convert("RGB")).mean() > 200  # PIL's own convert clips: nearly white (the bug)
    twin = np.asarray(open_rgb(p8))
    np.testing.assert_array_equal(np.asarray(open_rgb(p16)), twin)
    np.testing.assert_array_equal(np.asarray(open_image(str(p16))), twin)
    np.testing.assert_array_equal(np.asarray(open_upload(str(p16))), twin)
    body = json.dumps({"prompts": ["a cat"], "images": [base64.b64encode(p16.read_bytes()).decode()]}).encode()
    _, decoded = decode_request(body, Limits())
    np.testing.assert_array_equal(np.asarray(decoded[0]), twin)
    rgb = np.stack([a8, a8[::-1], a8[:, ::-1]], axis=-1)  # an RGB PNG stays readable after the request's handle closes
    p_rgb = _png(Image.fromarray(rgb), tmp_path / "rgb.png")
    body = json.dumps({"prompts": ["a cat"], "images": [base64.b64encode(p_rgb.read_bytes()).decode()]}).encode()
    np.testing.assert_array_equal(np.asarray(decode_request(body, Limits())[1][0]), rgb)
    with Replies([(200, {}, {"rewards": [0.5]})]) as server:
        _remote(server.url)([str(p16)], ["a cat"])
        sent = json.loads(server.bodies[0])["images"][0]
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(base64.b64decode(sent))).convert("RGB")), twin)


def test_out_of_range_high_bit_images_are_refused_with_one_line():
    with pytest.raises(ValueError, match=r"mode 'F'.*\[0, 1\].*\[0, 2\]"):
        to_rgb(Image.fromarray(np.array([[0.0, 2.0]], np.float32)))
    with pytest.raises(ValueError, match=r"16-bit values \(0..65535\).*\[0, 70000\]"):
        to_rgb(Image.fromarray(np.array([[0, 70000]], np.int32)))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tests.helpers.tiny_reward_models import tiny_reward_models

    return tiny_reward_models(tmp_path_factory.mktemp("reward-inputs"))


@pytest.mark.parametrize("name", ["pickscore", "imagereward"])
def test_a_16_bit_png_and_its_8_bit_twin_get_the_same_reward(tiny, tmp_path, name):
    """Same pixels after reading (previous test), so the same reward: exactly, on the PIL path and the runner."""
    from scorers.scoring.runner import score_pairs

    a8 = np.stack([_eight_bit(seed=5, shape=(40, 36))] * 3, axis=-1)[..., 0]
    p16 = _png(Image.fromarray(_sixteen_bit_twin(a8)), tmp_path / "sixteen.png")
    p8 = _png(Image.fromarray(a8), tmp_path / "eight.png")
    reward = rewards.load(name, model=tiny[name], device="cpu")
    got = reward([str(p16), str(p8)], ["a cat", "a cat"])
    assert float(got[0]) == float(got[1])
    scores = score_pairs(reward.scorers[name], [str(p16), str(p8)], ["a cat", "a cat"], batch_size=2)["scores"]
    assert scores[0] == scores[1] == pytest.approx(float(got[1]), rel=1e-5, abs=1e-6)  # another batch shape


# ----------------------------------------------------------------------------- item 8: tensor range

def test_tensors_outside_0_1_are_refused_unless_input_range_says_how_to_read_them(tiny):
    import torch

    reward = rewards.load("pickscore", model=tiny["pickscore"], device="cpu")
    x = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (2, 3, 32, 32))).float() / 255
    x[:, :, 0, 0] = torch.tensor([0.0, 1.0]).view(2, 1)  # both ends present
    prompts = ["a cat", "a dog"]
    base = reward(x, prompts)
    with pytest.raises(ValueError, match=r"outside input_range=\(0, 1\).*input_range=\(-1, 1\).*\(0, 255\)"):
        reward(x * 2 - 1, prompts)
    with pytest.raises(ValueError, match=r"\[0, 255\], outside input_range=\(0, 1\)"):
        reward(x * 255, prompts)
    # 1e-5: the mapping back ((y + 1) / 2, y / 255) rounds each pixel by at most a float32 ulp (6e-8), far below
    # what moves a float32 CLIP forward by more than its own rounding
    torch.testing.assert_close(reward(x * 2 - 1, prompts, input_range=(-1, 1)), base, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(reward(x * 255, prompts, input_range=(0, 255)), base, rtol=1e-5, atol=1e-5)
    vae = rewards.load("pickscore", model=tiny["pickscore"], device="cpu", input_range=(-1, 1))
    torch.testing.assert_close(vae(x * 2 - 1, prompts), base, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"outside input_range=\(-1, 1\)"):
        vae(x * 255, prompts)


def test_the_range_tolerance_is_2_to_the_minus_7():
    """Checked before anything is sent: a tensor that passes the check reaches the (closed) port and fails there."""
    import torch

    from scorers.rewards.api import RANGE_TOLERANCE

    assert RANGE_TOLERANCE == 2 ** -7
    reward = _remote(f"http://127.0.0.1:{_closed_port()}")

    def image(value):
        pixels = torch.full((1, 3, 4, 4), 0.5)
        pixels[0, 0, 0, 0] = value
        return pixels

    for ok in (-(2 ** -8), 1 + 2 ** -7):  # bf16's 1.0 + one ulp is 1 + 2**-7: accepted
        with pytest.raises(ValueError, match="cannot connect"):
            reward(image(ok), ["a cat"])
    for bad in (1 + 2 ** -6, -(2 ** -6)):
        with pytest.raises(ValueError, match="outside input_range"):
            reward(image(bad), ["a cat"])
    with pytest.raises(ValueError, match="NaN or infinite"):
        reward(image(float("nan")), ["a cat"])
    for bad in ((1, 1), (0, float("inf")), "01", (0, 1, 2)):
        with pytest.raises(ValueError, match="input_range"):
            rewards.load("pickscore", input_range=bad)


def test_remote_reward_checks_the_range_before_sending():
    import torch

    reward = _remote(f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(ValueError, match=r"outside input_range=\(0, 1\)"):
        reward(torch.full((1, 3, 8, 8), -0.5), ["a cat"])


# ----------------------------------------------------------------------------- item 9: RemoteReward replies

@pytest.mark.parametrize("reply, message", [
    ({"rewards": [0.5]}, r"'rewards' has 1 values for 3 images"),
    ({"rewards": [[1, 2], [3, 4], [5, 6]]}, r"'rewards'\[0\] is \[1, 2\], expected one number per image"),
    (b'{"rewards": [1.0, NaN, 2.0]}', r"'rewards'\[1\] is nan, not a finite number"),
    (b'{"rewards": [1.0, 2.0, Infinity]}', r"'rewards'\[2\] is inf, not a finite number"),
    ({"scores": [1, 2, 3]}, r"no 'rewards' in it \(keys: \['scores'\]\)"),
    ({"rewards": "1,2,3"}, r"'rewards' is a str, expected a list of 3 numbers"),
    ({"rewards": [1, True, 3]}, r"'rewards'\[1\] is true"),
    ({"rewards": [1, 2, 3], "components": {"hpsv2": [1, 2]}}, r"components\['hpsv2'\] has 2 values for 3 images"),
    (b"<html>busy</html>", r"not JSON: '<html>busy</html>'"),
    ([1, 2, 3], r"a JSON list"),
])
def test_every_reply_is_checked(reply, message):
    with Replies([(200, {}, reply)]) as server:
        with pytest.raises(ValueError, match=r"reward service http://127\.0\.0\.1:\d+/score: invalid reply: "
                                             + message):
            _remote(server.url)(_rgb_images(3), ["a", "b", "c"])


def test_a_good_reply_comes_back_as_float32_of_one_reward_per_image():
    import torch

    with Replies([(200, {}, {"rewards": [1, 2.5, -3], "components": {"pickscore": [1, 2.5, -3]}})]) as server:
        reward = _remote(server.url)
        out = reward(_rgb_images(3), ["a", "b", "c"])
    assert out.dtype == torch.float32 and out.tolist() == [1.0, 2.5, -3.0]
    assert reward.last_info.components["pickscore"].tolist() == [1.0, 2.5, -3.0]


def test_a_refused_connection_is_one_clear_error():
    import urllib.error

    with pytest.raises(ValueError, match=r"cannot connect \(ConnectionRefusedError.*is ts2 serve running") as caught:
        _remote(f"http://127.0.0.1:{_closed_port()}")(_rgb_images(1), ["a cat"])
    assert not isinstance(caught.value, urllib.error.URLError)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_503_is_retried_after_retry_after_a_bounded_number_of_times():
    busy = (503, {"Retry-After": "7"}, {"error": "decoded-pixel budget full"})
    with Replies([busy, busy, (200, {}, {"rewards": [4.0]})]) as server:
        reward = _remote(server.url, max_retries=3)
        assert reward(_rgb_images(1), ["a cat"]).tolist() == [4.0]
    assert reward.sleeps == [7.0, 7.0] and len(server.bodies) == 3
    with Replies([(503, {"Retry-After": "1000"}, b"busy")]) as server:
        reward = _remote(server.url, max_retries=2, max_retry_after=30)
        with pytest.raises(ValueError, match=r"HTTP 503 \(still busy after 2 retries\): busy"):
            reward(_rgb_images(1), ["a cat"])
    assert reward.sleeps == [30.0, 30.0] and len(server.bodies) == 3  # capped, and 1 + max_retries attempts
    with Replies([(503, {}, b"busy"), (429, {}, b"slow down"), (200, {}, {"rewards": [1.0]})]) as server:
        reward = _remote(server.url, backoff=0.25)
        reward(_rgb_images(1), ["a cat"])
    assert reward.sleeps == [0.25, 0.5]  # no Retry-After: backoff, doubling
    with Replies([(400, {}, b"bad image")]) as server:
        reward = _remote(server.url)
        with pytest.raises(ValueError, match="HTTP 400: bad image"):
            reward(_rgb_images(1), ["a cat"])
    assert reward.sleeps == [] and len(server.bodies) == 1  # a 4xx is not retried


def test_retry_after_is_really_waited_for():
    import time

    with Replies([(503, {"Retry-After": "1"}, b""), (200, {}, {"rewards": [1.0]})]) as server:
        start = time.monotonic()
        rewards.RemoteReward(server.url)(_rgb_images(1), ["a cat"])
        assert time.monotonic() - start >= 1.0


# ----------------------------------------------------------------------------- item 10: rough edges

def test_a_mixed_list_of_pil_images_and_tensors_is_one_clear_error(tiny):
    import torch

    reward = rewards.load("pickscore", model=tiny["pickscore"], device="cpu")
    with pytest.raises(ValueError, match=r"images mixes tensors \(e.g. images\[1\]\) with PIL images or paths "
                                         r"\(e.g. images\[0\], a Image\)"):
        reward([_rgb_images(1)[0], torch.rand(3, 8, 8)], ["a", "b"])


def test_options_that_are_not_a_dict_are_one_clear_error():
    with pytest.raises(TypeError, match=r"options must be a dict of the scorer's arguments .* got int 5"):
        rewards.load("pickscore", options=5)
    with pytest.raises(TypeError, match=r"the options of 'pickscore' must be a dict .* got int 5"):
        rewards.load({"pickscore": 1.0, "hpsv2": 1.0}, options={"pickscore": 5})


def test_numpy_weights_are_numbers(tiny):
    reward = rewards.load({"pickscore": np.float32(0.5), "hpsv2": np.int64(2)},
                          model={"pickscore": tiny["pickscore"], "hpsv2": tiny["hpsv2"]}, device="cpu")
    assert reward.weights == {"pickscore": 0.5, "hpsv2": 2.0}
    assert all(type(w) is float for w in reward.weights.values())
    with pytest.raises(ValueError, match="must be a finite number"):
        rewards.load({"pickscore": np.float32("nan")})


def test_an_empty_prompt_is_refused_alike_on_the_tensor_and_the_pil_path(tiny):
    import torch

    reward = rewards.load("pickscore", model=tiny["pickscore"], device="cpu")
    message = r"prompts\[1\] is empty \(' '\); every image needs a non-empty prompt"
    with pytest.raises(ValueError, match=message):
        reward(torch.rand(2, 3, 32, 32), ["a cat", " "])
    with pytest.raises(ValueError, match=message):
        reward(_rgb_images(2, 32), ["a cat", " "])


# ----------------------------------------------------------------------------- item 11: secrets

def _no_fragment(text: str, secret: str = KEY):
    """No piece of ``secret`` of 4 characters or more is in ``text`` (redaction hides tails down to 4)."""
    for size in range(4, len(secret) + 1):
        for start in range(len(secret) - size + 1):
            assert secret[start:start + size] not in text, (secret[start:start + size], text[-120:])


@pytest.mark.parametrize("where", [290, 296, 299])
def test_redaction_runs_before_the_cut(where):
    from scorers.models.redaction import redact, redact_cut

    text = "x" * (where - len("invalid key provided: ")) + "invalid key provided: " + KEY + " (check it)"
    assert text.index(KEY) < 300 < text.index(KEY) + len(KEY)  # the key straddles the cut
    shown = redact_cut(text, 300, [KEY])
    assert len(shown) <= 300
    _no_fragment(shown)
    _no_fragment(redact(text[:300], [KEY]))  # a body its sender cut inside the key: the tail is hidden too


def test_urls_with_credentials_are_redacted():
    from scorers.models.redaction import redact, redact_url, url_secrets

    assert redact_url("http://user:SECRET@host:8000/v1") == "http://user:***@host:8000/v1"
    assert redact_url("https://TOKEN@host/v1") == "https://***@host/v1"
    assert redact_url("http://host/v1?api_key=SECRET&x=1") == "http://host/v1?api_key=***&x=1"
    assert redact("Authorization: Bearer abc.def-123") == "Authorization: Bearer ***"
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"
    assert set(url_secrets("http://user:SE%40CRET@host/v1")) == {"SE%40CRET", "SE@CRET"}


def test_openai_compat_error_bodies_hide_a_key_that_straddles_the_cut():
    from scorers.models.openai_compat import OpenAIChat, ServedModelError

    for status, cut in ((401, 300), (200, 200)):  # "HTTP 401: {body}" and "unreadable reply ...: {body!r}"
        body = ("x" * (cut - 19) + "bad key: " + KEY + " end").encode()  # the key starts 10 before the cut
        with Replies([(status, {}, body)]) as server:
            chat = OpenAIChat("m", api_base=server.url + "/v1", api_key=KEY, verify=False, max_retries=0)
            with pytest.raises(ServedModelError) as caught:
                chat.generate(["hello"])
        _no_fragment(str(caught.value))
        assert "***" in str(caught.value)


def test_openai_compat_never_prints_credentials_written_into_api_base():
    from scorers.models.openai_compat import OpenAIChat, ServedModelError

    base = f"http://user:SECRET-PASS@127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(ServedModelError, match=r"cannot reach http://user:\*\*\*@127\.0\.0\.1") as caught:
        OpenAIChat("m", api_base=base)
    assert "SECRET-PASS" not in str(caught.value)
    with Replies([(500, {}, b"oops SECRET-PASS")]) as server:
        url = server.url.replace("http://", "http://user:SECRET-PASS@") + "/v1"
        chat = OpenAIChat("m", api_base=url, verify=False, max_retries=0)
        assert "SECRET-PASS" not in repr(chat) + chat.where
        with pytest.raises(ServedModelError) as caught:
            chat.generate(["hello"])
    assert "SECRET-PASS" not in str(caught.value)


def test_remote_reward_hides_its_token_and_url_credentials():
    body = ("y" * 490 + KEY).encode()  # the service echoes the token across the 500-character cut
    with Replies([(401, {}, body)]) as server:
        url = server.url.replace("http://", "http://me:URLPASS@")
        reward = _remote(url, token=KEY)
        with pytest.raises(ValueError) as caught:
            reward(_rgb_images(1), ["a cat"])
    _no_fragment(str(caught.value))
    assert "URLPASS" not in str(caught.value) + repr(reward)
    with pytest.raises(ValueError, match=r"me:\*\*\*@127") as caught:
        _remote(f"http://me:URLPASS@127.0.0.1:{_closed_port()}", token=KEY)(_rgb_images(1), ["a cat"])
    assert "URLPASS" not in str(caught.value)


# ----------------------------------------------------------------------------- fidelity: ImageReward's order

def _official_imagereward_pixels(image, size):
    """The official ``_transform(n_px)`` up to ToTensor, written from torchvision and PIL steps directly: Resize (PIL
    bicubic, short side), CenterCrop, then ``_convert_image_to_rgb`` (``image.convert("RGB")``)."""
    import torch
    from torchvision import transforms as T

    steps = T.Compose([T.Resize(size, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(size),
                       lambda im: im.convert("RGB")])
    return torch.from_numpy(np.asarray(steps(image), dtype=np.uint8).copy()).permute(2, 0, 1)


def _odd_images():
    rng = np.random.default_rng(7)
    rgba = rng.integers(0, 256, (53, 41, 4), dtype=np.uint8)
    rgba[..., 3] = np.where(rng.random((53, 41)) < 0.5, 0, rgba[..., 3])  # half fully transparent
    return {"RGBA": Image.fromarray(rgba, "RGBA"),
            "P": Image.fromarray(rng.integers(0, 256, (45, 60, 3), dtype=np.uint8)).quantize(24),
            "LA": Image.fromarray(rng.integers(0, 256, (61, 39, 2), dtype=np.uint8), "LA"),
            "PA": Image.fromarray(rng.integers(0, 256, (45, 60, 4), dtype=np.uint8), "RGBA").convert("PA")}


@pytest.mark.parametrize("mode", ["RGBA", "P", "LA", "PA"])
def test_imagereward_converts_to_rgb_after_resize_and_crop_as_the_official_code(tiny, tmp_path, mode):
    import torch

    from scorers.metrics.reward_models import ImageRewardScore
    from scorers.scoring.runner import score_pairs

    image = _odd_images()[mode]
    assert image.mode == mode
    scorer = ImageRewardScore(tiny["imagereward"], device="cpu")
    size = scorer.backend.image_size
    reference = _official_imagereward_pixels(image, size)
    assert torch.equal(scorer.image_transform(image), reference)  # uint8, exactly
    # the reward: the reference pixels through the model, standardised by hand with the folder's mean and std
    config = json.loads((Path(tiny["imagereward"]) / "imagereward_config.json").read_text())
    mean = torch.tensor([0.48145466, 0.4578275, 0.40821073]).view(3, 1, 1)  # CLIP's, from the official code
    std = torch.tensor([0.26862954, 0.26130258, 0.27577711]).view(3, 1, 1)
    raw = scorer.backend.raw_rewards(((reference.float() / 255 - mean) / std)[None], ["a cat"])
    expected = (float(raw[0]) - config["mean"]) / config["std"]
    assert float(scorer.score([image], ["a cat"])[0]) == pytest.approx(expected, rel=1e-6, abs=1e-6)
    if mode != "PA":  # PNG has no PA mode; the others: the runner opens the file in its own mode
        path = _png(image, tmp_path / f"{mode}.png")
        runner = score_pairs(scorer, [str(path)], ["a cat"], batch_size=1)["scores"][0]
        assert runner == pytest.approx(expected, rel=1e-6, abs=1e-6)
    converted_first = scorer.backend.raw_rewards(((torch.from_numpy(np.array(
        _official_order_broken(image, size))).permute(2, 0, 1).float() / 255 - mean) / std)[None], ["a cat"])
    assert not torch.equal(converted_first, raw)  # the order matters: converting first gives another reward


def _official_order_broken(image, size):
    """What the code did before: RGB first, then resize + crop."""
    from torchvision import transforms as T

    return T.Compose([T.Resize(size, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(size)])(
        image.convert("RGB"))


# ----------------------------------------------------------------------------- fidelity: cards and UnifiedReward

def test_the_hpsv2_card_states_antialias_true():
    card = (ROOT / "evaluate_modules" / "hpsv2" / "README.md").read_text(encoding="utf-8")
    assert "`antialias=True`" in card and "torchvision 0.17" in card


class _Recorder:
    """A judge backend that records what it is asked and answers in the published format."""

    name = "recorder"

    def __init__(self):
        self.images, self.questions = [], []

    def answer(self, images, questions):
        self.images += list(images)
        self.questions += list(questions)
        return ["Alignment Score (1-5): 4\nCoherence Score (1-5): 3\nStyle Score (1-5): 2"] * len(questions)


def test_unifiedreward_caption_whitespace_option():
    from scorers.metrics.judges.unifiedreward import UnifiedRewardScorer

    caption = "a  red\ncar "
    ours = UnifiedRewardScorer(backend=_Recorder(), template="[{prompt}]")
    official = UnifiedRewardScorer(backend=_Recorder(), template="[{prompt}]", caption_whitespace="verbatim")
    assert ours.instruction(caption) == "[a red car]"
    assert official.instruction(caption) == "[a  red\ncar ]"
    assert "caption_whitespace" not in ours.config and official.config["caption_whitespace"] == "verbatim"
    with pytest.raises(ValueError, match="caption_whitespace must be one of"):
        UnifiedRewardScorer(backend=_Recorder(), caption_whitespace="strip")


def test_unifiedreward_jpeg_quality_95_option_reencodes_as_the_official_code(tmp_path):
    from scorers.metrics.judges.unifiedreward import UnifiedRewardScorer

    image = Image.fromarray(np.random.default_rng(2).integers(0, 256, (30, 40, 3), dtype=np.uint8))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=95)  # the official re-encoding, by PIL directly
    expected = np.asarray(Image.open(io.BytesIO(buffer.getvalue())).convert("RGB"))
    backend = _Recorder()
    scorer = UnifiedRewardScorer(backend=backend, jpeg_quality=95)
    assert scorer.score([image, _png(image, tmp_path / "i.png")], ["a", "b"]).tolist() == [4.0, 4.0]
    for sent in backend.images:
        np.testing.assert_array_equal(np.asarray(sent), expected)
    assert not np.array_equal(expected, np.asarray(image))  # the option changes what the judge sees
    plain = _Recorder()
    UnifiedRewardScorer(backend=plain).score([image], ["a"])
    assert plain.images[0] is image  # default: unchanged
    with pytest.raises(ValueError, match="jpeg_quality must be an integer 1-100"):
        UnifiedRewardScorer(backend=_Recorder(), jpeg_quality=0)


def test_the_unifiedreward_card_states_the_defaults_of_both_options():
    card = (ROOT / "evaluate_modules" / "unifiedreward" / "README.md").read_text(encoding="utf-8")
    assert 'default `caption_whitespace="collapse"`' in card and "default `jpeg_quality=None`" in card
    assert "caption_whitespace=verbatim" in card and "jpeg_quality=95" in card


# ----------------------------------------------------------------------------- evaluate modules without torch

_WITHOUT_TORCH = r"""
import importlib.machinery, json, sys
from pathlib import Path
HIDDEN = ("torch", "torchvision", "open_clip", "transformers")

class Hide:
    '''The path finder, blind to the models extra: as on an install without it (find_spec answers None).'''
    find_distributions = staticmethod(importlib.machinery.PathFinder.find_distributions)
    invalidate_caches = staticmethod(importlib.machinery.PathFinder.invalidate_caches)

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            return None
        return importlib.machinery.PathFinder.find_spec(name, path, target)

sys.meta_path[:] = [Hide() if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
import evaluate
out = {"loaded": [], "errors": {}}
for folder in sorted(Path(sys.argv[1]).iterdir()):
    if folder.is_dir() and not folder.name.startswith((".", "_")):
        evaluate.load(str(folder))
        out["loaded"].append(folder.name)
for name in ("imagereward", "hpsv3", "pickscore"):
    try:
        evaluate.load(str(Path(sys.argv[1]) / name)).compute(images=[sys.argv[2]], prompts=["a cat"])
    except ValueError as error:
        out["errors"][name] = str(error)
out["torch"] = "torch" in sys.modules
print(json.dumps(out))
"""


def test_every_evaluate_module_loads_without_torch(tmp_path):
    import os
    import subprocess
    import sys

    image = _png(Image.new("RGB", (8, 8)), tmp_path / "x.png")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _WITHOUT_TORCH, str(ROOT / "evaluate_modules"), str(image)],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    folders = sorted(p.name for p in (ROOT / "evaluate_modules").iterdir()
                     if p.is_dir() and not p.name.startswith((".", "_")))
    assert out["loaded"] == folders and not out["torch"]
    for name in ("imagereward", "hpsv3", "pickscore"):
        message = out["errors"][name]
        assert "\n" not in message and "install the models extra" in message, (name, message)


def test_the_cli_hides_url_credentials_in_its_one_line_errors(monkeypatch, capsys, tmp_path):
    """Whatever a command raises is printed redacted, with or without an API key in the environment."""
    import scorers.cli as cli
    import scorers.cli.score as score

    def fails(args):
        raise ValueError("cannot reach http://user:SECRET-PASS@127.0.0.1:9/v1 (is the server running?)")

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(score, "run_score", fails)
    assert cli.main(["score", "clip_score", "--out", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert "SECRET-PASS" not in err and "http://user:***@127.0.0.1:9/v1" in err


def test_a_served_judge_gets_a_16_bit_png_as_its_8_bit_twin(tmp_path):
    from scorers.models.openai_compat import image_data_url

    a8 = _eight_bit(seed=9)
    p16 = _png(Image.fromarray(_sixteen_bit_twin(a8)), tmp_path / "sixteen.png")
    url, _ = image_data_url(str(p16))
    sent = np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    for channel in range(3):
        np.testing.assert_array_equal(sent[..., channel], a8)


def test_a_service_that_never_answers_is_one_clear_error():
    import time

    with socket.socket() as listener:  # accepts connections (the backlog) but never reads or answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        reward = _remote(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout=0.5)
        start = time.monotonic()
        with pytest.raises(ValueError, match=r"no reply within timeout=0.5 s"):
            reward(_rgb_images(1), ["a cat"])
        assert time.monotonic() - start < 10
