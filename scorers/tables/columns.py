"""The release's column names and this project's canonical ones (no pandas: the fast readers use them too).

:mod:`scorers.tables.readers` (pandas) and :mod:`scorers.tables.light_tables` (the pandas-free fast path) both read them here,
with the width limit of a score table and the preview of names in messages.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["KEY_COLUMNS", "MAX_METRIC_COLUMNS", "METADATA_COLUMNS", "preview_names"]

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
               "error_count", "partition", "is_head")

#: Most metric columns one score table may bring without naming the wanted ones (``--column``): a file wider than
#: this is almost always a mistake (a transposed table, a pivot), and reading it whole costs minutes and gigabytes.
MAX_METRIC_COLUMNS = 1000


def preview_names(names: Sequence[object], limit: int = 8) -> str:
    """The first few of a list of names for an error message: ``'a', 'b', ... (10,000 in all)``."""
    names = list(names)
    shown = ", ".join(repr(str(n)) for n in names[:limit])
    return shown if len(names) <= limit else f"{shown}, ... ({len(names):,} in all)"
