"""The one input check every scorer and the runner share: one text (prompt or question) per image, none blank."""
from __future__ import annotations

from typing import Sequence

__all__ = ["check_pairs"]


def check_pairs(images: Sequence, texts: Sequence, *, what: str = "prompts", keys: Sequence | None = None,
                nonempty: bool = False) -> None:
    """``ValueError`` unless ``images`` and ``texts`` have the same length (and, with ``nonempty``, every text is a
    non-blank string; the error names the item and, with ``keys``, its key)."""
    if len(images) != len(texts):
        raise ValueError(f"got {len(images)} images but {len(texts)} {what}; expected one {what[:-1]} per image")
    if nonempty:
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                key = f" ({keys[i]})" if keys is not None else ""
                raise ValueError(f"item {i}{key}: empty {what[:-1]} {text!r}")
