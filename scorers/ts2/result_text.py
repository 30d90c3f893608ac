"""The text of ``ts2 meta``'s tables, re-derived from the numbers: what ``ts2 meta`` prints and keeps in a result
file's ``table`` (:mod:`scorers.ts2.result_file`, which checks a saved table against its results), and what
``ts2 submit`` prints (:func:`meta_text`); the rank/sep/delta table (:func:`format_meta_table`), the by-error-type
table (:func:`format_error_type_table`) and their pieces (:func:`pct`, :func:`segs_line`, :func:`text_grid`).
"""
from __future__ import annotations

from typing import Mapping

from scorers.formatting import format_number
from scorers.stats.graph import summary_keys
from scorers.stats.meta import META_METRICS, TS2Result

__all__ = ["COMPACT_WIDTH", "EDGE_WALKS_NOTE", "format_error_type_table", "format_meta_table", "meta_table_layouts",
           "meta_text", "pct", "segs_line", "text_grid"]

#: the line under a table computed with the edge walk rule (``--walks edges``)
EDGE_WALKS_NOTE = ("walks: along each SEG's own edges (segs.json, --walks edges), not TS2's level rule: not "
                   "comparable with numbers computed by levels (the release's)")


def pct(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage string; blank-safe for None/NaN."""
    return format_number(value, digits, scale=100.0)


#: the widest ``ts2 meta`` table by default (terminal columns), release metric names and three partitions included
COMPACT_WIDTH = 100


def _present_keys(results: Mapping[str, TS2Result]) -> list[str]:
    """The summary columns that hold a value for some metric: ``avg`` and each partition with evaluated SEGs (an
    empty partition, e.g. ``nat`` and ``real`` of ``--segs 0-10``, is left out)."""
    import math

    keys = summary_keys(k for result in results.values() for k in result.rank.statistic)  # a built dir's partitions

    def has(p: str) -> bool:
        return any(v is not None and not math.isnan(v) for result in results.values() for m in META_METRICS
                   for v in [result[m].statistic.get(p)])

    return [p for p in keys if p == "avg" or has(p)]


def _cell(result: TS2Result, metric: str, p: str) -> str:
    ci = result[metric].confidence_interval
    return pct(result[metric].statistic.get(p)) + (f" [{pct(ci[p][0])}, {pct(ci[p][1])}]" if ci and p in ci else "")


def format_meta_table(results: Mapping[str, TS2Result], *, wide: bool = False) -> str:
    """The rank/sep/delta table in %; a first line states the evaluated SEGs; partitions without SEGs are left out.

    By default one row per metric and meta-metric: Avg with its 95% bootstrap interval when there is one (``68.2
    [63.8, 71.8]``), one value per partition, the metric's SEGs used/skipped on its first row (within
    :data:`COMPACT_WIDTH` columns for the release). ``wide``: one row per metric, rank/sep/delta x avg and
    partitions, every cell with its interval."""
    keys = _present_keys(results)
    if wide:
        return _wide_table(results, keys)
    intervals = any(result[m].confidence_interval for result in results.values() for m in META_METRICS)
    header = ["metric", "meta", "avg [95% CI]" if intervals else "avg", *keys[1:], "segs used/skipped"]
    lines = []
    for name, result in results.items():
        for k, metric in enumerate(META_METRICS):
            lines.append([name if k == 0 else "", metric, _cell(result, metric, "avg")]
                         + [pct(result[metric].statistic.get(p)) for p in keys[1:]]
                         + [f"{result.rank.n_used}/{result.rank.n_skipped}" if k == 0 else ""])
    grid = "\n".join(line.rstrip() for line in text_grid([header] + lines).split("\n"))
    return segs_line(results) + "\n" + grid


def meta_table_layouts(results: Mapping[str, TS2Result]) -> list[str]:
    """Every table ``ts2 meta`` prints, or printed, for ``results``: the default, ``--wide``, and the wide table
    with its empty partition columns kept (result files saved before these were left out)."""
    every_key = summary_keys(k for result in results.values() for k in result.rank.statistic)
    return [format_meta_table(results), format_meta_table(results, wide=True), _wide_table(results, every_key)]


def _wide_table(results: Mapping[str, TS2Result], keys) -> str:
    header = ["metric"] + [f"{m}:{p}" for m in META_METRICS for p in keys] + ["segs used/skipped"]
    lines = [[name] + [_cell(result, m, p) for m in META_METRICS for p in keys]
             + [f"{result.rank.n_used}/{result.rank.n_skipped}"] for name, result in results.items()]
    return segs_line(results) + "\n" + text_grid([header] + lines)


def format_error_type_table(by_type: Mapping[str, Mapping[str, object]]) -> str:
    """``ts2 meta --by-error-type``: one row per metric and error type, rank/sep/delta x avg and partitions in %
    (with bootstrap intervals, each cell shows its interval, as :func:`format_meta_table`), and the SEGs / walks / edges
    of that type (:mod:`scorers.stats.error_type_walks`)."""
    first = next((r for types in by_type.values() for r in types.values()), None)
    if first is None:
        return "by error type: no error types in the evaluated SEGs"
    keys = list(first.statistic["rank"])
    header = ["metric", "error type"] + [f"{m}:{p}" for m in META_METRICS for p in keys] + ["segs/walks/edges"]
    rows = [[name, kind] + [_with_interval(result.statistic[m].get(p), (result.confidence_interval or {}).get(m), p)
                            for m in META_METRICS for p in keys]
            + [f"{result.n_segs}/{result.n_walks}/{result.n_edges}"]
            for name, types in by_type.items() for kind, result in types.items()]
    return ("by error type: walks from node 0 along edges of one type (each step adds one error of that type)\n"
            + text_grid([header] + rows) + "\nvalues in %")


def _with_interval(value: float | None, ci: Mapping | None, key: str) -> str:
    """``68.2 [63.8, 71.8]`` (a cell of a table with bootstrap intervals), or the value alone."""
    return pct(value) + (f" [{pct(ci[key][0])}, {pct(ci[key][1])}]" if ci and key in ci else "")


def meta_text(evaluated, variant: str, *, wide: bool = False) -> str:
    """What ``ts2 meta`` prints and keeps in a result file's ``table`` (``ts2 submit`` too): the table (``wide``: one
    row per metric, :func:`format_meta_table`), its unit, the by-error-type table when computed, and the notes."""
    lines = [format_meta_table(evaluated.results, wide=wide), "values in % (--json gives fractions)"]
    if any(getattr(r, "walks", "levels") == "edges" for r in evaluated.results.values()):
        lines.append(EDGE_WALKS_NOTE)
    if getattr(evaluated, "by_error_type", None) is not None:
        lines += ["", format_error_type_table(evaluated.by_error_type)]
    lines += [f"note: {note}" for note in evaluated.notes]
    if variant == "official":
        from scorers.ts2.reproduce import OFFICIAL_RAW_NOTE

        lines.append(OFFICIAL_RAW_NOTE)
    return "\n".join(lines)


def segs_line(results: Mapping[str, TS2Result]) -> str:
    described = {f"{r.segs} ({r.rank.seg_ids.size} SEGs)" for r in results.values()}
    return "SEGs: " + "; ".join(sorted(described))


def text_grid(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for k, row in enumerate(rows):
        out.append("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
