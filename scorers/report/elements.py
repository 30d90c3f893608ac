"""``ts2 report``'s elements section: the rate of answers that disagree with the expected answer against the image's
node error count, one row (and one line of the figure) per metric, with the bootstrap interval over SEGs, as
``elements.md``, ``elements.csv`` and the figure ``elements_wrong_rate.png``.

The numbers are ``ts2 elements --json``'s ``by_error_count`` (:func:`scorers.ts2.elements.released_elements`, the
release's six per-question variants; :func:`scorers.ts2.elements.load_element_summary`, a saved file or records);
this module only lays them out. At 0 errors the rate is the false-alarm rate (a head shows every element); a metric
that sees errors rises with the count.
"""
from __future__ import annotations

from pathlib import Path
from typing import Collection, Mapping, Sequence

import pandas as pd

from scorers.formatting import csv_safe, format_number
from scorers.report.card.elements import element_entries

__all__ = ["FRAME_COLUMNS", "element_markdown", "elements_by_metric", "wrong_rate_frame", "write_element_report"]

#: the frame's columns (rates in %, as the report's other tables)
FRAME_COLUMNS = ["metric", "truth", "error_count", "wrong_rate", "ci_low", "ci_high", "n"]


def wrong_rate_frame(summaries: Sequence[Mapping]) -> tuple[pd.DataFrame, list[str]]:
    """One row per metric and node error count of the ``summaries`` (``ts2 elements --json`` objects):
    ``metric, truth, error_count, wrong_rate, ci_low, ci_high, n``, rates in % (the JSON holds fractions; None ->
    NaN). Returns the frame and notes: a metric without error counts (EvalMuse's truth) is listed there, and a
    metric given twice is an error naming it."""
    records, notes, seen = [], [], set()
    for summary in summaries:
        for metric, entry in element_entries(summary).items():
            if metric in seen:
                raise ValueError(f"elements: {metric} is given twice (one file or --elements-released per metric)")
            seen.add(metric)
            counts = entry.get("by_error_count") or {}
            if not counts:
                notes.append(f"elements: {metric} has no rate by error count (truth {summary.get('truth')}); not in "
                             "the elements table")
            for count, cell in sorted(counts.items(), key=lambda kv: int(kv[0])):
                records.append({"metric": metric, "truth": summary.get("truth"), "error_count": int(count),
                                **{k: _percent(cell.get(key)) for k, key in
                                   (("wrong_rate", "wrong_rate"), ("ci_low", "low"), ("ci_high", "high"))},
                                "n": cell.get("n")})
    return pd.DataFrame(records, columns=FRAME_COLUMNS), notes


def _percent(value) -> float:
    return float("nan") if value is None else 100.0 * float(value)


def element_markdown(frame: pd.DataFrame, *, digits: int = 1) -> str:
    """A Markdown table of :func:`wrong_rate_frame`: one row per metric, one column per error count, each cell the
    rate (%) with its interval and the number of answers (``10.5 [9.6, 11.5] (4,210)``)."""
    counts = sorted(frame["error_count"].unique())
    header = ["Metric"] + [f"{c} error{'' if c == 1 else 's'}" for c in counts]
    lines = ["| " + " | ".join(header) + " |", "|:---|" + "---:|" * len(counts)]
    for metric, rows in frame.groupby("metric", sort=False):
        by_count = {int(r["error_count"]): r for _, r in rows.iterrows()}
        cells = [str(metric)]
        for c in counts:
            row = by_count.get(int(c))
            if row is None:
                cells.append("")
                continue
            text = format_number(row["wrong_rate"], digits)
            if pd.notna(row["ci_low"]) and pd.notna(row["ci_high"]):
                text += f" [{format_number(row['ci_low'], digits)}, {format_number(row['ci_high'], digits)}]"
            cells.append(f"{text} ({int(row['n']):,})")
        lines.append("| " + " | ".join(cells) + " |")
    note = ("Answers that disagree with the expected answer (before DSG's parent gating), in %, by the image's node "
            "error count, with the bootstrap interval over SEGs and the number of answers; at 0 errors, the "
            "false-alarm rate.")
    return "\n".join(lines) + "\n\n" + note + "\n"


def write_element_report(summaries: Sequence[Mapping], out_dir: str | Path, *, digits: int = 1,
                         formats: Sequence[str] = ("png",),
                         highlight: Collection[str] = ()) -> tuple[dict[str, Path], list[str]]:
    """Write ``elements.md``, ``elements.csv`` (full precision, %) and the figure ``elements_wrong_rate.png``
    (:func:`scorers.report.figures.wrong_rate_figure`, in each of ``formats``) under ``out_dir``; returns the paths
    (``elements_md``, ``elements_csv``, ``elements_figure``) and notes."""
    from scorers.report.figures import wrong_rate_figure

    frame, notes = wrong_rate_frame(summaries)
    if frame.empty:
        return {}, notes + ["elements: no metric has a rate by error count; no elements table"]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"elements_md": out_dir / "elements.md", "elements_csv": out_dir / "elements.csv"}
    paths["elements_md"].write_text(element_markdown(frame, digits=digits), encoding="utf-8")
    csv_safe(frame).to_csv(paths["elements_csv"], index=False)
    paths["elements_figure"] = wrong_rate_figure(frame, out_dir / "elements_wrong_rate.png", highlight=highlight,
                                                 formats=formats)
    return paths, notes


def elements_by_metric(summaries: Sequence[Mapping]) -> dict[str, dict]:
    """``{metric: entry}`` of every summary, each entry with its ``truth`` (what ``result.json`` keeps)."""
    return {m: {"truth": s.get("truth"), **e} for s in summaries for m, e in element_entries(s).items()}
