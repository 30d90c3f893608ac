"""rank / sep / delta per error type: "does my metric see missing objects but not wrong attributes?" (issue 35).

Needs each image's error set and each error's type (``missing``, ``attribute``, ``relation``, ``action``), which a
data dir built by ``ts2 seg build`` carries in ``metadata.csv`` (``errors`` and ``error_types``, ``;``-joined and
aligned). The release does not carry error types.

Definitions, per SEG and error type ``T`` (the nodes are the SEG's distinct error sets; an edge A -> B adds one error,
B = A + {e}, as :func:`scorers.stats.error_sets.error_set_edges` draws them):

* a **T-edge** is an edge whose added error ``e`` has type ``T``;
* a **T-walk** is a maximal path that starts at node 0 (the empty error set) and follows T-edges only: ``0 -> {e1} ->
  {e1, e2} -> ...``, every added error of type ``T``. It holds at least 2 nodes (a SEG with no T-edge out of node 0
  has no T-walk for ``T``). Each node on it has one more error than the one before, so its error counts are
  ``0, 1, 2, ...``; two walks may share nodes (``0 -> {a} -> {a, b}`` and ``0 -> {b} -> {a, b}``);
* **rank_T**: as TS2's rank, over the T-walks: per walk ``-spearman(error count, score)`` over the walk's images
  (NaN scores dropped, walks with < 2 valid images skipped, constant input gives 0), averaged over the walks weighted
  by each walk's number of valid images;
* **sep_T**: the mean two-sample Kolmogorov-Smirnov statistic over the distinct node pairs that lie on a common
  T-walk (so their error counts differ), as TS2's sep over all pairs with different error counts;
* **delta_T**: as TS2's (paper) delta, over the T-edges instead of adjacent levels: the mean of ``mean(A) - mean(B)``
  over the T-edges A -> B whose nodes keep a valid score, divided by ``score_std`` (the population standard
  deviation of the evaluated scores, the paper delta's).

A SEG without a T-walk is NaN for ``T`` (left out of the means, counted as skipped); sep_T of a SEG whose pairs all
lack valid scores is 0 (TS2's sep rule). With ``n_bootstrap``, each mean gets the bootstrap interval over SEGs of
``ts2 meta``'s table (:func:`scorers.stats.seg_intervals.seg_mean_intervals`: one generator seeded ``seed`` per metric, type
and meta-metric, drawing for ``avg`` and each partition in turn, resampling the SEGs with a T-walk). Scores are oriented first (higher = more faithful). Images are grouped
into SEGs and nodes by one sort; then, per SEG, its few walks and pairs are computed in plain Python (a walk holds a
handful of scores, where numpy's per-call cost would dominate): linear in the number of images, about 6 s of CPU
beyond ``ts2 meta``'s own for 16,500 SEGs and 284,000 images (``benchmarks/bench_seg_scale.py``).
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from scorers.stats.error_sets import error_set_edges, label_sets
from scorers.stats.seg_intervals import seg_mean_intervals
from scorers.stats.resampling import ConfidenceInterval

__all__ = ["ErrorTypeResult", "error_type_meta", "type_walks"]

META_METRICS = ("rank", "sep", "delta")


@dataclass
class ErrorTypeResult:
    """One metric's rank / sep / delta restricted to one error type: per-SEG values (NaN: no T-walk) and summaries
    (``{"avg": .., partition: ..}``, fractions), ``n_segs``: SEGs with a T-walk; ``confidence_interval``: the bootstrap
    intervals of the summaries (``{meta-metric: {key: (low, high)}}``), or None without bootstrap."""

    error_type: str
    seg_ids: np.ndarray
    partitions: np.ndarray
    per_seg: dict[str, np.ndarray]
    statistic: dict[str, dict[str, float]]
    n_segs: int
    n_walks: int = 0
    n_edges: int = 0
    confidence_interval: dict[str, dict[str, ConfidenceInterval]] | None = None

    def to_dict(self) -> dict:
        """JSON-ready (NaN -> None); ``ci`` (``{meta-metric: {key: [low, high]}}``, the main table's field name) with
        bootstrap intervals."""
        def clean(v: float):
            return None if v != v else float(v)

        out = {"error_type": self.error_type, "n_segs": self.n_segs, "n_walks": self.n_walks, "n_edges": self.n_edges,
               "summary": {m: {k: clean(v) for k, v in self.statistic[m].items()} for m in META_METRICS},
               "per_seg": {m: {int(s): clean(v) for s, v in zip(self.seg_ids, self.per_seg[m])} for m in META_METRICS}}
        if self.confidence_interval is not None:
            out["ci"] = {m: {k: [clean(lo), clean(hi)] for k, (lo, hi) in self.confidence_interval[m].items()}
                         for m in META_METRICS}
        return out


def type_walks(error_sets: Sequence[frozenset], types: Mapping[str, str], error_type: str
               ) -> tuple[list[tuple[int, ...]], list[tuple[int, int]]]:
    """The T-walks and T-edges of one SEG, as positions into ``error_sets`` (its distinct sets).

    Parameters
    ----------
    error_sets : the SEG's distinct error sets (frozensets of labels); node 0 is the empty set.
    types : ``{error label: type}`` for every label used.
    error_type : the type ``T``.

    Returns
    -------
    (walks, edges)
        ``walks``: maximal paths from the empty set along T-edges, each of >= 2 nodes, in depth-first order (edges in
        :func:`~scorers.stats.error_sets.error_set_edges` order); ``edges``: the T-edges reachable from node 0.

    Raises
    ------
    KeyError
        An error label with no entry in ``types``.

    Examples
    --------
    Node 0, {dog}, {cat}, {dog, cat} (missing objects) and {red} (an attribute):

    >>> sets = [frozenset(), frozenset({"dog"}), frozenset({"cat"}), frozenset({"cat", "dog"}), frozenset({"red"})]
    >>> kinds = {"dog": "missing", "cat": "missing", "red": "attribute"}
    >>> type_walks(sets, kinds, "missing")
    ([(0, 2, 3), (0, 1, 3)], [(0, 2), (0, 1), (2, 3), (1, 3)])
    >>> type_walks(sets, kinds, "attribute")
    ([(0, 4)], [(0, 4)])
    >>> type_walks(sets, kinds, "action")
    ([], [])
    """
    return _walks(_positional_edges(error_sets), error_sets, types, error_type)


def _positional_edges(error_sets: Sequence[frozenset]) -> list[tuple[int, int, str]]:
    """:func:`~scorers.stats.error_sets.error_set_edges` as positions into ``error_sets`` (computed once per SEG)."""
    labelled = label_sets(error_sets)
    position = {s: k for k, s in enumerate(error_sets)}
    label_pos = {label: position[s] for label, s in labelled.items()}
    return [(label_pos[a], label_pos[b], e) for a, b, e in error_set_edges(error_sets)]


def _walks(all_edges, error_sets, types, error_type):
    children: dict[int, list[int]] = {}
    for a, b, e in all_edges:
        if types[e] == error_type:
            children.setdefault(a, []).append(b)
    start = next((k for k, s in enumerate(error_sets) if not s), None)
    walks: list[tuple[int, ...]] = []
    edges: list[tuple[int, int]] = []
    if start is None:
        return [], []
    seen_edges = set()
    stack = [(start,)]
    while stack:  # depth-first; a SEG's graph is small
        path = stack.pop()
        nxt = children.get(path[-1], [])
        for child in nxt:
            if (path[-1], child) not in seen_edges:
                seen_edges.add((path[-1], child))
                edges.append((path[-1], child))
        if not nxt and len(path) >= 2:
            walks.append(path)
        stack.extend(path + (child,) for child in reversed(nxt))
    return walks, edges


def _average_ranks(values: Sequence[float]) -> list[float]:
    """1-based average ranks (ties share their mean rank), as ``scipy.stats.rankdata``; plain Python, since a walk
    holds a handful of images and numpy's per-call cost would dominate."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mean_rank = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[order[k]] = mean_rank
        i = j + 1
    return ranks


def _spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho; 0 when either side is constant (TS2's rule)."""
    rx, ry = _average_ranks(x), _average_ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    dx = [r - mx for r in rx]
    dy = [r - my for r in ry]
    var = sum(d * d for d in dx) * sum(d * d for d in dy)
    return sum(a * b for a, b in zip(dx, dy)) / math.sqrt(var) if var > 0 else 0.0


def _ks(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sample Kolmogorov-Smirnov statistic (``scipy.stats.ks_2samp(a, b).statistic``) of two sorted lists."""
    return max(abs(bisect.bisect_right(a, v) / len(a) - bisect.bisect_right(b, v) / len(b)) for v in (*a, *b))


def _nanmean(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else float("nan")


def error_type_meta(
    seg_ids: np.ndarray,
    error_keys: Sequence[str],
    label_types: Mapping[tuple[int, str], str],
    scores: Mapping[str, np.ndarray],
    *,
    score_std: Mapping[str, float],
    partitions: Mapping[int, str],
    segs: Sequence[int] | None = None,
    separator: str = ";",
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, dict[str, ErrorTypeResult]]:
    """rank / sep / delta of each metric over the T-walks of each error type T (see the module docstring).

    Parameters
    ----------
    seg_ids : per-image SEG ids.
    error_keys : per-image error set, labels sorted and joined with ``separator`` (empty: error-free).
    label_types : ``{(seg_id, label): type}``.
    scores : ``{column: per-image scores}``, oriented (higher = more faithful), aligned with ``seg_ids``.
    score_std : ``{column: std}``, the divisor of delta (the paper delta's std over the evaluated images).
    partitions : ``{seg_id: partition}`` (summaries per partition, as TS2's).
    segs : the SEGs to evaluate (default: all).
    n_bootstrap, confidence, seed : bootstrap percentile intervals over SEGs of every summary (0 = none), as
        ``ts2 meta``'s table (:func:`scorers.stats.seg_intervals.seg_mean_intervals`).

    Returns
    -------
    ``{column: {type: ErrorTypeResult}}``, the types in the order first met (sorted by name within a SEG).

    Raises
    ------
    ValueError
        Lengths differ, or a label has no type.

    Examples
    --------
    One SEG: 0 (scores 1.0, 1.0), {dog} (0.5), {red} (1.0), both missing / attribute. The metric sees the missing
    dog (rank 1) but not the red (constant scores on the attribute walk: rank 0):

    >>> out = error_type_meta(np.array([0, 0, 0, 0]), ["", "", "dog", "red"],
    ...                       {(0, "dog"): "missing", (0, "red"): "attribute"},
    ...                       {"m": np.array([1.0, 1.0, 0.5, 1.0])}, score_std={"m": 0.25}, partitions={0: "x"})
    >>> out["m"]["missing"].statistic["rank"]["avg"], out["m"]["attribute"].statistic["rank"]["avg"]
    (1.0, 0.0)
    >>> out["m"]["missing"].statistic["delta"]["avg"]  # (1.0 - 0.5) / 0.25
    2.0
    """
    seg_ids = np.asarray(seg_ids, dtype=np.int64)
    keys = np.asarray(error_keys, dtype=object)
    if keys.size != seg_ids.size or any(np.asarray(v).size != seg_ids.size for v in scores.values()):
        raise ValueError("seg_ids, error_keys and every score column must have one entry per image")
    wanted = None if segs is None else {int(s) for s in segs}
    # group images by (SEG, error set): one sort, no loop over images
    uniques, codes = np.unique(keys.astype(str), return_inverse=True)
    order = np.lexsort((codes, seg_ids))
    pairs = np.stack([seg_ids[order], codes[order]], axis=1)
    cut = np.r_[0, np.flatnonzero((np.diff(pairs, axis=0) != 0).any(axis=1)) + 1, order.size]
    by_seg: dict[int, list[tuple[frozenset, np.ndarray]]] = {}
    for start, end in zip(cut[:-1], cut[1:]):
        seg, code = int(pairs[start, 0]), int(pairs[start, 1])
        if wanted is not None and seg not in wanted:
            continue
        text = uniques[code]
        members = order[start:end]
        by_seg.setdefault(seg, []).append((frozenset(text.split(separator)) if text else frozenset(), members))
    seg_list = sorted(by_seg)
    types_present: list[str] = []
    seg_types: dict[int, dict[str, str]] = {}
    for seg in seg_list:
        labels = sorted({e for s, _ in by_seg[seg] for e in s})
        missing = [e for e in labels if (seg, e) not in label_types]
        if missing:
            raise ValueError(f"SEG {seg}: error {missing[0]!r} has no type")
        seg_types[seg] = {e: label_types[(seg, e)] for e in labels}
        for t in sorted(set(seg_types[seg].values())):
            if t not in types_present:
                types_present.append(t)
    names = list(scores)
    block = np.column_stack([np.asarray(scores[n], dtype=np.float64) for n in names]) if names else np.empty((0, 0))
    stds = np.array([score_std[n] for n in names], dtype=np.float64)
    ids = np.asarray(seg_list, dtype=np.int64)
    parts = np.asarray([partitions[s] for s in seg_list], dtype=object)
    out: dict[str, dict[str, ErrorTypeResult]] = {n: {} for n in names}
    seg_edges = {seg: _positional_edges([s for s, _ in by_seg[seg]]) for seg in seg_list}
    for t in types_present:
        values = {m: np.full((len(seg_list), len(names)), np.nan) for m in META_METRICS}
        n_walks = n_edges = n_segs = 0
        for i, seg in enumerate(seg_list):
            nodes = by_seg[seg]
            sets = [s for s, _ in nodes]
            walks, edges = _walks(seg_edges[seg], sets, seg_types[seg], t)
            if not walks:
                continue
            n_segs += 1
            n_walks += len(walks)
            n_edges += len(edges)
            node_scores = [block[members] for _, members in nodes]
            for c in range(len(names)):
                valid = [sorted(v for v in scores_k[:, c].tolist() if v == v) for scores_k in node_scores]
                values["rank"][i, c] = _rank(walks, sets, valid)
                values["sep"][i, c] = _sep(walks, valid)
                values["delta"][i, c] = _delta(edges, valid, stds[c])
        for c, name in enumerate(names):
            per_seg = {m: values[m][:, c] for m in META_METRICS}
            statistic = {m: _summary(per_seg[m], parts) for m in META_METRICS}
            out[name][t] = ErrorTypeResult(t, ids, parts, per_seg, statistic, n_segs, n_walks, n_edges)
    if n_bootstrap:
        results = [r for types in out.values() for r in types.values()]
        intervals = iter(seg_mean_intervals([(r.per_seg[m], r.partitions) for r in results for m in META_METRICS],
                                            n_bootstrap, confidence, seed))
        for result in results:
            result.confidence_interval = {m: next(intervals) for m in META_METRICS}
    return out


def _rank(walks, sets, valid) -> float:
    total = weighted = 0.0
    for walk in walks:
        x = [float(len(sets[k])) for k in walk for _ in valid[k]]
        y = [v for k in walk for v in valid[k]]
        if len(y) < 2:
            continue
        weighted += len(y) * -_spearman(x, y)
        total += len(y)
    return weighted / total if total else float("nan")


def _sep(walks, valid) -> float:
    pairs = sorted({(walk[i], walk[j]) for walk in walks for i in range(len(walk)) for j in range(i + 1, len(walk))})
    stats = [_ks(valid[a], valid[b]) for a, b in pairs if valid[a] and valid[b]]
    return sum(stats) / len(stats) if stats else 0.0


def _delta(edges, valid, std: float) -> float:
    gaps = [sum(valid[a]) / len(valid[a]) - sum(valid[b]) / len(valid[b]) for a, b in edges if valid[a] and valid[b]]
    if not gaps or not (std > 0 and math.isfinite(std)):
        return float("nan")
    return sum(gaps) / len(gaps) / std


def _summary(per_seg: np.ndarray, partitions: np.ndarray) -> dict[str, float]:
    out = {"avg": _nanmean(per_seg)}
    for part in dict.fromkeys(partitions.tolist()):
        out[part] = _nanmean(per_seg[partitions == part])
    return out
