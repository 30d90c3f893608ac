"""Reading numbers and rationales out of judge replies: JSON (in code fences, with single quotes or trailing commas),
``key: value`` lines (``Score: 7/10``), lists (``[7]``). A value that cannot be read is ``NaN`` with a reason, never 0.
"""
from __future__ import annotations

import json
import math
import re
from typing import Iterable

__all__ = ["find_json_objects", "lookup", "number_from", "labelled_number"]

_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.S)


def find_json_objects(text: str) -> list[dict]:
    """Every JSON object found in ``text`` (fenced blocks first), leniently: single quotes and trailing commas
    are repaired; keys are lower-cased."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    found: list[dict] = []
    for candidate in candidates:
        for start in [i for i, c in enumerate(candidate) if c == "{"]:
            block = _balanced(candidate, start)
            if block is None:
                continue
            parsed = _loads(block)
            if isinstance(parsed, dict):
                found.append({str(k).strip().lower(): v for k, v in parsed.items()})
        if found:
            break
    return found


def _balanced(text: str, start: int) -> str | None:
    """The ``{...}`` block opening at ``start`` (braces inside double-quoted strings ignored), or None."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


def _loads(block: str):
    for attempt in (block, re.sub(r",\s*([}\]])", r"\1", block)):
        for variant in (attempt, re.sub(r"(?<![A-Za-z])'|'(?![A-Za-z])", '"', attempt)):
            try:
                return json.loads(variant)
            except ValueError:
                continue
    return None


def lookup(objects: Iterable[dict], names: Iterable[str]):
    """The first value under any of ``names`` (lower-case) in ``objects``, else None."""
    names = list(names)
    for obj in objects:
        for name in names:
            if name in obj and obj[name] not in (None, ""):
                return obj[name]
    return None


def number_from(value, scale: float | None = None) -> float:
    """A number from a JSON value: a number, ``"7"``, ``"7/10"``, ``"[7]"``, or a list (its minimum, as VIEScore takes
    the minimum of its sub-scores). ``scale``: a ``x/scale`` fraction is rescaled to the ``0..scale`` range it
    already is in (``8/10`` -> 8; ``80/100`` with scale 10 -> 8). NaN when nothing numeric is there."""
    if isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (list, tuple)):
        numbers = [number_from(v, scale) for v in value]
        numbers = [n for n in numbers if not math.isnan(n)]
        return min(numbers) if numbers else math.nan
    if isinstance(value, str):
        match = re.search(rf"({_NUMBER})\s*(?:/\s*({_NUMBER}))?", value)
        if match:
            return _rescaled(match, scale)
    return math.nan


def _rescaled(match: re.Match, scale: float | None) -> float:
    """Group 1 of ``match``, rescaled from ``0..group 2`` to ``0..scale`` when it was written as a fraction."""
    number = float(match.group(1))
    if match.group(2) and scale and float(match.group(2)) > 0:
        number = number / float(match.group(2)) * scale
    return number


def labelled_number(text: str, labels: Iterable[str], scale: float | None = None) -> float:
    """A number written after one of ``labels`` in prose (``Score: 7/10``, ``rating of 7``, ``score = [7]``,
    ``**Errors**: 2``); NaN when no label is followed by a number."""
    for label in labels:
        pattern = (rf"{label}[\s*_\"':=]{{0,4}}(?:(?:is|of|at)\s+)?\**\s*\[?\s*({_NUMBER})"
                   rf"(?:\s*(?:/|out of)\s*({_NUMBER}))?")
        match = re.search(pattern, text, re.I)
        if match:
            return _rescaled(match, scale)
    return math.nan
