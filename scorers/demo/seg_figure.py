"""The one drawing of a SEG's graph in the demo (the SEG explorer and the Build a SEG tab): nodes by error count,
left to right, each with its label and image count; edges as plain lines between levels (the walks) or as arrows
labelled with the added error."""
from __future__ import annotations

from collections.abc import Collection, Sequence

from matplotlib.figure import Figure

__all__ = ["seg_graph_figure"]

HEAD_COLOUR, NODE_COLOUR, LINE_COLOUR, RING_COLOUR = "#4c72b0", "#dd8452", "#9aa3b2", "#c0392b"


def seg_graph_figure(nodes: Sequence[tuple[str, int, int]], edges: Sequence[tuple[str, str, str | None]], *,
                     title: str, ringed: Collection[str] = (), title_size: int = 10) -> Figure:
    """The graph of one SEG.

    Parameters
    ----------
    nodes : ``(label, error count, number of images)`` per node; within a level, nodes are stacked in this order.
    edges : ``(from label, to label, added error)``; an error of None draws a plain line (a walk step), a text an
        arrow labelled with it.
    title : the axes title.
    ringed : labels drawn with a red ring (e.g. error sets not reachable one error at a time).
    """
    levels = sorted({count for _, count, _ in nodes})
    column = {n: [label for label, count, _ in nodes if count == n] for n in levels}
    position = {label: (x, (len(column[n]) - 1) / 2.0 - j)
                for x, n in enumerate(levels) for j, label in enumerate(column[n])}
    tallest = max((len(v) for v in column.values()), default=1)
    fig = Figure(figsize=(max(4.0, 1.9 * len(levels)), max(2.2, 1.1 * tallest)), dpi=100)
    ax = fig.add_subplot()
    for start, end, error in edges:
        (x0, y0), (x1, y1) = position[start], position[end]
        if error is None:
            ax.plot([x0, x1], [y0, y1], color=LINE_COLOUR, lw=1.2, zorder=1)
            continue
        ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=1,
                    arrowprops={"arrowstyle": "-|>", "color": LINE_COLOUR, "lw": 1.2, "shrinkA": 22, "shrinkB": 22})
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, error, fontsize=7, color="#555", ha="center", va="bottom", zorder=4)
    for label, count, n_images in nodes:
        x, y = position[label]
        colour = HEAD_COLOUR if count == 0 else NODE_COLOUR
        ring = label in ringed
        ax.scatter([x], [y], s=1500, color=colour, zorder=2, edgecolors=RING_COLOUR if ring else colour,
                   linewidths=3 if ring else 1)
        ax.text(x, y, f"{label}\n{n_images} img", ha="center", va="center", color="white", fontsize=9, zorder=3)
    ax.set_xticks(range(len(levels)), [f"{n} error{'s' if n != 1 else ''}" for n in levels])
    ax.set_yticks([])
    ax.set_xlim(-0.6, len(levels) - 0.4)
    ax.set_ylim(-tallest / 2.0 - 0.2, tallest / 2.0 + 0.2)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title(title, fontsize=title_size)
    fig.tight_layout()
    return fig
