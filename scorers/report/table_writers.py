"""Table-2-style leaderboards (rank/sep/delta x Avg/Synth/Nat/Real) as Markdown, LaTeX and CSV.

Every number is taken from :func:`scorers.ts2.reproduce.reproduce_table`'s rows (in %), so a leaderboard printed here is
the same table ``ts2 reproduce`` prints; this module only lays numbers out (best per column in bold, bootstrap
intervals next to the averages).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

import pandas as pd

from scorers.formatting import csv_safe, format_number, latex_escape
from scorers.stats.meta import META_METRICS, SUMMARY_KEYS
from scorers.ts2.reproduce import Reproduction

__all__ = ["HEADINGS", "leaderboard_frame", "to_latex", "to_markdown", "value_columns", "write_tables"]

HEADINGS = {"rank": "Rank", "sep": "Sep", "delta": "Δ", "avg": "Avg", "synth": "Synth", "nat": "Nat", "real": "Real"}
_LATEX_HEADINGS = {**HEADINGS, "delta": r"$\Delta$"}


def value_columns(board: pd.DataFrame | None = None) -> list[str]:
    """``rank_avg, rank_synth, ..., delta_real``: the twelve number columns of a leaderboard, in Table 2's order;
    with ``board``, the ``META_PARTITION`` columns it holds (a built data dir's partitions: ``rank_avg``,
    ``rank_dev``...)."""
    if board is not None:
        return [c for c in board.columns if "_" in c and c.split("_", 1)[0] in META_METRICS
                and not c.endswith(("_ci_low", "_ci_high", "_paper"))]
    return [f"{m}_{p}" for m in META_METRICS for p in SUMMARY_KEYS]


def _partition_keys(board: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(c.split("_", 1)[1] for c in value_columns(board)))


def leaderboard_frame(reproduction: Reproduction, paper: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per metric column: ``column, name, family, higher_is_better, segs`` (the evaluated SEG ids, e.g.
    ``0-163``), the twelve values (%), and, where present, ``<value>_ci_low/_ci_high`` (bootstrap) and
    ``<value>_paper`` (published)."""
    names: dict[str, str] = {}
    families: dict[str, str] = {}
    if paper is not None:
        for record in paper.to_dict("records"):
            names.setdefault(record["column"], str(record.get("name") or record["column"]))
            families.setdefault(record["column"], str(record.get("family") or ""))
    by_column: dict[str, dict] = {}
    for column in reproduction.columns:
        result = reproduction.results[column]
        by_column[column] = {
            "column": column,
            "name": names.get(column, column),
            "family": families.get(column, ""),
            "higher_is_better": bool(result.higher_is_better),
            "segs": result.segs,
        }
    has_ci = has_paper = False
    for row in reproduction.rows:
        key = f"{row['meta_metric']}_{row['partition']}"
        record = by_column[row["column"]]
        record[key] = _number(row["ours"])
        if "ci_low" in row:
            has_ci = True
            record[f"{key}_ci_low"], record[f"{key}_ci_high"] = _number(row["ci_low"]), _number(row["ci_high"])
        if row.get("paper") is not None:
            has_paper = True
        record[f"{key}_paper"] = _number(row.get("paper"))
    order = ["column", "name", "family", "higher_is_better", "segs"]
    parts = list(dict.fromkeys(row["partition"] for row in reproduction.rows)) or list(SUMMARY_KEYS)
    keys = [f"{m}_{p}" for m in META_METRICS for p in parts]
    for key in keys:
        order.append(key)
    if has_ci:
        order += [f"{key}_ci_{side}" for key in keys for side in ("low", "high")]
    if has_paper:
        order += [f"{key}_paper" for key in keys]
    frame = pd.DataFrame([by_column[c] for c in reproduction.columns])
    return frame.reindex(columns=order)


def to_markdown(board: pd.DataFrame, *, digits: int = 1, ci: str = "avg") -> str:
    """GitHub Markdown table: best value of each column in bold; ``ci="avg"`` puts the bootstrap interval under
    each average (``ci="none"`` leaves it out). Lower-is-better metrics are marked with a dagger."""
    header = ["Metric", "Family"] + [_heading(key, HEADINGS) for key in value_columns(board)]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join([":---", ":---"] + ["---:"] * len(value_columns(board))) + "|"]
    best = _best(board, digits)
    for _, row in board.iterrows():
        cells = [str(row["name"]) + _dagger(row, "†"), str(row["family"] or "")]
        for key in value_columns(board):
            text = _fmt(row[key], digits)
            if key in best and _rounded(row[key], digits) == best[key]:
                text = f"**{text}**"
            if ci == "avg" and key.endswith("_avg") and f"{key}_ci_low" in board.columns:
                text += f" <sub>[{_fmt(row[key + '_ci_low'], digits)}, {_fmt(row[key + '_ci_high'], digits)}]</sub>"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + _footnote(board, markdown=True) + "\n"


def to_latex(board: pd.DataFrame, *, digits: int = 1, ci: str = "avg", caption: str | None = None) -> str:
    """A booktabs ``table`` like the paper's Table 2 (grouped rank / sep / Δ headers, best per column in bold)."""
    best = _best(board, digits)
    parts = _partition_keys(board)
    n = len(parts)
    spec = "ll" + "".join("|" + "r" * n for _ in META_METRICS)
    groups = " & ".join(rf"\multicolumn{{{n}}}{{c}}{{{_LATEX_HEADINGS[m]}}}" for m in META_METRICS)
    rules = " ".join(rf"\cmidrule(lr){{{3 + n * k}-{2 + n * (k + 1)}}}" for k in range(len(META_METRICS)))
    sub = " & ".join(_LATEX_HEADINGS.get(p) or latex_escape(p) for _ in META_METRICS for p in parts)
    out = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
           rf" & & {groups} \\", rules, rf"Metric & Family & {sub} \\", r"\midrule"]
    for _, row in board.iterrows():
        cells = [latex_escape(row["name"]) + _dagger(row, r"$^\dagger$"), latex_escape(row["family"] or "")]
        for key in value_columns(board):
            text = _fmt(row[key], digits)
            if key in best and _rounded(row[key], digits) == best[key]:
                text = rf"\textbf{{{text}}}"
            if ci == "avg" and key.endswith("_avg") and f"{key}_ci_low" in board.columns:
                lo, hi = _fmt(row[key + "_ci_low"], digits), _fmt(row[key + "_ci_high"], digits)
                text += rf"\,{{\scriptsize[{lo}, {hi}]}}"
            cells.append(text)
        out.append(" & ".join(cells) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}"]
    out.append(rf"\caption{{{caption or _footnote(board, markdown=False)}}}")
    out += [r"\label{tab:ts2-leaderboard}", r"\end{table}"]
    return "\n".join(out) + "\n"


def write_tables(board: pd.DataFrame, out_dir: str | Path, *, stem: str = "leaderboard", digits: int = 1,
                 ci: str = "avg") -> dict[str, Path]:
    """Write ``<stem>.md``, ``<stem>.tex`` and ``<stem>.csv`` (the board as it is: every value and interval) under ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / f"{stem}.md", "latex": out_dir / f"{stem}.tex", "csv": out_dir / f"{stem}.csv"}
    paths["markdown"].write_text(to_markdown(board, digits=digits, ci=ci), encoding="utf-8")
    paths["latex"].write_text(to_latex(board, digits=digits, ci=ci), encoding="utf-8")
    csv_safe(board).to_csv(paths["csv"], index=False)
    return paths


def _best(board: pd.DataFrame, digits: int) -> Mapping[str, float]:
    """Highest displayed value per column (all three meta-metrics are higher-is-better once scores are oriented)."""
    best = {}
    for key in value_columns(board):
        values = [_rounded(v, digits) for v in board[key]]
        values = [v for v in values if v is not None]
        if values:
            best[key] = max(values)
    return best


def _footnote(board: pd.DataFrame, *, markdown: bool) -> str:
    segs = "; ".join(dict.fromkeys(str(s) for s in board["segs"])) if "segs" in board.columns else ""
    text = ("TS2 meta-metrics in % (higher is better)" + (f" over SEGs {segs}" if segs else "")
            + ". Best per column in bold"
            + ("; 95% bootstrap interval over SEGs under each Avg" if any(c.endswith("_ci_low") for c in board.columns) else "")
            + ".")
    if not board["higher_is_better"].all():
        text += " † lower-is-better metric (scores negated before evaluation)."
    if markdown:
        return "\n" + text
    return latex_escape(text.replace("†", "DAGGER")).replace("DAGGER", r"$^\dagger$")


def _dagger(row: pd.Series, marker: str) -> str:
    return "" if row["higher_is_better"] else marker


def _heading(key: str, headings: Mapping[str, str]) -> str:
    meta_metric, partition = key.split("_", 1)
    return f"{headings[meta_metric]} {headings.get(partition, partition)}"


def _number(value: object) -> float:
    if value is None:
        return float("nan")
    return float(value)


def _rounded(value: object, digits: int) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), digits)


def _fmt(value: object, digits: int) -> str:
    return format_number(_rounded(value, digits), digits)
