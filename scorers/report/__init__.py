"""Paper-ready output from per-image scores: the Table-2 leaderboard (Markdown/LaTeX/CSV) and four PNG figures.

``write_report`` is what ``ts2 report`` calls. Numbers come from :func:`scorers.ts2.reproduce.reproduce_table` (the same
function behind ``ts2 reproduce``), figures from :mod:`scorers.report.figures`. Needs matplotlib (``pip install
ts2-evaluate[report]``); the rest of the library never imports this package.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pandas as pd

from scorers.stats.graph import SEG, attach_edges, build_segs, resolve_seg_subset
from scorers.ts2.options import MetaOptions
from scorers.ts2.reproduce import Reproduction, reproduce_table
from scorers.tables.pandas_tables import score_columns
from scorers.report.costs import MEASURED_FLOPS, measured_flops_note, merged_flops
from scorers.report.figures import FORMATS, correlation_heatmap, error_graph, rank_vs_cost, seg_histograms
from scorers.report.table_writers import leaderboard_frame, to_latex, to_markdown, write_tables

__all__ = ["Report", "default_seg", "leaderboard_frame", "to_latex", "to_markdown", "write_report"]


@dataclass
class Report:
    """What :func:`write_report` produced: the numbers, the leaderboard frame, the files and notes to show the user."""

    reproduction: Reproduction
    board: pd.DataFrame
    paths: dict[str, Path]
    notes: list[str] = field(default_factory=list)


def default_seg(segs: Sequence[SEG]) -> SEG:
    """The SEG drawn in figure (d) when none is asked for: the first with 4-7 nodes over >= 3 error levels (big enough
    to show branching, small enough to read), else the one with the most nodes."""
    for seg in segs:
        if 4 <= len(seg.nodes) <= 7 and len(set(seg.errors)) >= 3:
            return seg
    return max(segs, key=lambda s: len(s.nodes))


def write_report(
    scores: pd.DataFrame | Sequence[tuple[str, pd.DataFrame]],
    metadata: pd.DataFrame,
    out_dir: str | Path,
    *,
    paper: pd.DataFrame | None = None,
    columns: Iterable[str] | None = None,
    options: MetaOptions = MetaOptions(n_bootstrap=1000),
    flops: Mapping[str, float] | None = None,
    seg_id: int | None = None,
    graph_columns: Sequence[str] | None = None,
    digits: int = 1,
    formats: Sequence[str] = ("png",),
    highlight: Iterable[str] | None = None,
    families: Mapping[str, str] | None = None,
) -> Report:
    """Leaderboard (``leaderboard.md/.tex/.csv``) and figures (``rank_vs_flops.png``, ``seg_histograms.png``,
    ``correlation_heatmap.png``, ``error_graph_seg<ID>.png``) for every score column, written under ``out_dir``.

    ``scores`` is one score frame or ``[(source, frame), ...]``; ``metadata`` a :func:`scorers.tables.pandas_tables.read_metadata`
    frame. ``options`` (:class:`~scorers.ts2.options.MetaOptions`, default 1,000 bootstrap resamples): orientation by
    :func:`scorers.stats.orientation.resolve_orientation` (the paper table, the release's known facts: LLMScore is
    lower-is-better; ``lower_is_better`` / ``higher_is_better`` name further columns); the SEGs (``"default"``: 0-163,
    ``"all"``/None or the SEG ids; the tables state them); a table without keys is paired by row position. With
    metadata that carries error types (a data dir built by ``ts2 seg build``), ``error_types.md`` / ``.csv`` hold
    rank / sep / delta per error type (:mod:`scorers.report.error_types`). ``flops``
    adds or overrides FLOPs per image. ``seg_id`` picks the SEG of figure (d) (default :func:`default_seg`), ``graph_columns`` its metrics (default: the
    two best and two worst by rank Avg, plus up to two highlighted metrics). ``formats``: any of ``png, pdf, svg``
    (each figure written once per format). ``highlight``: the user's own columns, drawn apart and marked "yours" in
    every figure (default: with ``paper``, the columns it does not list). ``families`` names their family.
    ``options.walks``: the walk rule of the numbers (``"edges"``: a note says so); with ``options.segs_file`` (a built
    dir's ``segs.json``) the error-graph figure draws the built edges, else edges between adjacent error levels.
    """
    formats = _check_formats(formats)
    seg_subset = resolve_seg_subset(options.seg_subset, metadata["seg_id"])
    tables = [("scores", scores)] if isinstance(scores, pd.DataFrame) else list(scores)
    by_type, by_type_note = _error_type_choice(metadata, options)
    ordered = _ordered_columns(tables, paper, columns)
    unknown = [c for c in graph_columns or () if c not in (ordered or [])]
    if unknown:  # the cheap checks before the expensive step (the meta-metrics and their intervals)
        raise ValueError(f"graph column(s) {unknown} not found; available: {ordered}")
    segs = build_segs(metadata["seg_id"].to_numpy(), metadata["node"].to_numpy())
    if seg_subset is not None:
        keep = {int(s) for s in seg_subset}
        segs = [s for s in segs if s.seg_id in keep]
    if options.segs_file is not None:  # a built dir: the graph figure draws its own edges
        from scorers.tables.segs_file import read_seg_edges

        segs = attach_edges(segs, read_seg_edges(options.segs_file))
    seg = (default_seg(segs) if seg_id is None else _find_seg(segs, seg_id)) if segs else None  # none: refused next
    reproduction = reproduce_table(tables, metadata, paper, columns=ordered,
                                   options=replace(options, seg_subset=seg_subset, lacking_keys_by_position=True,
                                                   by_error_type=by_type))
    wanted, raw = reproduction.columns, reproduction.values
    notes = list(reproduction.notes) + ([by_type_note] if by_type_note else [])
    board = leaderboard_frame(reproduction, paper)
    for column, family in (families or {}).items():
        if column not in raw:
            raise ValueError(f"--family {column!r}: no such score column; available: {wanted}")
        board.loc[board["column"] == column, "family"] = family
    if highlight is None:
        highlight = [c for c in wanted if c not in set(paper["column"])] if paper is not None else []
    highlight = list(highlight)
    unknown = [c for c in highlight if c not in raw]
    if unknown:
        raise ValueError(f"--highlight {unknown[0]!r}: no such score column; available: {wanted}")
    style = dict(highlight=highlight, formats=formats)
    out_dir = Path(out_dir)
    paths = dict(write_tables(board, out_dir, digits=digits))
    names = dict(zip(board["column"], board["name"]))
    if reproduction.by_error_type is not None:
        from scorers.report.error_types import write_error_type_tables

        paths.update(write_error_type_tables(reproduction.by_error_type, out_dir, names=names, digits=digits))

    cost = merged_flops(paper, flops, measured=MEASURED_FLOPS)
    measured_note = measured_flops_note(board["column"], paper, flops)
    if measured_note:
        notes.append(measured_note)
    paths["rank_vs_flops"], skipped = rank_vs_cost(board, cost, out_dir / "rank_vs_flops.png", **style)
    if skipped:
        notes.append(f"rank_vs_flops.png leaves out {len(skipped)} metric(s) without a FLOPs cost: "
                     f"{', '.join(skipped)} (pass --flops COLUMN=VALUE, e.g. {skipped[0]}=1.2T)")
    paths["seg_histograms"] = seg_histograms(reproduction.results, out_dir / "seg_histograms.png", names=names,
                                             **style)
    if len(wanted) >= 2:
        paths["correlation_heatmap"], _ = correlation_heatmap(reproduction.results, out_dir / "correlation_heatmap.png",
                                                              names=names, **style)
    else:
        notes.append("correlation_heatmap.png needs at least two metric columns; skipped")

    if options.walks == "edges":
        from scorers.ts2.result_text import EDGE_WALKS_NOTE

        notes.append(EDGE_WALKS_NOTE)
    chosen = list(graph_columns) if graph_columns else _contrast_columns(board, highlight)
    unknown = [c for c in chosen if c not in raw]
    if unknown:
        raise ValueError(f"graph column(s) {unknown} not found; available: {wanted}")
    prompt = str(metadata["prompt"].iloc[int(seg.members[0][0])]) if "prompt" in metadata.columns else None
    paths["error_graph"] = error_graph(seg, {c: raw[c] for c in chosen}, out_dir / f"error_graph_seg{seg.seg_id}.png",
                                       names=names, results=reproduction.results, prompt=prompt, **style)
    for kind in ("rank_vs_flops", "seg_histograms", "correlation_heatmap", "error_graph"):
        if kind in paths:
            for fmt in formats[1:]:
                paths[f"{kind} ({fmt})"] = paths[kind].with_suffix(f".{fmt}")
    return Report(reproduction=reproduction, board=board, paths=paths, notes=notes)


def _error_type_choice(metadata: pd.DataFrame, options: MetaOptions) -> tuple[bool, str]:
    """``(by_error_type, note)``: the per-error-type section (``error_types.md`` / ``.csv``) is computed when the metadata
    carries error types (:func:`scorers.tables.error_columns.has_error_types`) and the variant is ``paper``; another
    variant leaves it out with a note. The release has no error types: no section, no note."""
    from scorers.tables.error_columns import has_error_types

    if not has_error_types(metadata):
        return False, ""
    if options.variant != "paper":
        return False, (f"error_types.md is left out: rank / sep / delta per error type is computed for the paper "
                       f"variant (--variant paper), not {options.variant}")
    return True, ""


def _ordered_columns(tables: Sequence[tuple[str, pd.DataFrame]], paper: pd.DataFrame | None,
                     columns: Iterable[str] | None) -> list[str] | None:
    """Requested columns, else every score column: the paper's in Table 2 order first, then the rest as given."""
    if columns:
        return list(columns)
    available = [c for _, frame in tables for c in score_columns(frame)]
    order = [c for c in dict.fromkeys(paper["column"]) if c in available] if paper is not None else []
    return order + [c for c in available if c not in order] or None


def _contrast_columns(board: pd.DataFrame, highlight: Sequence[str] = (), k: int = 2) -> list[str]:
    """Up to ``2k`` columns in rank-Avg order: the ``k`` best and ``k`` worst (all of them when there are few); up to
    two ``highlight`` columns (the user's) are always among them, in place of the innermost best/worst."""
    ranked = board.sort_values("rank_avg", ascending=False, na_position="last")["column"].tolist()
    if len(ranked) <= 2 * k:
        return ranked
    default = ranked[:k] + ranked[-k:]
    missing = [c for c in highlight if c in ranked and c not in default]
    if not missing:
        return default
    mine = ([c for c in highlight if c in default] + missing)[:2]
    rest = [c for c in ranked if c not in mine]
    n = 2 * k - len(mine)
    keep = set(mine) | set(rest[: (n + 1) // 2]) | set(rest[len(rest) - n // 2:])
    return [c for c in ranked if c in keep]


def _check_formats(formats: Sequence[str] | str) -> tuple[str, ...]:
    """``"png,pdf"`` or ``["png", "pdf"]`` -> ``("png", "pdf")``; an unknown format is an error naming the choices."""
    if isinstance(formats, str):
        formats = formats.split(",")
    out = tuple(dict.fromkeys(f.strip().lower().lstrip(".") for f in formats if f.strip()))
    unknown = [f for f in out if f not in FORMATS]
    if unknown or not out:
        raise ValueError(f"--format {','.join(formats)!r}: expected a comma-separated list of {', '.join(FORMATS)}")
    return out


def _find_seg(segs: Sequence[SEG], seg_id: int) -> SEG:
    for seg in segs:
        if seg.seg_id == int(seg_id):
            return seg
    raise ValueError(f"--seg {seg_id}: no such SEG among the evaluated ones ({segs[0].seg_id}-{segs[-1].seg_id})")
