"""TIFA v1.0 leaderboard: TIFA Table 4's layout (one row per text-to-image model; per-category accuracy, TIFA score
per source, overall) as Markdown, LaTeX and CSV, a per-category bar chart (PNG, like the paper's Figure 8), and the
paired comparisons of every pair of models. Numbers come from :mod:`scorers.tifa_bench.results`; this module lays
them out and draws.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd

from scorers.errors import ParameterError
from scorers.formatting import MISSING, csv_safe, format_number, is_missing, latex_escape
from scorers.tifa_bench.tifa_v1_files import SOURCES
from scorers.tifa_bench.results import BenchResult, compare_runs, summarize

__all__ = ["Leaderboard", "build_leaderboard", "category_chart", "to_latex", "to_markdown", "write_leaderboard"]


@dataclass
class Leaderboard:
    """``summaries``: model name -> :func:`summarize` frame; ``comparisons``: one row per model pair;
    ``notes``: incomplete runs and the like (printed under the tables)."""

    summaries: dict[str, pd.DataFrame]
    comparisons: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def columns(self) -> list[tuple[str, str]]:
        """``(group, key)`` columns in Table 4's order: categories, then sources, then overall."""
        seen: list[tuple[str, str]] = []
        for group in ("category", "source", "overall"):
            for frame in self.summaries.values():
                for key in frame.loc[frame["group"] == group, "key"]:
                    if (group, key) not in seen:
                        seen.append((group, key))
        return seen

    def wide(self) -> pd.DataFrame:
        """One row per model: ``model`` and, per column, ``<key>``, ``<key>_ci_low``, ``<key>_ci_high`` in %."""
        rows = []
        for model, frame in self.summaries.items():
            row = {"model": model}
            lookup = frame.set_index(["group", "key"])
            for group, key in self.columns():
                name = _column_name(group, key)
                if (group, key) in lookup.index:
                    entry = lookup.loc[(group, key)]
                    row[name] = 100 * entry["value"]
                    row[f"{name}_ci_low"], row[f"{name}_ci_high"] = 100 * entry["ci_low"], 100 * entry["ci_high"]
                else:
                    row[name] = row[f"{name}_ci_low"] = row[f"{name}_ci_high"] = math.nan
            rows.append(row)
        return pd.DataFrame(rows)


def _column_name(group: str, key: str) -> str:
    return key if group != "source" else f"source:{key}"


def _heading(group: str, key: str) -> str:
    if group == "overall":
        return "Overall"
    return SOURCES.get(key, key) if group == "source" else key


def build_leaderboard(results: Sequence[BenchResult], *, n_bootstrap: int = 1000, confidence: float = 0.95,
                      seed: int = 0) -> Leaderboard:
    """Summaries of every run and the paired comparison of every pair (A listed first)."""
    names = [r.name for r in results]
    if len(set(names)) != len(names):
        raise ParameterError("two results have the same model name ({names}); pass {name:a name to read_results(path, "
                             "name=...)} to tell them apart", names=names)
    summaries = {r.name: summarize(r, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed) for r in results}
    pairs = [compare_runs(a, b, n_resamples=max(n_bootstrap, 1000), confidence=confidence, seed=seed)
             for a, b in itertools.combinations(results, 2)]
    comparisons = pd.DataFrame([p.to_dict() for p in pairs],
                               columns=["a", "b", "value_a", "value_b", "statistic", "ci_low", "ci_high", "pvalue",
                                        "n_units", "only_a", "only_b"])
    notes = []
    for r in results:
        info = r.info
        if info and not r.complete:
            notes.append(f"{r.name}: incomplete, {info.get('texts_scored')} of {info.get('texts')} text inputs scored "
                         f"({info.get('texts_missing_image', 0)} without an image, "
                         f"{info.get('images_skipped', 0)} images skipped); see its missing.csv")
    for pair in pairs:
        if pair.labels["only_a"] or pair.labels["only_b"]:
            notes.append(f"{pair.labels['a']} vs {pair.labels['b']}: compared on the {pair.n_units} texts both scored")
    return Leaderboard(summaries, comparisons, notes)


def _cell(value: float, low: float, high: float, digits: int, with_ci: bool, latex: bool) -> str:
    if is_missing(value):
        return MISSING
    text = format_number(value, digits)
    if with_ci and low == low:
        interval = f"[{low:.{digits}f}, {high:.{digits}f}]"
        text += (r" {\scriptsize " + interval + "}") if latex else f" <sub>{interval}</sub>"
    return text


def to_markdown(board: Leaderboard, *, digits: int = 1) -> str:
    """Markdown Table 4 (values in %, 95% CI under each) + the comparison table + notes."""
    columns = board.columns()
    wide = board.wide()
    lines = ["| Model | " + " | ".join(_heading(g, k) for g, k in columns) + " |",
             "|:---|" + "---:|" * len(columns)]
    for _, row in wide.iterrows():
        cells = [_cell(row[n], row[f"{n}_ci_low"], row[f"{n}_ci_high"], digits, True, False)
                 for n in (_column_name(g, k) for g, k in columns)]
        lines.append(f"| {row['model']} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Per-category accuracy, TIFA score per source and overall, in %; 95% bootstrap interval over text "
                 "inputs under each value.")
    if len(board.comparisons):
        lines += ["", "| A | B | TIFA A | TIFA B | A − B [95% CI] | p | texts |", "|:---|:---|---:|---:|---:|---:|---:|"]
        for _, c in board.comparisons.iterrows():
            lines.append(f"| {c['a']} | {c['b']} | {100 * c['value_a']:.{digits}f} | {100 * c['value_b']:.{digits}f} | "
                         f"{100 * c['statistic']:+.{digits}f} [{100 * c['ci_low']:+.{digits}f}, "
                         f"{100 * c['ci_high']:+.{digits}f}] | {c['pvalue']:.3g} | {c['n_units']} |")
        lines.append("")
        lines.append("Paired over text inputs: bootstrap interval of the mean difference of overall TIFA scores and a "
                     "two-sided sign-flip permutation p-value.")
    lines += [f"\nNote: {n}" for n in board.notes]
    return "\n".join(lines) + "\n"


def to_latex(board: Leaderboard, *, digits: int = 1, caption: str | None = None) -> str:
    """A ``table*`` with Table 4's columns (values in %, CIs in small type)."""

    columns = board.columns()
    wide = board.wide()
    spec = "l" + "r" * len(columns)
    lines = [r"\begin{table*}[t]", r"\centering", r"\resizebox{\textwidth}{!}{%", rf"\begin{{tabular}}{{{spec}}}",
             r"\toprule", "Model & " + " & ".join(latex_escape(_heading(g, k)) for g, k in columns) + r" \\",
             r"\midrule"]
    for _, row in wide.iterrows():
        cells = [_cell(row[n], row[f"{n}_ci_low"], row[f"{n}_ci_high"], digits, True, True)
                 for n in (_column_name(g, k) for g, k in columns)]
        lines.append(latex_escape(row["model"]) + " & " + " & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}}",
              rf"\caption{{{latex_escape(caption or 'TIFA v1.0: per-category accuracy, TIFA score per source and overall (%), 95% bootstrap intervals over text inputs.')}}}",
              r"\end{table*}"]
    return "\n".join(lines) + "\n"


def category_chart(board: Leaderboard, path: str | Path) -> Path:
    """Grouped bars: accuracy per category (x) for each model, with 95% CI whiskers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    categories = [k for g, k in board.columns() if g == "category"]
    models = list(board.summaries)
    width = 0.8 / max(len(models), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(categories) + 3), 3.6))
    x = np.arange(len(categories))
    for m, model in enumerate(models):
        frame = board.summaries[model].query("group == 'category'").set_index("key").reindex(categories)
        values = 100 * frame["value"].to_numpy(float)
        low, high = 100 * frame["ci_low"].to_numpy(float), 100 * frame["ci_high"].to_numpy(float)
        errors = None if np.all(np.isnan(low)) else np.vstack([values - low, high - values])
        ax.bar(x + (m - (len(models) - 1) / 2) * width, values, width, yerr=errors, capsize=2, label=model)
    ax.set_xticks(x, categories, rotation=30, ha="right")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 102)
    ax.set_title("TIFA v1.0 accuracy per element category (95% CI over text inputs)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def write_leaderboard(board: Leaderboard, out_dir: str | Path, *, digits: int = 1) -> dict[str, Path]:
    """``tifa_table.md/.tex/.csv``, ``tifa_comparisons.csv`` and ``tifa_categories.png`` in ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / "tifa_table.md", "latex": out_dir / "tifa_table.tex",
             "csv": out_dir / "tifa_table.csv", "comparisons": out_dir / "tifa_comparisons.csv",
             "chart": out_dir / "tifa_categories.png"}
    paths["markdown"].write_text(to_markdown(board, digits=digits), encoding="utf-8")
    paths["latex"].write_text(to_latex(board, digits=digits), encoding="utf-8")
    csv_safe(board.wide()).to_csv(paths["csv"], index=False)
    csv_safe(board.comparisons).to_csv(paths["comparisons"], index=False)
    category_chart(board, paths["chart"])
    return paths
