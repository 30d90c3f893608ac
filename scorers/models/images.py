"""Images in, RGB PIL images out: the one place that turns a PIL image, a path or encoded bytes into RGB.

PIL and numpy only (no torch), so the runner, the engines, the service, the rewards API and the demo use it on
installs without the ``models`` extra.

High-bit modes are **scaled** to 8 bits, never clipped (PIL's own ``convert("RGB")`` clips a 16-bit value of 40000 to
255, so a 16-bit PNG read through it is nearly white):

* ``I;16``, ``I;16L``, ``I;16B``, ``I;16N`` (16-bit grey: how PIL opens 16-bit PNG and TIFF files) and ``I`` (32-bit
  integers, which in practice hold 16-bit data): ``round(v * 255 / 65535)``, so ``v = 257 * k`` (an 8-bit value ``k``
  widened) gives back exactly ``k``. An ``I`` image with values outside ``0..65535`` is refused: its range cannot be
  told from the mode.
* ``F`` (32-bit float grey): read as ``[0, 1]``, ``round(v * 255)``. Values outside ``[0, 1]`` (beyond a tolerance of
  :data:`FLOAT_TOLERANCE`) and NaN are refused: scale the image yourself.
* every other mode (``L``, ``P``, ``PA``, ``LA``, ``RGBA``, ``CMYK``, ``1``...) goes through PIL's ``convert("RGB")``
  (alpha dropped, palettes looked up), as before.
"""
from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

__all__ = ["FLOAT_TOLERANCE", "HIGH_BIT_MODES", "open_for", "open_image", "open_native", "open_rgb", "to_rgb",
           "to_rgb_mode"]

#: 16-bit grey modes of PIL (unsigned, little/big/native endian)
_UINT16_MODES = ("I;16", "I;16L", "I;16B", "I;16N")
#: the modes :func:`to_rgb` scales itself rather than leaving to PIL's clipping ``convert``
HIGH_BIT_MODES = (*_UINT16_MODES, "I", "F")
#: a float (``F``) image may stray this far outside [0, 1] (float rounding of a value computed in [0, 1]; half an
#: 8-bit step is 2**-9): the same tolerance as the rewards API's tensor check
FLOAT_TOLERANCE = 2 ** -7


#: pixels converted at a time by :func:`_high_bit_to_l`: its temporaries stay a few MB whatever the image's size
_BLOCK_PIXELS = 1 << 18


def _high_bit_to_l(image):
    """A high-bit grey PIL image -> an 8-bit ``L`` image, scaled (see the module docstring), a block of rows at a
    time: besides the image and its result, it holds a few MB (a 4096 x 4096 16-bit PNG once took 180 MiB through
    whole-image int64 arrays)."""
    import numpy as np
    from PIL import Image

    mode = image.mode
    width, height = image.size
    out = np.empty((height, width), dtype=np.uint8)
    rows = max(1, _BLOCK_PIXELS // max(1, width))
    low, high, finite = math.inf, -math.inf, True
    for top in range(0, height, rows):
        block = np.asarray(image.crop((0, top, width, min(height, top + rows))))
        if mode == "F":
            values = block.astype(np.float64)
            del block
            if not np.isfinite(values).all():
                finite = False
                np.nan_to_num(values, copy=False, nan=0.0, posinf=0.0, neginf=0.0)
            if values.size:
                low, high = min(low, float(values.min())), max(high, float(values.max()))
            values *= 255.0
            out[top:top + rows] = np.clip(np.rint(values, out=values), 0, 255, out=values)
        else:
            if mode == "I" and block.size:
                low, high = min(low, int(block.min())), max(high, int(block.max()))
            # round(v * 255 / 65535) in integers: (v * 255 + 32767) // 65535 (int64: exact for any 32-bit v)
            out[top:top + rows] = np.clip((block.astype(np.int64) * 255 + 32767) // 65535, 0, 255)
    if mode == "F" and (not finite or low < -FLOAT_TOLERANCE or high > 1 + FLOAT_TOLERANCE):
        shown = f"[{low:g}, {high:g}]" if low <= high else "[nan, nan]"
        raise ValueError(f"a float (mode 'F') image must hold values in [0, 1], got values in {shown}"
                         f"{' and NaN/inf' if not finite else ''}: scale it to [0, 1] or 8 bits first")
    if mode == "I" and (low < 0 or high > 65535):
        raise ValueError(f"a 32-bit integer (mode {mode!r}) image must hold 16-bit values (0..65535) to be read, "
                         f"got values in [{low}, {high}]: scale it to 8 or 16 bits first")
    return Image.fromarray(out)  # 2-D uint8: mode L


def to_rgb_mode(mode: str) -> str:
    """How :func:`to_rgb` reads ``mode``: ``"rgb"`` (as is), ``"scaled"`` (a high-bit mode scaled to 8 bits) or
    ``"convert"`` (PIL's ``convert("RGB")``)."""
    return "rgb" if mode == "RGB" else "scaled" if mode in HIGH_BIT_MODES else "convert"


def to_rgb(image):
    """A PIL image as 8-bit RGB (the image itself when it is RGB already); high-bit modes are scaled, not clipped
    (module docstring). ``ValueError`` for a high-bit image whose range cannot be read."""
    if image.mode == "RGB":
        return image
    if image.mode in HIGH_BIT_MODES:
        return _high_bit_to_l(image).convert("RGB")
    return image.convert("RGB")


def open_rgb(ref: Any, jpeg_draft: int | None = None):
    """``ref`` (a PIL image, a path, a file object, or encoded JPEG/PNG bytes as ``load_ts2()`` gives them) as an RGB
    PIL image (:func:`to_rgb`). ``jpeg_draft``: decode a JPEG at 1/2, 1/4 or 1/8 size (DCT scaling), never below
    that many pixels per side. PIL's own errors pass through."""
    from PIL import Image

    if isinstance(ref, Image.Image):
        return to_rgb(ref)
    if isinstance(ref, (bytes, bytearray, memoryview)):
        ref = io.BytesIO(ref)
    with Image.open(ref) as handle:
        if jpeg_draft:
            handle.draft("RGB", (jpeg_draft, jpeg_draft))
        handle.load()
        image = to_rgb(handle)
        return image.copy() if image is handle else image  # a loaded copy: the handle closes here


def open_native(ref: Any, jpeg_draft: int | None = None):
    """``ref`` as :func:`open_rgb` takes it, as a loaded PIL image in **its own mode** (RGBA, P, L, I;16...): for a
    transform that converts to RGB itself, after resizing, as an official pipeline does (``native_mode = True``)."""
    from PIL import Image

    if isinstance(ref, Image.Image):
        return ref
    if isinstance(ref, (bytes, bytearray, memoryview)):
        ref = io.BytesIO(ref)
    with Image.open(ref) as handle:
        if jpeg_draft:
            handle.draft(handle.mode, (jpeg_draft, jpeg_draft))
        handle.load()
        return handle.copy()


def open_for(transform: Any, ref: Any, jpeg_draft: int | None = None):
    """``ref`` opened as ``transform`` wants it: in its own mode (:func:`open_native`) when the transform says
    ``native_mode = True`` (it converts to RGB itself, e.g. after resizing as ImageReward's official code does),
    else as RGB (:func:`open_rgb`)."""
    if getattr(transform, "native_mode", False):
        return open_native(ref, jpeg_draft)
    return open_rgb(ref, jpeg_draft)


def open_image(image: Any, native: bool = False):
    """A path or PIL image -> RGB PIL image (``native=True``: in its own mode, :func:`open_native`), the scorers'
    input rule: a file that cannot be read is a ``ValueError`` naming it; anything else (not a path, not an image)
    is a ``TypeError``."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return image if native else to_rgb(image)
    if isinstance(image, (str, Path)):
        try:
            return open_native(image) if native else open_rgb(image)
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot read image {str(image)!r}: {error}") from None
    raise TypeError(f"expected a PIL image, a path or a preprocessed tensor, got {type(image).__name__}")
