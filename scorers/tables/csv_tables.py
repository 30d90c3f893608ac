"""The pandas-free fast path of :func:`scorers.ts2.meta_from_tables.meta_from_tables` for well-formed CSV files.

``ts2 reproduce`` and ``ts2 meta`` on the release tables would spend more time importing pandas (about 0.3 s) than
computing Table 2. The readers here split the CSV text with the standard library's C ``csv`` reader (no Python code
runs per row: the rows are collected by ``list()`` and the columns by ``zip``) instead of pandas' parser; everything
after the split is the one implementation the pandas path uses too: the join (:func:`scorers.tables.join.table_keys`,
:func:`~scorers.tables.join.key_rows`, :func:`~scorers.tables.join.check_row_positions`), the reading of score cells
(:func:`scorers.tables.columns.text_scores`) and of integers (:mod:`scorers.checks`).

They only take files both parsers split alike, and answer ``None`` for anything else: a quote where CSV puts none, a
short row, a blank line, a duplicated or spaced header name, a byte-order mark on a score table, a cell pandas would
read as a number or as missing in a paper table... They also answer ``None`` where a rule refuses the table (a
duplicated key, a bad cell...): the caller then takes the pandas path, which words the error, so there is one set of
messages. What is taken gives the same arrays as the pandas path (``tests/tables/test_csv_tables.py``).
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

import numpy as np

from scorers.checks import INTEGER, parse_float, parse_int
from scorers.stats.graph import NODE_LABEL, file_partitions
from scorers.tables.columns import KEY_COLUMNS, METADATA_COLUMNS, header_key, text_scores
from scorers.tables.join import (ROW_POSITION_NOTE, SOURCE_COLUMN, check_row_positions, key_rows, normal_file_names,
                                 table_keys)

__all__ = ["LightMetadata", "LightPaperTable", "csv_header", "light_header", "light_metadata", "light_paper_table",
           "light_scores", "light_table2_full_precision", "paper_table"]



def _plain_number(cell: str) -> float | None:
    """A number cell as the release writes them (no sign but ``-``, no spaces, finite), which pandas' C parser and
    Python's ``float`` read alike; None otherwise."""
    return parse_float(cell) if cell == cell.strip() and not cell.startswith("+") else None


def _rows(path: str | Path, encoding: str) -> list[list[str]] | None:
    """The rows of a CSV file (header first) if every row has the header's width and no row is blank; else None."""
    try:
        with open(path, newline="", encoding=encoding) as handle:
            rows = list(csv.reader(handle, strict=True))
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if len(rows) < 2:
        return None
    width = len(rows[0])
    if width == 0 or any(len(row) != width for row in rows):  # a blank line is a row of width 0
        return None
    header = rows[0]
    if len({header_key(name) for name in header}) != width or any(
            not name or name != name.strip() or name.startswith("\ufeff") for name in header):
        return None
    return rows


def _columns(rows: list[list[str]], keep: set[str] | None = None) -> dict[str, np.ndarray]:
    """The columns of ``rows`` by header name (only those in ``keep`` when given)."""
    return {name: np.asarray(cells, dtype=str) for name, cells in zip(rows[0], zip(*rows[1:]))
            if keep is None or name in keep}


def light_header(path: str | Path) -> list[str] | None:
    """The header of a CSV file (None when it is not a plain one)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle, strict=True), None)
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if not header or len({header_key(n) for n in header}) != len(header) or any(not n or n.startswith("\ufeff")
                                                                                  for n in header):
        return None
    return header


def csv_header(path: str | Path) -> list[str]:
    """The header of a CSV file: :func:`light_header`, or pandas' reading of it (:func:`scorers.tables.pandas_tables.read_csv`,
    whose errors name the file) when it is not a plain one."""
    header = light_header(path)
    if header is None:
        from scorers.tables.pandas_tables import read_csv

        header = list(read_csv(path, nrows=0).columns)
    return header


class LightMetadata:
    """``metadata.csv`` as arrays: ``seg_id`` (int64), ``node`` and ``file_name`` (stripped text), in file order;
    ``partitions``: ``{seg_id: partition}`` from the file's ``partition`` column (a built data dir), None without
    one (the release: id ranges); ``source_file``: each image's normalised source file name (a built data dir's
    ``source_file`` column, :func:`scorers.tables.join.normal_file_name`), None without one."""

    def __init__(self, seg_id: np.ndarray, node: np.ndarray, file_name: np.ndarray,
                 partitions: dict[int, str] | None = None, source_file: np.ndarray | None = None):
        self.seg_id, self.node, self.file_name = seg_id, node, file_name
        self.partitions = partitions
        self.source_file = source_file

    def source_keys(self) -> list[tuple] | None:
        """``(seg id, source file)`` per row for :func:`scorers.tables.join.key_rows`, None without sources."""
        if self.source_file is None:
            return None
        return list(zip(self.seg_id.tolist(), self.source_file.tolist()))

    def __len__(self) -> int:
        return self.seg_id.size


def light_metadata(path: str | Path) -> LightMetadata | None:
    """``metadata.csv`` when it passes every rule of :func:`scorers.tables.pandas_tables.read_metadata` plainly: SEG ids of
    ASCII digits, non-empty prompts and unique non-empty file names, node labels of ASCII digits and letters, a head
    in every SEG. None otherwise."""
    rows = _rows(path, "utf-8-sig")
    if rows is None:
        return None
    header = rows[0]
    renamed = {METADATA_COLUMNS.get(name, name) for name in header}
    if len(renamed) != len(header):  # "id" and "seg_id" both present: the pandas path decides
        return None
    needed = {"seg_id", "prompt", "file_name", "node", "partition", SOURCE_COLUMN}  # a built dir's errors: not read
    keep = {name for name in header if METADATA_COLUMNS.get(name, name) in needed}
    columns = {METADATA_COLUMNS.get(name, name): cells for name, cells in _columns(rows, keep).items()}
    if any(c not in columns for c in ("seg_id", "prompt", "file_name", "node")):
        return None
    seg_text = columns["seg_id"].tolist()
    if not all(cell == cell.strip() and INTEGER.fullmatch(cell) for cell in seg_text):
        return None
    file_names = [cell.strip() for cell in columns["file_name"].tolist()]
    nodes = [cell.strip() for cell in columns["node"].tolist()]
    if (any(not cell.strip() for cell in columns["prompt"].tolist()) or not all(file_names)
            or len(set(file_names)) != len(file_names)):
        return None
    labels = [NODE_LABEL.match(node) for node in nodes]
    if not all(label and label.group(1).isascii() for label in labels):
        return None
    seg_id = np.asarray([int(cell) for cell in seg_text], dtype=np.int64)
    errors = np.asarray([int(label.group(1)) for label in labels], dtype=np.int64)
    segs, first = np.unique(seg_id, return_inverse=True)
    heads = np.full(segs.size, np.iinfo(np.int64).max)
    np.minimum.at(heads, first, errors)
    if (heads != 0).any():
        return None
    partitions = None
    if "partition" in columns:
        try:
            partitions = file_partitions(seg_id, columns["partition"])
        except ValueError:  # the pandas path words it
            return None
    sources = None
    if SOURCE_COLUMN in columns:
        cells = np.strings.strip(columns[SOURCE_COLUMN])
        sources = np.where(cells == "", "", np.asarray(normal_file_names(cells), dtype=str)).astype(object)
    return LightMetadata(seg_id, np.asarray(nodes, dtype=object), np.asarray(file_names, dtype=object), partitions,
                         sources)


def light_scores(
    path: str | Path,
    metadata: LightMetadata,
    *,
    columns: Sequence[str] | None,
    required_segs: Sequence[int] | None,
    clean_quotes: bool,
    max_columns: int,
) -> tuple[dict[str, np.ndarray], str, str | None] | None:
    """``({column: scores in metadata order}, pairing, note)`` of a per-image score table, when the pandas path would
    take it without a word: keyed on ``seg_id``/``id`` + ``file_name`` with every key known and once, covering every
    metadata row of ``required_segs``; or without keys (no ``file_name``; an ``image_id`` with empty cells), one row per
    metadata row, its SEG ids (if any) matching row by row. None otherwise."""
    rows = _rows(path, "utf-8")
    if rows is None:
        return None
    table = _columns(rows)
    available = [c for c in table if c not in KEY_COLUMNS]
    if columns:
        if any(c not in table for c in columns):
            return None
        wanted = [c for c in available if c in set(columns)]
    else:
        if len(available) > max_columns:
            return None
        wanted = available
    if not wanted:
        return None
    seg = next((table[c] for c in ("seg_id", "id") if c in table), None)
    if seg is not None and (np.strings.strip(seg) != seg).any():
        return None  # a padded SEG id: read alike, but only the pandas path is trusted with it
    try:
        keys, reason = table_keys(table)
        if keys is not None and keys[1] != "file_name":
            return None  # an image_id key: the pandas path joins on it
        if keys is not None:
            taken, covered = key_rows(table, keys, metadata.seg_id,
                                      list(zip(metadata.seg_id.tolist(), metadata.file_name.tolist())),
                                      required_segs=required_segs, source_keys=metadata.source_keys())
            cells = {c: np.where(covered, table[c][taken], "") for c in wanted}
            pairing, note = f"keys ({', '.join(keys)})", None
        else:
            check_row_positions(table, len(rows) - 1, metadata.seg_id)
            cells = {c: table[c] for c in wanted}
            pairing, note = "row position", ROW_POSITION_NOTE + (f" ({reason})" if reason else "")
        values = {c: text_scores(cells[c], name=c, clean_quotes=clean_quotes) for c in wanted}
    except ValueError:  # a rule refuses the table: the pandas path words the error
        return None
    return values, pairing, note


class LightPaperTable:
    """The paper's Table 2 read without pandas, with the few members of a DataFrame that its readers use:
    ``columns``, ``table["column"]`` (the values of a column), ``to_dict("records")`` and
    ``drop_duplicates("column")``."""

    def __init__(self, records: list[dict], columns: list[str]):
        self._records, self.columns = records, columns

    def __getitem__(self, column: str) -> list:
        return [record[column] for record in self._records]

    def __len__(self) -> int:
        return len(self._records)

    def to_dict(self, orient: str) -> list[dict]:
        if orient != "records":
            raise ValueError(f"orient {orient!r} is not supported; only 'records'")
        return [dict(record) for record in self._records]

    def drop_duplicates(self, column: str) -> "LightPaperTable":
        seen, kept = set(), []
        for record in self._records:
            if record[column] not in seen:
                seen.add(record[column])
                kept.append(record)
        return LightPaperTable(kept, self.columns)


_NUMERIC = ("avg", "synth", "nat", "real")
# cells pandas reads as missing or as booleans (its default NA strings, any case) rather than as text
_NOT_TEXT = {"", "#n/a", "#n/a n/a", "#na", "-1.#ind", "-1.#qnan", "-nan", "1.#ind", "1.#qnan", "<na>", "n/a", "na",
             "nan", "null", "none", "true", "false"}


def _text_cell(cell: str) -> bool:
    """A cell pandas reads as text: not missing, not a boolean, not a number (whatever Python's ``float`` takes is
    declined too, to be safe)."""
    if cell.strip().lower() in _NOT_TEXT:
        return False
    try:
        float(cell)
    except ValueError:
        return True
    return False


def light_paper_table(path: str | Path) -> LightPaperTable | None:
    """``paper_table2.csv`` (``column, name, family, meta_metric, avg, synth, nat, real, flop_per_image``) as
    :func:`scorers.tables.pandas_tables.read_paper_table` reads it, when its value cells are plain numbers and its text cells
    are not numbers (which pandas would read as numbers); None otherwise (and for the official full-precision layout)."""
    rows = _rows(path, "utf-8")
    if rows is None:
        return None
    header = rows[0]
    if not {"column", "meta_metric", *_NUMERIC} <= set(header) or "higher_is_better" in header:
        return None
    records = []
    for row in rows[1:]:
        record = dict(zip(header, row))
        for name, cell in record.items():
            if name in _NUMERIC:
                record[name] = _plain_number(cell)
                if record[name] is None:
                    return None
            elif not _text_cell(cell):
                return None  # pandas would read NaN, a number or a bool here
        records.append(record)
    return LightPaperTable(records, list(header))


_PAPER_COLUMNS = ["column", "name", "family", "meta_metric", "avg", "synth", "nat", "real", "flop_per_image"]
_OFFICIAL_PREFIX = {"rank": "spearman", "sep": "ks", "delta": "delta"}
_OFFICIAL_PARTS = {"avg": "all", "synth": "synth", "nat": "nat", "real": "real"}


def light_table2_full_precision(path: str | Path) -> LightPaperTable | None:
    """The official ``pareto_information.csv`` (``table2_full_precision.csv``) as
    :func:`scorers.tables.pandas_tables.read_table2_full_precision` reads it (values x 100, one row per metric and
    meta-metric), when every value and cost cell is a plain number and every metric name is text; None otherwise."""
    rows = _rows(path, "utf-8")
    if rows is None:
        return None
    header = rows[0]
    needed = ["metric", "cost"] + [f"{p}-{k}" for p in _OFFICIAL_PREFIX.values() for k in _OFFICIAL_PARTS.values()]
    if "column" in header or any(c not in header for c in needed):
        return None
    table = {name: cells for name, cells in zip(header, zip(*rows[1:]))}
    numbers = [c for c in header if c != "metric"]  # pandas infers the types of every column of the file
    parsed = {c: [_plain_number(cell) for cell in table[c]] for c in numbers}
    if any(value is None for c in numbers for value in parsed[c]):
        return None
    if any(cell != cell.strip() or not _text_cell(cell) for cell in table["metric"]):
        return None
    values = {c: 100.0 * np.asarray(parsed[c]) for c in needed[2:]}
    integers = [parse_int(cell) for cell in table["cost"]]
    costs = integers if None not in integers else parsed["cost"]
    records = []
    for k, (metric, cost) in enumerate(zip(table["metric"], costs)):
        for meta_metric, prefix in _OFFICIAL_PREFIX.items():
            record = {"column": metric, "name": metric, "family": "", "meta_metric": meta_metric,
                      "flop_per_image": cost}
            for part, key in _OFFICIAL_PARTS.items():
                record[part] = float(values[f"{prefix}-{key}"][k])
            records.append(record)
    return LightPaperTable([{c: r[c] for c in _PAPER_COLUMNS} for r in records], list(_PAPER_COLUMNS))


def paper_table(path: str | Path):
    """The paper's Table 2 from ``path`` in either layout: the light table when it takes the file, else
    :func:`scorers.tables.pandas_tables.read_paper_table` (pandas, whose checks word any error)."""
    found = light_paper_table(path) or light_table2_full_precision(path)
    if found is not None:
        return found
    from scorers.tables.pandas_tables import read_paper_table

    return read_paper_table(path)
