"""What both table readers share, without pandas: the release's column names and this project's canonical ones, the
width limit of a score table, the preview of names in messages, the comparison of header names (:func:`header_key`),
and the reading of a score column's text cells.

:mod:`scorers.tables.pandas_tables` (pandas) and :mod:`scorers.tables.csv_tables` (the pandas-free fast path) both use them.
"""
from __future__ import annotations

import unicodedata
from typing import Sequence

import numpy as np

from scorers.checks import as_scores, parse_numbers
from scorers.errors import ParameterError

__all__ = ["KEY_COLUMNS", "MAX_METRIC_COLUMNS", "METADATA_COLUMNS", "check_score_header", "header_key",
           "preview_names", "text_scores"]

#: release column -> canonical column
METADATA_COLUMNS = {
    "id": "seg_id",
    "target_prompt": "prompt",
    "file_name": "file_name",
    "image_source": "image_source",
    "rank": "node",
}
#: columns that identify an image (never treated as score columns)
KEY_COLUMNS = ("id", "seg_id", "image_id", "file_name", "node", "rank", "prompt", "target_prompt", "image_source",
               "error_count", "partition", "is_head", "source_file")

#: Most metric columns one score table may bring without naming the wanted ones (``--column``): a file wider than
#: this is almost always a mistake (a transposed table, a pivot), and reading it whole costs minutes and gigabytes.
MAX_METRIC_COLUMNS = 1000


def header_key(name: object) -> str:
    """What a header name is compared by when looking for a name given twice: Unicode NFKC normalisation, format
    characters (category Cf: a byte-order mark, a zero-width space or joiner, a direction mark) removed, surrounding
    spaces stripped. ``"m"``, ``" m"``, ``"\ufeffm"``, ``"m\u200b"`` and the full-width ``"ｍ"`` are one name.

        >>> {header_key(n) for n in ("m", " m", "\ufeffm", "m\u200b", "\uff4d")}
        {'m'}
    """
    text = unicodedata.normalize("NFKC", str(name))
    if not text.isascii():
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return text.strip()


def preview_names(names: Sequence[object], limit: int = 8) -> str:
    """The first few of a list of names for an error message: ``'a', 'b', ... (10,000 in all)``."""
    names = list(names)
    shown = ", ".join(repr(str(n)) for n in names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names):,} in all)"


def check_score_header(path, header: Sequence[str], columns: Sequence[str] | None = None, *,
                       max_columns: int = MAX_METRIC_COLUMNS) -> list[str]:
    """The score columns (not image keys) of a score table whose header is ``header``, after the header's checks:
    each of ``columns`` (the wanted ones) must be in it, and without ``columns`` there are at most ``max_columns``
    (``ValueError`` naming ``path`` and the first few available names otherwise)."""
    available = [c for c in header if c not in KEY_COLUMNS]
    if columns:
        unknown = [c for c in columns if c not in header]
        if unknown:
            raise ValueError(f"{path}: score column(s) {unknown[:5]} not found; available: {preview_names(available)}")
    elif len(available) > max_columns:
        raise ParameterError("{path} has {n:,} score columns ({preview}); at most {most:,} are evaluated at once: "
                             "pick some with {columns}", path=path, n=len(available),
                             preview=preview_names(available, 3), most=max_columns)
    return available


def text_scores(cells: np.ndarray, *, name: str, clean_quotes: bool = False) -> np.ndarray:
    """Validated float scores of a score column's text cells (``as read from a CSV: strings``), the one reading of a
    score cell: the whole column at once (:func:`scorers.checks.parse_numbers`), then the checks of
    :func:`scorers.checks.as_scores` (no infinity, at least one number); when a cell does not parse, ``as_scores``
    reads them one by one (:func:`scorers.checks.parse_number`) and its ``ValueError`` names the bad ones by position,
    ``name`` first."""
    values = parse_numbers(cells, clean_quotes=clean_quotes)
    return as_scores(cells if values is None else values, name=name, clean_quotes=clean_quotes)
