"""The one score-table join: rows of a per-image score table matched to the metadata's images.

A table with keys (``seg_id`` + ``file_name``, or ``seg_id`` + ``image_id``; the release's ``id`` is read as
``seg_id``) is joined on them, whatever its row order: sorting, filtering or shuffling a scores CSV cannot move a
score onto another image. A duplicated key and a key absent from the metadata are errors naming the first few. On a
data dir built by ``ts2 seg build`` (its ``metadata.csv`` has a ``source_file`` column: each image's file as
ANNOTATIONS named it) a ``file_name`` key may be either name, the built one (``images/001-02.png``) or the source one
(``cats/one-cat-1.png``); a name that is one image's built name and another's source name, or two rows for one image,
is an error naming it. Only a table without keys is paired by row position, and the result says so
(:attr:`Joined.note`). ``ts2 meta``, ``ts2 report``, ``ts2 reproduce``, ``ts2 score --meta``, the demo and
:func:`scorers.ts2.meta_from_tables.meta_from_tables` all go through it: :func:`join_scores` joins a pandas frame, and
the pandas-free reader of :mod:`scorers.tables.csv_tables` calls the same rules (:func:`table_keys`, :func:`key_rows`,
:func:`check_row_positions`) on its columns of text.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from scorers.checks import integer_column

if TYPE_CHECKING:  # annotations only: the frames come from the caller (and csv_tables imports this module)
    import pandas as pd

__all__ = ["ROW_POSITION_NOTE", "SOURCE_COLUMN", "Joined", "check_row_positions", "join_scores", "key_rows",
           "normal_file_name", "normal_file_names", "table_keys"]

#: What every output says when a table is paired with the metadata by row position.
ROW_POSITION_NOTE = "paired by row position: the table has no seg_id/file_name keys"

#: the ``metadata.csv`` column of a built data dir naming each image's source file (a second name to join on)
SOURCE_COLUMN = "source_file"

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


def normal_file_name(name: str) -> str:
    r"""A relative file name as text, normalised: stripped, ``\`` read as ``/``, ``.``, ``..`` and repeated ``/``
    folded (``ts2 seg build`` records each image's ``source_file`` so, and the join compares score keys so).

        >>> normal_file_name(" ./cats//one-cat-1.png "), normal_file_name("cats\\sub\\..\\a.png")
        ('cats/one-cat-1.png', 'cats/a.png')
    """
    import posixpath

    return posixpath.normpath(str(name).strip().replace("\\", "/"))


def normal_file_names(names: Sequence[str]) -> list[str]:
    """:func:`normal_file_name` of each name, a whole column at once: only the names that may change (a ``\\``,
    ``//``, a ``.`` or ``..`` part, a space at either end) go through it one by one."""
    text = np.asarray(names, dtype=str)
    if text.size == 0:
        return []
    slashed = np.strings.add(np.strings.add("/", np.strings.replace(text, "\\", "/")), "/")
    odd = ((np.strings.find(text, "\\") >= 0) | (np.strings.find(slashed, "//") >= 0)
           | (np.strings.find(slashed, "/./") >= 0) | (np.strings.find(slashed, "/../") >= 0)
           | (np.strings.strip(text) != text))
    out = text.tolist()
    for k in np.flatnonzero(odd).tolist():
        out[k] = normal_file_name(out[k])
    return out


def _integers(values: Sequence, what: str, line: str) -> np.ndarray:
    return integer_column(values, what, lambda row: f"{line}line {row + 2}")


def _key_text(key: tuple) -> str:
    return "(" + ", ".join(repr(k) if isinstance(k, str) else str(k) for k in key) + ")"


def _source_keys(metadata: pd.DataFrame, second: str) -> list[tuple] | None:
    """``(seg id, normalised source file)`` per metadata row when the join is on file names and the metadata has a
    :data:`SOURCE_COLUMN` (a built data dir); None otherwise."""
    if second != "file_name" or SOURCE_COLUMN not in metadata.columns:
        return None
    seg = metadata["seg_id"].astype(np.int64).tolist()
    names = metadata[SOURCE_COLUMN].astype(str).str.strip().to_numpy(dtype=str)
    normal = normal_file_names(names)
    return [(s, n if name else "") for s, n, name in zip(seg, normal, names.tolist())]


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
    source_keys: Sequence[tuple] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(taken, covered)``: for each metadata row, the row of ``table`` (a frame or ``{column: cells}``) whose keys
    ``keys`` (e.g. ``("seg_id", "file_name")``) are its entry of ``metadata_keys`` (``(seg id, file name or image
    id)`` per metadata row; ``metadata_seg``: its SEG ids), 0 where none (``covered`` False). SEG ids and image ids
    must be integers; a duplicated key, a SEG id or key absent from the metadata, or a metadata row of
    ``required_segs`` (default: every SEG) that the table leaves out is a ``ValueError`` naming the first few (and the
    CSV lines: data row k is line k + 2); ``where`` starts every message, ``line`` every line reference.

    ``source_keys`` (a built data dir: ``(seg id, normalised source file)`` per metadata row, ``""`` where none) is a
    second name of each image: a key matches its metadata row by either name. A name that is one image's built name
    and another's source name, or two rows that name one image (by both names), is a ``ValueError`` naming it."""
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
    target = [position.get(key) for key in ours]
    if source_keys is not None:
        target = _by_either_name(ours, target, source_keys, metadata_keys, where)
    absent = [row for row, k in enumerate(target) if k is None]
    if absent:
        shown = ", ".join(f"{_key_text(ours[r])} (line {r + 2})" for r in absent[:_SHOW])
        more = f" and {len(absent) - _SHOW} more" if len(absent) > _SHOW else ""
        either = " or source_file" if source_keys is not None else ""
        raise ValueError(f"{where}{len(absent)} score row(s) match no metadata row ({seg_col}, {second}{either}): "
                         f"{shown}{more} (unknown file name or image id?)")

    index = np.full(len(metadata_keys), -1, dtype=np.int64)
    index[target] = np.arange(len(ours))
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


def _by_either_name(ours: list[tuple], target: list, source_keys: Sequence[tuple], metadata_keys: Sequence[tuple],
                    where: str) -> list:
    """``target`` (the metadata row of each score key by its built name, None where none) completed by the source
    names; a ``ValueError`` naming the first key that is one image's built name and another's source name, or the
    first image named by two rows. Whole-table set operations; rows are visited one by one only to word an error."""
    by_source = {key: k for k, key in enumerate(source_keys) if key[1]}
    target = list(target)
    # a key matched by its built name (normal text, images/SSS-KK.ext) that is also another image's source name
    both = [row for row, key in enumerate(ours) if key in by_source and target[row] is not None
            and by_source[key] != target[row]] if not by_source.keys().isdisjoint(ours) else []
    if both:
        row = both[0]
        key, built, source = ours[row], target[row], by_source[ours[row]]
        raise ValueError(f"{where}line {row + 2}: file name {key[1]!r} of SEG {key[0]} names two images: "
                         f"{metadata_keys[built][1]} by its built name and {metadata_keys[source][1]} by its "
                         "source_file; the join cannot tell which is meant")
    unmatched = [row for row, built in enumerate(target) if built is None]
    if not unmatched:
        return target
    for row, name in zip(unmatched, normal_file_names([ours[row][1] for row in unmatched])):
        target[row] = by_source.get((ours[row][0], name))
    found = np.asarray([-1 if k is None else k for k in target], dtype=np.int64)
    values, counts = np.unique(found[found >= 0], return_counts=True)
    if (counts > 1).any():
        k = int(values[counts > 1][0])
        rows = np.flatnonzero(found == k)[:2].tolist()
        seg, name = metadata_keys[k]
        raise ValueError(f"{where}two score rows for one image: SEG {seg}, {name} (source_file {source_keys[k][1]}) on "
                         f"lines {rows[0] + 2} ({ours[rows[0]][1]!r}) and {rows[1] + 2} ({ours[rows[1]][1]!r}); each "
                         "image needs exactly one row, keyed by its built or its source file name")
    return target


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
                              required_segs=required_segs, where=where, line=line,
                              source_keys=_source_keys(metadata, keys[1]))
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
