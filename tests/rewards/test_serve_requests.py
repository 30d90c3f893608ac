"""``ts2 serve``'s request handling without Ray: images that would break a merged
forward are refused before batching; a merged forward that raises is split so neighbours get their rewards; the
decoded-pixel budget; options that would hang or crash are refused at start with one line; a deeply nested JSON body
is a 400; bad names, paths and a busy port are one line before Ray is imported."""
from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import socket
from types import SimpleNamespace

import pytest
from PIL import Image

from scorers.cli import main
from scorers.errors import ParameterError
from scorers.rewards import serve as service
from scorers.rewards.serve import Admission, build_app
from scorers.rewards.serve_checks import Limits, RequestError, ServiceOptions, decode_request


def _png(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _body(*sizes) -> bytes:
    return json.dumps({"prompts": [f"p{i}" for i in range(len(sizes))],
                       "images": [_png(w, h) for w, h in sizes]}).encode()


# --- item 1: what would break a merged forward is refused before batching -------------------------------------------

@pytest.mark.parametrize("size, words", [((1, 1000), "each side must be at least 8"),
                                         ((1000, 1), "each side must be at least 8"),
                                         ((10, 300), "aspect ratio of 30.0; the limit is 20"),
                                         ((7, 7), "each side must be at least 8")])
def test_an_image_too_thin_or_too_small_is_a_400_naming_it(size, words):
    with pytest.raises(RequestError) as caught:
        decode_request(_body((24, 24), size), Limits())
    assert caught.value.status == 400
    assert caught.value.message.startswith(f"images[1] is {size[0]}x{size[1]} pixels") and words in caught.value.message


def test_the_edges_of_the_shape_limits_are_accepted():
    prompts, images = decode_request(_body((8, 8), (8, 160), (160, 8)), Limits())  # side 8, aspect exactly 20
    assert [im.size for im in images] == [(8, 8), (8, 160), (160, 8)] and prompts == ["p0", "p1", "p2"]


class _Output(SimpleNamespace):
    pass


def _forward_refusing(bad_prompt: str, calls: list):
    """A forward that raises whenever ``bad_prompt`` is in its batch (as HPSv2's resize raised for a 1x1000 image)
    and otherwise scores each item as len(prompt): a reference computed by hand."""
    async def forward(images, prompts):
        calls.append(list(prompts))
        if bad_prompt in prompts:
            raise RuntimeError("Input and output sizes should be greater than 0\nsecond line")
        values = [float(len(p)) for p in prompts]
        return _Output(rewards=values, components={"r": values})

    return forward


def test_a_merged_forward_that_raises_is_scored_request_by_request():
    calls, stats = [], {"forward_calls": 0, "split_batches": 0}
    requests = [(["a", "bb"], [None, None], 0.0), (["BAD"], [None], 0.0), (["cccc"], [None], 0.0)]
    out = asyncio.run(service.score_requests(_forward_refusing("BAD", calls), requests, stats))
    assert out[0]["rewards"] == [1.0, 2.0] and out[0]["components"] == {"r": [1.0, 2.0]}
    assert out[2]["rewards"] == [4.0] and out[2]["timing"]["batch_requests"] == 1
    assert out[1] == {"status": 422, "error": "scoring this request failed (RuntimeError: Input and output sizes "
                                                       "should be greater than 0)"}
    assert calls == [["a", "bb", "BAD", "cccc"], ["a", "bb"], ["BAD"], ["cccc"]]
    assert stats == {"forward_calls": 4, "split_batches": 1}


def test_a_merged_forward_that_works_is_split_in_order():
    calls, stats = [], {"forward_calls": 0, "split_batches": 0}
    requests = [(["a"], [None], 0.0), (["bbb", "cc"], [None, None], 0.0)]
    out = asyncio.run(service.score_requests(_forward_refusing("BAD", calls), requests, stats))
    assert [r["rewards"] for r in out] == [[1.0], [3.0, 2.0]] and len(calls) == 1
    assert {r["timing"]["batch_requests"] for r in out} == {2} and stats["split_batches"] == 0


def test_a_failure_reply_hides_a_bearer_token():
    async def forward(images, prompts):
        raise ValueError("upstream said 401 for Authorization: Bearer sk-TESTMARKER-0123456789")

    out = asyncio.run(service.score_requests(forward, [(["a"], [None], 0.0)], {"forward_calls": 0}))
    assert out[0]["status"] == 422 and "sk-TESTMARKER" not in out[0]["error"]


# --- item 3: the decoded-pixel budget across requests ----------------------------------------------------------------

def _one_image_body(width: int, height: int) -> bytes:
    return json.dumps({"prompts": ["p"], "images": [_png(width, height)]}).encode()


def test_a_refused_request_leaves_the_held_pixels_as_they_were():
    """The budget bypass: with 0.6 MP held under a 1 MP budget, a 0.5 MP request is refused (503) and a 1.2 MP one
    (413); the held count stays 0.6 MP (it used to drop by what the refused request never took, letting 1.48 MP be
    decoded under a 1 MP budget), and only the holder's release brings it to 0."""
    async def scenario():
        admission = Admission(Limits(), ServiceOptions(max_decoded_mp=1.0, admission_wait_s=0.2))
        _, images, holder = await admission.images(_one_image_body(1000, 600))
        assert admission.pixels.held == 600_000 and images[0].size == (1000, 600)
        for size, status in (((1000, 500), 503), ((1200, 1000), 413), ((1000, 500), 503)):
            with pytest.raises(RequestError) as refused:
                await admission.images(_one_image_body(*size))
            assert refused.value.status == status
            assert admission.pixels.held == 600_000 and admission.parsing.held == 0
        holder.release()
        assert admission.stats()["decoded_pixels_held"] == 0
        _, _, second = await admission.images(_one_image_body(1000, 500))  # now it fits
        assert admission.pixels.held == 500_000
        second.release()
        assert admission.pixels.peak == 600_000 and admission.pixels.held == 0

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_an_image_that_does_not_decode_gives_back_its_pixels_and_its_body():
    async def scenario():
        admission = Admission(Limits(), ServiceOptions(max_decoded_mp=1.0))
        raw = base64.b64decode(_png(300, 300))
        broken = json.dumps({"prompts": ["p"], "images": [base64.b64encode(raw[:-40]).decode()]}).encode()
        with pytest.raises(RequestError) as caught:
            await admission.images(broken)
        assert caught.value.status == 400
        assert admission.pixels.held == 0 and admission.parsing.held == 0

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_service_options_default_budget_and_connections():
    options = ServiceOptions()
    assert (options.body_timeout_s, options.max_connections, options.max_decoded_mp) == (10.0, 256, 64.0)
    assert (options.header_timeout_s, options.max_parsing_mb, options.admission_wait_s) == (10.0, 128.0, 30.0)


# --- item 4: options that would hang or crash are refused at start ---------------------------------------------------

@pytest.mark.parametrize("wait", [math.inf, math.nan, -1.0, 60_001.0])
def test_build_app_refuses_a_batch_wait_that_is_not_finite_and_bounded(wait):
    with pytest.raises(ParameterError, match="batch_wait_ms must be a finite number >= 0 and <= 60000"):
        build_app("clip_score", batch_wait_ms=wait)


@pytest.mark.parametrize("field, value", [("max_request_bytes", -5), ("max_request_bytes", 0), ("max_images", 1.5),
                                          ("max_request_bytes", 1000),
                                          ("min_side", 0), ("max_aspect", math.inf), ("max_aspect", 0.5)])
def test_limits_refuse_values_that_would_refuse_every_request(field, value):
    with pytest.raises(ParameterError, match=field):
        Limits(**{field: value})


@pytest.mark.parametrize("field, value", [("body_timeout_s", math.inf), ("body_timeout_s", 0),
                                          ("max_connections", 0), ("max_decoded_mp", math.nan),
                                          ("max_decoded_mp", 1e-300), ("body_timeout_s", 1e-9),
                                          ("header_timeout_s", 0.1), ("max_parsing_mb", 1e-9),
                                          ("admission_wait_s", -1)])
def test_service_options_refuse_bad_values(field, value):
    with pytest.raises(ParameterError, match=field):
        ServiceOptions(**{field: value})


@pytest.fixture
def no_start(monkeypatch):
    """``ts2 serve`` must fail before it loads a model or starts anything: both raise here."""
    def started(*args, **kwargs):
        raise AssertionError("ts2 serve went on to start the service")

    monkeypatch.setattr(service, "serve_rewards", started)
    monkeypatch.setattr("scorers.cli.serve._check_loads", started, raising=False)


@pytest.mark.parametrize("argv, words", [
    (["--batch-wait-ms", "inf"], "argument --batch-wait-ms: must be a number of milliseconds from 0 to 60000, got 'inf'"),
    (["--batch-wait-ms", "nan"], "argument --batch-wait-ms: must be a number of milliseconds from 0 to 60000, got 'nan'"),
    (["--max-request-mb", "inf"], "argument --max-request-mb: must be a number >= 0.01 (the floor: a smaller body "
                                  "holds no image) and <= 4,096, got 'inf'"),
    (["--max-request-mb", "-5"], "argument --max-request-mb: must be a number >= 0.01"),
    (["--body-timeout-s", "0"], "argument --body-timeout-s: must be a number >= 0.5"),
    (["--max-connections", "0"], "argument --max-connections: must be an integer from 1 to 65,535"),
    (["--max-decoded-mp", "inf"], "argument --max-decoded-mp: must be a number >= 0.01"),
    # values that started a service refusing every request are refused at start, naming the floor
    (["--max-decoded-mp", "1e-300"], "argument --max-decoded-mp: must be a number >= 0.01 (the floor: one 100 x 100 "
                                     "image) and <= 1e+06, got '1e-300'"),
    (["--max-request-mb", "1e-9"], "argument --max-request-mb: must be a number >= 0.01 (the floor: a smaller body "
                                   "holds no image) and <= 4,096, got '1e-9'"),
    (["--body-timeout-s", "1e-9"], "argument --body-timeout-s: must be a number >= 0.5 (the floor: time for a body to "
                                   "arrive) and <= 3,600, got '1e-9'"),
    (["--header-timeout-s", "0.1"], "argument --header-timeout-s: must be a number >= 0.5"),
    (["--max-parsing-mb", "0"], "argument --max-parsing-mb: must be a number >= 0.01"),
    (["--admission-wait-s", "inf"], "argument --admission-wait-s: must be a number >= 0"),
    (["--max-aspect", "0.5"], "argument --max-aspect: must be a number"),
])
def test_cli_refuses_options_at_start_with_one_line(argv, words, no_start, capsys):
    assert main(["serve", "clip_score", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err


def test_cli_unknown_reward_is_one_line_with_did_you_mean(no_start, capsys):
    assert main(["serve", "pickscor"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ts2 serve: error: unknown reward 'pickscor'; did you mean 'pickscore'?")
    assert err.count("\n") == 1


def test_cli_missing_model_path_is_one_line(no_start, capsys):
    assert main(["serve", "pickscore", "--model", "/nope"]) == 2
    err = capsys.readouterr().err
    assert err == "ts2 serve: error: --model '/nope': no such file or folder (a local model folder, or a Hub id like " \
                  "owner/name)\n"


def test_cli_busy_port_is_one_line_before_anything_starts(no_start, capsys, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "clip_score", "--model", str(tmp_path), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ts2 serve: error: --port {port}: cannot listen on 127.0.0.1:{port} (")
    assert err.count("\n") == 1, err


# --- item 5: a deeply nested JSON body -----------------------------------------------------------------------------

def test_deeply_nested_json_is_a_400_not_a_recursion_error():
    with pytest.raises(RequestError) as caught:
        decode_request(b"[" * 100_000 + b"]" * 100_000, Limits())
    assert caught.value.status == 400 and "nested too deeply" in caught.value.message
