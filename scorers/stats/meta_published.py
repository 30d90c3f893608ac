"""``variant="published"``: the algorithm of the code that produced the paper's Table 2, kept apart from the spec's.

The paper's published full-precision table (``table2_full_precision.csv``, the official repository's
``src/output/pareto_information.csv``) was computed by an earlier version of the TS2 code whose walks differ from the
spec's definition (:func:`scorers.stats.graph.walks`). This module computes exactly that, so that ``ts2 reproduce --variant
published`` meets the published rank and sep values to rounding; :mod:`scorers.stats.meta` dispatches here for that variant.

Per SEG:

* **walks** -- :func:`scorers.stats.graph.paper_era_walks`: a walk starts at each error-0 node and then takes one node of
  every error level, level 0 included, so it holds two error-0 nodes (its head twice when the SEG has one head) and
  every error-0 image is counted twice. One walk per combination.
* **per walk** -- ``x`` the images' error counts, ``y`` their scores (oriented, higher = more faithful), NaN scores
  and their ``x`` dropped:

  - rank = ``-spearman(x, y)``; a constant input gives 0, fewer than 2 points give NaN;
  - sep = mean two-sample KS statistic over all pairs of distinct error levels of the walk (level populations include
    the duplicated error-0 images); no pair gives 0;
  - delta = mean over successive levels (ascending error) of ``mean(level k) - mean(level k+1)``; no pair gives 0.
* **per SEG** -- the mean of the walk values that are not NaN, weighted by each walk's number of (valid, duplicated)
  images; a SEG with no such walk is NaN.

Table (in :mod:`scorers.stats.meta`): means over SEGs; delta is divided by the sample standard deviation of the
metric's scores over every image of the input (:data:`DELTA_SCALE`).

Plain NumPy; no scipy at import time.
"""
from __future__ import annotations

import itertools

import numpy as np

from scorers.stats.graph import SEG, paper_era_walks

__all__ = ["DELTA_SCALE", "PublishedLayout"]

#: How the published delta Avg is normalised (see docs/reproduce.md, "Ours vs the paper").
DELTA_SCALE = ("sample standard deviation (ddof=1) of the metric's scores over every image of the input (all SEGs, "
               "not only the evaluated ones), the denominator that meets the published delta Avg")


class PublishedLayout:
    """The paper-era walks of one SEG, as index arrays into the SEG's images (node by node, as
    :attr:`scorers.stats.graph.SEG.image_positions` orders them)."""

    def __init__(self, seg: SEG):
        offsets = np.concatenate([[0], np.cumsum([len(m) for m in seg.members])])
        node_images = [np.arange(offsets[k], offsets[k + 1]) for k in range(len(seg.nodes))]
        self.walk_images: list[np.ndarray] = []
        self.walk_errors: list[np.ndarray] = []
        for walk in paper_era_walks(seg.errors):
            images = np.concatenate([node_images[k] for k in walk])
            errors = np.concatenate([np.full(len(node_images[k]), seg.errors[k], dtype=np.float64) for k in walk])
            order = np.argsort(errors, kind="stable")
            self.walk_images.append(images[order])
            self.walk_errors.append(errors[order])

    def values(self, scores: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``{"rank"|"sep"|"delta": (per-column SEG value, per-column number of walks used)}`` for a
        ``(n_images, n_columns)`` block of oriented scores."""
        n_cols = scores.shape[1]
        sums = {m: np.zeros(n_cols) for m in ("rank", "sep", "delta")}
        weights = {m: np.zeros(n_cols) for m in ("rank", "sep", "delta")}
        used = {m: np.zeros(n_cols, dtype=np.int64) for m in ("rank", "sep", "delta")}
        for images, errors in zip(self.walk_images, self.walk_errors):
            y_all = scores[images]
            clean = ~np.isnan(y_all).any(axis=0)
            groups = []
            if clean.any():
                groups.append((np.flatnonzero(clean), errors, y_all[:, clean]))
            for c in np.flatnonzero(~clean):
                keep = ~np.isnan(y_all[:, c])
                groups.append((np.array([c]), errors[keep], y_all[keep][:, [c]]))
            for cols, x, y in groups:
                n = x.size
                if n == 0:
                    continue
                walk = {"rank": _walk_rank(x, y), "sep": _walk_sep(x, y), "delta": _walk_delta(x, y)}
                for m, value in walk.items():
                    ok = ~np.isnan(value)
                    sums[m][cols[ok]] += n * value[ok]
                    weights[m][cols[ok]] += n
                    used[m][cols[ok]] += 1
        out = {}
        for m in sums:
            value = np.divide(sums[m], weights[m], out=np.full(n_cols, np.nan), where=weights[m] > 0)
            out[m] = (value, used[m])
        return out


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based average ranks of each column of ``values`` (ties share their mean rank), as scipy's rankdata."""
    less = (values[None, :, :] < values[:, None, :]).sum(axis=1)  # [i, c] = #{j: v_j < v_i}
    equal = (values[None, :, :] == values[:, None, :]).sum(axis=1)
    return less + (equal + 1.0) / 2.0


def _walk_rank(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``-spearman(x, y)`` per column of ``y``; NaN with < 2 points, 0 for a constant input."""
    if x.size < 2:
        return np.full(y.shape[1], np.nan)
    rx = _average_ranks(x[:, None])[:, 0]
    ry = _average_ranks(y)
    dx = rx - rx.mean()
    dy = ry - ry.mean(axis=0)
    cov = dx @ dy
    var = (dx @ dx) * (dy * dy).sum(axis=0)
    r = np.divide(cov, np.sqrt(var), out=np.zeros(y.shape[1]), where=var > 0)
    return -r


def _walk_sep(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mean two-sample KS statistic over pairs of distinct error levels, per column; 0 with no pair."""
    levels = np.unique(x)
    if levels.size < 2:
        return np.zeros(y.shape[1])
    members = [y[x == level] for level in levels]
    total = np.zeros(y.shape[1])
    pairs = 0
    for a, b in itertools.combinations(members, 2):
        points = np.concatenate([a, b])  # every jump point of both empirical CDFs
        cdf_a = (a[:, None, :] <= points[None, :, :]).mean(axis=0)
        cdf_b = (b[:, None, :] <= points[None, :, :]).mean(axis=0)
        total += np.abs(cdf_a - cdf_b).max(axis=0)
        pairs += 1
    return total / pairs


def _walk_delta(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mean of ``mean(level k) - mean(level k+1)`` over successive levels (ascending), per column; 0 with no pair."""
    levels = np.unique(x)
    if levels.size < 2:
        return np.zeros(y.shape[1])
    means = np.stack([y[x == level].mean(axis=0) for level in levels])
    return (means[:-1] - means[1:]).mean(axis=0)
