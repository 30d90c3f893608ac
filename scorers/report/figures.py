"""The report's four figures (matplotlib, Agg backend; PNG, and PDF/SVG vector files for papers): cost vs rank with
the Pareto front, per-SEG histograms, a metric-by-metric correlation heatmap, and one SEG's error graph with every
image's score. Ranks are shown in % (as in the tables); the user's own metrics (``highlight``) are drawn apart and
marked "yours".

Inputs are the meta results (``{column: TS2Result}``) and per-image scores already computed by the library; this module
draws and never computes a meta-metric itself.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Collection, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

from scorers.report.label_placement import label_points  # noqa: E402
from scorers.stats.graph import SEG, node_pairs  # noqa: E402
from scorers.stats.meta import TS2Result  # noqa: E402

__all__ = ["FORMATS", "correlation_heatmap", "error_graph", "graph_edges", "pareto_front", "rank_vs_cost",
           "seg_histograms", "wrong_rate_figure"]

DPI = 150
FORMATS = ("png", "pdf", "svg")  # what --format accepts: raster for screens, vector for papers
_YOURS = "crimson"  # colour of the user's own (highlighted) metrics
#: above this many metrics, figure (b) draws one image row per metric instead of one panel each
PANELS_MAX = 30
#: no figure side grows past this (a 200-metric heatmap at 0.45 in per metric would be 13,000 px square)
MAX_FIGURE_INCHES = 16.0
_FAMILY_COLOURS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
                   "tab:olive", "tab:cyan", "tab:gray"]


def pareto_front(costs: Sequence[float], values: Sequence[float]) -> list[int]:
    """Indices of the points no other point beats (cost <= and value >=, one strictly), sorted by cost."""
    costs, values = np.asarray(costs, float), np.asarray(values, float)
    order = sorted(range(len(costs)), key=lambda i: (costs[i], -values[i]))
    front, best = [], -math.inf
    for i in order:
        if values[i] > best:
            front.append(i)
            best = values[i]
    return front


def rank_vs_cost(
    board: pd.DataFrame,
    flops: Mapping[str, float],
    path: str | Path,
    *,
    value: str = "rank_avg",
    highlight: Collection[str] = (),
    formats: Sequence[str] = ("png",),
) -> tuple[Path, list[str]]:
    """Figure (a): ``value`` (%, default rank Avg) against FLOPs per image (log x), Pareto front drawn as a step line.

    ``board`` is a leaderboard frame (``column, name, family`` + values). Metrics without a cost are left out and
    listed in a note under the plot; returns the path (of the first of ``formats``) and the skipped columns.
    ``highlight`` columns (the user's own) are stars labelled "(yours)", in a legend entry naming their family or
    "yours".
    """
    have = board[board["column"].isin(list(flops)) & board[value].notna()]
    skipped = [c for c in board["column"] if c not in flops]
    fig, ax = plt.subplots(figsize=(9, 6))
    if have.empty:
        ax.text(0.5, 0.5, "no metric has a FLOPs cost\n(add a paper table or --flops COLUMN=1.2T)",
                ha="center", va="center", transform=ax.transAxes, fontsize=12)
        ax.set_axis_off()
        fig.tight_layout(rect=(0, 0.04 if skipped else 0, 1, 1))
    else:
        x = np.array([flops[c] for c in have["column"]])
        y = have[value].to_numpy(float)
        mine = have["column"].isin(list(highlight)).to_numpy()
        colours = _family_colours(have["family"][~mine])
        for family in dict.fromkeys(have["family"][~mine]):
            mask = (have["family"] == family).to_numpy() & ~mine
            ax.scatter(x[mask], y[mask], s=55, color=colours[family], label=family or "(no family)", zorder=3,
                       edgecolor="black", linewidth=0.5)
        for family in dict.fromkeys(have["family"][mine]):
            mask = (have["family"] == family).to_numpy() & mine
            ax.scatter(x[mask], y[mask], s=260, marker="*", color=_YOURS, zorder=5, edgecolor="black", linewidth=0.6,
                       label=f"yours ({family})" if family else "yours")
        front = pareto_front(x, y)
        fx, fy = x[front], y[front]
        step_x = np.concatenate([fx, [x.max() * 12]])
        step_y = np.concatenate([fy, [fy[-1]]])
        ax.step(step_x, step_y, where="post", color="black", linestyle="--", linewidth=1.2, zorder=2,
                label="Pareto front")
        ax.scatter(fx, fy, s=170, facecolor="none", edgecolor="black", linewidth=1.4, zorder=4)
        ax.set_xscale("log")
        ax.set_xlim(x.min() / 4, x.max() * 12)
        pad = max(2.0, 0.06 * (y.max() - y.min()))
        ax.set_ylim(y.min() - pad, y.max() + pad)
        ax.set_xlabel("compute cost (FLOPs per image, log scale)", fontsize=11)
        ax.set_ylabel(f"{_label(value)} (%)", fontsize=11)
        ax.set_title(f"TS2 {_label(value)} vs compute cost (Pareto front circled)", fontsize=12)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
        fig.tight_layout(rect=(0, 0.04 if skipped else 0, 1, 1))
        labels = [f"{n} (yours)" if m else n for n, m in zip(have["name"].astype(str), mine)]
        label_points(ax, x, y, labels, bold=set(front) | set(np.flatnonzero(mine)), mine=set(np.flatnonzero(mine)),
                     mine_colour=_YOURS, lines=[_step_post(step_x, step_y)])
    if skipped:
        by_column = board.set_index("column")["name"].astype(str)
        names = ", ".join(f"{by_column[c]} (yours)" if c in highlight else by_column[c] for c in skipped)
        fig.text(0.01, 0.01, f"not shown (no FLOPs cost): {names}", fontsize=8, ha="left", va="bottom", wrap=True)
    return _save(fig, path, formats), skipped


def seg_histograms(
    results: Mapping[str, TS2Result],
    path: str | Path,
    *,
    names: Mapping[str, str] | None = None,
    meta_metrics: Sequence[str] = ("rank", "sep"),
    ncols: int = 5,
    highlight: Collection[str] = (),
    formats: Sequence[str] = ("png",),
) -> Path:
    """Figure (b): one panel per metric, histograms of its per-SEG values in % (rank in [-100, 100], sep in
    [0, 100]); ``highlight`` panels (the user's own metrics) are framed and titled "(yours)".

    Above ``PANELS_MAX`` metrics the panels become one image per meta-metric (a row per metric, a column per bin,
    colour = number of SEGs): a figure of fixed size, so time and memory stay flat in the number of columns."""
    columns = list(results)
    names = names or {}
    if len(columns) > PANELS_MAX:
        return _seg_histogram_rows(results, path, names=names, meta_metrics=meta_metrics, highlight=highlight,
                                  formats=formats)
    nrows = math.ceil(len(columns) / ncols)
    ncols = min(ncols, len(columns))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.0 * ncols, 2.4 * nrows + 0.8), squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    bins = np.linspace(-100, 100, 41)
    colours = {"rank": "tab:blue", "sep": "tab:orange", "delta": "tab:green"}
    for ax, column in zip(axes.flat, columns):
        for meta_metric in meta_metrics:
            values = results[column][meta_metric].per_seg
            values = values[~np.isnan(values)]
            ax.hist(np.clip(100 * values, -100, 100), bins=bins, alpha=0.6, color=colours.get(meta_metric),
                    label=meta_metric)
        ax.set_title(names.get(column, column), fontsize=10)
        if column in highlight:
            ax.set_title(f"{names.get(column, column)} (yours)", fontsize=10, color=_YOURS, fontweight="bold")
            for spine in ax.spines.values():
                spine.set(edgecolor=_YOURS, linewidth=2.0)
        ax.tick_params(labelsize=8)
        ax.axvline(0, color="grey", linewidth=0.6)
    for ax in axes.flat[len(columns):]:
        ax.set_axis_off()
    for ax in axes.flat[max(0, len(columns) - ncols):len(columns)]:  # the lowest panel of every column
        ax.set_xlabel("per-SEG value (%)", fontsize=9)
        ax.tick_params(labelbottom=True)
    for ax in axes[:, 0]:
        ax.set_ylabel("SEGs", fontsize=9)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.suptitle("Per-SEG " + " and ".join(meta_metrics) + " of each metric (histograms over SEGs)", fontsize=13)
    fig.legend(handles, labels, loc="outside lower center", fontsize=10, ncol=len(meta_metrics))  # off the title
    return _save(fig, path, formats)


def _seg_histogram_rows(results, path, *, names, meta_metrics, highlight=(), formats=("png",)) -> Path:
    """:func:`seg_histograms` for many metrics: per meta-metric, an image of per-SEG histograms, one row a metric."""
    columns = list(results)
    bins = np.linspace(-100, 100, 41)  # in %, as every figure and table
    fig, axes = plt.subplots(1, len(meta_metrics), figsize=(6.0 * len(meta_metrics), MAX_FIGURE_INCHES),
                             squeeze=False, layout="constrained")
    for ax, meta_metric in zip(axes.flat, meta_metrics):
        counts = np.empty((len(columns), bins.size - 1))
        for row, column in enumerate(columns):
            values = results[column][meta_metric].per_seg
            counts[row] = np.histogram(np.clip(100 * values[~np.isnan(values)], -100, 100), bins=bins)[0]
        image = ax.imshow(counts, aspect="auto", cmap="viridis", interpolation="nearest",
                          extent=(bins[0], bins[-1], len(columns) - 0.5, -0.5))
        _sparse_ticks(ax.set_yticks, [f"{names.get(c, c)} (yours)" if c in highlight else names.get(c, c)
                                     for c in columns])
        ax.set_xlabel(f"per-SEG {meta_metric} (%)", fontsize=9)
        ax.set_title(meta_metric, fontsize=11)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.02, label="SEGs")
    fig.suptitle(f"Per-SEG {' and '.join(meta_metrics)} of each of {len(columns)} metrics (histograms over SEGs, "
                 "one row per metric)", fontsize=13)
    return _save(fig, path, formats)


def _sparse_ticks(set_ticks, labels: Sequence[str], most: int = 60) -> None:
    """Tick labels for at most ``most`` of ``labels`` (every k-th), small enough to stay readable."""
    step = max(1, math.ceil(len(labels) / most))
    positions = list(range(0, len(labels), step))
    set_ticks(positions, [labels[i] for i in positions], fontsize=9 if len(positions) <= 25 else 6)


def correlation_heatmap(
    results: Mapping[str, TS2Result],
    path: str | Path,
    *,
    names: Mapping[str, str] | None = None,
    meta_metric: str = "rank",
    highlight: Collection[str] = (),
    formats: Sequence[str] = ("png",),
) -> tuple[Path, pd.DataFrame]:
    """Figure (c): Spearman correlation between metrics of their per-SEG ``meta_metric`` values (pairwise over SEGs
    where both are defined). Returns the path and the correlation matrix; ``highlight`` metrics' tick labels are marked
    "(yours)" in colour."""
    names = names or {}
    per_seg = pd.DataFrame({names.get(c, c): results[c][meta_metric].per_seg for c in results})
    corr = per_seg.corr(method="spearman", min_periods=3)
    n = len(corr)
    size = min(max(5.0, 0.45 * n + 2.5), MAX_FIGURE_INCHES)  # capped: memory and time flat in the column count
    fig, ax = plt.subplots(figsize=(size + 2.0, size), layout="constrained")
    image = ax.imshow(corr.to_numpy(), cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    marked = {names.get(c, c) for c in highlight}
    ticks = [f"{t} (yours)" if t in marked else t for t in corr.columns]
    _sparse_ticks(lambda positions, labels, **kw: ax.set_xticks(positions, labels, rotation=55, ha="right", **kw),
                  ticks)
    _sparse_ticks(ax.set_yticks, ticks)
    if n <= 25:
        for i in range(n):
            for j in range(n):
                v = corr.iat[i, j]
                if not np.isnan(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6.5 if n > 12 else 8,
                            color="white" if abs(v) > 0.6 else "black")
    for tick in ax.get_xticklabels() + ax.get_yticklabels():
        if tick.get_text().endswith(" (yours)"):
            tick.set(color=_YOURS, fontweight="bold")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03, label="Spearman ρ")
    ax.set_title(f"Agreement between metrics: correlation of per-SEG {meta_metric} scores", fontsize=12)
    return _save(fig, path, formats), corr


def error_graph(
    seg: SEG,
    scores: Mapping[str, np.ndarray],
    path: str | Path,
    *,
    names: Mapping[str, str] | None = None,
    results: Mapping[str, TS2Result] | None = None,
    prompt: str | None = None,
    highlight: Collection[str] = (),
    formats: Sequence[str] = ("png",),
) -> Path:
    """Figure (d): one panel per metric in ``scores`` (per-image arrays indexed like ``seg.members``): the SEG's
    nodes placed by error count (x) with the SEG's own edges when it carries them (a built dir's ``segs.json``,
    :func:`scorers.stats.graph.attach_edges`), else edges between adjacent error levels, every image a dot coloured
    by its score.
    With ``results`` each panel's title shows that metric's rank on this SEG (in %)."""
    names = names or {}
    columns = list(scores)
    positions = _node_layout(seg)
    ncols = min(2, len(columns))
    nrows = math.ceil(len(columns) / ncols)
    levels = sorted(set(seg.errors))
    width = max(4.5, 1.9 * len(levels) + 1.5)
    height = max(3.2, 1.15 * max(seg.errors.count(e) for e in levels) + 1.2)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows + 0.9), squeeze=False)
    n_images = sum(len(m) for m in seg.members)
    for ax, column in zip(axes.flat, columns):
        values = np.asarray(scores[column], dtype=float)
        seg_values = values[seg.image_positions]
        finite = seg_values[~np.isnan(seg_values)]
        lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 1.0)
        norm = matplotlib.colors.Normalize(vmin=lo, vmax=hi if hi > lo else lo + 1e-9)
        cmap = matplotlib.colormaps["viridis"]
        for a, b in graph_edges(seg):
            (xa, ya), (xb, yb) = positions[a], positions[b]
            ax.plot([xa + 0.38, xb - 0.38], [ya, yb], color="0.6", linewidth=1.0, zorder=1)
        for k, label in enumerate(seg.nodes):
            x0, y0 = positions[k]
            ax.add_patch(FancyBboxPatch((x0 - 0.38, y0 - 0.3), 0.76, 0.6, boxstyle="round,pad=0.02",
                                        facecolor="0.95", edgecolor="0.3", linewidth=1.0, zorder=2))
            ax.text(x0, y0 + 0.36, label, ha="center", va="bottom", fontsize=9, fontweight="bold")
            members = seg.members[k]
            for j, (dx, dy) in enumerate(_dot_grid(len(members))):
                v = values[members[j]]
                colour = "white" if np.isnan(v) else cmap(norm(v))
                ax.scatter(x0 + dx, y0 + dy, s=70, color=colour, edgecolor="black", linewidth=0.5, zorder=3)
                if n_images <= 40:
                    ax.text(x0 + dx, y0 + dy - 0.11, "nan" if np.isnan(v) else f"{v:.2g}", ha="center", va="top",
                            fontsize=6, zorder=4)
        xs = [p[0] for p in positions]
        ys = [p[1] for p in positions]
        ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
        ax.set_ylim(min(ys) - 0.55, max(ys) + 0.65)
        ax.set_xticks(levels, [str(e) for e in levels])
        ax.set_yticks([])
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
        ax.set_xlabel("error count (node level)", fontsize=10)
        title = names.get(column, column)
        if results is not None and column in results:
            match = np.flatnonzero(results[column].rank.seg_ids == seg.seg_id)
            if match.size:
                rank = results[column].rank.per_seg[match[0]]
                title += f" — rank on this SEG: {100 * rank:.1f}%" if not np.isnan(rank) else " — rank: n/a"
            if not results[column].higher_is_better:
                title += " (lower is better)"
        if column in highlight:
            ax.set_title(title + " (yours)", fontsize=10, color=_YOURS, fontweight="bold")
        else:
            ax.set_title(title, fontsize=10)
        sm = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
        fig.colorbar(sm, ax=ax, fraction=0.04, pad=0.02, label="score")
    for ax in axes.flat[len(columns):]:
        ax.set_axis_off()
    head = f"SEG {seg.seg_id} ({seg.partition})"
    if prompt:
        # straight quotes: a PDF (TrueType fonts) draws a curly quote from a second font, and the kerning across
        # the font change shifts the letter beside it onto the quote
        head += f': "{_shorten(prompt, 90)}"'
    fig.suptitle(head + " — every image's score on its error graph", fontsize=12)
    fig.tight_layout()
    return _save(fig, path, formats)


def wrong_rate_figure(frame: pd.DataFrame, path: str | Path, *, highlight: Collection[str] = (),
                      formats: Sequence[str] = ("png",)) -> Path:
    """The elements figure: the rate of wrong answers (%) against the image's node error count, one line per metric
    with its bootstrap interval as a band (:func:`scorers.report.elements.wrong_rate_frame`'s rows: ``metric,
    error_count, wrong_rate, ci_low, ci_high``, in %). At 0 errors it is the false-alarm rate; a metric that finds
    errors rises with the count. ``highlight`` metrics are drawn thick, marked "(yours)"."""
    fig, ax = plt.subplots(figsize=(7.5, 5), layout="constrained")
    for k, (metric, rows) in enumerate(frame.groupby("metric", sort=False)):
        rows = rows.sort_values("error_count")
        x, y = rows["error_count"].to_numpy(float), rows["wrong_rate"].to_numpy(float)
        colour = _FAMILY_COLOURS[k % len(_FAMILY_COLOURS)]
        mine = metric in highlight
        ax.plot(x, y, "o-", color=colour, linewidth=2.6 if mine else 1.5,
                label=f"{metric} (yours)" if mine else str(metric))
        low, high = rows["ci_low"].to_numpy(float), rows["ci_high"].to_numpy(float)
        if np.isfinite(low).any():
            ax.fill_between(x, low, high, color=colour, alpha=0.15, linewidth=0)
    counts = sorted(frame["error_count"].unique())
    ax.set_xticks(counts)
    ax.set_xlabel("errors in the image (node error count; 0 = the SEG's head)")
    ax.set_ylabel("wrong answers (%)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.set_title("Answers that disagree with the expected answer, by error count\n"
                 "(at 0 errors: false alarms; bands: bootstrap intervals over SEGs)", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    return _save(fig, path, formats)


def graph_edges(seg: SEG) -> list[tuple[int, int]]:
    """The edges figure (d) draws, as node positions: the SEG's own (a built dir's ``segs.json``) when it carries
    them, else every pair of nodes on adjacent error levels (TS2's level rule)."""
    return list(seg.edges) if seg.edges is not None else node_pairs(seg.errors, adjacent_only=True)


def _node_layout(seg: SEG) -> list[tuple[float, float]]:
    """x = error count, nodes of one level spread evenly around y = 0 (in label order)."""
    positions: list[tuple[float, float]] = []
    for k, err in enumerate(seg.errors):
        level = [j for j, e in enumerate(seg.errors) if e == err]
        i = level.index(k)
        positions.append((float(err), (len(level) - 1) / 2.0 - i))
    return positions


def _dot_grid(n: int) -> list[tuple[float, float]]:
    """Offsets of ``n`` image dots inside a node box (rows of up to 5)."""
    per_row = min(5, max(n, 1))
    rows = math.ceil(n / per_row) if n else 0
    step_x, step_y = 0.14, 0.22 if rows <= 2 else 0.16
    out = []
    for j in range(n):
        r, c = divmod(j, per_row)
        in_row = min(per_row, n - r * per_row)
        out.append(((c - (in_row - 1) / 2) * step_x, ((rows - 1) / 2 - r) * step_y + 0.03))
    return out


def _step_post(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vertices of ``ax.step(xs, ys, where="post")``: each level runs to the next x, then the line rises."""
    vx, vy = [xs[0]], [ys[0]]
    for k in range(1, len(xs)):
        vx += [xs[k], xs[k]]
        vy += [ys[k - 1], ys[k]]
    return np.asarray(vx, float), np.asarray(vy, float)


def _family_colours(families: pd.Series) -> dict[str, str]:
    return {f: _FAMILY_COLOURS[k % len(_FAMILY_COLOURS)] for k, f in enumerate(dict.fromkeys(families))}


def _label(value: str) -> str:
    meta_metric, _, partition = value.partition("_")
    return f"{meta_metric} ({partition or 'avg'})"


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _save(fig, path: str | Path, formats: Sequence[str] = ("png",)) -> Path:
    """Write ``path`` once per format (its suffix replaced: ``x.png`` -> ``x.pdf``, ``x.svg``) and return the first.
    PDF and SVG are vector files with TrueType (not Type 3) fonts and no creation date, so a rerun gives the same
    bytes and publishers' font checks pass."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    unknown = [fmt for fmt in formats if fmt not in FORMATS]
    if unknown:
        plt.close(fig)
        raise ValueError(f"--format {unknown[0]!r}: expected some of {', '.join(FORMATS)}")
    written = []
    with matplotlib.rc_context({"pdf.fonttype": 42, "svg.hashsalt": "ts2", "svg.fonttype": "path"}):
        for fmt in formats or ("png",):
            target = path.with_suffix(f".{fmt}")
            metadata = {"png": {}, "pdf": {"CreationDate": None}, "svg": {"Date": None}}[fmt]
            fig.savefig(target, dpi=DPI, format=fmt, metadata=metadata)
            written.append(target)
    plt.close(fig)
    return written[0]
