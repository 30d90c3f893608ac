"""The one reading of error-set cells: an ANNOTATIONS table (``ts2 seg build``) or a built ``metadata.csv``
(``ts2 meta --by-error-type``) -> per-image sorted error sets, their types, and their keys.

:func:`parse_error_columns` reads the ``errors`` (and optional ``error_types``) columns of a frame with whole-column
operations; :func:`metadata_error_types` checks a built ``metadata.csv`` with it and returns what
:func:`scorers.stats.error_type_walks.error_type_meta` needs. Keys join an image's sorted labels with
:data:`scorers.stats.error_sets.KEY_SEPARATOR`. Every refusal is one line naming the source, its line, the SEG and the
image (:func:`fail_first_row`, :func:`row_location`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scorers.errors import ParameterError
from scorers.stats.error_sets import ERROR_SEPARATOR, ERROR_TYPES, KEY_SEPARATOR

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["CONTROL_CHARACTERS", "NO_ERROR_TYPES", "fail_first_row", "has_error_types", "metadata_error_types",
           "parse_error_columns", "row_location"]

#: what an error label may not hold: the C0 and C1 control characters (Unicode category Cc), among them
#: :data:`scorers.stats.error_sets.KEY_SEPARATOR`, which would split one label into two in a key
CONTROL_CHARACTERS = r"[\x00-\x1f\x7f-\x9f]"


def fail_first_row(frame: pd.DataFrame, mask, source: str, message) -> None:
    """Raise ``ValueError`` for the first row of ``mask``: ``SOURCE line N (SEG s, FILE): MESSAGE``."""
    hits = np.flatnonzero(np.asarray(mask, dtype=bool))
    if hits.size:
        k = int(hits[0])
        row = frame.iloc[k]
        text = message(k, row) if callable(message) else message
        raise ValueError(f"{row_location(source, row)}: {text}")


def row_location(source: str, row) -> str:
    """``SOURCE line N (SEG s, FILE)``: where a row of a table with ``line``, ``seg_id`` and ``file_name`` is."""
    return f"{source} line {int(row['line'])} (SEG {row['seg_id'] or '?'}, {row['file_name'] or 'no file name'})"


def _split(column: pd.Series) -> pd.DataFrame:
    """``(row, position, item)`` of every ``;``-separated item, stripped (empty items kept: the caller decides)."""
    parts = column.str.split(ERROR_SEPARATOR).explode()
    frame = parts.to_frame("item")
    frame["item"] = frame["item"].fillna("").str.strip()
    frame["row"] = frame.index.to_numpy()
    frame["position"] = frame.groupby(level=0).cumcount().to_numpy()
    return frame.reset_index(drop=True)


def parse_error_columns(frame: pd.DataFrame, source: str) -> None:
    """Add ``key`` (the sorted error set joined with :data:`scorers.stats.error_sets.KEY_SEPARATOR`), ``n_errors``,
    ``sorted_errors`` and ``sorted_types`` (``;``-joined, aligned) to ``frame`` from its ``errors`` (and optional
    ``error_types``) columns, in place.

    The one reading of error-set cells: ANNOTATIONS (:func:`scorers.ts2.seg.build.read_annotations`) and a built
    ``metadata.csv`` (``ts2 meta --by-error-type``). ``frame`` needs ``seg_id``, ``file_name`` and ``line`` (for the
    messages).

    Raises
    ------
    ValueError
        An error label holding a control character (:data:`CONTROL_CHARACTERS`: the key separator among them),
        ``error_types`` not aligned with ``errors``, a type not in :data:`scorers.stats.error_sets.ERROR_TYPES`, or an error label with two
        types in one SEG; the message names ``source``, the line, the SEG and the image.
    """
    frame.reset_index(drop=True, inplace=True)
    errors = _split(frame["errors"])
    control = errors["item"].str.contains(CONTROL_CHARACTERS, regex=True)
    if control.any():
        item = errors.loc[control, "item"].iloc[0]
        raise ValueError(f"{row_location(source, frame.iloc[int(errors.loc[control, 'row'].iloc[0])])}: error label "
                         f"{item!r} holds a control character; a label is printable text")
    if "error_types" in frame.columns:
        types = _split(frame["error_types"])
        n_err = (errors["item"] != "").groupby(errors["row"]).sum()
        n_typ = (types["item"] != "").groupby(types["row"]).sum()
        fail_first_row(frame, (n_err != n_typ).to_numpy(), source,
                       lambda k, row: f"errors has {int(n_err.iloc[k])} label(s) but error_types has "
                                      f"{int(n_typ.iloc[k])}; give one type per error, in the same order")
        errors = errors[errors["item"] != ""].reset_index(drop=True)
        types = types[types["item"] != ""].reset_index(drop=True)
        errors["type"] = types["item"].str.lower().to_numpy()
        bad = ~errors["type"].isin(ERROR_TYPES)
        if bad.any():
            k = int(errors.loc[bad, "row"].iloc[0])
            raise ValueError(f"{row_location(source, frame.iloc[k])}: unknown error type "
                             f"{errors.loc[bad, 'type'].iloc[0]!r}; use one of {', '.join(ERROR_TYPES)}")
    else:
        errors = errors[errors["item"] != ""].reset_index(drop=True)
        errors["type"] = ""
    errors["seg_id"] = frame["seg_id"].to_numpy()[errors["row"].to_numpy()]
    errors = errors.drop_duplicates(["row", "item", "type"])
    if "error_types" in frame.columns:
        kinds = errors.groupby(["seg_id", "item"], sort=False)["type"].transform("nunique")
        if (kinds > 1).any():
            clash = errors[kinds > 1]
            label, seg = clash["item"].iloc[0], clash["seg_id"].iloc[0]
            used = errors[(errors["seg_id"] == seg) & (errors["item"] == label)]
            first = used.iloc[0]
            second = used[used["type"] != first["type"]].iloc[0]
            raise ValueError(f"{row_location(source, frame.iloc[int(second['row'])])}: error {label!r} has type "
                             f"{second['type']!r} here but {first['type']!r} on line "
                             f"{int(frame['line'].iloc[int(first['row'])])}; an error label has one type in a SEG")
    errors = errors.drop_duplicates(["row", "item"]).sort_values(["row", "item"], kind="stable")
    errors["k"] = errors.groupby("row", sort=False).cumcount().to_numpy()
    frame["key"] = _join_wide(errors, "item", KEY_SEPARATOR, len(frame))
    frame["sorted_errors"] = _join_wide(errors, "item", ERROR_SEPARATOR, len(frame))
    frame["sorted_types"] = _join_wide(errors, "type", ERROR_SEPARATOR, len(frame))
    frame["n_errors"] = np.bincount(errors["row"].to_numpy(dtype=np.int64), minlength=len(frame)).astype(np.int64)
    if "error_types" not in frame.columns:
        frame["sorted_types"] = ""


def _join_wide(items: pd.DataFrame, column: str, separator: str, n_rows: int) -> np.ndarray:
    """Per row, its ``column`` items (in their ``k`` order) joined with ``separator``; ``""`` for a row with none.
    One vectorised string operation per item position (a row holds a few errors), not one call per row."""
    import pandas as pd

    out = pd.Series([""] * n_rows, dtype=object)
    for k in range(int(items["k"].max()) + 1 if len(items) else 0):
        part = items[items["k"] == k]
        rows = part["row"].to_numpy(dtype=np.int64)
        values = part[column].astype(str).to_numpy(dtype=object)
        current = out.to_numpy()[rows]
        out.iloc[rows] = values if k == 0 else current + separator + values
    return out.to_numpy(dtype=object)


#: what ``ts2 meta --by-error-type`` says when the metadata has no error types (the release)
NO_ERROR_TYPES = ("{by_error_type=True} needs error_types: {source} has no {missing} column(s); the release does not "
                  "carry error types. Build your SEGs with ts2 seg build from ANNOTATIONS with an error_types column "
                  "(its metadata.csv has errors and error_types)")


def has_error_types(metadata: pd.DataFrame) -> bool:
    """Whether a metadata frame carries error types: ``errors`` and ``error_types`` columns, some type filled in (a
    data dir built by ``ts2 seg build`` from ANNOTATIONS with types; not the release). ``ts2 report`` and ``ts2 card``
    add their per-error-type section then.

    Examples:
        >>> import pandas as pd
        >>> has_error_types(pd.DataFrame({"errors": ["", "dog"], "error_types": ["", "missing"]}))
        True
        >>> has_error_types(pd.DataFrame({"errors": ["", "dog"], "error_types": ["", " "]}))
        False
        >>> has_error_types(pd.DataFrame({"file_name": ["a.png"]}))
        False
    """
    if "errors" not in metadata.columns or "error_types" not in metadata.columns:
        return False
    return bool(metadata["error_types"].fillna("").astype(str).str.strip().ne("").any())


def metadata_error_types(metadata: pd.DataFrame, source: str) -> tuple[np.ndarray, dict[tuple[int, str], str]]:
    """``(keys, label_types)`` of a built ``metadata.csv`` (a :func:`scorers.tables.pandas_tables.read_metadata` frame with
    ``errors`` and ``error_types`` columns): per-image error sets (sorted labels joined with
    :data:`scorers.stats.error_sets.KEY_SEPARATOR`) and ``{(seg_id, label): type}``.

    Raises
    ------
    ParameterError
        No ``errors`` / ``error_types`` column, or no type at all (the release): :data:`NO_ERROR_TYPES`.
    ValueError
        What :func:`parse_error_columns` refuses, or a node label whose error count is not the size of the image's
        error set (one line naming the metadata line).
    """
    missing = [c for c in ("errors", "error_types") if c not in metadata.columns]
    if missing:
        raise ParameterError(NO_ERROR_TYPES, source=source, missing=" / ".join(missing))
    frame = metadata[["seg_id", "file_name", "node", "errors", "error_types"]].copy()
    frame["seg_id"] = frame["seg_id"].astype(str)
    frame["line"] = metadata["line"].to_numpy() if "line" in metadata.columns else np.arange(2, len(frame) + 2)
    frame["errors"] = frame["errors"].astype(str).str.strip()
    frame["error_types"] = frame["error_types"].astype(str).str.strip()
    parse_error_columns(frame, source)
    if not frame["sorted_types"].ne("").any():
        raise ParameterError(NO_ERROR_TYPES, source=source, missing="filled error_types")
    digits = frame["node"].astype(str).str.extract(r"^\s*(\d+)", expand=False).astype(np.int64)
    fail_first_row(frame, (digits != frame["n_errors"]).to_numpy(), source,
                   lambda k, row: f"node {row['node']} has {digits.iloc[k]} error(s) but errors lists "
                                  f"{row['n_errors']} ({row['sorted_errors'] or 'none'})")
    label_types: dict[tuple[int, str], str] = {}
    distinct = frame.loc[frame["n_errors"] > 0, ["seg_id", "sorted_errors", "sorted_types"]].drop_duplicates()
    for seg, errs, kinds in distinct.itertuples(index=False):  # distinct (SEG, error set) pairs, not images
        for e, t in zip(errs.split(ERROR_SEPARATOR), kinds.split(ERROR_SEPARATOR)):
            label_types[(int(seg), e)] = t
    return frame["key"].to_numpy(dtype=object), label_types
