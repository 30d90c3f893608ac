"""Reading TS2's release tables (metadata, per-image score CSVs, the paper's Table 2) into validated frames.

One place that knows the release's column names (``id``, ``target_prompt``, ``rank``...) and maps them to this
project's canonical names (``seg_id``, ``prompt``, ``node``...), so everything downstream speaks one vocabulary.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from scorers.checks import INTEGER, as_scores, integer_column
from scorers.errors import value_error
from scorers.stats.graph import NODE_LABEL, error_count, file_partitions, partition_of
from scorers.tables.columns import (KEY_COLUMNS, MAX_METRIC_COLUMNS, METADATA_COLUMNS, check_score_header,
                                     header_key, preview_names, text_scores)

__all__ = [
    "CSVReadError",
    "DuplicateHeaderError",
    "check_unique_header",
    "duplicate_names",
    "PARTITIONS_FROM_FILE",
    "read_json_list",
    "read_csv",
    "read_metadata",
    "read_paper_table",
    "read_score_table",
    "score_columns",
]


class CSVReadError(ValueError):
    """A CSV that cannot be decoded or parsed: the message names the file; ``detail`` is the reason alone."""

    def __init__(self, path, problem: str, detail: str):
        self.detail = detail
        super().__init__(f"{path}: {problem} ({detail})")


class DuplicateHeaderError(CSVReadError):
    """A table whose header names a column twice (pandas would silently rename the second ``x`` to ``x.1``)."""


#: ``frame.attrs`` key of :func:`read_metadata`: True when the partitions come from the file's ``partition`` column
PARTITIONS_FROM_FILE = "partitions_from_file"

#: a name pandas gives a repeated header name (``x.1``, ``x.2``...)
_MANGLED = re.compile(r".+\.\d+")


def duplicate_names(names) -> list[str]:
    """The names that occur more than once in ``names``, in order, each as first written (stripped). Names are
    compared by :func:`scorers.tables.columns.header_key`: ``m`` and ``m`` with a byte-order mark or a zero-width
    space are one name."""
    first: dict[str, str] = {}
    repeated = []
    for name in (str(n).strip() for n in names):
        key = header_key(name)
        if key in first and first[key] not in repeated:
            repeated.append(first[key])
        first.setdefault(key, name)
    return repeated


def check_unique_header(path, names) -> None:
    """Refuse a header that names a column twice (:class:`DuplicateHeaderError` naming the file and the names),
    compared by :func:`scorers.tables.columns.header_key` (invisible and compatibility characters aside)."""
    repeated = duplicate_names(names)
    if repeated:
        spellings = [repr(n) for n in dict.fromkeys(str(n).strip() for n in names)
                     if header_key(n) in {header_key(r) for r in repeated}]
        also = (f" (written {', '.join(spellings[:8])}: they differ only by invisible or compatibility characters)"
                if len(spellings) > len(repeated) else "")
        raise DuplicateHeaderError(path, "duplicate column name(s) in the header",
                                   f"{preview_names(repeated)}{also}; each column needs its own name")


def _check_raw_header(path, frame: pd.DataFrame, kwargs: dict) -> None:
    """Refuse a CSV whose raw header row repeats a name. pandas renames a repeat ``x`` to ``x.1``, so the header row
    is read again (one row, as text) only when a column name looks like such a rename or two names differ only by
    spaces: the common case costs nothing."""
    names = [str(c) for c in frame.columns]
    keys = {header_key(n) for n in names}
    if len(keys) == len(names) and not any(_MANGLED.fullmatch(n) and header_key(n.rsplit(".", 1)[0]) in keys
                                           for n in names):
        return
    raw_kwargs = {k: v for k, v in kwargs.items() if k in ("sep", "delimiter", "encoding", "quotechar", "escapechar",
                                                          "skipinitialspace", "comment", "engine")}
    try:
        raw = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False, **raw_kwargs)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError):
        return  # the read above succeeded; nothing more to learn here
    header = [str(c) for c in raw.iloc[0].tolist()] if len(raw) else names
    if header and header[0].startswith("\ufeff"):
        header[0] = header[0][1:]
    check_unique_header(path, header)


def read_csv(path: str | Path, **kwargs) -> pd.DataFrame:
    """``pandas.read_csv`` whose decoding and parsing errors name the file (:class:`CSVReadError`, a ``ValueError``):
    the library's reads of user tables go through it. A header that names a column twice is refused
    (:class:`DuplicateHeaderError`, naming them), where pandas would rename the second one ``x.1``."""
    try:
        frame = pd.read_csv(path, **kwargs)
    except UnicodeDecodeError as error:
        raise CSVReadError(path, "not UTF-8 text", f"byte {error.object[error.start:error.start + 1]!r} at offset "
                                                   f"{error.start}; save it as UTF-8 CSV") from None
    except pd.errors.ParserError as error:
        raise CSVReadError(path, "not a readable CSV file", str(error).strip().splitlines()[-1]) from None
    except pd.errors.EmptyDataError:
        raise CSVReadError(path, "empty file", "no header row") from None
    if kwargs.get("header", "infer") is not None:
        _check_raw_header(path, frame, kwargs)
    return frame


def read_metadata(path: str | Path) -> pd.DataFrame:
    """The release's ``metadata.csv`` with canonical columns plus ``error_count``, ``partition`` and ``line``.

    ``partition``: the file's own column when it has one (a data dir built by ``ts2 seg build``; one non-empty value
    per SEG), else TS2's id ranges; ``frame.attrs["partitions_from_file"]`` says which.

    The library's one metadata reader. Its rules and messages are those of the dataset builder's standalone copy
    (``dataset_script/ts2/ts2.py``, ``read_metadata``; ``tests/ts2/test_dataset_validation.py`` checks the two agree on a
    corpus of bad files): the release's names (``id, target_prompt, file_name, image_source, rank``) or the canonical
    ones; SEG ids are integers (``1.0`` is refused), prompts and file names non-empty, file names unique, node labels
    parse, and every SEG has an error-0 node. ``ValueError`` names the file, CSV line, SEG and image.
    """
    frame = read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    frame.columns = [str(c).strip() for c in frame.columns]
    frame = frame.rename(columns={k: v for k, v in METADATA_COLUMNS.items() if k in frame.columns and k != v})
    release_name = {v: k for k, v in METADATA_COLUMNS.items() if k != v}
    missing = [c for c in ("seg_id", "prompt", "file_name", "node") if c not in frame.columns]
    if missing:
        names = ", ".join(f"{release_name[c]} (or {c})" if c in release_name else c for c in missing)
        raise ValueError(f"{path}: missing column(s) {names}; expected the release's header id, target_prompt, "
                         "file_name, image_source, rank")
    if frame.empty:
        raise ValueError(f"{path}: no rows")
    # Whole columns are checked at once; the row-by-row rules below (the builder's, in its order) run only for the
    # first row that breaks one, to word its message.
    file_names, nodes = frame["file_name"].str.strip(), frame["node"].str.strip()
    seg_ok = frame["seg_id"].str.fullmatch(INTEGER.pattern).to_numpy(dtype=bool)
    digits = nodes.str.extract(NODE_LABEL.pattern, expand=True)[0]
    bad = (~seg_ok | (frame["prompt"].str.strip() == "").to_numpy() | (file_names == "").to_numpy()
           | file_names.duplicated().to_numpy() | digits.isna().to_numpy())
    if bad.any():
        _metadata_row_error(path, frame, file_names, nodes, int(np.flatnonzero(bad)[0]))
    frame["seg_id"] = frame["seg_id"].astype(np.int64)
    frame["file_name"] = file_names
    frame["node"] = nodes
    frame["error_count"] = digits.astype(np.int64).to_numpy()
    frame["line"] = np.arange(2, len(frame) + 2)
    if "partition" in frame.columns:  # a built data dir (ts2 seg build): partitions come from the file
        frame["partition"] = frame["partition"].str.strip()
        first = frame.groupby("seg_id", sort=False)["partition"].transform("first")
        bad = np.flatnonzero(((frame["partition"] == "") | (frame["partition"] != first)).to_numpy())
        if bad.size:
            k = int(bad[0])
            row = frame.iloc[k]
            where = f"{path} line {k + 2} (SEG {row['seg_id']}, {row['file_name']})"
            if not row["partition"]:
                raise ValueError(f"{where}: empty partition")
            line = int(np.flatnonzero((frame["seg_id"] == row["seg_id"]).to_numpy())[0]) + 2
            raise ValueError(f"{where}: partition {row['partition']!r} but {first.iloc[k]!r} on line {line}; a SEG "
                             "has one partition")
        partitions = file_partitions(frame["seg_id"].to_numpy(), frame["partition"].to_numpy(dtype=str))
        frame.attrs[PARTITIONS_FROM_FILE] = True
    else:  # the release: partitions by SEG id range
        partitions = {s: partition_of(s) for s in frame["seg_id"].unique()}
        frame.attrs[PARTITIONS_FROM_FILE] = False
    frame["partition"] = frame["seg_id"].map(partitions)
    heads = frame.groupby("seg_id", sort=False)["error_count"].min()
    for seg_id in heads.index[heads.to_numpy() != 0]:
        members = frame[frame["seg_id"] == seg_id]
        nodes = sorted(set(members["node"]), key=lambda n: (error_count(n), n))
        raise ValueError(f"{path}: SEG {seg_id} has no error-0 (head) node (nodes: {', '.join(nodes)}; lines "
                         f"{members['line'].min()}-{members['line'].max()}); every SEG needs a head")
    return frame


def _metadata_row_error(path, frame: pd.DataFrame, file_names: pd.Series, nodes: pd.Series, k: int) -> None:
    """Raise :func:`read_metadata`'s error for row ``k``, the first row that breaks a rule (checked in this order)."""
    where = f"{path} line {k + 2}"
    seg_id = int(integer_column(frame["seg_id"].iloc[k:k + 1], "SEG id", lambda _: where)[0])
    file_name = file_names.iloc[k]
    where = f"{where} (SEG {seg_id}, {file_name or 'no file name'})"
    if not frame["prompt"].iloc[k].strip():
        raise ValueError(f"{where}: empty prompt")
    if not file_name:
        raise ValueError(f"{where}: empty file_name")
    earlier = np.flatnonzero((file_names.iloc[:k] == file_name).to_numpy())
    if earlier.size:
        raise ValueError(f"{where}: file_name {file_name!r} already used on line {int(earlier[0]) + 2}")
    try:
        error_count(nodes.iloc[k])
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    raise AssertionError(f"{where}: flagged but passes every rule")  # pragma: no cover - the masks match the rules


def read_score_table(
    path: str | Path,
    columns: Sequence[str] | None = None,
    *,
    max_columns: int = MAX_METRIC_COLUMNS,
) -> pd.DataFrame:
    """A per-image score CSV as strings (numeric validation happens per column in :func:`as_scores`).

    With ``columns`` only the key columns and those score columns are read (``usecols``), and a requested column
    missing from the header is an error naming the first few available ones. Without ``columns``, a table with more
    than ``max_columns`` score columns is refused before it is read.
    """
    header = list(read_csv(path, nrows=0).columns)
    check_score_header(path, header, columns, max_columns=max_columns)
    usecols = [c for c in header if c in KEY_COLUMNS or c in set(columns)] if columns else None
    return read_csv(path, dtype=str, keep_default_na=False, usecols=usecols)


def score_columns(frame: pd.DataFrame) -> list[str]:
    """Columns of a score table that are not image keys."""
    return [c for c in frame.columns if c not in KEY_COLUMNS]


def read_paper_table(path: str | Path) -> pd.DataFrame:
    """The paper's Table 2 (``column, name, family, meta_metric, avg, synth, nat, real, flop_per_image``); a file in
    the official ``pareto_information.csv`` layout (``table2_full_precision.csv``) is read by
    :func:`read_table2_full_precision`."""
    frame = read_csv(path)
    if "metric" in frame.columns and "spearman-all" in frame.columns and "column" not in frame.columns:
        return read_table2_full_precision(path)
    needed = {"column", "meta_metric", "avg", "synth", "nat", "real"}
    missing = sorted(needed - set(frame.columns))
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}")
    return frame


#: meta-metric -> its column prefix in the official ``pareto_information.csv`` (``table2_full_precision.csv``)
_OFFICIAL_TABLE2_PREFIX = {"rank": "spearman", "sep": "ks", "delta": "delta"}
_OFFICIAL_TABLE2_PARTS = {"avg": "all", "synth": "synth", "nat": "nat", "real": "real"}


def read_table2_full_precision(path: str | Path) -> pd.DataFrame:
    """The paper's Table 2 from the official repository's ``pareto_information.csv`` (release name
    ``table2_full_precision.csv``), in :func:`read_paper_table`'s layout: one row per metric and meta-metric,
    values in % (the file holds fractions, e.g. ``spearman-all`` 0.7141387 -> rank Avg 71.41387), ``flop_per_image``
    from its ``cost`` column. ``name`` is the column name (the file has no display names)."""
    frame = read_csv(path)
    needed = ["metric", "cost"] + [f"{prefix}-{part}" for prefix in _OFFICIAL_TABLE2_PREFIX.values()
                                   for part in _OFFICIAL_TABLE2_PARTS.values()]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing} (expected the official pareto_information.csv)")
    values = {}
    for prefix in _OFFICIAL_TABLE2_PREFIX.values():
        for key in _OFFICIAL_TABLE2_PARTS.values():
            column = f"{prefix}-{key}"
            cells = frame[column].to_numpy(dtype=object)
            try:  # the whole column at once; every cell must hold a number
                parsed = as_scores(cells, name=column)
                ok = not np.isnan(parsed).any()
            except ValueError:
                ok = False
            if not ok:  # word the first bad cell's error, naming its line
                for k, cell in enumerate(cells):
                    as_scores(np.asarray([cell], dtype=object), name=f"{path} line {k + 2}, {column}")
            values[column] = 100.0 * parsed
    rows = []
    for k, (metric, cost) in enumerate(zip(frame["metric"], frame["cost"])):
        for meta_metric, prefix in _OFFICIAL_TABLE2_PREFIX.items():
            row = {"column": str(metric).strip(), "name": str(metric).strip(), "family": "",
                   "meta_metric": meta_metric, "flop_per_image": cost}
            for part, key in _OFFICIAL_TABLE2_PARTS.items():
                row[part] = float(values[f"{prefix}-{key}"][k])
            rows.append(row)
    return pd.DataFrame(rows, columns=["column", "name", "family", "meta_metric", "avg", "synth", "nat", "real",
                                       "flop_per_image"])


def column_scores(frame: pd.DataFrame, column: str, *, clean_quotes: bool = False) -> np.ndarray:
    """Validated float scores of one column (errors name the CSV row: data row k is line k + 2): a column of text
    (a CSV read as strings) by :func:`scorers.tables.columns.text_scores`, anything else (numbers, missing cells in a
    frame) by :func:`scorers.checks.as_scores`."""
    if column not in frame.columns:
        raise ValueError(f"score column {column!r} not found; available: {preview_names(score_columns(frame))}")
    cells = frame[column]
    try:
        if cells.dtype.kind in "fiub" or cells.isna().any():
            return as_scores(cells.to_numpy(), name=f"column {column!r}", clean_quotes=clean_quotes)
        return text_scores(cells.to_numpy(dtype=str), name=f"column {column!r}", clean_quotes=clean_quotes)
    except ValueError as error:
        hint = ""
        if "non-numeric" in str(error):
            cells = frame[column].astype(str).str.strip()
            text = pd.to_numeric(cells, errors="coerce").isna() & ~cells.isin(["", "nan", "NaN"])
            if text.mean() > 0.5:  # mostly words: a text column taken for a score, i.e. a wrong header
                hint = (f"; column {column!r} is not numeric: is the header right? Key columns "
                        f"({', '.join(KEY_COLUMNS)}) are not scored, every other column must hold numbers")
        raise value_error("{error} (position p is CSV line p + 2){hint}", error=error, hint=hint) from None


def read_json_list(path: str | Path, what: str, *, error: type[Exception] = ValueError) -> list[dict]:
    """A JSON file holding a list of objects (TIFA v1.0's files, EvalMuse's ``train_list.json``, HPDv2's
    ``test.json``): the list, or one line naming the file (and the entry) raised as ``error``; ``what`` names the
    entries in the messages."""
    import json

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file {path} does not exist")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as problem:
        raise error(f"{path}: not valid JSON ({problem})") from None
    if not isinstance(data, list):
        raise error(f"{path}: expected a JSON list of {what} entries, got {type(data).__name__}")
    for k, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise error(f"{path} entry {k}: expected an object, got {type(entry).__name__}")
    return data
