"""Reproduce the paper's Table 2 from per-image scores: ours vs published, per metric / meta-metric / partition.

The library function behind ``ts2 reproduce``, the report's leaderboard and the demo's leaderboard, so all three
print the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import sys
from typing import TYPE_CHECKING

import numpy as np

from scorers.stats.graph import summary_keys
from scorers.stats.meta import META_METRICS, TS2Result
from scorers.stats.orientation import resolve_orientation
from scorers.tables.join import Joined
from scorers.ts2.meta_from_tables import meta_from_tables
from scorers.ts2.options import MetaOptions

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DELTA_SWAP_NOTE", "DELTA_SWAP_ROW_NOTE", "OFFICIAL_RAW_NOTE", "PARTITION_DELTA_NOTE", "Reproduction", "find_release_table2", "higher_is_better_from_paper", "release_paper_table",
           "released_reproduction",
           "reproduce_table"]

#: Columns whose published delta looks swapped with each other (EC <-> Over): ours match the other's paper value.
DELTA_SWAPPED = ("llmscore_ec", "llmscore_over")
DELTA_SWAP_NOTE = (
    "note: the paper's delta values of llmscore_ec and llmscore_over look swapped (ours for EC match the paper's "
    "Over and vice versa); their delta residuals are not a reproduction failure."
)
#: The note of every partition-delta row (synth/nat/real) that has a paper value (docs/reproduce.md: "Ours vs the
#: paper").
PARTITION_DELTA_NOTE = (
    "the paper's partition deltas are not partition means (each is its delta Avg x about 1.003 / 1.020 / 1.034), "
    "see docs/reproduce.md 'Ours vs the paper'"
)
#: The note of the swapped LLMScore delta rows.
DELTA_SWAP_ROW_NOTE = ("the paper's llmscore_ec / llmscore_over deltas look swapped (ours for EC match the paper's Over "
                       "and vice versa): not a reproduction failure, see docs/reproduce.md 'Ours vs the paper'")
#: variant="official" uses raw scores, as the official evaluator does.
OFFICIAL_RAW_NOTE = ("variant official: scores are used raw, as the official evaluator does (lower-is-better columns "
                     "are not negated, so their rank and delta come out negative)")


_PERCENT_KEYS = ("ours", "paper", "residual", "ci_low", "ci_high")


@dataclass
class Reproduction:
    """Ours vs paper: ``rows`` (one dict per column/meta-metric/partition, values in %) and the full results;
    ``segs`` the evaluated SEG ids as a range string (e.g. ``"0-163"``)."""

    rows: list[dict]
    results: dict[str, TS2Result]
    columns: list[str]
    notes: list[str]
    segs: str = ""
    values: dict = field(default_factory=dict)
    #: ``{column: Coverage}`` and ``{column: sha256}`` of the scores (:class:`scorers.ts2.meta_from_tables.TableMeta`)
    coverage: dict = field(default_factory=dict)
    fingerprints: dict = field(default_factory=dict)
    #: ``{column: {error type: ErrorTypeResult}}`` with ``options.by_error_type`` (else None)
    by_error_type: dict | None = None

    def to_dict(self) -> dict:
        """``ts2 reproduce --json``: the rows in fractions (``ours``, ``paper``, ``residual``, ``ci_low``/``ci_high``
        divided by 100; the tables print %), with ``unit`` and ``segs`` stated."""
        rows = [{k: (v / 100.0 if k in _PERCENT_KEYS and v is not None else v) for k, v in row.items()}
                for row in self.rows]
        return {"segs": self.segs, "unit": "fraction", "rows": rows, "notes": self.notes}

    def frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.rows)


def _is_frame(item) -> bool:
    """A pandas DataFrame (none can exist while pandas is not imported: the light path never imports it)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(item, pandas.DataFrame)


def higher_is_better_from_paper(paper: pd.DataFrame, column: str) -> bool:
    """Orientation of a metric column given the paper table: :func:`scorers.stats.orientation.resolve_orientation` (the
    table's explicit ``higher_is_better`` column wins; otherwise the release's known error-count columns, LLMScore,
    are lower-is-better and everything else higher-is-better)."""
    return resolve_orientation([column], paper=paper)[column]


def reproduce_table(
    scores: pd.DataFrame | str | Path | Joined | Sequence[tuple[str, pd.DataFrame]],
    metadata: pd.DataFrame | str | Path,
    paper: pd.DataFrame | None = None,
    *,
    columns: Iterable[str] | None = None,
    options: MetaOptions = MetaOptions(),
) -> Reproduction:
    """rank/sep/delta (in %) of every metric column, next to the paper's value where the paper has one.

    Scores and metadata go through :func:`scorers.ts2.meta_from_tables.meta_from_tables` (read, join on keys, orient,
    evaluate), with ``options`` (:class:`~scorers.ts2.options.MetaOptions`: the SEGs, ``"default"`` = 0-163, the
    paper's set, stated in ``Reproduction.segs``; the variant; the bootstrap; the orientation, from the paper, the
    release's known facts and ``higher_is_better`` / ``lower_is_better``; quote cleaning; the keys).
    ``columns`` defaults to the paper's columns present in ``scores`` (or every non-key column without a paper).
    Row dicts: ``column, meta_metric, partition, ours, paper, residual`` (paper/residual None when unpublished).
    """
    variant = options.variant
    if columns is None and paper is not None:
        from scorers.tables.columns import KEY_COLUMNS
        from scorers.tables.csv_tables import csv_header

        frames = [scores] if _is_frame(scores) or isinstance(scores, (str, Path, Joined)) else [t for _, t in scores]
        present = set()
        for frame in frames:
            frame = frame.frame if isinstance(frame, Joined) else frame
            header = list(frame.columns) if _is_frame(frame) else csv_header(frame)
            present.update(c for c in header if c not in KEY_COLUMNS)
        columns = [c for c in dict.fromkeys(paper["column"]) if c in present]
        if not columns:
            raise ValueError("no metric columns to evaluate (none of the paper's columns is in the scores table)")
    evaluated = meta_from_tables(scores, metadata, columns=columns, paper=paper, options=options)
    columns, results = evaluated.columns, evaluated.results
    published = {}
    if paper is not None:
        for record in paper.to_dict("records"):
            published[(record["column"], record["meta_metric"])] = record
    rows = []
    keys = summary_keys(k for column in columns for k in results[column].rank.statistic)  # a built dir's partitions
    for column in columns:
        for meta_metric in META_METRICS:
            summary = results[column][meta_metric].statistic
            ci = results[column][meta_metric].confidence_interval
            for partition in keys:
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
    return Reproduction(rows=rows, results=results, columns=columns, notes=evaluated.notes + notes,
                        segs=evaluated.segs, values=evaluated.values, coverage=evaluated.coverage,
                        fingerprints=evaluated.fingerprints, by_error_type=evaluated.by_error_type)


def released_reproduction(
    data_dir: str | None = None,
    *,
    seg_subset: Iterable[int] | str | None = "default",
    variant: str = "paper",
    n_bootstrap: int = 0,
    progress: bool = True,
) -> Reproduction:
    """The published leaderboard: rank/sep/delta of the 19 metrics of the TS2 release, from its per-image scores.

    Reads ``released_scores.csv`` and ``metadata.csv`` through :mod:`scorers.tables.release` (``data_dir`` /
    ``$TS2_DATA``, else the cache, else one verified download) and the paper's Table 2 (:func:`release_paper_table`),
    whose values become ``paper``/``residual``; without it the release's lower-is-better columns (LLMScore) are
    oriented by :data:`scorers.stats.orientation.RELEASED_LOWER_IS_BETTER` and a note says that only our values are shown. The
    release's known stray quotes are cleaned.
    """
    from scorers.tables.release_download import path
    from scorers.tables.pandas_tables import read_metadata, read_score_table

    paper, orientation, notes = release_paper_table(data_dir, progress=progress)
    reproduction = reproduce_table(
        read_score_table(path("released_scores.csv", data_dir, progress=progress)),
        read_metadata(path("metadata.csv", data_dir, progress=progress)),
        paper,
        options=MetaOptions(seg_subset=seg_subset, clean_quotes=True, variant=variant, n_bootstrap=n_bootstrap,
                            higher_is_better=orientation),
    )
    reproduction.notes[:0] = notes
    return reproduction


def find_release_table2(data_dir: str | None = None, *, progress: bool = True,
                        light: bool = False) -> tuple[Path, pd.DataFrame]:
    """``(path, paper table)``: the paper's Table 2 from the release (:mod:`scorers.tables.release`).

    A local release copy (``data_dir`` / ``$TS2_DATA``) gives ``paper_table2.csv`` (the printed table, with names and
    families) or ``table2_full_precision.csv``; otherwise ``table2_full_precision.csv`` comes from the cache or one
    download (the official repository's full-precision Table 2). Raises
    :class:`scorers.tables.release.ReleaseFileUnavailable` naming why each source could not be had. The table is a
    DataFrame; ``light=True`` (``ts2 reproduce``'s start-up) may give :class:`scorers.tables.csv_tables.LightPaperTable`
    instead, which has only the members the reproduction reads."""
    from scorers.tables.release import RELEASE_FILES, ReleaseFileUnavailable, local_data_dir
    from scorers.tables.release_download import path

    if light:
        from scorers.tables.csv_tables import paper_table
    else:
        from scorers.tables.pandas_tables import read_paper_table as paper_table
    readers = {"paper_table2.csv": paper_table, "table2_full_precision.csv": paper_table}
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
    ``None`` with the release's own orientation (:data:`scorers.stats.orientation.RELEASED_LOWER_IS_BETTER`) and a note saying
    only our values can be shown."""
    from scorers.tables.release import ReleaseFileUnavailable

    try:
        return find_release_table2(data_dir, progress=progress, light=True)[1], None, []
    except ReleaseFileUnavailable as error:
        note = (f"the paper's Table 2 is not available ({error}): only our values are shown; pass --paper FILE for "
                "the residuals")
        return None, None, [note]
