"""The input checks every scorer and the runner share: one text (prompt or question) per image, none blank; an option
whose value must be one of a few names; aligned arrays of one length."""
from __future__ import annotations

from typing import Any, Collection, Mapping, Sequence, Sized

__all__ = ["check_choice", "check_pairs", "check_same_length"]


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


def check_choice(name: str, value: Any, choices: Collection) -> Any:
    """``value`` if it is one of ``choices``, else ``ValueError: NAME must be one of CHOICES, got VALUE``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_same_length(arrays: Mapping[str, Sized]) -> None:
    """``ValueError`` unless the named arrays all have one length: ``length mismatch: human has 3, metric has 2
    entries``."""
    lengths = {name: len(values) for name, values in arrays.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(f"length mismatch: {shown} entries")
