"""The input checks every layer shares: one text (prompt or question) per image, none blank; an option whose value must
be one of a few names; aligned arrays of one length; the one reading of numbers and integers written as text (score
cells, ids, option values). Errors that name a parameter are :mod:`scorers.errors`'."""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Collection, Mapping, Sequence, Sized

import numpy as np

__all__ = ["INTEGER", "check_choice", "check_pairs", "did_you_mean", "check_same_length", "integer_column", "parse_float", "parse_int",
           "parse_number", "parse_numbers"]


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
        raise ValueError(f"{name} must be one of {choices}, got {value!r}{did_you_mean(value, choices)}")
    return value


def did_you_mean(value: object, choices: Collection[str]) -> str:
    """`` (did you mean 'clip_score'?)`` for a mistyped name close to one of ``choices`` (:func:`difflib.get_close_matches`,
    its default cutoff 0.6, with case and ``-``/``_`` ignored), else ``""``: the hint an "unknown NAME" message adds.

        >>> did_you_mean("clip_scor", ["clip_score", "tifa"]), did_you_mean("Clip-Score", ["clip_score"])
        (" (did you mean 'clip_score'?)", " (did you mean 'clip_score'?)")
        >>> did_you_mean("nope", ["clip_score", "tifa"])
        ''
    """
    import difflib

    def folded(name: object) -> str:
        return str(name).lower().replace("-", "_")

    by_folded = {folded(c): c for c in choices}
    found = difflib.get_close_matches(folded(value), list(by_folded), n=1)
    return f" (did you mean {by_folded[found[0]]!r}?)" if found else ""


def check_same_length(arrays: Mapping[str, Sized]) -> None:
    """``ValueError`` unless the named arrays all have one length: ``length mismatch: human has 3, metric has 2
    entries``."""
    lengths = {name: len(values) for name, values in arrays.items()}
    if len(set(lengths.values())) > 1:
        shown = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(f"length mismatch: {shown} entries")


# --- numbers and integers written as text: the one implementation (tables, question files, option values) ----------

#: An integer as text: ASCII digits (``\d`` and ``int()`` would also take full-width ``"１２"``, ``int()`` also
#: ``"1_000"``), an optional minus, spaces around; ``"1.0"`` and ``""`` are not integers. A pattern for pandas'
#: ``str.fullmatch`` too.
INTEGER = re.compile(r"\s*-?[0-9]+\s*")
_SIGNED_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


def parse_int(text: object, *, plus: bool = False) -> int | None:
    """``text`` (``str(text)``) as an int when it follows :data:`INTEGER` (with ``plus``, a leading ``+`` is taken
    too, as command-line options do), else None (``"1.5"``, ``""``, ``"１２"``, ``"1_000"``, ``"inf"``)."""
    text = str(text)
    return int(text) if (_SIGNED_INTEGER if plus else INTEGER).fullmatch(text) else None


def integer_column(values: Sequence[object], what: str, where: Callable[[int], str]) -> np.ndarray:
    """The int64 values of a column of ids written as text (each cell read as ``str(cell)``, :data:`INTEGER`'s rule:
    ``"12"``; ``"1.0"``, ``""`` and words are refused), the rule every table applies to SEG ids and image ids; the
    error names the first bad cell: ``"{where(row)}: {what} '1.0' is not an integer"``."""
    cells = np.asarray(values, dtype=str).tolist()
    parsed = [parse_int(cell) for cell in cells]
    if None in parsed:
        row = parsed.index(None)
        raise ValueError(f"{where(row)}: {what} {cells[row]!r} is not an integer")
    return np.asarray(parsed, dtype=np.int64)


def parse_number(text: str, *, clean_quotes: bool = False) -> float | None:
    """One score cell as a float: surrounding spaces (and, with ``clean_quotes``, stray ``"``/``'``) stripped; empty
    and ``nan`` (any case) are NaN; otherwise Python's ``float`` of plain ASCII text without ``_`` (so ``"inf"`` is
    infinity, for the caller to refuse, while full-width ``"１２"`` and ``"1_000"`` are not numbers). None when the
    cell is not a number."""
    text = text.strip()
    if clean_quotes:
        text = text.strip("\"'")
    if text == "" or text.lower() == "nan":
        return math.nan
    if not text.isascii() or "_" in text:  # float() would take full-width "１２" and "1_000"
        return None
    try:
        return float(text)
    except ValueError:
        return None


def parse_float(text: object) -> float | None:
    """An option's number: :func:`parse_number` of ``str(text)`` when it is finite, else None (``""``, ``nan``,
    ``inf``, ``"1_000"``, words)."""
    value = parse_number(str(text))
    return value if value is not None and math.isfinite(value) else None


def parse_numbers(cells: np.ndarray, *, clean_quotes: bool = False) -> np.ndarray | None:
    """A whole column of text cells as floats at once, :func:`parse_number`'s steps as NumPy operations (stripped,
    unquoted with ``clean_quotes``, empty -> NaN, then NumPy's text-to-float cast, which reads a cell as Python's
    ``float`` does); None when a cell does not parse (read it cell by cell then, to name it). A column holding a
    ``_`` or a non-ASCII character is None too, since the cast would take ``"1_000"`` and full-width digits where
    :func:`parse_number` does not: one rule for a score cell."""
    text = np.strings.strip(np.asarray(cells, dtype=str))
    if clean_quotes:
        text = np.strings.strip(text, "\"'")
    try:
        text.astype(np.bytes_)  # ASCII only (a non-ASCII cell raises), as parse_number asks
    except UnicodeEncodeError:
        return None
    if (np.strings.find(text, "_") >= 0).any():
        return None
    try:
        return np.where(text == "", "nan", text).astype(np.float64)
    except ValueError:
        return None
