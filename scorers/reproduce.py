"""Reproduce the paper's Table 2 from per-image scores: ours vs published, per metric / meta-metric / partition.

The library function behind ``ts2 reproduce``, the report's leaderboard and the demo's leaderboard, so all three
print the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from .graph import resolve_seg_subset
from .meta import META_METRICS, SUMMARY_KEYS, TS2Evaluator, TS2Result
from .tables import align_scores, column_scores

__all__ = ["DELTA_SWAP_NOTE", "OFFICIAL_RAW_NOTE", "PARTITION_DELTA_NOTE", "Reproduction", "find_release_table2", "higher_is_better_from_paper", "release_paper_table",
           "released_reproduction",
           "reproduce_table"]

#: Columns whose published delta looks swapped with each other (EC <-> Over): ours match the other's paper value.
DELTA_SWAPPED = ("llmscore_ec", "llmscore_over")
DELTA_SWAP_NOTE = (
    "note: the paper's delta values of llmscore_ec and llmscore_over look swapped (ours for EC match the paper's "
    "Over and vice versa); their delta residuals are not a reproduction failure."
)
#: The note of every partition-delta row (synth/nat/real) that has a paper value (README: "Ours vs the paper").
PARTITION_DELTA_NOTE = (
    "the paper's partition deltas are not partition means (each is its delta Avg x about 1.003 / 1.020 / 1.034), "
    "see README 'Ours vs the paper'"
)
#: The note of the swapped LLMScore delta rows.
DELTA_SWAP_ROW_NOTE = "the paper's llmscore_ec / llmscore_over deltas are swapped, see README 'Ours vs the paper'"
#: variant="official" uses raw scores, as the official evaluator does.
OFFICIAL_RAW_NOTE = ("variant official: scores are used raw, as the official evaluator does (lower-is-better columns "
                     "are not negated, so their rank and delta come out negative)")


@dataclass
class Reproduction:
    """Ours vs paper: ``rows`` (one dict per column/meta-metric/partition, values in %) and the full results;
    ``segs`` the evaluated SEG ids as a range string (e.g. ``"0-163"``)."""

    rows: list[dict]
    results: dict[str, TS2Result]
    columns: list[str]
    notes: list[str]
    segs: str = ""

    def to_dict(self) -> dict:
        return {"segs": self.segs, "rows": self.rows, "notes": self.notes}

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)


def higher_is_better_from_paper(paper: pd.DataFrame, column: str) -> bool:
    """Orientation of a metric column from the paper table.

    An explicit ``higher_is_better`` column wins; otherwise LLMScore metrics (error counts, name starting with
    "LLMScore") are lower-is-better and everything else higher-is-better.
    """
    rows = paper[paper["column"] == column]
    if rows.empty:
        return True
    if "higher_is_better" in paper.columns:
        return str(rows["higher_is_better"].iloc[0]).strip().lower() in ("1", "true", "yes")
    name = str(rows["name"].iloc[0]) if "name" in paper.columns else column
    return not (name.lower().startswith("llmscore") or column.lower().startswith("llmscore"))


def reproduce_table(
    scores: pd.DataFrame,
    metadata: pd.DataFrame,
    paper: pd.DataFrame | None = None,
    *,
    columns: Iterable[str] | None = None,
    seg_subset: Iterable[int] | str | None = "default",
    clean_quotes: bool = False,
    variant: str = "paper",
    n_bootstrap: int = 0,
    seed: int = 0,
    on: list[str] | None = None,
    higher_is_better: Mapping[str, bool] | None = None,
) -> Reproduction:
    """rank/sep/delta (in %) of every metric column, next to the paper's value where the paper has one.

    ``columns`` defaults to the paper's columns present in ``scores`` (or every non-key column without a paper).
    Row dicts: ``column, meta_metric, partition, ours, paper, residual`` (paper/residual None when unpublished).
    ``higher_is_better`` overrides the orientation per column (default: from the paper table, else True).
    ``seg_subset``: ``"default"`` (SEGs 0-163, the paper's set, :data:`scorers.graph.DEFAULT_SEG_IDS`), ``"all"``/None,
    a range string or SEG ids (:func:`scorers.graph.resolve_seg_subset`); ``Reproduction.segs`` states the choice.
    """
    aligned = align_scores(scores, metadata, on=on)
    if columns is None:
        if paper is not None:
            columns = [c for c in dict.fromkeys(paper["column"]) if c in aligned.columns]
        else:
            from .tables import score_columns

            columns = score_columns(aligned)
    columns = list(columns)
    if not columns:
        raise ValueError("no metric columns to evaluate (none of the paper's columns is in the scores table)")
    values = {c: column_scores(aligned, c, clean_quotes=clean_quotes) for c in columns}
    orient = {c: (higher_is_better_from_paper(paper, c) if paper is not None else True) for c in columns}
    orient.update({c: bool(v) for c, v in (higher_is_better or {}).items() if c in orient})
    seg_subset = resolve_seg_subset(seg_subset, metadata["seg_id"])
    evaluator = TS2Evaluator(metadata["seg_id"].to_numpy(), metadata["node"].to_numpy(), seg_subset=seg_subset)
    results = evaluator.evaluate_many(
        values, higher_is_better=orient, variant=variant, n_bootstrap=n_bootstrap, seed=seed
    )
    published = {}
    if paper is not None:
        for record in paper.to_dict("records"):
            published[(record["column"], record["meta_metric"])] = record
    rows = []
    for column in columns:
        for meta_metric in META_METRICS:
            summary = results[column][meta_metric].summary
            ci = results[column][meta_metric].ci
            for partition in SUMMARY_KEYS:
                ours = summary.get(partition, float("nan")) * 100.0
                ref = published.get((column, meta_metric), {}).get(partition)
                ref = None if ref is None or (isinstance(ref, float) and np.isnan(ref)) else float(ref)
                row = {
                    "column": column,
                    "meta_metric": meta_metric,
                    "partition": partition,
                    "ours": None if np.isnan(ours) else round(float(ours), 4),
                    "paper": ref,
                    "residual": None if ref is None or np.isnan(ours) else round(float(ours) - ref, 4),
                }
                if ci is not None and partition in ci:
                    row["ci_low"], row["ci_high"] = (round(100.0 * v, 4) for v in ci[partition])
                if ref is not None and meta_metric == "delta":
                    row_notes = [PARTITION_DELTA_NOTE] if partition != "avg" else []
                    if column in DELTA_SWAPPED and variant != "official":
                        row_notes.append(DELTA_SWAP_ROW_NOTE)
                    if row_notes:
                        row["note"] = "; ".join(row_notes)
                rows.append(row)
    notes = []
    if variant != "official" and any(c in DELTA_SWAPPED for c in columns) and paper is not None:
        notes.append(DELTA_SWAP_NOTE)
    if variant == "official":
        notes.append(OFFICIAL_RAW_NOTE)
    segs = results[columns[0]].segs
    return Reproduction(rows=rows, results=results, columns=columns, notes=notes, segs=segs)


def released_reproduction(
    data_dir: str | None = None,
    *,
    seg_subset: Iterable[int] | str | None = "default",
    variant: str = "paper",
    n_bootstrap: int = 0,
    progress: bool = True,
) -> Reproduction:
    """The published leaderboard: rank/sep/delta of the 19 metrics of the TS2 release, from its per-image scores.

    Reads ``released_scores.csv`` and ``metadata.csv`` through :mod:`scorers.release` (``data_dir`` /
    ``$TS2_DATA``, else the cache, else one verified download) and the paper's Table 2 (:func:`release_paper_table`),
    whose values become ``paper``/``residual``; without it the release's lower-is-better columns (LLMScore) are
    oriented by :data:`scorers.release.RELEASED_LOWER_IS_BETTER` and a note says that only our values are shown. The
    release's known stray quotes are cleaned.
    """
    from .release import path
    from .tables import read_metadata, read_score_table

    paper, orientation, notes = release_paper_table(data_dir, progress=progress)
    reproduction = reproduce_table(
        read_score_table(path("released_scores.csv", data_dir, progress=progress)),
        read_metadata(path("metadata.csv", data_dir, progress=progress)),
        paper,
        seg_subset=seg_subset,
        clean_quotes=True,
        variant=variant,
        n_bootstrap=n_bootstrap,
        higher_is_better=orientation,
    )
    reproduction.notes[:0] = notes
    return reproduction


def find_release_table2(data_dir: str | None = None, *, progress: bool = True) -> tuple[Path, pd.DataFrame]:
    """``(path, paper table)``: the paper's Table 2 from the release (:mod:`scorers.release`).

    A local release copy (``data_dir`` / ``$TS2_DATA``) gives ``paper_table2.csv`` (the printed table, with names and
    families) or ``table2_full_precision.csv``; otherwise ``table2_full_precision.csv`` comes from the cache or one
    download (the official repository's full-precision Table 2). Raises
    :class:`scorers.release.ReleaseFileUnavailable` naming why each source could not be had."""
    from .release import RELEASE_FILES, ReleaseFileUnavailable, local_data_dir, path
    from .tables import read_paper_table, read_table2_full_precision

    readers = {"paper_table2.csv": read_paper_table, "table2_full_precision.csv": read_table2_full_precision}
    local = local_data_dir(data_dir) is not None
    reasons = []
    for name, reader in readers.items():
        if not local and RELEASE_FILES[name].url is None:
            continue  # no download; only a local copy has it
        try:
            found = path(name, data_dir, progress=progress)
        except ReleaseFileUnavailable as error:
            reasons.append(f"{name}: {str(error).splitlines()[0].rstrip(':')}")
            continue
        return found, reader(found)
    raise ReleaseFileUnavailable("; ".join(reasons))


def release_paper_table(data_dir: str | None = None, *, progress: bool = True
                        ) -> tuple[pd.DataFrame | None, dict[str, bool] | None, list[str]]:
    """``(paper, higher_is_better, notes)``: :func:`find_release_table2`'s table, or, when it cannot be had,
    ``None`` with the release's own orientation (:data:`scorers.release.RELEASED_LOWER_IS_BETTER`) and a note saying
    only our values can be shown."""
    from .release import RELEASED_LOWER_IS_BETTER, ReleaseFileUnavailable

    try:
        return find_release_table2(data_dir, progress=progress)[1], None, []
    except ReleaseFileUnavailable as error:
        note = (f"the paper's Table 2 is not available ({error}): only our values are shown; pass --paper FILE for "
                "the residuals")
        return None, {c: False for c in RELEASED_LOWER_IS_BETTER}, [note]
