"""The 19 published metrics beside the user's own: ``ts2 report``'s default (``--no-published`` turns it off).

The release's per-image scores (``released_scores.csv``) and the paper's Table 2 are found the way ``ts2 score
--meta`` finds them for its "beside the published leaderboard" rows (:func:`scorers.ts2.reproduce.released_reproduction`):
through :mod:`scorers.tables.release` (``--data-dir`` / ``$TS2_DATA``, else the cache, else one verified download)
and :func:`scorers.ts2.reproduce.find_release_table2`. The release's scores get their image keys (``seg_id``,
``file_name``) from the release's ``metadata.csv`` and their known stray quotes cleaned, then join the user's tables
as one more input of :func:`scorers.report.write_report`: the published rows are computed by the same
:func:`scorers.ts2.reproduce.reproduce_table` call as the user's metric (same SEGs, bootstrap and seed), and equal
``ts2 reproduce``'s and ``ts2 score --meta``'s numbers.

When the release cannot be had (offline with nothing cached, no ``$TS2_DATA``), or the user's metadata is not the
release's (another sha256: :func:`scorers.tables.comparable.published_mismatch`, the check every place that ranks a
metric among the published rows makes), the report is the user's metrics alone and :attr:`Published.note` says why.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd

__all__ = ["HOW_TO_GET", "RELEASED_COLUMNS", "Published", "published_coverage", "published_inputs",
           "stray_quote_cells"]

#: The score columns of the release's ``released_scores.csv`` (pinned by sha256 in :mod:`scorers.tables.release`):
#: a report whose tables hold all of them already is the published leaderboard, and the release is not read again.
RELEASED_COLUMNS = ("blip1_dsg", "fuyu_dsg", "instruct_blip_dsg", "llava-alt_dsg", "llava_dsg", "mplug_dsg",
                    "blip1_tifa", "fuyu_tifa", "instruct_blip_tifa", "llava-alt_tifa", "llava_tifa", "mplug_tifa",
                    "alignscore", "clipscore", "gpt4v_tifa", "gpt4v_dsg", "viescore", "llmscore_over", "llmscore_ec")

#: How to get the release tables (the fallback note's fix).
HOW_TO_GET = ("set TS2_DATA (or --data-dir) to a folder with the release tables, or run `ts2 release fetch "
              "released_scores.csv metadata.csv table2_full_precision.csv` once with network access; "
              "--no-published: your metrics alone, without this note")


@dataclass
class Published:
    """What :func:`published_inputs` adds to a report: the release's scores as one more keyed table (``seg_id,
    file_name`` + one column per published metric, quotes cleaned), the paper table (names, families, FLOPs; None
    when not available), the added ``columns``, the ``source`` file, ``notes`` for the output, and ``note``: why
    nothing was added (None when the published metrics are in)."""

    table: pd.DataFrame | None = None
    paper: pd.DataFrame | None = None
    columns: list[str] = field(default_factory=list)
    source: Path | None = None
    notes: list[str] = field(default_factory=list)
    note: str | None = None

    @property
    def added(self) -> bool:
        return bool(self.columns)


def published_inputs(metadata: pd.DataFrame, user_columns: Sequence[str], *, data_dir: str | None = None,
                     paper: pd.DataFrame | None = None, metadata_file=None) -> Published:
    """The release's published metrics to put beside ``user_columns`` (every score column of the user's tables, the
    ones not reported included) in a report over ``metadata`` (a :func:`scorers.tables.pandas_tables.read_metadata`
    frame).

    ``paper``: the user's own paper table (``--paper``); without it the release's Table 2 is read for names,
    families and FLOPs. Never raises for a release that cannot be had: the result's ``note`` says why and how to get
    it. A published column the user's tables already have (e.g. ``released_scores.csv`` passed by hand) is not
    added again; when every one is there, nothing is added and there is no note. ``metadata_file``: the file
    ``metadata`` was read from: the published rows are added only when it is the release's (the same sha256,
    :func:`scorers.tables.comparable.published_mismatch`; the SEGs are the report's own for both), else the note is
    that check's line (unknown without a file).
    """
    from scorers.tables.pandas_tables import column_scores, read_metadata, read_score_table, score_columns
    from scorers.tables.release import ReleaseFileUnavailable
    from scorers.tables.release_download import path

    mine = set(user_columns)
    if mine.issuperset(RELEASED_COLUMNS):
        return Published()  # the user passed the release's scores themselves
    try:
        scores_path = path("released_scores.csv", data_dir, progress=False)
        release_metadata = read_metadata(path("metadata.csv", data_dir, progress=False))
        released = read_score_table(scores_path)
    except (ReleaseFileUnavailable, OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0].rstrip(":") if str(error).strip() else type(error).__name__
        return Published(note=f"note: the published metrics are not added: the TS2 release tables are not "
                              f"available ({first}); {HOW_TO_GET}")
    release_columns = score_columns(released)
    if mine.issuperset(release_columns):
        return Published()  # a local release copy with other columns, all of them passed by hand
    if len(released) != len(release_metadata):
        return Published(note=f"note: the published metrics are not added: {scores_path.name} has {len(released)} "
                              f"rows but the release's metadata.csv has {len(release_metadata)}; {HOW_TO_GET}")
    from scorers.tables.comparable import Basis, metadata_basis, published_mismatch, release_basis

    ours = metadata_basis(metadata_file) if metadata_file is not None else Basis(None, "the given metadata frame")
    left_out = published_mismatch(ours, release_basis(data_dir), what="your scores")
    if left_out is not None:
        return Published(note=f"note: {left_out}; pass the release's metadata.csv to compare (--no-published: "
                              "without this note)")
    clash = [c for c in release_columns if c in mine]
    added = [c for c in release_columns if c not in mine]
    table = pd.DataFrame({"seg_id": release_metadata["seg_id"].to_numpy(),
                          "file_name": release_metadata["file_name"].to_numpy()})
    for column in added:  # the release's rows are in its metadata's order; its known stray quotes are cleaned
        table[column] = column_scores(released, column, clean_quotes=True)
    notes = []
    if clash:
        notes.append(f"note: published {', '.join(clash)} not added: your scores have a column of that name")
    if paper is None:
        from scorers.ts2.reproduce import find_release_table2

        try:
            paper = find_release_table2(data_dir, progress=False)[1]
        except (ReleaseFileUnavailable, OSError, ValueError) as error:
            first = str(error).strip().splitlines()[0]
            notes.append(f"note: the paper's Table 2 is not available ({first}): the published metrics are shown "
                         "without their names, families and FLOPs")
            paper = None
    return Published(table=table, paper=paper, columns=added, source=scores_path, notes=notes)


def stray_quote_cells(scores: pd.DataFrame, segs=None) -> dict[str, int]:
    """``{column: n}``: the cells of a score table read as text (the release's ``released_scores.csv``) that hold a
    stray quote character (LLMScore's ``"3``): numbers only once the quotes are stripped, which the published rows
    do (and state). ``segs``: count only the rows of these SEG ids (the table's ``id`` / ``seg_id`` column)."""
    from scorers.tables.pandas_tables import score_columns

    rows = pd.Series(True, index=scores.index)
    seg_column = next((c for c in ("seg_id", "id") if c in scores.columns), None)
    if segs is not None and seg_column is not None:
        wanted = {int(s) for s in segs}
        rows = pd.to_numeric(scores[seg_column], errors="coerce").isin(wanted)
    out = {}
    for column in score_columns(scores):
        cells = scores.loc[rows, column].astype(str)
        count = int(cells.str.contains("[\"']", regex=True).sum())
        if count:
            out[column] = count
    return out


def published_coverage(reproduction, data_dir: str | None = None) -> dict:
    """``{column: Coverage}`` of the published rows of ``reproduction`` (a
    :class:`scorers.ts2.reproduce.Reproduction` of the release's scores): its recomputed coverage, with the cells
    read after stripping stray quotes (:func:`stray_quote_cells` of the release's ``released_scores.csv``, found as
    :func:`scorers.ts2.reproduce.released_reproduction` finds it; not counted when it cannot be had)."""
    from dataclasses import replace

    from scorers.tables.release import ReleaseFileUnavailable
    from scorers.tables.release_download import path
    from scorers.tables.pandas_tables import read_score_table

    coverage = dict(getattr(reproduction, "coverage", {}) or {})
    if not coverage:
        return {}
    segs = next(iter(reproduction.results.values())).rank.seg_ids.tolist() if reproduction.results else None
    try:
        quoted = stray_quote_cells(read_score_table(path("released_scores.csv", data_dir, progress=False)), segs)
    except (ReleaseFileUnavailable, OSError, ValueError):
        quoted = {}
    return {c: replace(v, cells_repaired=quoted.get(c, 0)) for c, v in coverage.items()}
