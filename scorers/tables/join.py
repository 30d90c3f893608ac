"""The one score-table join: rows of a per-image score table matched to the metadata's images.

A table with keys (``seg_id`` + ``file_name``, or ``seg_id`` + ``image_id``; the release's ``id`` is read as
``seg_id``) is joined on them, whatever its row order: sorting, filtering or shuffling a scores CSV cannot move a score
onto another image. A duplicated key and a key absent from the metadata are errors naming the first few. Only a table
without keys is paired by row position, and the result says so (:attr:`Joined.note`). ``ts2 meta``, ``ts2 report``,
``ts2 reproduce``, ``ts2 score --meta``, the demo and :func:`scorers.ts2.meta_from_tables.meta_from_tables` all go through
it: :func:`join_scores` joins a pandas frame, and the pandas-free reader of :mod:`scorers.tables.csv_tables` calls
the same rules (:func:`table_keys`, :func:`key_rows`, :func:`check_row_positions`) on its columns of text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from scorers.checks import integer_column

if TYPE_CHECKING:  # annotations only: the frames come from the caller (and csv_tables imports this module)
    import pandas as pd

__all__ = ["ROW_POSITION_NOTE", "Joined", "check_row_positions", "join_scores", "key_rows", "table_keys"]

#: What every output says when a table is paired with the metadata by row position.
ROW_POSITION_NOTE = "paired by row position: the table has no seg_id/file_name keys"

_SEG_NAMES = ("seg_id", "id")
_SHOW = 5  # keys named in an error


@dataclass
class Joined:
    """A score table in metadata row order.

    ``frame``: the table's columns, one row per metadata row (rows the table does not cover hold ``""``, read as
    missing); ``keys``: the columns joined on, or None when paired by row position; ``note``: a line for the output
    (:data:`ROW_POSITION_NOTE`, or None when joined on keys); ``covered``: per metadata row, whether the table had it.
    """

    frame: pd.DataFrame
    keys: tuple[str, ...] | None
    note: str | None
    covered: np.ndarray

    @property
    def pairing(self) -> str:
        """``"keys (seg_id, file_name)"`` or ``"row position"`` (what JSON outputs state)."""
        return "row position" if self.keys is None else f"keys ({', '.join(self.keys)})"


def _names(table) -> list[str]:
    """The column names of a frame or of a ``{name: cells}`` mapping."""
    return list(table.columns) if hasattr(table, "columns") else list(table)


def _seg_column(table) -> str | None:
    names = _names(table)
    return next((c for c in _SEG_NAMES if c in names), None)


def _image_id_problem(values: Sequence) -> str | None:
    """Why an ``image_id`` column cannot be a key (None if it can): empty cells (the release's ``released_scores.csv``
    has 164, and 11 repeated ids, so it is row-aligned, not keyed)."""
    text = np.strings.strip(np.asarray(values, dtype=str))
    empty = int((text == "").sum() + np.isin(np.strings.lower(text), ["nan", "none"]).sum())
    return f"its image_id column has {empty} empty cell(s)" if empty else None


def table_keys(table) -> tuple[tuple[str, ...] | None, str | None]:
    """``(key columns, why not)`` of a score table (a frame, or ``{column: cells}``): ``("seg_id", "file_name")`` (the
    release's ``id`` counts as ``seg_id``), else ``("seg_id", "image_id")`` when ``image_id`` has no empty cell, else
    ``(None, reason)``.

    A ``file_name`` column without a SEG id column is refused (``ValueError``): file names are joined with their SEG.
    """
    seg = _seg_column(table)
    names = _names(table)
    if "file_name" in names:
        if seg is None:
            raise ValueError("a file_name column needs a seg_id column next to it (rows are joined on seg_id + "
                             "file_name)")
        return (seg, "file_name"), None
    if seg is not None and "image_id" in names:
        problem = _image_id_problem(table["image_id"])
        if problem is None:
            return (seg, "image_id"), None
        return None, f"{problem}, so it is not a key either"
    return None, None


def _integers(values: Sequence, what: str, line: str) -> np.ndarray:
    return integer_column(values, what, lambda row: f"{line}line {row + 2}")


def _key_text(key: tuple) -> str:
    return "(" + ", ".join(repr(k) if isinstance(k, str) else str(k) for k in key) + ")"


def _metadata_keys(metadata: pd.DataFrame, second: str) -> list[tuple]:
    seg = metadata["seg_id"].astype(np.int64).to_numpy()
    if second == "file_name":
        other = metadata["file_name"].astype(str).str.strip().to_numpy()
    else:  # image_id: the image's position inside its SEG in metadata order (the official evaluator's numbering)
        other = metadata.groupby("seg_id", sort=False).cumcount().to_numpy()
    return list(zip(seg.tolist(), other.tolist()))


def key_rows(
    table,
    keys: tuple[str, str],
    metadata_seg: np.ndarray,
    metadata_keys: Sequence[tuple],
    *,
    required_segs: Iterable[int] | None = None,
    where: str = "",
    line: str = "",
) -> tuple[np.ndarray, np.ndarray]:
    """``(taken, covered)``: for each metadata row, the row of ``table`` (a frame or ``{column: cells}``) whose keys
    ``keys`` (e.g. ``("seg_id", "file_name")``) are its entry of ``metadata_keys`` (``(seg id, file name or image
    id)`` per metadata row; ``metadata_seg``: its SEG ids), 0 where none (``covered`` False). SEG ids and image ids
    must be integers; a duplicated key, a SEG id or key absent from the metadata, or a metadata row of
    ``required_segs`` (default: every SEG) that the table leaves out is a ``ValueError`` naming the first few (and the
    CSV lines: data row k is line k + 2); ``where`` starts every message, ``line`` every line reference."""
    seg_col, second = keys
    seg = _integers(table[seg_col], "SEG id", line)
    known_segs = set(np.asarray(metadata_seg, dtype=np.int64).tolist())
    unknown = ~np.isin(seg, list(known_segs))
    if unknown.any():
        ids = sorted(set(seg[unknown].tolist()))
        first = int(np.flatnonzero(unknown)[0])
        raise ValueError(f"{where}unknown SEG id(s) {ids[:10]}{' ...' if len(ids) > 10 else ''} (first on line "
                         f"{first + 2}); the metadata has SEG ids {min(known_segs)}-{max(known_segs)}")
    if second == "file_name":
        other = np.strings.strip(np.asarray(table["file_name"], dtype=str))
    else:
        other = _integers(table["image_id"], "image_id", line)
    ours = list(zip(seg.tolist(), other.tolist()))

    seen: dict[tuple, list[int]] = {}
    for row, key in enumerate(ours):
        seen.setdefault(key, []).append(row)
    repeated = [(key, rows) for key, rows in seen.items() if len(rows) > 1]
    if repeated:
        shown = "; ".join(f"{_key_text(key)} on lines {', '.join(str(r + 2) for r in rows[:4])}"
                          for key, rows in repeated[:_SHOW])
        more = f" and {len(repeated) - _SHOW} more" if len(repeated) > _SHOW else ""
        raise ValueError(f"{where}{len(repeated)} duplicate key(s) ({seg_col}, {second}): {shown}{more}; each image "
                         "needs exactly one row")

    position = {key: k for k, key in enumerate(metadata_keys)}
    absent = [row for row, key in enumerate(ours) if key not in position]
    if absent:
        shown = ", ".join(f"{_key_text(ours[r])} (line {r + 2})" for r in absent[:_SHOW])
        more = f" and {len(absent) - _SHOW} more" if len(absent) > _SHOW else ""
        raise ValueError(f"{where}{len(absent)} score row(s) match no metadata row ({seg_col}, {second}): "
                         f"{shown}{more} (unknown file name or image id?)")

    index = np.full(len(metadata_keys), -1, dtype=np.int64)
    index[[position[key] for key in ours]] = np.arange(len(ours))
    covered = index >= 0
    meta_seg = np.asarray(metadata_seg, dtype=np.int64)
    needed = np.ones(len(metadata_keys), dtype=bool) if required_segs is None else np.isin(meta_seg, list(required_segs))
    missing = np.flatnonzero(needed & ~covered)
    if missing.size:
        shown = ", ".join(_key_text(metadata_keys[k]) for k in missing[:_SHOW])
        hint = ("" if required_segs is None else
                "; to evaluate only the SEGs the table covers, select them ({seg_subset})")
        from scorers.errors import value_error  # a ParameterError naming seg_subset: ts2 says --segs

        raise value_error("{text}" + hint, text=f"{where}{missing.size} metadata row(s) have no score row; first: "
                                                f"{shown}{' ...' if missing.size > _SHOW else ''}")
    return np.where(covered, index, 0), covered


def check_row_positions(table, n_rows: int, metadata_seg: np.ndarray, *, where: str = "", line: str = "",
                        lacking: str = "") -> None:
    """A table without keys (a frame or ``{column: cells}``, ``n_rows`` rows) is paired by row position: it must have
    the metadata's row count, and its SEG id column, if any, must match the metadata's row by row (``ValueError``
    otherwise, naming the first line that differs)."""
    if n_rows != len(metadata_seg):
        raise ValueError(f"{where}scores has {n_rows} rows but metadata has {len(metadata_seg)}{lacking}, and the "
                         "table has no seg_id/file_name keys to join on; add seg_id,file_name columns, or give one row "
                         "per image in metadata order")
    seg = _seg_column(table)
    if seg is not None:
        ours = _integers(table[seg], "SEG id", line)
        theirs = np.asarray(metadata_seg, dtype=np.int64)
        mismatch = np.flatnonzero(ours != theirs)
        if mismatch.size:
            row = int(mismatch[0])
            raise ValueError(f"{where}line {row + 2}: SEG id {ours[row]} but metadata row {row + 2} is SEG "
                             f"{theirs[row]}; a table without file_name keys must follow metadata order (or add a "
                             "file_name column to join on)")


def join_scores(
    scores: pd.DataFrame,
    metadata: pd.DataFrame,
    *,
    on: Sequence[str] | None = None,
    required_segs: Iterable[int] | None = None,
    source: str | None = None,
    lacking_keys_by_position: bool = False,
) -> Joined:
    """Rows of ``scores`` matched to the rows of ``metadata`` (a :func:`scorers.tables.pandas_tables.read_metadata` frame).

    Keys are found by :func:`table_keys` (``on`` names them explicitly, e.g. ``["seg_id", "file_name"]``; a table that
    lacks one of them is an error, or with ``lacking_keys_by_position`` is paired by row position, as ``ts2 report``
    mixes keyed files with the release's row-aligned one). Joined tables: a duplicated key, a SEG id or key absent from the
    metadata, or a metadata row of ``required_segs`` (default: every SEG) without a score row is a ``ValueError``
    naming the first few; rows of other SEGs may be absent (``ts2 meta --segs`` on a file covering only those SEGs).
    Row-position tables must have the metadata's row count, and a SEG id column, if any, must match row by row.
    ``source`` (a file name) starts every message.
    """
    where = f"{source}: " if source else ""
    line = f"{source} " if source else ""
    scores = scores.reset_index(drop=True)
    if on:
        aliases = {"seg_id": _SEG_NAMES}
        keys = []
        for k in on:
            found = next((c for c in aliases.get(k, (k,)) if c in scores.columns), None)
            keys.append(found)
        lacking = [k for k, found in zip(on, keys) if found is None]
        keys = None if lacking else tuple(keys)
        if lacking and not lacking_keys_by_position:
            from scorers.tables.columns import preview_names

            raise ValueError(f"{where}join column {lacking[0]!r} is missing from scores (columns: "
                             f"{preview_names(scores.columns)}); expected a header with {', '.join(on)} (the join "
                             "keys; release names id/rank also work) and numeric score columns")
        if lacking:
            return _by_position(scores, metadata, None, where, line,
                                prefix=f"no {', '.join(map(repr, lacking))} column; its rows are taken in metadata "
                                       "order: ", lacking=f" (it has no {lacking[0]!r} column to join on)")
        if len(keys) != 2 or keys[0] not in _SEG_NAMES or keys[1] not in ("file_name", "image_id"):
            raise ValueError(f"join keys {' '.join(on)}: the keys are seg_id plus file_name or image_id")
        if keys[1] == "image_id" and _image_id_problem(scores["image_id"]):
            raise ValueError(f"{where}join keys {' '.join(on)}: {_image_id_problem(scores['image_id'])}, so it is not "
                             "a key")
    else:
        keys, reason = table_keys(scores)
    if keys is None:
        return _by_position(scores, metadata, reason, where, line)

    meta_seg = metadata["seg_id"].astype(np.int64).to_numpy()
    taken, covered = key_rows(scores, keys, meta_seg, _metadata_keys(metadata, keys[1]),
                              required_segs=required_segs, where=where, line=line)
    frame = scores.iloc[taken].reset_index(drop=True)
    if not covered.all():
        frame = frame.astype(object)
        frame.loc[~covered, :] = ""
    return Joined(frame=frame, keys=keys, note=None, covered=covered)


def _by_position(scores: pd.DataFrame, metadata: pd.DataFrame, reason: str | None, where: str,
                 line: str, prefix: str = "", lacking: str = "") -> Joined:
    check_row_positions(scores, len(scores), metadata["seg_id"].astype(np.int64).to_numpy(), where=where, line=line,
                        lacking=lacking)
    note = prefix + ROW_POSITION_NOTE + (f" ({reason})" if reason else "")
    return Joined(frame=scores, keys=None, note=note, covered=np.ones(len(metadata), dtype=bool))
