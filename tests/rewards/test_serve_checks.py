"""``ts2 serve``'s request checks (:mod:`scorers.rewards.serve_checks`), without Ray, on hostile requests: a body of
empty JSON items is refused before it is parsed (31 MiB of ``{},`` used to cost 830 MiB); a prompt that is not valid
Unicode is a 400 before batching (it used to reach the forward, get a 422 and split every batch it joined); an image
that is not 8-bit RGB counts what decoding it holds; settings below their floor are refused."""
from __future__ import annotations

import base64
import io
import json
import tracemalloc

import numpy as np
import pytest
from PIL import Image

from scorers.errors import ParameterError
from scorers.rewards.serve_checks import (Limits, RequestError, ServiceOptions, check_body_shape, decoded_cost,
                                          parse_request)


def _png(image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _peak_bytes(function, *args) -> tuple[int, object]:
    """The Python heap's peak (tracemalloc: lists, dicts and strings the JSON parser builds) over one call."""
    tracemalloc.start()
    try:
        try:
            out = function(*args)
        except RequestError as error:
            out = error
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("item", [b"{}", b"[]", b"0", b"null"])
def test_a_body_of_empty_items_is_refused_before_it_is_parsed(item):
    """1 MiB of ``{"prompts":[{},{},...]}``: parsed, it would be ~30 MiB of dicts; refused, it costs a copy of the
    body at most (a few windows of it)."""
    body = b'{"prompts":[' + b",".join([item] * (2 ** 20 // (len(item) + 1))) + b"]}"
    peak, out = _peak_bytes(parse_request, body, Limits())
    assert isinstance(out, RequestError) and out.status == 400, out
    assert "JSON structure outside its strings" in out.message and "at most 64 images" in out.message
    assert peak < 2 ** 18, (peak, len(body))  # a few windows of 64 kB, not a copy of the body


def test_a_valid_body_passes_the_shape_check_with_whitespace_escapes_and_extra_keys():
    image = _png(Image.new("RGB", (16, 16), (1, 2, 3)))
    prompts = ['a "quoted" prompt, with [brackets] and {braces}: \\\\ \u00e9'] * 64
    body = json.dumps({"prompts": prompts, "images": [image] * 64, "client": {"name": "x", "n": [1, 2]}},
                      indent=4).encode()
    check_body_shape(body, Limits())
    got_prompts, raws, costs = parse_request(body, Limits())
    assert got_prompts == prompts and len(raws) == 64 and costs == [256] * 64


def test_deep_nesting_is_still_named_as_such():
    with pytest.raises(RequestError, match="nested too deeply"):
        check_body_shape(b"[" * 5000 + b"]" * 5000, Limits())


@pytest.mark.parametrize("prompt, where", [("\ud800", 0), ("a cat \udfff", 6)])
def test_a_prompt_that_is_not_valid_unicode_is_a_400_before_batching(prompt, where):
    image = _png(Image.new("RGB", (16, 16)))
    body = json.dumps({"prompts": ["fine", prompt], "images": [image, image]}).encode()  # "\ud800" escaped: valid JSON
    with pytest.raises(RequestError) as caught:
        parse_request(body, Limits())
    assert caught.value.status == 400
    assert caught.value.message == (f"prompts[1] is not valid Unicode text (a lone surrogate {prompt[where]!r} at "
                                    f"character {where})")


@pytest.mark.parametrize("mode, size, expected", [
    ("RGB", (40, 30), 1200),         # 8-bit RGB: one RGB pixel each
    ("L", (40, 30), 1500),           # itself (1 byte) + its RGB copy (4): 5 / 4
    ("RGBA", (40, 30), 2400),        # 4 + 4
    ("I;16", (40, 30), 2400),        # 2 + its 8-bit grey step and numpy twin (2) + RGB (4)
    ("I", (40, 30), 3000),           # 4 + 2 + 4
])
def test_the_decoded_cost_of_an_image_counts_what_decoding_it_holds(mode, size, expected):
    assert decoded_cost(*size, mode) == expected
    raw = np.full(size[::-1], 1000, dtype=np.uint16) if mode.startswith("I") else None
    image = Image.fromarray(raw) if mode == "I;16" else Image.new(mode if mode != "I" else "RGB", size)
    if mode in ("RGB", "L", "RGBA", "I;16"):
        body = json.dumps({"prompts": ["p"], "images": [_png(image)]}).encode()
        assert parse_request(body, Limits())[2] == [expected]  # read from the PNG's header


@pytest.mark.parametrize("options", [dict(max_decoded_mp=1e-300), dict(body_timeout_s=1e-9),
                                     dict(header_timeout_s=1e-9), dict(max_parsing_mb=1e-9)])
def test_settings_below_their_floor_are_refused_naming_it(options):
    (name, value), = options.items()
    floor = {"max_decoded_mp": "0.01", "body_timeout_s": "0.5", "header_timeout_s": "0.5", "max_parsing_mb": "0.01"}
    with pytest.raises(ParameterError, match=f"{name} must be a finite number >= {floor[name]}"):
        ServiceOptions(**options)
    with pytest.raises(ParameterError, match="max_request_bytes must be an integer >= 10,486"):
        Limits(max_request_bytes=1)
