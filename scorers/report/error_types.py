"""``ts2 report``'s per-error-type section: rank / sep / delta over the walks along edges of one error type
(:mod:`scorers.stats.error_type_walks`, the numbers ``ts2 meta --by-error-type`` prints), each with the bootstrap
interval over SEGs of the leaderboard, as ``error_types.md`` and ``error_types.csv``. :func:`scorers.report.write_report`
writes them when the metadata carries error types (a data dir built by ``ts2 seg build``); the release has none, so
its reports have no such files and no note about them."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import pandas as pd

from scorers.formatting import csv_safe, format_number
from scorers.report.table_writers import HEADINGS
from scorers.stats.meta import META_METRICS

__all__ = ["error_type_frame", "error_type_markdown", "write_error_type_tables"]


def error_type_frame(by_error_type: Mapping[str, Mapping[str, object]],
                     names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per metric column and error type: ``column, name, error_type, segs, walks, edges`` (the SEGs with a
    walk of that type, their walks and edges), then ``<meta-metric>_<avg | partition>`` in % and, with bootstrap
    intervals, ``<value>_ci_low`` / ``<value>_ci_high`` (%, full precision).

    ``by_error_type``: ``{column: {type: ErrorTypeResult}}`` (:attr:`scorers.ts2.meta_from_tables.TableMeta.by_error_type`);
    ``names``: display names of the columns (default: the column names)."""
    records, keys, has_ci = [], [], False
    for column, types in by_error_type.items():
        for kind, result in types.items():
            record = {"column": column, "name": (names or {}).get(column, column), "error_type": kind,
                      "segs": result.n_segs, "walks": result.n_walks, "edges": result.n_edges}
            for m in META_METRICS:
                ci = (result.confidence_interval or {}).get(m) or {}
                for key, value in result.statistic[m].items():
                    if key not in keys:
                        keys.append(key)
                    record[f"{m}_{key}"] = 100.0 * value
                    if key in ci:
                        has_ci = True
                        record[f"{m}_{key}_ci_low"], record[f"{m}_{key}_ci_high"] = (100.0 * v for v in ci[key])
            records.append(record)
    values = [f"{m}_{key}" for m in META_METRICS for key in keys]
    order = ["column", "name", "error_type", "segs", "walks", "edges", *values]
    if has_ci:
        order += [f"{v}_ci_{side}" for v in values for side in ("low", "high")]
    return pd.DataFrame(records).reindex(columns=order)


def error_type_markdown(frame: pd.DataFrame, *, digits: int = 1) -> str:
    """A Markdown table of :func:`error_type_frame`: one row per metric and error type, each value with its
    bootstrap interval when the frame has one (``68.2 [63.8, 71.8]``)."""
    values = [c for c in frame.columns if c.split("_", 1)[0] in META_METRICS and not c.endswith(("_ci_low", "_ci_high"))]
    headings = [(HEADINGS[m], HEADINGS.get(key, key)) for m, key in (c.split("_", 1) for c in values)]
    header = ["Metric", "Error type"] + [f"{m} {key}" for m, key in headings] + ["SEGs / walks / edges"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join([":---", ":---"] + ["---:"] * (len(header) - 2)) + "|"]
    for _, row in frame.iterrows():
        cells = [str(row["name"]), str(row["error_type"])]
        for column in values:
            text = format_number(row[column], digits)
            if f"{column}_ci_low" in frame.columns:
                text += f" [{format_number(row[column + '_ci_low'], digits)}, " \
                        f"{format_number(row[column + '_ci_high'], digits)}]"
            cells.append(text)
        cells.append(f"{row['segs']} / {row['walks']} / {row['edges']}")
        lines.append("| " + " | ".join(cells) + " |")
    has_ci = any(c.endswith("_ci_low") for c in frame.columns)
    note = ("TS2 meta-metrics in % over the walks from node 0 along edges of one error type (each step adds one error "
            "of that type), as ts2 meta --by-error-type prints them"
            + ("; 95% bootstrap interval over SEGs beside each value" if has_ci else "") + ".")
    return "\n".join(lines) + "\n\n" + note + "\n"


def write_error_type_tables(by_error_type: Mapping[str, Mapping[str, object]], out_dir: str | Path, *,
                            names: Mapping[str, str] | None = None, digits: int = 1) -> dict[str, Path]:
    """Write ``error_types.md`` and ``error_types.csv`` (full precision, every interval) under ``out_dir``; returns
    ``{"error_types_md": path, "error_types_csv": path}``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = error_type_frame(by_error_type, names)
    paths = {"error_types_md": out_dir / "error_types.md", "error_types_csv": out_dir / "error_types.csv"}
    paths["error_types_md"].write_text(error_type_markdown(frame, digits=digits), encoding="utf-8")
    csv_safe(frame).to_csv(paths["error_types_csv"], index=False)
    return paths
