"""The one image -> RGB conversion (:func:`scorers.models.images.to_rgb`) on high-bit images: bounded memory. A
4096 x 4096 16-bit grey PNG took 180 MiB through whole-image int64 arrays; converted a block of rows at
a time, it holds the 8-bit result and a few MB. Values are checked against a reference computed here."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from PIL import Image

from scorers.models.images import to_rgb


@pytest.mark.parametrize("mode", ["I;16", "I", "F"])
def test_a_high_bit_image_is_converted_in_bounded_memory_and_exactly(mode):
    width, height = 1536, 1024  # 1.5 MP: 6 blocks of rows
    rng = np.random.default_rng(0)
    values = rng.integers(0, 65536, (height, width)).astype(np.uint16)
    if mode == "I;16":
        image, expected = Image.fromarray(values), (values.astype(np.int64) * 255 + 32767) // 65535
    elif mode == "I":
        image, expected = Image.fromarray(values.astype(np.int32)), (values.astype(np.int64) * 255 + 32767) // 65535
    else:
        floats = values.astype(np.float32) / 65535
        image, expected = Image.fromarray(floats), np.clip(np.rint(floats.astype(np.float64) * 255), 0, 255)
    assert image.mode == mode
    tracemalloc.start()  # numpy's arrays are traced; PIL's own image memory is not
    try:
        rgb = to_rgb(image)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    pixels = width * height
    # the 8-bit result (1 byte a pixel) and a few MB of blocks; whole-image int64/float64 arrays took 16+ a pixel
    assert peak < pixels + 8 * 2 ** 20, peak / pixels
    got = np.asarray(rgb)
    assert rgb.mode == "RGB" and got.shape == (height, width, 3)
    np.testing.assert_array_equal(got[..., 0], expected.astype(np.uint8))
    np.testing.assert_array_equal(got[..., 0], got[..., 2])
