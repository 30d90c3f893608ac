"""Where the names of a scatter plot's points go (figure (a) of :mod:`scorers.report.figures`): deterministic,
readable label placement in display pixels: stacks of points at one x get one column of labels, every other point
the nearest free spot among candidate offsets, with leader lines that cross no other leader, label, marker or line.
"""
from __future__ import annotations

import math
from typing import Collection, Mapping, Sequence

import numpy as np
from matplotlib.transforms import Bbox

__all__ = ["label_points"]

_LABEL_BOX = dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none", alpha=0.75)


def label_points(ax, x: np.ndarray, y: np.ndarray, labels: list[str], *, bold: set[int],
                 mine: set[int] = frozenset(), mine_colour: str,
                 lines: Sequence[tuple[np.ndarray, np.ndarray]] = ()) -> None:
    """Name every point, deterministically and readably.

    Stacks first: points at one x (the same cost) too close in y for a label beside each get one column of labels on
    their open side (:func:`_open_side`), in the points' top-to-bottom order, so their leader lines fan out without
    crossing. Then every other point, highest first, takes the nearest free spot among candidate offsets (beside the
    point, then rows further up/down and columns further out, with a leader line).

    A spot is rejected when its label comes within :data:`_LABEL_GAP` points of another label (no two labels read as
    one stacked block), hits a marker, leaves the axes or is crossed by one of ``lines`` (data-coordinate polylines,
    e.g. the Pareto step line) or a leader; a leader line is rejected when it crosses another leader or ``lines``, or
    runs through another label or marker. When no spot passes, the search runs again allowing a leader to cross
    ``lines``, then also markers; then the label is kept beside its point. Labels of ``mine`` are drawn in
    ``mine_colour``."""
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
                         color=mine_colour if i in mine else "black")
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
