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
from matplotlib.transforms import Bbox  # noqa: E402

from scorers.stats.graph import SEG, node_pairs  # noqa: E402
from scorers.stats.meta import TS2Result  # noqa: E402

__all__ = ["FORMATS", "correlation_heatmap", "error_graph", "pareto_front", "rank_vs_cost", "seg_histograms"]

DPI = 150
FORMATS = ("png", "pdf", "svg")  # what --format accepts: raster for screens, vector for papers
_YOURS = "crimson"  # colour of the user's own (highlighted) metrics
#: above this many metrics, figure (b) draws one image row per metric instead of one panel each
PANELS_MAX = 30
#: no figure side grows past this (a 200-metric heatmap at 0.45 in per metric would be 13,000 px square)
MAX_FIGURE_INCHES = 16.0
_LABEL_BOX = dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none", alpha=0.75)
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
        _label_points(ax, x, y, labels, bold=set(front) | set(np.flatnonzero(mine)), mine=set(np.flatnonzero(mine)),
                      lines=[_step_post(step_x, step_y)])
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
    nodes placed by error count (x) with edges between adjacent error levels, every image a dot coloured by its score.
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
        for a, b in node_pairs(seg.errors, adjacent_only=True):
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


def _label_points(ax, x: np.ndarray, y: np.ndarray, labels: list[str], *, bold: set[int],
                  mine: set[int] = frozenset(), lines: Sequence[tuple[np.ndarray, np.ndarray]] = ()) -> None:
    """Name every point, deterministically and readably.

    Stacks first: points at one x (the same cost) too close in y for a label beside each get one column of labels on
    their open side (:func:`_open_side`), in the points' top-to-bottom order, so their leader lines fan out without
    crossing. Then every other point, highest first, takes the nearest free spot among candidate offsets (beside the
    point, then rows further up/down and columns further out, with a leader line).

    A spot is rejected when its label comes within :data:`_LABEL_GAP` points of another label (no two labels read as
    one stacked block), hits a marker, leaves the axes or is crossed by one of ``lines`` (data-coordinate polylines,
    e.g. the Pareto step line) or a leader; a leader line is rejected when it crosses another leader or ``lines``, or
    runs through another label or marker. When no spot passes, the search runs again allowing a leader to cross
    ``lines``, then also markers; then the label is kept beside its point. Labels of ``mine`` are drawn in colour."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pixels = fig.dpi / 72.0
    centres = ax.transData.transform(np.column_stack([x, y]))
    walls = [segment for xs, ys in lines
             for segment in _polyline_segments(ax.transData.transform(np.column_stack([xs, ys])))]
    room = _Room(ax.get_window_extent(renderer), centres, walls, pixels, mine)
    styles, sizes = {}, {}
    for i in range(len(x)):
        styles[i] = dict(fontsize=8, va="center", fontweight="bold" if i in bold else "normal", bbox=_LABEL_BOX,
                         color=_YOURS if i in mine else "black")
        probe = ax.annotate(labels[i], (x[i], y[i]), xytext=(9.0, 0.0), textcoords="offset points", ha="left",
                            **styles[i])
        box = probe.get_window_extent(renderer).padded(pixels)  # the text and its white box (pad 0.1 em)
        probe.remove()
        sizes[i] = (box.width, box.height, (box.y0 + box.y1) / 2 - centres[i][1])  # va="center" centres it there
    chosen: dict[int, tuple] = {}
    for stack in _stacks(centres, sizes, room.gap):
        spots = _stack_spots(room, stack, sizes)
        if spots is not None:
            for i, spot in zip(stack, spots):
                room.take(spot)
                chosen[i] = spot
    for i in sorted(range(len(x)), key=lambda i: (-y[i], x[i])):
        if i in chosen:
            continue
        side = _open_side(centres, i, room.frame, band=3 * sizes[i][1], width=sizes[i][0])
        offsets = sorted(_LABEL_OFFSETS, key=lambda o: o[2] + (0.0 if o[0] * side >= 0 else _OTHER_SIDE_COST))
        spot = None
        for relax in (0, 1, 2):
            spot = next((s for s in (room.spot(i, dx, dy, sizes[i]) for dx, dy, _ in offsets)
                         if room.free(i, s, relax)), None)
            if spot is not None:
                break
        if spot is None:  # nowhere free: keep it beside its point (never seen on the release's 19 metrics)
            spot = room.spot(i, 9.0, 0.0, sizes[i])
        room.take(spot)
        chosen[i] = spot
    for i, (dx, dy, ha, box, leader) in sorted(chosen.items()):
        if leader is None:
            ax.annotate(labels[i], (x[i], y[i]), xytext=(dx, dy), textcoords="offset points", ha=ha, **styles[i])
            continue
        relpos = {"left": (0.0, 0.5), "right": (1.0, 0.5)}.get(ha, (0.5, 0.0 if dy > 0 else 1.0))
        ax.annotate(labels[i], (x[i], y[i]), xytext=(dx, dy), textcoords="offset points", ha=ha,
                    arrowprops=dict(arrowstyle="-", color="0.55", linewidth=0.6, shrinkA=0, shrinkB=4,
                                    relpos=relpos), **styles[i])


class _Room:
    """The free space of a scatter plot's labels (display pixels): the axes' frame, the markers, ``walls`` (segments
    no label may touch and leaders should not cross), and the labels and leader lines placed so far."""

    def __init__(self, frame: Bbox, centres: np.ndarray, walls: list, pixels: float, mine: Collection[int]):
        self.frame, self.centres, self.walls, self.pixels = frame, centres, walls, pixels
        self.markers = [Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)
                        for k, (cx, cy) in enumerate(centres) for r in [(11 if k in mine else 7) * pixels]]
        self.gap = _LABEL_GAP * pixels
        self.placed: list[Bbox] = []
        self.leaders: list = []

    def spot(self, i: int, dx: float, dy: float, size: tuple[float, float, float]) -> tuple:
        """``(dx, dy, ha, box, leader)`` of point ``i``'s label at offset ``(dx, dy)`` points (leader None beside
        the point)."""
        width, height, centre_dy = size
        ha = "left" if dx > 0 else ("right" if dx < 0 else "center")
        cx, cy = self.centres[i][0] + dx * self.pixels, self.centres[i][1] + dy * self.pixels + centre_dy
        x0 = {"left": cx - self.pixels, "right": cx - width + self.pixels, "center": cx - width / 2}[ha]
        box = Bbox.from_bounds(x0, cy - height / 2, width, height)
        leader = None
        if abs(dy) > 0.5 or abs(dx) > 9.0:  # away from its point: a leader line from the label's near edge
            marker = self.markers[i]
            leader = _leader(_attach_point(box, ha, dy), self.centres[i], (marker.x1 - marker.x0) / 2)
        return dx, dy, ha, box, leader

    def free(self, i: int, spot: tuple, relax: int = 0, placed: Sequence[Bbox] = (), leaders: Sequence = ()) -> bool:
        """Whether ``spot`` (of :meth:`spot`) is free; ``relax`` 1 lets its leader cross the walls, 2 also markers.
        ``placed`` / ``leaders``: more labels and leaders to keep clear of (a stack's own)."""
        _, _, _, box, leader = spot
        frame = self.frame
        if not (frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)):
            return False
        if any(box.overlaps(m) for m in self.markers):
            return False
        labels = [*self.placed, *placed]
        every_leader = [*self.leaders, *leaders]
        if any(box.padded(self.gap).overlaps(other) for other in labels):
            return False
        if any(_segment_hits_box(segment, box) for segment in self.walls + every_leader):
            return False
        if leader is None:
            return True
        if any(_segments_cross(leader, other) for other in every_leader):
            return False
        if relax < 1 and any(_segments_cross(leader, wall) for wall in self.walls):
            return False
        own = self.markers[i]
        apart = [m for k, m in enumerate(self.markers) if k != i and not m.overlaps(own)] if relax < 2 else []
        return not any(_segment_hits_box(leader, other) for other in labels + apart)

    def take(self, spot: tuple) -> None:
        self.placed.append(spot[3])
        if spot[4] is not None:
            self.leaders.append(spot[4])


def _stacks(centres: np.ndarray, sizes: Mapping[int, tuple], gap: float) -> list[list[int]]:
    """Runs of points (top to bottom) at one x (within 2 px) whose neighbours are closer in y than two labels'
    heights plus gaps: labels beside each would collide, or leave no room to move one."""
    columns: list[list[int]] = []
    for i in sorted(range(len(centres)), key=lambda k: (centres[k][0], -centres[k][1])):
        if columns and abs(centres[columns[-1][0]][0] - centres[i][0]) <= 2.0:
            columns[-1].append(i)
        else:
            columns.append([i])
    stacks = []
    for column in columns:
        column.sort(key=lambda k: -centres[k][1])
        run = [column[0]]
        for i in column[1:]:
            if centres[run[-1]][1] - centres[i][1] < 2 * ((sizes[run[-1]][1] + sizes[i][1]) / 2 + gap):
                run.append(i)
            else:
                if len(run) > 1:
                    stacks.append(run)
                run = [i]
        if len(run) > 1:
            stacks.append(run)
    return stacks


def _stack_spots(room: _Room, stack: list[int], sizes: Mapping[int, tuple]) -> list[tuple] | None:
    """One column of labels for ``stack`` (points top to bottom) on its open side: label centres spread to at
    least a label's height plus the gap apart, in the points' order, the column centred on the points (else moved
    up or down by rows of 11 pt) at 9-100 pt out; the first placement where every label is free, else None."""
    centres, pixels = room.centres, room.pixels
    top = stack[0]
    side = _open_side(centres, top, room.frame, band=3 * sizes[top][1],
                      width=max(sizes[i][0] for i in stack))
    wanted = [centres[i][1] for i in stack]
    spread = [wanted[0]]
    for k in range(1, len(stack)):
        step = (sizes[stack[k - 1]][1] + sizes[stack[k]][1]) / 2 + 1.25 * room.gap  # clear of the gap test
        spread.append(min(wanted[k], spread[-1] - step))
    middle = float(np.mean(wanted)) - float(np.mean(spread))
    shifts = sorted({round(middle + k * 11.0 * pixels, 6) for k in range(-10, 11)} | {0.0},
                    key=lambda s: abs(s - middle))
    for relax in (0, 1, 2):
        for far in (9.0, 18.0, 27.0, 36.0, 50.0, 65.0, 80.0, 100.0):
            for shift in shifts:
                spots: list[tuple] = []
                for i, level in zip(stack, spread):
                    dy = (level + shift - centres[i][1]) / pixels
                    spot = room.spot(i, side * far, dy, sizes[i])
                    if not room.free(i, spot, relax, [s[3] for s in spots],
                                     [s[4] for s in spots if s[4] is not None]):
                        break
                    spots.append(spot)
                else:
                    return spots
    return None


def _label_offsets() -> list[tuple[float, float, float]]:
    """Candidate label offsets ``(dx, dy, distance)`` in points from the point (dx > 0: label to the right): beside
    the point, above/below it, then rows of 11 pt up and down at columns 9-100 pt out on either side."""
    row = 11.0
    out = [(9.0, 0.0), (-9.0, 0.0), (0.0, row), (0.0, -row)]
    out += [(side * far, k * row) for far in (9.0, 18.0, 27.0, 36.0, 50.0, 65.0, 80.0, 100.0)
            for k in range(-14, 15) for side in (1, -1) if (far, k) != (9.0, 0)]
    return sorted([(dx, dy, math.hypot(max(abs(dx) - 9.0, 0.0), dy)) for dx, dy in out],
                  key=lambda o: (round(o[2], 6), -o[0], -o[1]))


def _open_side(centres: np.ndarray, i: int, frame: Bbox, band: float, width: float) -> int:
    """+1 (right) or -1 (left): right when the nearest other point within ``band`` pixels up or down (or the axes'
    edge) is further than ``width`` (a label's) on the right or than the nearest on the left; else left. A column of
    points next to another labels outwards."""
    cx, cy = centres[i]
    near = [(px - cx) for k, (px, py) in enumerate(centres) if k != i and abs(py - cy) <= band and px != cx]
    right = min([d for d in near if d > 0] + [frame.x1 - cx])
    left = min([-d for d in near if d < 0] + [cx - frame.x0])
    return 1 if right >= left or right > width else -1


#: extra distance (points) of a spot on the crowded side of a point
_OTHER_SIDE_COST = 30.0
_LABEL_OFFSETS = _label_offsets()


#: points of free space kept between two point labels
_LABEL_GAP = 1.5


def _attach_point(box: Bbox, ha: str, dy: float) -> tuple[float, float]:
    """Where a leader line leaves a label box (display pixels): the middle of its side facing the point."""
    if ha == "left":
        return box.x0, (box.y0 + box.y1) / 2
    if ha == "right":
        return box.x1, (box.y0 + box.y1) / 2
    return (box.x0 + box.x1) / 2, box.y0 if dy > 0 else box.y1


def _leader(start: tuple[float, float], centre: np.ndarray, radius: float):
    """The visible leader line from a label's ``start`` to its point's marker edge (``radius`` off the centre)."""
    (x0, y0), (x1, y1) = start, (float(centre[0]), float(centre[1]))
    length = math.hypot(x1 - x0, y1 - y0)
    keep = max(0.0, length - radius) / length if length else 0.0
    return (x0, y0), (x0 + (x1 - x0) * keep, y0 + (y1 - y0) * keep)


def _polyline_segments(points: np.ndarray) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """Consecutive point pairs of a polyline (display pixels) as segments."""
    return [(tuple(a), tuple(b)) for a, b in zip(points[:-1], points[1:])]


def _segments_cross(a, b) -> bool:
    """Whether segments ``a`` and ``b`` (``((x0, y0), (x1, y1))``) intersect (touching counts)."""
    (p, q), (r, s) = a, b

    def side(o, u, v):
        value = (u[0] - o[0]) * (v[1] - o[1]) - (u[1] - o[1]) * (v[0] - o[0])
        return 0 if abs(value) < 1e-9 else (1 if value > 0 else -1)

    def within(o, u, v):  # v on segment o-u, given collinear
        return min(o[0], u[0]) - 1e-9 <= v[0] <= max(o[0], u[0]) + 1e-9 and \
            min(o[1], u[1]) - 1e-9 <= v[1] <= max(o[1], u[1]) + 1e-9

    d1, d2, d3, d4 = side(p, q, r), side(p, q, s), side(r, s, p), side(r, s, q)
    if d1 != d2 and d3 != d4 and 0 not in (d1, d2, d3, d4):
        return True
    return ((d1 == 0 and within(p, q, r)) or (d2 == 0 and within(p, q, s)) or (d3 == 0 and within(r, s, p))
            or (d4 == 0 and within(r, s, q)))


def _segment_hits_box(segment, box: Bbox) -> bool:
    """Whether a segment (display pixels) passes through the inside of ``box`` (an end inside, or crossing a side)."""
    (x0, y0), (x1, y1) = segment
    if any(box.x0 < px < box.x1 and box.y0 < py < box.y1 for px, py in segment):
        return True
    corners = [(box.x0, box.y0), (box.x1, box.y0), (box.x1, box.y1), (box.x0, box.y1)]
    return any(_segments_cross(((x0, y0), (x1, y1)), (corners[k], corners[(k + 1) % 4])) for k in range(4))


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
