"""Plain-text tables for the terminal (formatting only; numbers come from ``scorers.stats.meta``/``scorers.ts2.reproduce``)."""
from __future__ import annotations

import math
from typing import Mapping

from scorers.formatting import format_number
from scorers.stats.meta import META_METRICS, SUMMARY_KEYS, TS2Result
from scorers.ts2.result_text import pct, segs_line, text_grid

__all__ = ["format_beside_leaderboard", "format_reproduction", "format_reproduction_markdown"]


def _num(value: float | None, digits: int = 1, signed: bool = False) -> str:
    return format_number(value, digits, signed=signed)


def format_beside_leaderboard(yours: Mapping[str, TS2Result], published: Mapping[str, TS2Result],
                              names: Mapping[str, str] | None = None) -> str:
    """Your metrics among the published ones: one row per metric, best rank Avg first, ``rank``/``sep``/``delta`` Avg
    and rank per partition (%); your rows are marked ``>>``. A first line states the evaluated SEGs."""
    names = names or {}
    rows = [(f">> {name}", result) for name, result in yours.items()]
    rows += [(names.get(column, column), result) for column, result in published.items()]

    def rank_avg(item) -> float:
        value = item[1].rank.statistic.get("avg")
        return -math.inf if value is None or math.isnan(value) else value

    rows.sort(key=rank_avg, reverse=True)
    header = ["# metric", "rank:avg", "sep:avg", "delta:avg", "rank:synth", "rank:nat", "rank:real"]
    width = len(str(len(rows)))
    lines = [[f"{k:>{width}} {name}", pct(result.rank.statistic.get("avg")), pct(result.sep.statistic.get("avg")),
              pct(result.delta.statistic.get("avg"))]
             + [pct(result.rank.statistic.get(p)) for p in ("synth", "nat", "real")]
             for k, (name, result) in enumerate(rows, start=1)]
    grid = text_grid([header] + lines)
    return segs_line({**{f"yours:{k}": v for k, v in yours.items()}, **published}) + "\n" + grid


def format_reproduction(rows: list[dict], notes: list[str] = (), *, segs: str | None = None) -> str:
    """ours / paper / residual per metric and meta-metric, one column block per partition."""
    table = {}
    for row in rows:
        table.setdefault((row["column"], row["meta_metric"]), {})[row["partition"]] = row
    header = ["metric", "meta"] + [f"{p} ours/paper/res" for p in SUMMARY_KEYS]
    lines = []
    marks: dict[str, str] = {}  # row note -> its footnote mark
    for (column, metric), parts in table.items():
        cells = [column, metric]
        row_marks = []
        for partition in SUMMARY_KEYS:
            row = parts.get(partition, {})
            cells.append(
                f"{_num(row.get('ours'))} / {_num(row.get('paper'))} / {_num(row.get('residual'), signed=True)}"
            )
            for note in filter(None, (row.get("note") or "").split("; ")):
                mark = marks.setdefault(note, f"[{len(marks) + 1}]")
                if mark not in row_marks:
                    row_marks.append(mark)
        lines.append(cells + ["".join(row_marks)])
    if not marks:
        lines = [cells[:-1] for cells in lines]
    else:
        header = header + ["note"]
        notes = [f"{mark} {note}" for note, mark in marks.items()] + list(notes)
    text = (f"SEGs: {segs}\n" if segs else "") + text_grid([header] + lines)
    return text + ("\n" + "\n".join(notes) if notes else "")


def format_reproduction_markdown(rows: list[dict], partition: str = "avg", *, segs: str | None = None) -> str:
    """Markdown table of one partition: ours / paper (residual) per metric for rank, sep and delta; with ``segs`` a
    last line states the evaluated SEGs."""
    table: dict[str, dict[str, dict]] = {}
    for row in rows:
        if row["partition"] == partition:
            table.setdefault(row["column"], {})[row["meta_metric"]] = row
    lines = [
        f"| metric | rank ({partition}) ours / paper | sep ({partition}) ours / paper | delta ({partition}) ours / paper |",
        "|:---|---:|---:|---:|",
    ]
    for column, metrics in table.items():
        cells = []
        for name in META_METRICS:
            row = metrics.get(name, {})
            cells.append(f"{_num(row.get('ours'))} / {_num(row.get('paper'))} ({_num(row.get('residual'), signed=True)})")
        lines.append(f"| {column} | " + " | ".join(cells) + " |")
    if segs:
        lines += ["", f"SEGs {segs}."]
    return "\n".join(lines)
