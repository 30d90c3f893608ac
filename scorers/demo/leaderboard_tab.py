"""Leaderboard tab logic: published metrics' rank/sep/delta (from ``scorers.ts2.reproduce``), uploaded score CSVs, and
the community leaderboard of verified submissions (:mod:`scorers.report.community`, from ``AppConfig.submissions``).

Every number comes from :func:`scorers.ts2.reproduce.reproduce_table`; this module validates uploads (with the library's
readers, whose errors are readable), arranges the rows and marks the user's own metric. A community row is listed only
once :func:`scorers.ts2.submission.folder.verify_submission` has recomputed it; the rejected ones are listed apart with why.
Gradio is imported only inside :func:`build_leaderboard_tab` (the tab's widgets), which ``ui.build_app`` calls.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from scorers.stats.meta import META_METRICS
from scorers.ts2.options import MetaOptions
from scorers.ts2.reproduce import DELTA_SWAP_NOTE, Reproduction, reproduce_table
from scorers.tables.join import ROW_POSITION_NOTE, Joined, join_scores, table_keys
from scorers.tables.pandas_tables import CSVReadError, column_scores, read_score_table, score_columns

from scorers.formatting import MISSING, format_number
from scorers.demo.config import AppConfig, check_upload_size
from scorers.demo.sources import Tables

__all__ = [
    "COMMUNITY_COLUMNS",
    "REJECTED_COLUMNS",
    "Community",
    "community_board",
    "community_caption",
    "community_view",
    "rejected_view",
    "LEADERBOARD_COLUMNS",
    "MAX_UPLOAD_COLUMNS",
    "UPLOAD_FORMAT",
    "UploadedMetric",
    "build_leaderboard_tab",
    "evaluate_upload",
    "is_uploaded",
    "read_upload",
    "leaderboard_view",
    "published_reproduction",
]

PARTITION_CHOICES = ("avg", "synth", "nat", "real")
LEADERBOARD_COLUMNS = ["#", "metric", "column", "family", "rank", "sep", "delta", "rank 95% CI", "sep 95% CI",
                       "delta 95% CI"]
#: bootstrap resamples over SEGs for the leaderboard's intervals (the CLI's default; seed 0 as in ts2 report)
N_BOOTSTRAP = 1000
YOURS = "★ "
MAX_UPLOAD_COLUMNS = 5

UPLOAD_FORMAT = """\
**Accepted CSV formats** (one row per image, header required, at most {max_mb:g} MB):

1. `seg_id,file_name,<your metric>` — joined with the release's metadata on SEG id + file name
   (`id` is accepted for `seg_id`); every image of the release needs exactly one row.
2. `<your metric>` only (optionally with `seg_id`) — rows in the release's `metadata.csv` order ({n_rows} rows).

Scores must be numbers (empty cells = missing). Up to {max_cols} metric columns per file; each becomes a leaderboard
row. Tick *lower is better* before uploading error-count style metrics (like LLMScore).
"""


@dataclass
class UploadedMetric:
    """One uploaded score column and its evaluation (values in % as in the published rows)."""

    label: str
    column: str
    rows: list[dict]


def _seg_subset(config: AppConfig, metadata: pd.DataFrame) -> list[int]:
    present = set(int(s) for s in metadata["seg_id"])
    return [s for s in config.seg_range if s in present]


def published_reproduction(tables: Tables, config: AppConfig) -> Reproduction:
    """rank/sep/delta of every released metric (the paper's columns when its table is loaded)."""
    if tables.metadata is None or tables.scores is None:
        raise ValueError("the release tables are not available: " + "; ".join(tables.problems))
    return reproduce_table(
        tables.scores,
        tables.metadata,
        tables.paper,  # None: orientation from the release's known facts (scorers.stats.orientation)
        options=MetaOptions(seg_subset=_seg_subset(config, tables.metadata),
                            clean_quotes=True,  # the release's llmscore_over has cells like "3
                            n_bootstrap=N_BOOTSTRAP),
    )


def _summary(rows: list[dict], column: str, partition: str) -> dict[str, float | None]:
    """``{rank: 71.4, ..., "rank 95% CI": "68.2-74.3", ...}``: values and their bootstrap intervals over SEGs (%)."""
    out: dict = {}
    for r in rows:
        if r["column"] == column and r["partition"] == partition:
            out[r["meta_metric"]] = r["ours"]
            low, high = r.get("ci_low"), r.get("ci_high")
            if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
                out[f"{r['meta_metric']} 95% CI"] = f"{low:.1f}–{high:.1f}"
    return out


def leaderboard_view(
    published: Reproduction,
    paper: pd.DataFrame | None,
    uploaded: list[UploadedMetric],
    *,
    partition: str = "avg",
    sort_by: str = "rank",
) -> pd.DataFrame:
    """One row per metric (published + uploaded), values in % rounded to 0.1, best first by ``sort_by``; the
    ``<meta> 95% CI`` columns hold the bootstrap percentile interval over SEGs (``"-"`` where none)."""
    _check_view(partition, sort_by)
    names, families = {}, {}
    if paper is not None and "name" in paper.columns:
        for record in paper.drop_duplicates("column").to_dict("records"):
            names[record["column"]] = record.get("name", record["column"])
            families[record["column"]] = record.get("family", "")
    records = []
    for column in published.columns:
        values = _summary(published.rows, column, partition)
        records.append({"metric": names.get(column, column), "column": column,
                        "family": families.get(column, ""), **values})
    for metric in uploaded:
        values = _summary(metric.rows, metric.column, partition)
        records.append({"metric": YOURS + metric.label, "column": metric.column, "family": "uploaded", **values})
    frame = pd.DataFrame(records, columns=LEADERBOARD_COLUMNS[1:])
    for meta in META_METRICS:
        frame[meta] = [None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 1)
                       for v in frame[meta]]
    for meta in META_METRICS:
        frame[f"{meta} 95% CI"] = frame[f"{meta} 95% CI"].fillna("-")
    frame = frame.sort_values(sort_by, ascending=False, na_position="last", kind="stable").reset_index(drop=True)
    frame.insert(0, "#", range(1, len(frame) + 1))
    return frame


def is_uploaded(frame: pd.DataFrame) -> pd.Series:
    """Rows of the user's own metrics (marked with a star)."""
    return frame["metric"].astype(str).str.startswith(YOURS)



def read_upload(path: str | Path, metadata: pd.DataFrame, max_bytes: int) -> tuple[Joined, list[str]]:
    """Validate an uploaded scores CSV; returns ``(joined, score columns)`` or raises ValueError. ``joined``: the table
    in metadata row order (:func:`scorers.tables.join.join_scores`, the one join), its score columns read to numbers
    (:func:`scorers.tables.pandas_tables.column_scores`, the one reading of the cells), which :func:`evaluate_upload`
    evaluates as it is."""
    path = Path(path)
    check_upload_size(path, max_bytes)
    try:
        frame = read_score_table(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise ValueError(f"not a readable CSV file: {str(error).strip().splitlines()[0]}") from None
    except CSVReadError as error:  # the upload's temporary path is not the user's business
        raise ValueError(f"not a readable CSV file: {error.detail}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.empty:
        raise ValueError("the CSV has a header but no rows")
    columns = score_columns(frame)
    if not columns:
        raise ValueError(
            f"no score column found (columns: {list(frame.columns)}); expected seg_id,file_name,<your metric>"
        )
    if len(columns) > MAX_UPLOAD_COLUMNS:
        raise ValueError(f"{len(columns)} score columns {columns}; at most {MAX_UPLOAD_COLUMNS} per upload")
    for column in columns:
        frame[column] = column_scores(frame, column)  # non-numeric cells -> ValueError naming the CSV line
    if table_keys(frame)[0] is None and len(frame) != len(metadata):
        raise ValueError(
            f"the CSV has {len(frame)} rows but the release has {len(metadata)} images; add seg_id,file_name columns "
            "to join, or give one row per image in metadata order"
        )
    joined = join_scores(frame, metadata)  # the one join: keys, duplicates, unknown SEGs/files, row order
    return joined, columns


def evaluate_upload(
    path: str | Path,
    tables: Tables,
    config: AppConfig,
    *,
    lower_is_better: bool = False,
    taken: set[str] = frozenset(),
) -> list[UploadedMetric]:
    """Validate an uploaded CSV and evaluate each of its score columns; raises ValueError with a readable message."""
    if tables.metadata is None:
        raise ValueError("the release metadata is not loaded, so uploads cannot be evaluated")
    joined, columns = read_upload(path, tables.metadata, config.max_upload_bytes)
    reproduction = reproduce_table(
        joined,  # read and joined once, by read_upload: evaluated as it is
        tables.metadata,
        None,
        columns=columns,
        options=MetaOptions(lower_is_better=columns if lower_is_better else (),
                            seg_subset=_seg_subset(config, tables.metadata), n_bootstrap=N_BOOTSTRAP),
    )
    metrics = []
    for column in columns:
        label = column if column not in taken else f"{column} (yours)"
        rows = [r for r in reproduction.rows if r["column"] == column]
        metrics.append(UploadedMetric(label=label, column=column, rows=rows))
    return metrics


# ----------------------------------------------------------------------------- community submissions

#: the community table's columns (values in %, 0.1) and the rejected list's
COMMUNITY_COLUMNS = ["group", "#", "metric", "submission", "verified by", "rank", "sep", "delta", "coverage"]
REJECTED_COLUMNS = ["submission", "name", "reason"]


@dataclass
class Community:
    """What the tab shows of ``AppConfig.submissions``: the ``board`` (None when not configured or not readable),
    ``problem`` (one line when it could not be read), and ``source`` (what was configured)."""

    board: object | None = None
    problem: str | None = None
    source: str | None = None

    @property
    def configured(self) -> bool:
        return self.source is not None


def community_board(config: AppConfig, published: Reproduction | None) -> Community:
    """Verify every submission of ``config.submissions`` (:func:`scorers.report.community.community_leaderboard`)
    beside ``published`` (the tab's own published rows, not computed again), against the metadata the app uses
    (``config.metadata``, else the release's). Never raises: a source that cannot be read gives ``problem``."""
    if not config.submissions:
        return Community()
    from scorers.errors import wording_of
    from scorers.report.community import community_leaderboard

    try:
        board = community_leaderboard(config.submissions, metadata=config.metadata, reproduction=published,
                                      published=published is not None, published_metadata=config.metadata)
    except (ValueError, OSError) as error:
        wording = wording_of(error)
        text = wording.worded({"submissions": "submissions source"}) if wording is not None else str(error)
        first = text.strip().splitlines()[0] if text.strip() else type(error).__name__
        return Community(problem=first, source=config.submissions)
    return Community(board=board, source=config.submissions)


def _check_view(partition: str, sort_by: str) -> None:
    if partition not in PARTITION_CHOICES:
        raise ValueError(f"partition must be one of {PARTITION_CHOICES}, got {partition!r}")
    if sort_by not in META_METRICS:
        raise ValueError(f"sort_by must be one of {META_METRICS}, got {sort_by!r}")


def community_view(board, *, partition: str = "avg", sort_by: str = "rank") -> pd.DataFrame:
    """The verified community rows (the published ones are the tab's main table, under their display names): each
    submission's display name (``metric``: ``metric.json``'s, ``ts2 submit --metric``) and ``submission`` name, its
    group (variant and SEG set; the incomplete ones last, unranked: ``#`` is ``-``), the ``partition``'s values in %
    rounded to 0.1 and its coverage (cells scored, SEGs used). ``#`` is its place in its group by ``sort_by`` in that
    partition, the group's published metrics counted (they are listed above), best first."""
    _check_view(partition, sort_by)
    from scorers.report.community import INCOMPLETE_GROUP

    key = f"{sort_by}_{partition}"

    def order(row: dict) -> tuple:  # best first, rows without a value last
        value = row.get(key)
        missing = value is None or math.isnan(value)
        return missing, 0.0 if missing else -value

    groups: dict[str, list[dict]] = {}
    for row in board.rows:  # already in group order, the incomplete group last
        groups.setdefault(row["group"], []).append(row)
    records = []
    for label, members in groups.items():
        for place, row in enumerate(sorted(members, key=order), start=1):  # stable: published first on ties
            if row["source"] != "community":
                continue
            records.append({"group": label, "#": "-" if label == INCOMPLETE_GROUP else place, "metric": row["metric"],
                            "submission": row["name"], "verified by": row["verified_by"],
                            **{meta: None if row.get(f"{meta}_{partition}") is None
                               or math.isnan(row[f"{meta}_{partition}"])
                               else round(float(row[f"{meta}_{partition}"]), 1) for meta in META_METRICS},
                            "coverage": row.get("coverage")})
    return pd.DataFrame(records, columns=COMMUNITY_COLUMNS)


def community_caption(view: pd.DataFrame, *, partition: str = "avg", sort_by: str = "rank") -> str:
    """What the community table shows, counted: its verified submissions, ranked and incomplete, and the view."""
    unranked = int((view["#"] == "-").sum())
    return (f"{len(view)} verified community submission(s): {len(view) - unranked} ranked, {unranked} incomplete "
            f"(not ranked); {partition} values in %, sorted by {sort_by} (# counts the published metrics of its "
            "group too)")


def rejected_view(board) -> pd.DataFrame:
    """The rejected submissions: folder, claimed name, one-line reason."""
    return pd.DataFrame([[r.folder, r.name, r.reason] for r in board.rejected], columns=REJECTED_COLUMNS)


# ----------------------------------------------------------------------------------------------------- the tab

HIGHLIGHT = "background-color: #fff1b8; font-weight: 600"

COMMUNITY_INTRO = """\
### Community leaderboard

Every community row is recomputed by ts2-evaluate from the submission's per-image scores before it is listed
(`ts2 submit`, then a pull request to the submissions dataset); *verified by* names the version that checked it.
Rows on another delta variant or SEG set are in their own group and never ranked with the default one. Only
complete rows are ranked: a submission that leaves images of its SEGs without a finite score is listed apart
(*incomplete (not ranked)*) with its coverage, and a copy of another's scores under a new name is rejected.
"""


def _styled(frame: pd.DataFrame):
    """Highlight the user's own rows (a pandas Styler, which gr.Dataframe renders with its styles)."""
    marks = is_uploaded(frame).tolist()
    return frame.style.apply(lambda row: [HIGHLIGHT if marks[row.name] else ""] * len(row), axis=1).format(
        precision=1, na_rep="-", subset=list(META_METRICS)
    )


def _value(metric: UploadedMetric, meta: str, partition: str) -> str:
    for row in metric.rows:
        if row["meta_metric"] == meta and row["partition"] == partition:
            return format_number(row["ours"], 1)
    return MISSING


def build_leaderboard_tab(config: AppConfig, *, tables: Tables, published: Reproduction | None,
                          error: Callable[[str], str], unexpected: Callable[[Exception], str]) -> None:
    """The Leaderboard tab's widgets (inside ``gr.Tab``): the published rows, partitions, sorting, the user's uploaded
    metrics, then the community rows (:func:`community_board` beside ``published``, None when the release tables
    could not be evaluated). Handlers never raise into gradio."""
    import gradio as gr

    published_names = set(published.columns) if published is not None else set()
    controls = None

    def table_for(uploaded: list[UploadedMetric], partition: str, sort_by: str):
        return _styled(leaderboard_view(published, tables.paper, uploaded, partition=partition, sort_by=sort_by))

    if published is None:
        gr.Markdown("The leaderboard needs the release tables (metadata.csv, released_scores.csv).")
    else:
        uploaded_state = gr.State([])
        with gr.Row():
            partition = gr.Radio(list(PARTITION_CHOICES), value="avg", label="SEG partition")
            sort_by = gr.Radio(list(META_METRICS), value="rank", label="Sort by")
        board = gr.Dataframe(
            value=table_for([], "avg", "rank"), interactive=False, elem_id="leaderboard",
            label=f"{len(published.columns)} published metrics, SEGs "
                  f"{config.seg_subset[0]}-{config.seg_subset[1] - 1}", max_height=1100,
        )
        # the delta-swap note is about residuals against the paper, which this table does not show; how the release's
        # tables are paired (by row position) is the library's business, not the reader's
        notes = [n for n in published.notes if n != DELTA_SWAP_NOTE and ROW_POSITION_NOTE not in n]
        if notes:
            gr.Markdown("\n\n".join(f"*{n}*" for n in notes), elem_id="leaderboard-notes")
        gr.Markdown("### Add your metric")
        with gr.Row():
            with gr.Column(scale=2):
                gr.Markdown(UPLOAD_FORMAT.format(max_mb=config.max_upload_mb,
                                                 n_rows=len(tables.metadata),
                                                 max_cols=MAX_UPLOAD_COLUMNS))
            with gr.Column(scale=1):
                lower = gr.Checkbox(label="lower is better (error counts)", value=False)
                upload = gr.File(label="Your scores CSV", file_types=[".csv"], type="filepath",
                                 elem_id="upload-csv")
                clear = gr.Button("Remove my rows", size="sm")
        upload_status = gr.Markdown("", elem_id="upload-status")

        def on_upload(path, lower_is_better, uploaded, part, sort):
            if not path:
                return gr.update(), "", uploaded
            try:
                # a published name gets " (yours)"; the user's own earlier upload of a name is replaced
                new = evaluate_upload(path, tables, config, lower_is_better=bool(lower_is_better),
                                      taken=published_names)
            except ValueError as problem:
                return gr.update(), error(str(problem)), uploaded
            except Exception as problem:  # keep serving whatever the file holds
                return gr.update(), unexpected(problem), uploaded
            labels = {m.label for m in new}
            replaced = [m.label for m in uploaded if m.label in labels]
            uploaded = [m for m in uploaded if m.label not in labels] + new
            added = ", ".join(f"`{m.label}`" for m in new)
            verb = "Replaced" if replaced else "Added"
            message = f"**{verb}** {added} (highlighted): " + "; ".join(
                f"rank {_value(m, 'rank', part)} · sep {_value(m, 'sep', part)} · "
                f"delta {_value(m, 'delta', part)}" for m in new
            )
            return table_for(uploaded, part, sort), message, uploaded

        def on_view(uploaded, part, sort):
            return table_for(uploaded, part, sort)

        def on_clear(part, sort):
            return table_for([], part, sort), "", []

        upload.upload(on_upload, [upload, lower, uploaded_state, partition, sort_by],
                      [board, upload_status, uploaded_state])
        partition.change(on_view, [uploaded_state, partition, sort_by], board)
        sort_by.change(on_view, [uploaded_state, partition, sort_by], board)
        clear.click(on_clear, [partition, sort_by], [board, upload_status, uploaded_state])
        controls = (partition, sort_by)
    _community_section(community_board(config, published), error, controls)


def _community_section(community: Community, error: Callable[[str], str], controls=None) -> None:
    """The verified community rows (the published ones are the table above), following the tab's partition and sort
    ``controls`` (two radios; None: avg, by rank), and the rejected submissions with their reasons."""
    import gradio as gr

    gr.Markdown(COMMUNITY_INTRO)
    if not community.configured:
        gr.Markdown("No submissions source is configured: set `TS2_SUBMISSIONS` (a folder, or a Hub dataset "
                    "`OWNER/NAME@REVISION`) on a Space, or pass `ts2 demo --submissions ...`.",
                    elem_id="community-status")
        return
    if community.board is None:
        gr.Markdown(error(community.problem), elem_id="community-status")
        return
    board = community.board
    verified = sum(1 for row in board.rows if row["source"] == "community")
    gr.Markdown(f"Submissions: {board.source}: **{verified} verified**, **{len(board.rejected)} rejected**.",
                elem_id="community-status")

    def shown(part: str = "avg", sort: str = "rank"):
        frame = community_view(board, partition=part, sort_by=sort)
        styled = frame.style.format(precision=1, na_rep="-", subset=list(META_METRICS))
        return styled, community_caption(frame, partition=part, sort_by=sort)

    first, caption = shown()
    table = gr.Dataframe(value=first, label=caption, interactive=False, elem_id="community-board", max_height=1100)
    if controls is not None:
        def on_view(part, sort):
            value, label = shown(part, sort)
            return gr.update(value=value, label=label)

        for control in controls:
            control.change(on_view, list(controls), table)
    if board.notes:
        gr.Markdown("\n\n".join(f"*{n}*" for n in board.notes), elem_id="community-notes")
    if board.rejected:
        gr.Dataframe(value=rejected_view(board), interactive=False, elem_id="community-rejected", wrap=True,
                     label=f"rejected submissions ({len(board.rejected)}), each with the first problem found")
    else:
        gr.Markdown("No submission was rejected.", elem_id="community-rejected")
