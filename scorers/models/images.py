"""Images in, RGB PIL images out: the one place that turns a PIL image, a path or encoded bytes into RGB.

PIL only (no torch), so the runner and the engines use it on installs without the ``models`` extra.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

__all__ = ["open_image", "open_rgb", "to_rgb"]


def to_rgb(image):
    """A PIL image as RGB (the image itself when it is RGB already)."""
    return image if image.mode == "RGB" else image.convert("RGB")


def open_rgb(ref: Any, jpeg_draft: int | None = None):
    """``ref`` (a PIL image, a path, a file object, or encoded JPEG/PNG bytes as ``load_ts2()`` gives them) as an RGB
    PIL image. ``jpeg_draft``: decode a JPEG at 1/2, 1/4 or 1/8 size (DCT scaling), never below that many pixels per
    side. PIL's own errors pass through."""
    from PIL import Image

    if isinstance(ref, Image.Image):
        return to_rgb(ref)
    if isinstance(ref, (bytes, bytearray, memoryview)):
        ref = io.BytesIO(ref)
    with Image.open(ref) as handle:
        if jpeg_draft:
            handle.draft("RGB", (jpeg_draft, jpeg_draft))
        return handle.convert("RGB")  # a loaded copy, even of an RGB file: the handle closes here


def open_image(image: Any):
    """A path or PIL image -> RGB PIL image, the scorers' input rule: a file that cannot be read is a ``ValueError``
    naming it; anything else (not a path, not an image) is a ``TypeError``."""
    from PIL import Image

    if isinstance(image, Image.Image):
        return to_rgb(image)
    if isinstance(image, (str, Path)):
        try:
            return open_rgb(image)
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot read image {str(image)!r}: {error}") from None
    raise TypeError(f"expected a PIL image, a path or a preprocessed tensor, got {type(image).__name__}")
