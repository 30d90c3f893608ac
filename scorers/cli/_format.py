"""Plain-text tables for the terminal (formatting only; numbers come from ``scorers.stats.meta``/``scorers.ts2.reproduce``)."""
from __future__ import annotations

import math
from typing import Mapping

from scorers.formatting import format_number
from scorers.stats.meta import META_METRICS, SUMMARY_KEYS, TS2Result

__all__ = ["format_beside_leaderboard", "format_error_type_table", "format_meta_table", "format_reproduction", "pct", "summary_keys", "text_grid"]


def pct(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage string; blank-safe for None/NaN."""
    return format_number(value, digits, scale=100.0)


def _num(value: float | None, digits: int = 1, signed: bool = False) -> str:
    return format_number(value, digits, signed=signed)


def format_meta_table(results: Mapping[str, TS2Result]) -> str:
    """One row per metric: rank/sep/delta x avg/synth/nat/real in %, then SEGs used/skipped; a first line states the
    evaluated SEGs. With bootstrap intervals (``n_bootstrap``), each cell shows its 95% interval:
    ``68.2 [63.8, 71.8]``."""
    keys = summary_keys(results)
    header = ["metric"] + [f"{m}:{p}" for m in META_METRICS for p in keys] + ["segs used/skipped"]
    lines = []
    for name, result in results.items():
        cells = [name]
        for metric in META_METRICS:
            summary, ci = result[metric].statistic, result[metric].confidence_interval
            cells += [pct(summary.get(p)) + (f" [{pct(ci[p][0])}, {pct(ci[p][1])}]" if ci and p in ci else "")
                      for p in keys]
        cells.append(f"{result.rank.n_used}/{result.rank.n_skipped}")
        lines.append(cells)
    return _segs_line(results) + "\n" + text_grid([header] + lines)


def summary_keys(results: Mapping[str, TS2Result]) -> tuple[str, ...]:
    """The summary columns: ``avg, synth, nat, real`` for TS2's partitions (the release, or any subset of it), else
    ``avg`` and the partitions the results hold (a built data dir's ``partition`` column), in their order."""
    from scorers.stats.graph import summary_keys as keys_of

    return keys_of(k for result in results.values() for k in result.rank.statistic)


def format_error_type_table(by_type: Mapping[str, Mapping[str, object]]) -> str:
    """``ts2 meta --by-error-type``: one row per metric and error type, rank/sep/delta x avg and partitions in %, and
    the SEGs / walks / edges of that type (:mod:`scorers.stats.error_type_walks`)."""
    first = next((r for types in by_type.values() for r in types.values()), None)
    if first is None:
        return "by error type: no error types in the evaluated SEGs"
    keys = list(first.statistic["rank"])
    header = ["metric", "error type"] + [f"{m}:{p}" for m in META_METRICS for p in keys] + ["segs/walks/edges"]
    rows = [[name, kind] + [pct(result.statistic[m].get(p)) for m in META_METRICS for p in keys]
            + [f"{result.n_segs}/{result.n_walks}/{result.n_edges}"]
            for name, types in by_type.items() for kind, result in types.items()]
    return ("by error type: walks from node 0 along edges of one type (each step adds one error of that type)\n"
            + text_grid([header] + rows) + "\nvalues in %")


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
    return _segs_line({**{f"yours:{k}": v for k, v in yours.items()}, **published}) + "\n" + grid


def _segs_line(results: Mapping[str, TS2Result]) -> str:
    described = {f"{r.segs} ({r.rank.seg_ids.size} SEGs)" for r in results.values()}
    return "SEGs: " + "; ".join(sorted(described))


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


def text_grid(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for k, row in enumerate(rows):
        out.append("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


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
