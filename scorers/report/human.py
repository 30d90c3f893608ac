"""The report's optional human-agreement table: each metric read both ways, TS2 (rank/sep/Δ Avg, %) beside its
agreement with human ratings (plain coefficients with bootstrap intervals).

Numbers come from the leaderboard frame (TS2) and :func:`scorers.stats.correlation.correlate_frame` (humans); this module only
lays them out. A report column is matched to the ratings file by its column name.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import pandas as pd

from scorers.stats.agreement import COEFFICIENTS
from scorers.formatting import csv_safe, format_number
from scorers.stats.correlation import correlate_frame

__all__ = ["human_agreement_frame", "write_human_agreement"]

_TS2 = ("rank_avg", "sep_avg", "delta_avg")


def human_agreement_frame(
    board: pd.DataFrame,
    ratings: pd.DataFrame,
    *,
    human: Sequence[str],
    grouping: str = "none",
    coefficients: Sequence[str] = COEFFICIENTS,
    item_col: str = "item",
    system_col: str = "system",
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, list[str]]:
    """One row per report metric present in ``ratings``: ``column, name``, the TS2 averages and, per coefficient,
    ``<coef>``, ``<coef>_ci_low``, ``<coef>_ci_high`` (plus ``pairwise_acc_epsilon``); a first ``inter-rater`` row
    when several ``human`` columns are given. Returns the frame and notes (metrics not in the ratings file)."""
    shared = [c for c in board["column"] if c in ratings.columns]
    missing = [c for c in board["column"] if c not in ratings.columns]
    if not shared:
        raise ValueError(f"--ratings: none of the report's metric columns ({', '.join(board['column'])}) is a column "
                         f"of the ratings file ({', '.join(map(str, ratings.columns))})")
    orientation = {c: bool(up) for c, up in zip(board["column"], board["higher_is_better"]) if c in shared}
    table = correlate_frame(ratings, human=human, metrics=shared, coefficients=coefficients, grouping=grouping,
                            item_col=item_col, system_col=system_col, n_bootstrap=n_bootstrap, seed=seed,
                            higher_is_better=orientation)
    names = dict(zip(board["column"], board["name"]))
    records: dict[str, dict] = {}
    for result in table.inter_rater + table.rows:
        record = records.setdefault(result.metric, {"column": result.metric, "name": names.get(result.metric,
                                                                                               result.metric)})
        if result.metric in names:
            row = board.loc[board["column"] == result.metric].iloc[0]
            record.update({key: row[key] for key in _TS2})
        ci = result.confidence_interval
        low, high = ci if ci is not None else (math.nan, math.nan)
        record[result.coefficient] = result.statistic
        record[f"{result.coefficient}_ci_low"], record[f"{result.coefficient}_ci_high"] = low, high
        if result.coefficient == "pairwise_acc":
            record["pairwise_acc_epsilon"] = result.epsilon
    frame = pd.DataFrame(list(records.values()))
    frame.insert(2, "grouping", grouping)
    notes = list(table.notes)
    if missing:
        notes.append(f"human_agreement: {len(missing)} metric(s) are not columns of the ratings file: "
                     f"{', '.join(missing)}")
    return frame, notes


def _cell(value, digits: int, scale: float = 1.0) -> str:
    return format_number(value, digits, scale=scale)


def to_markdown(frame: pd.DataFrame, coefficients: Sequence[str], *, digits: int = 3) -> str:
    """TS2 averages (%) then each coefficient with its interval, one row per metric."""
    header = ["Metric", "Rank Avg", "Sep Avg", "Δ Avg"] + [c for c in coefficients]
    lines = ["| " + " | ".join(header) + " |", "|:---|" + "---:|" * (len(header) - 1)]
    for _, row in frame.iterrows():
        cells = [str(row["name"])] + [_cell(row.get(k), 1) for k in _TS2]
        for c in coefficients:
            text = _cell(row.get(c), digits)
            if not math.isnan(row.get(f"{c}_ci_low", math.nan)):
                text += f" [{_cell(row[f'{c}_ci_low'], digits)}, {_cell(row[f'{c}_ci_high'], digits)}]"
            if c == "pairwise_acc" and row.get("pairwise_acc_epsilon") is not None \
                    and not math.isnan(row.get("pairwise_acc_epsilon")):
                text += f" (ε={row['pairwise_acc_epsilon']:.3g})"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_human_agreement(
    board: pd.DataFrame,
    ratings: pd.DataFrame,
    out_dir: str | Path,
    *,
    digits: int = 3,
    **options,
) -> tuple[dict[str, Path], list[str]]:
    """``human_agreement.md`` and ``human_agreement.csv`` (full precision) under ``out_dir``; ``options`` are
    :func:`human_agreement_frame`'s (``human``, ``grouping``, ``coefficients``, ``item_col``, ``system_col``,
    ``n_bootstrap``, ``seed``), passed on unchanged."""
    frame, notes = human_agreement_frame(board, ratings, **options)
    coefficients = options.get("coefficients", COEFFICIENTS)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"human_agreement_md": out_dir / "human_agreement.md",
             "human_agreement_csv": out_dir / "human_agreement.csv"}
    paths["human_agreement_md"].write_text(to_markdown(frame, coefficients, digits=digits), encoding="utf-8")
    csv_safe(frame).to_csv(paths["human_agreement_csv"], index=False)
    return paths, notes
