"""The input checks every layer shares: one text (prompt or question) per image, none blank; an option whose value must
be one of a few names; aligned arrays of one length; the one reading of numbers and integers written as text (score
cells, ids, option values); per-image scores as floats (:func:`as_scores`); a path a user names under a folder, kept
inside it (:func:`resolve_inside`). Errors that name a parameter are :mod:`scorers.errors`'."""
from __future__ import annotations

import math
import os
import re
from typing import Any, Callable, Collection, Iterable, Mapping, Sequence, Sized

import numpy as np

from scorers.errors import Wording, value_error

__all__ = ["INTEGER", "QUOTE_HINT", "as_scores", "check_choice", "check_pairs", "did_you_mean", "check_same_length",
           "integer_column", "parse_float", "parse_int", "parse_number", "parse_numbers", "resolve_inside"]


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


def resolve_inside(root: str | os.PathLike, name: str | os.PathLike, *, what: str = "the folder",
                   folders: dict | None = None) -> str:
    """The file a user names under ``root``, resolved (symlinks followed, ``.`` and ``..`` folded; an absolute
    ``name`` taken as it is), or ``ValueError`` unless it lies strictly inside ``root`` (itself resolved).

    The one rule for every path a user gives relative to a folder (``ts2 seg build``'s ``file_name`` under
    ``--images``, the demo's Build a SEG tab and its uploads, the SEG viewer's images): two spellings of one file
    resolve to one string (``sub/../0.png``, ``.//0.png`` and the absolute path), and nothing outside ``root`` (an
    absolute path elsewhere, ``../``, a symlink leading out) is ever opened. The message names ``name`` and ``what``
    (the folder as the caller calls it), never what ``name`` resolves to; the caller adds the row.

    ``folders``: a dict that a caller resolving many names in one pass (a table's rows) passes to every call, so
    each folder is resolved once (the file itself is still checked for a symlink each time); don't keep it longer.

        >>> import tempfile
        >>> root = tempfile.mkdtemp()
        >>> resolve_inside(root, "sub/../0.png") == resolve_inside(root, ".//0.png") == os.path.join(
        ...     os.path.realpath(root), "0.png")
        True
        >>> resolve_inside(root, "../etc/passwd")
        Traceback (most recent call last):
        ...
        ValueError: '../etc/passwd' lies outside the folder
    """
    text = os.fspath(name)
    memo = {} if folders is None else folders

    def real(path: str) -> str:
        if path not in memo:
            memo[path] = os.path.realpath(path)
        return memo[path]

    try:
        if "\x00" in text:
            raise ValueError("embedded null byte")
        base = real(os.fspath(root))
        head, tail = os.path.split(os.path.join(base, text))
        if tail in ("", ".", ".."):
            target = os.path.realpath(os.path.join(head, tail))
        else:  # realpath(head/tail) is realpath(head)/tail unless tail is a symlink
            target = os.path.join(real(head), tail)
            if os.path.islink(target):
                target = os.path.realpath(target)
    except (ValueError, OSError) as error:  # an embedded NUL byte, a name the system cannot take
        raise ValueError(f"{text!r} is not a path ({error})") from None
    if not target.startswith(base.rstrip(os.sep) + os.sep):
        raise ValueError(f"{text!r} " + (f"names {what} itself, not a file in it" if target == base
                                         else f"lies outside {what}"))
    return target


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


# --- per-image scores: the one input check of every meta-metric, agreement and table column ---------------------

QUOTE_HINT = Wording("stray quote characters: pass {clean_quotes=True} to strip them")


def as_scores(
    values: Iterable[object], *, name: str = "scores", clean_quotes: bool = False, quote_hint: str | None = QUOTE_HINT
) -> np.ndarray:
    """Convert per-image scores to a float array, refusing what would silently corrupt the meta-metrics.

    NaN and empty cells become NaN (they are skipped later), but a metric with no valid score at all is refused
    (``ValueError``): it has nothing to evaluate, and a table of zeros would look like a result. Non-numeric cells (the released ``llmscore_over`` column
    has cells like ``"3``) and infinities raise ``ValueError`` naming the position and value; ``clean_quotes=True``
    strips stray quote characters first, explicitly. ``quote_hint`` is added to the error only when a bad cell holds a
    quote character (an app can word it for its own controls; None: no hint).

    Raises:
        ValueError: a non-numeric cell (positions and values named, the first five), an infinite value, or no valid
            score at all; ``name`` starts the message.

    Examples:
        >>> as_scores(["0.5", "", "nan", 2])
        array([0.5, nan, nan, 2. ])
        >>> as_scores(['"3', " 1 "], clean_quotes=True)
        array([3., 1.])
        >>> as_scores(["0.5", "high"], name="clip")
        Traceback (most recent call last):
        ...
        ValueError: clip has 1 non-numeric value(s): position 1: 'high'
        >>> as_scores(["", "nan"], name="clip")
        Traceback (most recent call last):
        ...
        ValueError: clip has no valid score (all 2 values are NaN or empty)
    """
    raw = values if isinstance(values, np.ndarray) else list(values)
    arr = np.asarray(raw)
    if arr.dtype.kind in "fiub":
        out = arr.astype(np.float64, copy=True).reshape(-1)
    else:
        out = np.empty(len(raw), dtype=np.float64)
        bad = []
        for position, cell in enumerate(np.asarray(raw, dtype=object).reshape(-1)):
            if cell is None:
                out[position] = np.nan
                continue
            if isinstance(cell, (int, float, np.integer, np.floating)) and not isinstance(cell, bool):
                out[position] = float(cell)
                continue
            value = parse_number(str(cell), clean_quotes=clean_quotes)
            if value is None:
                bad.append((position, cell))
            else:
                out[position] = value
        if bad:
            shown = ", ".join(f"position {p}: {v!r}" for p, v in bad[:5])
            more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
            quoted = any(mark in str(v) for _, v in bad for mark in "\"'")
            hint = Wording(" ({hint})", hint=quote_hint) if quoted and not clean_quotes and quote_hint else ""
            raise value_error("{name} has {n} non-numeric value(s): {shown}{more}{hint}", name=name, n=len(bad),
                           shown=shown, more=more, hint=hint)
    infinite = np.flatnonzero(np.isinf(out))
    if infinite.size:
        p = int(infinite[0])
        raise value_error("{name} has {n} infinite value(s), first at position {p}: {value}", name=name,
                          n=infinite.size, p=p, value=out[p])
    if not (out == out).any():
        raise value_error("{name} has no valid score (all {n} values are NaN or empty)", name=name, n=out.size)
    return out
