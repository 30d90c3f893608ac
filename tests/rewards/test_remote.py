"""``RemoteReward`` against hostile or broken services on loopback: redirects, trickled and broken replies, bad
options. Expected texts are written out by hand; every server here is started by the test on 127.0.0.1 and stops by
itself (each trickle is bounded)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from scorers.rewards import RemoteReward
from tests.helpers.loopback_http import LoopbackServer
from tests.helpers.raw_http import RawReplyServer

TOKEN = "tok-TESTMARKER-0123456789"


class Service(LoopbackServer):
    """Answers every POST with ``answer`` and records the request headers and bodies."""

    def __init__(self, answer=(200, {}, {"rewards": [1.5]})):
        super().__init__()
        self.answer, self.headers, self.bodies = answer, [], []

    def respond(self, method, path, headers, body):
        self.headers.append(headers)
        self.bodies.append(body)
        status, headers, data = self.answer
        return status, headers, data if isinstance(data, bytes) else json.dumps(data).encode()


def _image():
    return [Image.fromarray(np.full((8, 8, 3), 90, np.uint8))]


def _one_line(error: BaseException, url: str) -> str:
    message = str(error)
    assert type(error) is ValueError and "\n" not in message, message
    assert message.startswith(f"reward service {url}/score: "), message
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)  # no chain
    return message


# ----------------------------------------------------------------------------- redirects

@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_an_error_naming_where_it_points_and_the_token_stays_home(status):
    with Service() as elsewhere:
        target = elsewhere.base.replace("http://", "http://me:LOCPASS@") + "/score?hf_token=hf_SECRET&x=1"
        with Service((status, {"Location": target}, b"")) as service:
            with pytest.raises(ValueError) as caught:
                RemoteReward(service.base, token=TOKEN)(_image(), ["a cat"])
            assert len(service.requests) == 1 and service.headers[0]["Authorization"] == f"Bearer {TOKEN}"
        assert elsewhere.requests == [] and elsewhere.headers == []  # before: a 302 went there, token and all
    message = _one_line(caught.value, service.base)
    port = elsewhere.base.rsplit(":", 1)[1]
    assert f"HTTP {status} redirect to http://me:***@127.0.0.1:{port}/score?hf_token=***&x=1; RemoteReward follows " \
           "no redirect" in message
    assert "LOCPASS" not in message and "SECRET" not in message and TOKEN not in message


# ----------------------------------------------------------------------------- one deadline per call

TRICKLE_BODY = [b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n"] + [b" "] * 40
TRICKLE_HEAD = [bytes([b]) for b in b"HTTP/1.1 200 OK\r\nContent-Length: 17\r\nX-Pad: aaaaaaaaaa\r\n\r\n"][:40]


@pytest.mark.parametrize("chunks", [TRICKLE_BODY, TRICKLE_HEAD], ids=["body", "headers"])
def test_a_reply_trickled_one_byte_every_half_second_fails_at_the_timeout(chunks):
    import torch  # noqa: F401 -- the call imports it: before the clock starts, not inside the measured call

    import scorers.models.images  # noqa: F401

    with RawReplyServer(chunks, pause=0.5) as server:  # 40 pauses: the trickle lasts 20 s at most
        reward = RemoteReward(server.url, timeout=2)
        started = time.monotonic()
        with pytest.raises(ValueError) as caught:
            reward(_image(), ["a cat"])
        elapsed = time.monotonic() - started
    assert "no reply within timeout=2 s" in _one_line(caught.value, server.url)
    assert elapsed < 6, elapsed  # a safety bound (about 2 s here); before: the whole 20 s trickle, then IncompleteRead


# ----------------------------------------------------------------------------- broken replies

@pytest.mark.parametrize("reply", [
    b"HTTP/1.1 OK\r\n\r\n",  # no status code: http.client's BadStatusLine
    b"garbage\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"rewards\": [1",  # cut short: IncompleteRead
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # a chunk size that is not hexadecimal
    b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
    b"",  # the connection closed without a reply
], ids=["no-status-code", "garbage", "cut-body", "bad-chunk", "bad-length", "closed"])
def test_every_broken_reply_is_one_value_error_naming_the_service(reply):
    with RawReplyServer([reply]) as server:
        with pytest.raises(ValueError) as caught:  # before: raw BadStatusLine, IncompleteRead ... escaped
            RemoteReward(server.url, token=TOKEN)(_image(), ["a cat"])
    message = _one_line(caught.value, server.url)
    assert TOKEN not in message and "httpx" not in message.lower()


# ----------------------------------------------------------------------------- a reply too large to hold

BIG = 2 * 2**20  # bytes: twice the 1 MiB cap the tests set


@pytest.mark.parametrize("head", [b"Content-Length: %d\r\n" % BIG, b"Connection: close\r\n"],
                         ids=["declared", "undeclared"])
def test_a_reply_larger_than_max_reply_bytes_is_refused_while_it_is_read(head):
    reply = b"HTTP/1.1 200 OK\r\n" + head + b"\r\n" + b" " * BIG
    with RawReplyServer([reply]) as server:
        with pytest.raises(ValueError) as caught:  # before: the whole body was read into memory, then parsed
            RemoteReward(server.url, max_reply_bytes=2**20)(_image(), ["a cat"])
    assert "reply refused: its body is larger than max_reply_bytes=1,048,576" in _one_line(caught.value, server.url)


# ----------------------------------------------------------------------------- options and the URL

@pytest.mark.parametrize("timeout", [math.inf, -1, 0, math.nan, 1e300, True, "2"])
def test_a_timeout_that_is_not_a_positive_finite_number_is_refused_when_made(timeout):
    with pytest.raises(ValueError, match=r"^RemoteReward: timeout must be a number of seconds > 0 and at most "
                                         r"86400, got "):
        RemoteReward("http://127.0.0.1:9", timeout=timeout)


@pytest.mark.parametrize("option, value", [("max_retry_after", 1e300), ("backoff", 1e300), ("max_retries", 10**9),
                                           ("max_reply_bytes", 10), ("max_reply_bytes", 2.5e6)])
def test_a_wait_or_a_size_that_cannot_be_honoured_is_refused_when_made(option, value):
    with pytest.raises(ValueError, match=f"RemoteReward: {option} must be"):  # before: time.sleep(1e300) overflowed
        RemoteReward("http://127.0.0.1:9", **{option: value})


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:9", "127.0.0.1:8000", "http://", "http://127.0.0.1:port"])
def test_a_url_that_is_not_http_is_refused_when_made(url):
    with pytest.raises(ValueError, match=r"^RemoteReward: url '"):
        RemoteReward(url)


@pytest.mark.parametrize("suffix, url, sent", [
    ("/prefix?x=1#frag", "/prefix/score?x=1#frag", "/prefix/score?x=1"),
    ("/?token=abc", "/score?token=abc", "/score?token=abc"),
    ("/score/#top", "/score#top", "/score"),
    ("", "/score", "/score"),
])
def test_score_is_added_to_the_path_before_a_query_or_fragment(suffix, url, sent):
    with Service() as service:
        reward = RemoteReward(service.base + suffix)
        assert reward(_image(), ["a cat"]).tolist() == [1.5]
    assert reward.url == service.base + url  # before: "/prefix?x=1#frag/score", which sent "/prefix?x=1"
    assert service.requests == [("POST", sent)]


def test_without_httpx_the_error_names_the_served_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "httpx", None)  # what `import httpx` sees when the extra is not installed
    with pytest.raises(ValueError, match=r"^RemoteReward needs httpx: .*install the served extra: pip install "
                                         r"'\.\[served\]'"):
        RemoteReward("http://127.0.0.1:9")


def test_importing_the_rewards_api_does_not_import_httpx():
    code = "import sys, scorers.rewards; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


def test_a_remote_reward_is_copied_without_its_connections():
    import pickle

    with Service() as service:
        reward = RemoteReward(service.base)
        assert reward(_image(), ["a cat"]).tolist() == [1.5]
        copy = pickle.loads(pickle.dumps(reward))
        assert copy(_image(), ["a cat"]).tolist() == [1.5] and copy.url == reward.url
        reward.close()


def test_a_uint8_tensor_read_in_0_255_is_sent_as_its_own_pixels():
    import base64
    import io

    import torch

    pixels = np.random.default_rng(3).integers(0, 256, (8, 6, 3), dtype=np.uint8)
    with Service() as service:
        reward = RemoteReward(service.base, input_range=(0, 255))
        assert reward(torch.from_numpy(pixels).permute(2, 0, 1)[None], ["a cat"]).tolist() == [1.5]
    sent = json.loads(service.bodies[0])["images"][0]
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(base64.b64decode(sent)))), pixels)
