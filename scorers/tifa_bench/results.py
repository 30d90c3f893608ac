"""TIFA v1.0 numbers from per-question results: overall and per-source TIFA scores, per-category accuracy, CIs, and
paired comparisons of two text-to-image models on the same prompts.

Definitions follow TIFA's own benchmark code (``tifa_score_benchmark``): an image's TIFA score is the fraction of its
questions answered correctly; a text's score is the mean over its images (one image per text in the paper); the
**overall** score is the mean over texts and a **source**'s score the mean over that source's texts; a
**category**'s accuracy is the fraction of all questions of that category answered correctly (question-weighted).

Confidence intervals resample **texts** (prompts): :func:`scorers.stats.resampling.bootstrap_ratio_interval` (percentile;
the same numbers as ``scipy.stats.bootstrap(paired=True, method="percentile")``) of the ratio
``sum(correct) / sum(questions)`` per category, or of the mean text score, with the texts' numbers paired. The
paired model comparison is :func:`scorers.stats.resampling.paired_mean_test` (bootstrap CI of the mean difference + sign-flip
p-value) on the texts both models scored: the same test ``ts2 meta`` uses for two metrics over SEGs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from scorers.stats.resampling import PairedComparison, bootstrap_ratio_interval, paired_mean_test
from scorers.tables.pandas_tables import read_csv
from scorers.tifa_bench.tifa_v1_files import CATEGORIES, SOURCES

__all__ = ["BenchResult", "compare_runs", "read_results", "summarize", "text_scores"]

QUESTION_COLUMNS = ("text_id", "image", "source", "question_id", "category", "correct")


@dataclass
class BenchResult:
    """One model's per-question results (``questions.csv`` of ``ts2 tifa-bench score``) and its ``run.json``."""

    name: str
    questions: pd.DataFrame
    info: dict = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.info.get("complete", True) is True  # read_results has checked it is a JSON boolean


def read_results(path: str | Path, name: str | None = None) -> BenchResult:
    """A run folder (``questions.csv`` + ``run.json``) or a ``questions.csv`` file."""
    path = Path(path)
    table = path / "questions.csv" if path.is_dir() else path
    if not table.is_file():
        raise FileNotFoundError(f"{table} does not exist (expected the output folder of `ts2 tifa-bench score`)")
    questions = read_csv(table, dtype={"text_id": str, "image": str}, keep_default_na=False)
    missing = [c for c in QUESTION_COLUMNS if c not in questions.columns]
    if missing:
        raise ValueError(f"{table}: missing column(s) {missing}; expected {list(QUESTION_COLUMNS)}")
    correct = questions["correct"].astype(str).str.lower()
    bad = ~correct.isin(["true", "false", "1", "0"])
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"{table} line {row + 2}: correct={questions['correct'].iloc[row]!r} is not true/false")
    questions["correct"] = correct.isin(["true", "1"])
    _refuse_duplicate_questions(questions, table)
    info_path = table.with_name("run.json")
    info = _read_run_info(info_path) if info_path.is_file() else {}
    return BenchResult(name or info.get("name") or (path.name if path.is_dir() else path.stem), questions, info)


def _read_run_info(path: Path) -> dict:
    """``run.json``: a JSON object whose ``complete``, when present, is ``true`` or ``false`` (the string
    ``"false"`` is refused, not read as a complete run)."""
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(info, dict):
        found = "null" if info is None else type(info).__name__
        raise ValueError(f"{path}: expected a JSON object {{...}}, got {found}")
    if "complete" in info and not isinstance(info["complete"], bool):
        raise ValueError(f"{path}: \"complete\" must be true or false, got {json.dumps(info['complete'])}")
    return info
def _refuse_duplicate_questions(questions: pd.DataFrame, table: Path) -> None:
    """One row per (text, image, question): a repeated key would count one answer several times (three extra copies
    of one correct row moved Overall from 37.5 to 45.0), so it is an error naming the first few and their lines."""
    keys = ["text_id", "image", "question_id"]
    repeated = questions.duplicated(subset=keys, keep=False).to_numpy()
    if not repeated.any():
        return
    rows = np.flatnonzero(repeated)
    groups: dict[tuple, list[int]] = {}
    for row in rows:
        groups.setdefault(tuple(str(questions[k].iloc[row]) for k in keys), []).append(int(row) + 2)
    shown = "; ".join(f"(text_id={t!r}, image={i!r}, question_id={q!r}) on lines {', '.join(map(str, lines[:4]))}"
                      f"{' ...' if len(lines) > 4 else ''}" for (t, i, q), lines in list(groups.items())[:3])
    more = f" and {len(groups) - 3} more" if len(groups) > 3 else ""
    raise ValueError(f"{table}: {len(groups)} duplicate (text_id, image, question_id) key(s): {shown}{more}; each "
                     "question of each image needs exactly one row")


def text_scores(questions: pd.DataFrame) -> pd.DataFrame:
    """One row per text: ``text_id, source, score`` (mean over its images of each image's fraction correct),
    ``images``; in first-appearance order."""
    per_image = questions.groupby(["text_id", "image"], sort=False).agg(
        source=("source", "first"), score=("correct", "mean"))
    per_text = per_image.groupby(level="text_id", sort=False).agg(
        source=("source", "first"), score=("score", "mean"), images=("score", "size"))
    return per_text.reset_index()


def _ratio_ci(numerators: np.ndarray, denominators: np.ndarray, n_bootstrap: int, confidence: float,
              seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval of ``sum(num) / sum(den)`` resampling units (texts) with their pairs."""
    return bootstrap_ratio_interval(numerators, denominators, n_bootstrap, confidence, seed)


def summarize(result: BenchResult, *, n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0
              ) -> pd.DataFrame:
    """TIFA's Table 4 numbers for one model as rows ``group, key, value, ci_low, ci_high, texts, questions``:
    ``overall`` (mean text score), one row per ``source`` (mean text score) and per ``category``
    (question-weighted accuracy). Values are fractions; sources and categories in the paper's order."""
    questions = result.questions
    texts = text_scores(questions)
    rows = []

    def add(group, key, num, den, n_questions):
        value = float(num.sum() / den.sum())
        low, high = _ratio_ci(num, den, n_bootstrap, confidence, seed)
        rows.append({"group": group, "key": key, "value": value, "ci_low": low, "ci_high": high,
                     "texts": int(num.size), "questions": int(n_questions)})

    score, ones = texts["score"].to_numpy(float), np.ones(len(texts))
    add("overall", "overall", score, ones, len(questions))
    n_by_source = questions["source"].value_counts()
    for source in _order(texts["source"].unique(), SOURCES):
        mask = (texts["source"] == source).to_numpy()
        add("source", source, score[mask], ones[mask], n_by_source.get(source, 0))
    counts = questions.groupby(["category", "text_id"], sort=False)["correct"].agg(["sum", "size"])
    for category in _order(questions["category"].unique(), CATEGORIES):
        part = counts.loc[category]
        add("category", category, part["sum"].to_numpy(float), part["size"].to_numpy(float), part["size"].sum())
    return pd.DataFrame(rows, columns=["group", "key", "value", "ci_low", "ci_high", "texts", "questions"])


def _order(keys, order) -> list[str]:
    keys = [str(k) for k in keys]
    return [k for k in order if k in keys] + sorted(k for k in keys if k not in order)


def compare_runs(a: BenchResult, b: BenchResult, *, n_resamples: int = 10_000, confidence: float = 0.95,
                 seed: int = 0) -> PairedComparison:
    """Paired comparison of model A vs model B on the texts both scored: ``value_a, value_b`` (overall TIFA scores as
    fractions), ``statistic`` (A - B), its bootstrap ``confidence_interval``, the sign-flip ``pvalue`` and ``n_units``
    (texts); ``labels`` holds the run names ``a, b`` and ``only_a, only_b`` (texts scored by one run only)."""
    ta, tb = text_scores(a.questions).set_index("text_id"), text_scores(b.questions).set_index("text_id")
    common = [t for t in ta.index if t in tb.index]
    if not common:
        raise ValueError(f"{a.name} and {b.name} share no scored text id; compare runs on the same prompts")
    va, vb = ta.loc[common, "score"].to_numpy(float), tb.loc[common, "score"].to_numpy(float)
    difference, ci, p_value = paired_mean_test(va - vb, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return PairedComparison(difference, p_value, ci, float(va.mean()), float(vb.mean()), len(common), "text",
                            "sign-flip permutation over texts",
                            {"a": a.name, "b": b.name, "only_a": len(ta) - len(common), "only_b": len(tb) - len(common)})
