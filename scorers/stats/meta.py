"""TS2 meta-metrics: how well a faithfulness metric orders and separates the images of semantic error graphs.

Plain arrays in, dataclasses out (the CLI, reports, the demo and the ``ts2_meta`` evaluate module all format these).
Scores are oriented so that higher = more faithful (``higher_is_better=False`` flips them) before anything is computed.

Per SEG (see docs/judge-a-metric.md and the ``ts2_meta`` card for the full definitions):

* **rank**  -- every walk (one node per error level, increasing error) gives ``-spearman(error count, score)`` over the
  walk's images (NaN scores dropped, walks with < 2 images skipped, constant input gives 0); the SEG value is the
  mean over walks weighted by each walk's number of valid images.
* **sep**   -- mean two-sample Kolmogorov-Smirnov statistic over all node pairs with different error counts; a pair
  is computable when both nodes keep a valid score. A SEG with no computable pair (one error level, or NaN scores
  that empty a whole level) has sep 0, as in the spec and the official evaluator, and counts in the averages.
* **delta** -- ``variant="paper"``: mean ``mean(lower-error node) - mean(higher-error node)`` over node pairs whose
  error counts differ by exactly one, divided by the population standard deviation of all evaluated scores;
  ``variant="official"``: all pairs with different error counts, no normalisation.

Walks (``walks=``, :data:`scorers.stats.graph.WALK_RULES`): ``"levels"`` (default) is TS2's rule above, as the official
evaluators and the release's numbers; ``"edges"`` follows each SEG's own ``edges`` (a built dir's ``segs.json``): rank
walks are the maximal directed paths from node 0, sep and delta pair nodes joined by a directed path (the paper delta:
those one error apart, the edges).

Variants (a variant's name says what it computes):

* ``"paper"`` (default) -- the spec's definitions above.
* ``"official"`` -- what the official TS2 package computes (``SpearmanEvaluator``, ``KSTestEvaluator``,
  ``DeltaEvaluator``): the scores are **not reoriented** (``higher_is_better`` is ignored, as the official code does
  not negate lower-is-better metrics; ``TS2Result.oriented`` is False); delta takes every node pair with different
  error counts, raw, skipping a pair whose node mean is NaN (a NaN score makes its node's mean NaN), and a SEG with
  no usable pair (e.g. all images on error-0 nodes) scores 0 and counts; sep likewise skips every pair of a node
  holding a NaN score (``KSTestEvaluator`` passes it to scipy's ``ks_2samp``, whose statistic is then NaN).
* ``"published"`` -- the algorithm of the code behind the paper's published Table 2 (:mod:`scorers.stats.meta_published`):
  paper-era walks that visit level 0 twice (:func:`scorers.stats.graph.paper_era_walks`), rank/sep/delta per walk, walk
  values weighted by walk size; delta divided by the sample standard deviation (ddof=1) of the metric's scores over
  every image of the input (all SEGs, not only the evaluated ones).

The implementation is vectorised per SEG (ranks and empirical CDFs through comparison matrices), so all 19 released
metrics x 3 meta-metrics take a fraction of a second; ``tests/helpers/reference_meta.py`` is the straightforward scipy loop it is
checked against.

References: Saxon et al., "Who Evaluates the Evaluations? Objectively Scoring Text-to-Image Prompt Coherence Metrics
with T2IScoreScore (TS2)", NeurIPS 2024.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from scorers.stats.graph import (PARTITIONS, SEG, PartitionSpec, attach_edges, build_segs, check_walks, format_seg_range,
                                 resolve_seg_subset)
from scorers.stats.resampling import ConfidenceInterval, PairedComparison, paired_mean_test
from scorers.stats.seg_intervals import seg_mean_intervals, summary_groups
from scorers.checks import as_scores, check_choice
from scorers.errors import ParameterError
from scorers.json_safe import json_float

__all__ = [
    "META_METRICS",
    "VARIANTS",
    "MetaResult",
    "TS2Evaluator",
    "TS2Result",
    "compare",
    "ts2_meta",
]

META_METRICS = ("rank", "sep", "delta")
VARIANTS = ("paper", "official", "published")
SUMMARY_KEYS = ("avg",) + PARTITIONS


@dataclass
class MetaResult:
    """One meta-metric over a set of SEGs.

    ``per_seg`` holds the SEG values (fractions). A SEG with no valid walk (rank) or no computable node pair (delta)
    is NaN, excluded from the means and counted in ``n_skipped``; for sep such a SEG is 0 and counts in the means
    (the spec's rule). ``n_no_pair`` counts the SEGs where no walk/pair could be computed (for sep they are among
    ``n_used``, for rank and delta among ``n_skipped``). ``counts`` the number of walks (rank) or node pairs (sep,
    delta) that entered each value; ``statistic`` the means over SEGs for ``avg`` and each partition;
    ``confidence_interval`` optional bootstrap percentile intervals (``.low``, ``.high``) for the same keys.
    :meth:`to_dict` keeps the saved-result keys (``summary``, ``ci``) of ``ts2 meta --json`` / ``--out``.

    Examples:
        >>> rank = ts2_meta([0.9, 0.1, 0.2, 0.8], [0, 0, 1, 1], ["0", "1", "0", "1"]).rank
        >>> rank.seg_ids.tolist(), rank.per_seg.tolist(), rank.statistic, rank.n_used, rank.n_skipped
        ([0, 1], [1.0, -1.0], {'avg': 0.0, 'synth': 0.0}, 2, 0)
        >>> rank.to_dict()["per_seg"]
        {0: 1.0, 1: -1.0}
    """

    name: str
    seg_ids: np.ndarray
    partitions: np.ndarray
    per_seg: np.ndarray
    counts: np.ndarray
    statistic: dict[str, float]
    n_used: int
    n_skipped: int
    confidence_interval: dict[str, ConfidenceInterval] | None = None
    n_no_pair: int = 0

    def to_dict(self) -> dict:
        """JSON-ready form (NaN becomes None), with the file format's keys: ``summary`` (the statistic), ``ci``."""
        out = {
            "summary": {k: json_float(v) for k, v in self.statistic.items()},
            "n_used": self.n_used,
            "n_skipped": self.n_skipped,
            "n_no_pair": self.n_no_pair,
            "per_seg": {int(s): json_float(v) for s, v in zip(self.seg_ids, self.per_seg)},
            "counts": {int(s): int(c) for s, c in zip(self.seg_ids, self.counts)},
        }
        if self.confidence_interval is not None:
            out["ci"] = {k: [json_float(lo), json_float(hi)] for k, (lo, hi) in self.confidence_interval.items()}
        return out


@dataclass
class TS2Result:
    """rank, sep and delta of one metric (each a :class:`MetaResult`).

    Raises:
        KeyError: ``result[name]`` with a name that is not ``rank``, ``sep`` or ``delta``.

    Examples:
        >>> result = ts2_meta([0.9, 0.5, 0.1], [0, 0, 0], ["0", "1", "2"])
        >>> result["rank"] is result.rank, result.segs, result.summary()["sep"]
        (True, '0', {'avg': 1.0, 'synth': 1.0})
        >>> result["tau"]
        Traceback (most recent call last):
        ...
        KeyError: "unknown meta-metric 'tau'; expected one of ('rank', 'sep', 'delta')"
    """

    rank: MetaResult
    sep: MetaResult
    delta: MetaResult
    variant: str = "paper"
    higher_is_better: bool = True
    score_std: float = float("nan")
    #: False for ``variant="official"``: the scores were used raw, ``higher_is_better`` was not applied
    oriented: bool = True
    #: the walk rule (:data:`scorers.stats.graph.WALK_RULES`): ``"levels"`` (TS2's) or ``"edges"`` (the SEGs' own)
    walks: str = "levels"

    def __getitem__(self, name: str) -> MetaResult:
        if name not in META_METRICS:
            raise KeyError(f"unknown meta-metric {name!r}; expected one of {META_METRICS}")
        return getattr(self, name)

    @property
    def segs(self) -> str:
        """The evaluated SEG ids as a range string, e.g. ``"0-163"`` (every output states it)."""
        return format_seg_range(self.rank.seg_ids)

    def summary(self) -> dict[str, dict[str, float]]:
        """``{"rank": {"avg": .., "synth": .., "nat": .., "real": ..}, "sep": {...}, "delta": {...}}`` in fractions:
        the ``statistic`` of each meta-metric."""
        return {name: dict(self[name].statistic) for name in META_METRICS}

    def to_dict(self) -> dict:
        out = {name: self[name].to_dict() for name in META_METRICS}
        out["segs"] = self.segs
        out["n_segs"] = int(self.rank.seg_ids.size)
        out["unit"] = "fraction"
        out["variant"] = self.variant
        out["higher_is_better"] = self.higher_is_better
        out["oriented"] = self.oriented
        out["score_std"] = json_float(self.score_std)
        if self.walks != "levels":  # absent: TS2's level rule (results saved before the edge rule existed read alike)
            out["walks"] = self.walks
        return out


class TS2Evaluator:
    """Reusable evaluator for a fixed set of images (``seg_ids``, ``nodes``): build once, score many metrics.

    ``seg_subset``: ``"default"`` (the SEGs of :data:`scorers.stats.graph.DEFAULT_SEG_IDS`, 0-163, present in the input: the
    paper's Table 2 set and the CLI's default), ``"all"``/None (every SEG given), a range string or SEG ids.
    ``walks``: ``"levels"`` (TS2's rule, the default) or ``"edges"`` with ``edges`` (``{seg_id: [(from label, to
    label), ...]}``, every evaluated SEG's own edges; see the module docstring).

    The SEG structure, walks and node pairs are precomputed, so evaluating the 19 released metrics costs one
    vectorised pass per SEG and metric.

    Raises:
        ValueError: at construction, what :func:`scorers.stats.graph.build_segs` refuses (lengths, ids, labels, a SEG
            without head), a ``seg_subset`` naming SEGs not in the input, nothing left to evaluate, an unknown
            ``walks``, ``walks="edges"`` without ``edges`` (or ``edges`` with ``walks="levels"``), or what
            :func:`scorers.stats.graph.attach_edges` refuses.

    Examples:
        Two SEGs; metric ``a`` orders every walk perfectly, ``b`` backwards:

        >>> evaluator = TS2Evaluator([0, 0, 0, 1, 1], ["0", "1", "2", "0", "1"])
        >>> results = evaluator.evaluate_many({"a": [0.9, 0.5, 0.1, 0.8, 0.2], "b": [0.1, 0.5, 0.9, 0.2, 0.8]})
        >>> results["a"].rank.per_seg.tolist(), results["b"].rank.per_seg.tolist()
        ([1.0, 1.0], [-1.0, -1.0])
        >>> evaluator.evaluate([3, 2, 1, 2, 1], higher_is_better=False).rank.statistic["avg"]  # error counts: lower wins
        -1.0
        >>> TS2Evaluator([0, 0], ["0", "1"], seg_subset=[7])
        Traceback (most recent call last):
        ...
        scorers.errors.ParameterError: seg_subset names SEG ids not present in the input: [7]
    """

    def __init__(
        self,
        seg_ids: Sequence[object],
        nodes: Sequence[object],
        *,
        partitions: PartitionSpec = None,
        seg_subset: Iterable[int] | str | None = "default",
        walks: str = "levels",
        edges: Mapping[int, Iterable[tuple[str, str]]] | None = None,
    ):
        self.walks = check_walks(walks)
        if walks == "edges" and edges is None:
            raise ParameterError("{walks='edges'} follows each SEG's own edges: pass {edges} ({{seg_id: [(from, to), "
                                 "...]}}, e.g. read from a built data dir's segs.json)")
        if walks == "levels" and edges is not None:
            raise ParameterError("{edges} given with {walks='levels'}: pass {walks='edges'} to follow them")
        self.n_images = len(seg_ids)
        segs = build_segs(seg_ids, nodes, partitions=partitions)
        if seg_subset is None or isinstance(seg_subset, str):  # "default" (0-163 present), "all"/None, "0-10,20"
            seg_subset = resolve_seg_subset(seg_subset, [s.seg_id for s in segs])
        if seg_subset is not None:
            wanted = {int(s) for s in seg_subset}
            known = {s.seg_id for s in segs}
            unknown = sorted(wanted - known)
            if unknown:
                raise ParameterError("{seg_subset} names SEG ids not present in the input: {unknown}",
                                     unknown=unknown[:10])
            segs = [s for s in segs if s.seg_id in wanted]
        if not segs:
            raise ValueError("no SEGs to evaluate")
        if walks == "edges":
            segs = attach_edges(segs, edges)
        self.segs: list[SEG] = segs
        self.seg_ids = np.array([s.seg_id for s in segs], dtype=np.int64)
        self.partitions = np.array([s.partition for s in segs], dtype=object)
        self._layouts = [_SEGLayout(s) for s in segs]
        self.positions = np.concatenate([layout.positions for layout in self._layouts])

    def evaluate(
        self,
        scores: Sequence[float] | np.ndarray,
        *,
        higher_is_better: bool = True,
        variant: str = "paper",
        n_bootstrap: int = 0,
        confidence: float = 0.95,
        seed: int = 0,
        name: str = "scores",
    ) -> TS2Result:
        """rank/sep/delta of one metric's per-image ``scores`` (aligned with the ``seg_ids``/``nodes`` given)."""
        return self.evaluate_many(
            {name: scores},
            higher_is_better={name: higher_is_better},
            variant=variant,
            n_bootstrap=n_bootstrap,
            confidence=confidence,
            seed=seed,
        )[name]

    def evaluate_many(
        self,
        columns: Mapping[str, Sequence[float] | np.ndarray],
        *,
        higher_is_better: bool | Mapping[str, bool] = True,
        variant: str = "paper",
        n_bootstrap: int = 0,
        confidence: float = 0.95,
        seed: int = 0,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, TS2Result]:
        """rank/sep/delta of several metrics at once (``{name: per-image scores}``), one vectorised pass per SEG.

        ``progress(done, total)`` is called after each SEG (the CLI draws a bar with it on long work).

        Raises:
            ValueError: ``variant`` unknown, no columns, a ``higher_is_better`` mapping that misses or invents a column, a
                column of the wrong length, or scores :func:`as_scores` refuses (also: no valid score in the evaluated SEGs).
        """
        check_choice("variant", variant, VARIANTS)
        if variant == "published" and self.walks == "edges":
            raise ParameterError("{variant='published'} is the paper-era code's own walks; it takes no "
                                 "{walks='edges'}")
        if n_bootstrap < 0:
            raise ParameterError("{n_bootstrap} must be >= 0, got {value}", value=n_bootstrap)
        if not columns:
            raise ValueError("no score columns given")
        names = list(columns)
        if isinstance(higher_is_better, Mapping):
            missing = [n for n in names if n not in higher_is_better]
            if missing:
                raise ValueError(f"higher_is_better has no entry for column(s) {missing[:10]}; give one per column "
                                 f"(or a single bool for all)")
            unknown = [n for n in higher_is_better if n not in columns]
            if unknown:
                raise ValueError(f"higher_is_better names unknown column(s) {unknown[:10]}; columns: {names[:10]}")
        orient = {n: bool(higher_is_better[n] if isinstance(higher_is_better, Mapping) else higher_is_better) for n in names}
        oriented = variant != "official"  # the official evaluator uses raw scores
        block = np.empty((self.n_images, len(names)))
        for c, name in enumerate(names):
            values = as_scores(columns[name], name=name)
            if values.shape[0] != self.n_images:
                raise ValueError(f"{name} has {values.shape[0]} entries but seg_ids/nodes have {self.n_images}")
            block[:, c] = values if orient[name] or not oriented else -values
        evaluated = block[self.positions]
        empty = [names[c] for c in np.flatnonzero(np.isnan(evaluated).all(axis=0))]
        if empty:
            raise ValueError(f"{empty[0]} has no valid score in the evaluated SEGs ({format_seg_range(self.seg_ids)})"
                             + (f"; {len(empty) - 1} more column(s) likewise" if len(empty) > 1 else ""))
        if variant == "published":  # the paper's code: sample std over every image of the input
            stds = np.array([_finite_std(block[:, c], ddof=1) for c in range(len(names))])
        else:
            stds = np.array([_finite_std(evaluated[:, c]) for c in range(len(names))])

        n = len(self._layouts)
        out = {m: np.full((n, len(names)), np.nan) for m in META_METRICS}
        counts = {m: np.zeros((n, len(names)), dtype=np.int64) for m in META_METRICS}
        # paper: delta of the standardised scores (dividing before the sums and means keeps scores like 1e300 or
        # 1e-300 from overflowing or underflowing); a zero or undefined std gives NaN
        usable_std = np.isfinite(stds) & (stds > 0)
        delta_block = block / np.where(usable_std, stds, 1.0) if variant == "paper" else block
        for k, layout in enumerate(self._layouts):
            local = block[layout.positions]
            if variant == "published":
                for m, (value, used) in self._published_layout(k).values(local).items():
                    out[m][k], counts[m][k] = value, used
            else:
                out["rank"][k], counts["rank"][k] = layout.rank(local)
                out["sep"][k], counts["sep"][k] = layout.sep(local, nan_skips_pair=variant == "official")
                if variant == "official":
                    out["delta"][k], counts["delta"][k] = layout.delta_official(local)
                else:
                    out["delta"][k], counts["delta"][k] = layout.delta(delta_block[layout.positions],
                                                                       adjacent_only=True)
            if progress is not None:
                progress(k + 1, n)
        if variant == "paper":
            out["delta"] = np.where(usable_std, out["delta"], np.nan)
        elif variant == "published":
            with np.errstate(divide="ignore", invalid="ignore"):
                out["delta"] = np.where(usable_std, out["delta"] / np.where(usable_std, stds, 1.0), np.nan)

        summaries = {(name, m): _summarise(m, self.seg_ids, self.partitions, out[m][:, c], counts[m][:, c])
                     for c, name in enumerate(names) for m in META_METRICS}
        if n_bootstrap:
            _add_intervals(list(summaries.values()), n_bootstrap, confidence, seed)
        results = {}
        for c, name in enumerate(names):
            results[name] = TS2Result(**{m: summaries[name, m] for m in META_METRICS}, variant=variant,
                                      higher_is_better=orient[name], score_std=float(stds[c]), oriented=oriented,
                                      walks=self.walks)
        return results

    def _published_layout(self, k: int):
        """The paper-era walk structure of SEG ``k`` (built on first use of ``variant="published"``)."""
        if getattr(self, "_published", None) is None:
            from scorers.stats.meta_published import PublishedLayout

            self._published = [PublishedLayout(s) for s in self.segs]
        return self._published[k]


def ts2_meta(
    scores: Sequence[float] | np.ndarray,
    seg_ids: Sequence[object],
    nodes: Sequence[object],
    *,
    higher_is_better: bool = True,
    variant: str = "paper",
    partitions: PartitionSpec = None,
    seg_subset: Iterable[int] | str | None = "default",
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    walks: str = "levels",
    edges: Mapping[int, Iterable[tuple[str, str]]] | None = None,
) -> TS2Result:
    """TS2 rank, sep and delta of one metric's per-image scores.

    Parameters
    ----------
    scores : per-image scores; NaN entries are skipped (see module docstring).
    seg_ids, nodes : per-image SEG id and node label (``"0"``, ``"1a"``...), aligned with ``scores``.
    higher_is_better : False for error-count style metrics (LLMScore); scores are negated first (not with
        ``variant="official"``, which uses raw scores as the official evaluator does).
    variant : ``"paper"`` (the spec: adjacent-level delta over the score std), ``"official"`` (the official
        evaluator: all-pairs raw delta, raw scores) or ``"published"`` (the code behind the paper's Table 2); see the
        module docstring.
    partitions : mapping or callable SEG id -> partition name; default TS2's synth (<111) / nat (111-135) / real.
    seg_subset : SEGs to evaluate: ``"default"`` (0-163 present in the input, the paper's Table 2 set, as the CLI),
        ``"all"``/None (every SEG given), a range string or SEG ids; the delta std is taken over these SEGs' images.
    n_bootstrap, confidence, seed : bootstrap percentile intervals over SEGs for every summary value (0 = none).
    walks, edges : ``"levels"`` (default: TS2's rule) or ``"edges"`` with ``edges`` (``{seg_id: [(from label, to
        label), ...]}``: :func:`scorers.tables.segs_file.read_seg_edges` of a built dir's ``segs.json``).

    Returns
    -------
    TS2Result with ``rank``, ``sep`` and ``delta`` :class:`MetaResult` fields (fractions, not %).

    Raises
    ------
    ValueError
        What :class:`TS2Evaluator` refuses: misaligned inputs, SEG ids that are not integers, node labels that do not
        parse, a SEG without an error-0 node, non-numeric or infinite scores, no valid score, an unknown ``variant``,
        a ``seg_subset`` naming SEGs not in the input.

    Examples
    --------
    One SEG with nodes of 0, 1 and 2 errors, one image each, scored 0.9, 0.5, 0.1: the only walk is perfectly ordered
    (rank 1), every node pair is fully separated (sep 1), and the mean gap between adjacent levels, 0.4, over the
    population standard deviation of the scores, sqrt(0.32 / 3) = 0.3266, gives delta 1.2247:

    >>> result = ts2_meta([0.9, 0.5, 0.1], seg_ids=[0, 0, 0], nodes=["0", "1", "2"])
    >>> result.rank.statistic["avg"], result.sep.statistic["avg"], round(result.delta.statistic["avg"], 4)
    (1.0, 1.0, 1.2247)
    >>> ts2_meta([0.9, 0.5], seg_ids=[0, 0], nodes=["1", "2"])
    Traceback (most recent call last):
    ...
    ValueError: SEG 0 has no error-0 node (nodes: 1, 2); every SEG needs a head
    """
    evaluator = TS2Evaluator(seg_ids, nodes, partitions=partitions, seg_subset=seg_subset, walks=walks, edges=edges)
    return evaluator.evaluate(
        scores,
        higher_is_better=higher_is_better,
        variant=variant,
        n_bootstrap=n_bootstrap,
        confidence=confidence,
        seed=seed,
    )


def compare(
    result_a: TS2Result,
    result_b: TS2Result,
    *,
    meta_metric: str = "rank",
    partition: str = "avg",
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Is metric A better than metric B on TS2? A paired test over SEGs.

    Uses the per-SEG values of both results on the SEGs where both are defined: the difference of means
    (``statistic``), a bootstrap percentile interval of it (resampling SEGs), and a two-sided sign-flip permutation
    p-value (``n_resamples`` random sign flips of the per-SEG differences, ``(1 + #|perm| >= |obs|) / (1 +
    n_resamples)``): :func:`scorers.stats.resampling.paired_mean_test`.

    Raises:
        ValueError: the results cover different SEGs, ``partition`` is not present, or no SEG has a value for both.

    Examples:
        Three SEGs of two nodes each: A orders all three, B only the second (per-SEG rank 1, 1, 1 vs -1, 1, -1):

        >>> evaluator = TS2Evaluator([0, 0, 1, 1, 2, 2], ["0", "1"] * 3)
        >>> a = evaluator.evaluate([0.9, 0.1, 0.8, 0.2, 0.7, 0.3])
        >>> b = evaluator.evaluate([0.1, 0.9, 0.8, 0.2, 0.3, 0.7])
        >>> result = compare(a, b, n_resamples=200)
        >>> round(result.statistic, 4), result.n_units  # mean of the per-SEG differences 2, 0, 2
        (1.3333, 3)
    """
    a, b = result_a[meta_metric], result_b[meta_metric]
    if not np.array_equal(a.seg_ids, b.seg_ids):
        raise ValueError("the two results cover different SEGs; evaluate both on the same seg_ids/nodes")
    keep = ~np.isnan(a.per_seg) & ~np.isnan(b.per_seg)
    if partition != "avg":
        if partition not in set(a.partitions):
            raise ValueError(f"unknown partition {partition!r}; present: {sorted(set(a.partitions))}")
        keep &= a.partitions == partition
    if not keep.any():
        raise ValueError("no SEG has a defined value for both metrics")
    diffs = a.per_seg[keep] - b.per_seg[keep]
    observed, ci, p_value = paired_mean_test(diffs, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return PairedComparison(
        statistic=observed,
        pvalue=p_value,
        confidence_interval=ci,
        value_a=float(a.per_seg[keep].mean()),
        value_b=float(b.per_seg[keep].mean()),
        n_units=int(keep.sum()),
        unit="SEG",
        method="sign-flip permutation over SEGs",
        labels={"meta_metric": meta_metric, "partition": partition},
    )


# ----------------------------------------------------------------------------------------------------------------------
# Per-SEG vectorised kernels
# ----------------------------------------------------------------------------------------------------------------------


class _SEGLayout:
    """Precomputed index structure of one SEG: image->node map, walk membership, node pairs.

    Kernels take a ``(n_images, n_metrics)`` score block so that many metrics share one pass of Python overhead.
    """

    def __init__(self, seg: SEG):
        self.seg = seg
        self.positions = seg.image_positions
        sizes = [len(m) for m in seg.members]
        self.node_of = np.repeat(np.arange(len(seg.nodes)), sizes)
        errors = np.asarray(seg.errors, dtype=np.float64)
        e = errors[self.node_of]
        # walk_node[w, k]: node k lies on walk w; membership[w, i]: image i lies on a node of walk w (walks of the
        # level rule all have one node per level; walks along edges may differ in length)
        walk_list = seg.walk_positions()
        self.walk_node = np.zeros((len(walk_list), len(seg.nodes)))
        if seg.edges is None:  # one node per level: one array operation
            walk_nodes = np.asarray(walk_list, dtype=np.int64).reshape(len(walk_list), -1)  # (W, L)
            np.put_along_axis(self.walk_node, walk_nodes, 1.0, axis=1)
        else:
            for w, walk in enumerate(walk_list):
                self.walk_node[w, list(walk)] = 1.0
        self.membership = self.walk_node[:, self.node_of] > 0
        # [k, i] = #(e_k < e_i) + #(e_k == e_i) / 2 for node k and image i: with the node's valid-image count, a
        # walk's sum of it is an image's average rank by error count inside the walk, less 1/2
        self.err_rank = (errors[:, None] < e[None, :]) + 0.5 * (errors[:, None] == e[None, :])
        self.onehot = (self.node_of[None, :] == np.arange(len(seg.nodes))[:, None]).astype(np.float64)  # (N, n)
        self.pairs = np.asarray(seg.pair_positions(), dtype=np.int64).reshape(-1, 2)
        self.adjacent_pairs = np.asarray(seg.pair_positions(adjacent_only=True), dtype=np.int64).reshape(-1, 2)

    def rank(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weighted mean of -Spearman over walks, per metric column; NaN where no walk has >= 2 valid images.

        Average ranks inside each walk are counted per node first (#smaller + #equal / 2, from the node's valid images)
        and then summed over the walk's nodes. Every term is a multiple of 1/2, so the sums are exact in any order;
        ``np.einsum`` does the walk sums without BLAS, whose thread pool costs more than these small products."""
        valid = ~np.isnan(scores)  # (n, C)
        valid_t = valid.T.astype(np.float64)  # (C, n)
        member = (self.membership[None, :, :] & valid.T[:, None, :]).astype(np.float64)  # (C, W, n)
        k = member.sum(axis=2)  # (C, W)
        s = np.where(valid, scores, 0.0).T  # (C, n)
        # [c, j, i] = (s_j < s_i) + (s_j == s_i) / 2, summed over each node's valid images j
        s_rank = (s[:, :, None] < s[:, None, :]) + 0.5 * (s[:, :, None] == s[:, None, :])
        per_node = np.concatenate([(valid_t @ self.onehot.T)[:, :, None] * self.err_rank[None, :, :],
                                   (self.onehot[None, :, :] * valid_t[:, None, :]) @ s_rank], axis=2)  # (C, N, 2n)
        ranks = np.einsum("wk,ckn->cwn", self.walk_node, per_node) + 0.5  # average ranks (1-based) in each walk
        n = scores.shape[0]
        rank_x, rank_y = ranks[:, :, :n], ranks[:, :, n:]
        centre = ((k + 1.0) / 2.0)[:, :, None]
        dx = (rank_x - centre) * member
        dy = (rank_y - centre) * member
        cov = (dx * dy).sum(axis=2)
        var = (dx * dx).sum(axis=2) * (dy * dy).sum(axis=2)
        r = np.divide(cov, np.sqrt(var), out=np.zeros_like(cov), where=var > 0)  # constant input -> r = 0
        weight = np.where(k >= 2, k, 0.0)
        total = weight.sum(axis=1)
        value = np.divide((weight * -r).sum(axis=1), total, out=np.full(total.shape, np.nan), where=total > 0)
        return value, (k >= 2).sum(axis=1)

    def sep(self, scores: np.ndarray, *, nan_skips_pair: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Mean KS statistic over node pairs with different error counts, per metric column.

        0 where no pair can be computed: a single error level, or NaN scores that empty every node of a level (the
        spec's and the official evaluator's rule); ``used`` is then 0. A NaN score is dropped from its node, unless
        ``nan_skips_pair``: then every pair of a node holding a NaN is skipped, as the official ``KSTestEvaluator``
        does (it passes the NaN to scipy's ``ks_2samp``, whose NaN statistic it skips).
        """
        n_cols = scores.shape[1]
        if len(self.pairs) == 0:
            return np.zeros(n_cols), np.zeros(n_cols, dtype=np.int64)
        valid = ~np.isnan(scores)
        s = np.where(valid, scores, 0.0).T  # (C, n)
        weights = self.onehot[None, :, :] * valid.T[:, None, :]  # (C, N, n)
        counts = weights.sum(axis=2)  # (C, N)
        # empirical CDF of every node at every score of the SEG (a superset of each pair's jump points)
        below = (s[:, :, None] <= s[:, None, :]).astype(np.float64)  # [c, i, p] = s_i <= s_p
        cdf = (weights @ below) / np.maximum(counts, 1.0)[:, :, None]  # (C, N, P)
        gap = np.abs(cdf[:, self.pairs[:, 0], :] - cdf[:, self.pairs[:, 1], :]) * valid.T[:, None, :]
        ks = gap.max(axis=2)  # (C, pairs)
        usable = (counts[:, self.pairs[:, 0]] > 0) & (counts[:, self.pairs[:, 1]] > 0)
        if nan_skips_pair:
            complete = counts == self.onehot.sum(axis=1)[None, :]  # (C, N): the node holds no NaN
            usable &= complete[:, self.pairs[:, 0]] & complete[:, self.pairs[:, 1]]
        used = usable.sum(axis=1)
        value = np.divide((ks * usable).sum(axis=1), used, out=np.zeros(n_cols), where=used > 0)  # no pair -> 0
        return value, used

    def delta_official(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The official ``DeltaEvaluator``: mean of mean(lower-error node) - mean(higher-error node) over all node pairs
        with different error counts, per metric column. A node holding a NaN score has a NaN mean and its pairs are
        skipped; with no usable pair (one error level, or NaN everywhere) the SEG scores 0 and counts (``used`` 0)."""
        n_cols = scores.shape[1]
        if len(self.pairs) == 0:
            return np.zeros(n_cols), np.zeros(n_cols, dtype=np.int64)
        means = np.stack([scores[self.node_of == k].mean(axis=0) for k in range(len(self.seg.nodes))])  # NaN stays
        gaps = means[self.pairs[:, 0]] - means[self.pairs[:, 1]]  # (pairs, C)
        usable = ~np.isnan(gaps)
        used = usable.sum(axis=0)
        value = np.divide(np.where(usable, gaps, 0.0).sum(axis=0), used, out=np.zeros(n_cols), where=used > 0)
        return value, used

    def delta(self, scores: np.ndarray, *, adjacent_only: bool) -> tuple[np.ndarray, np.ndarray]:
        """Mean of mean(lower-error node) - mean(higher-error node) over node pairs, per metric column."""
        n_cols = scores.shape[1]
        pairs = self.adjacent_pairs if adjacent_only else self.pairs
        if len(pairs) == 0:
            return np.full(n_cols, np.nan), np.zeros(n_cols, dtype=np.int64)
        valid = ~np.isnan(scores)
        weights = self.onehot @ valid.astype(np.float64)  # (N, C) counts
        sums = self.onehot @ np.where(valid, scores, 0.0)
        means = sums / np.maximum(weights, 1.0)
        usable = (weights[pairs[:, 0]] > 0) & (weights[pairs[:, 1]] > 0)  # (pairs, C)
        gaps = (means[pairs[:, 0]] - means[pairs[:, 1]]) * usable
        used = usable.sum(axis=0)
        value = np.divide(gaps.sum(axis=0), used, out=np.full(n_cols, np.nan), where=used > 0)
        return value, used


def _summarise(name: str, seg_ids: np.ndarray, partitions: np.ndarray, per_seg: np.ndarray,
               counts: np.ndarray) -> MetaResult:
    defined = ~np.isnan(per_seg)
    statistic = {key: _nanmean(per_seg[idx]) for key, idx in summary_groups(partitions).items()}
    return MetaResult(
        name=name,
        seg_ids=seg_ids,
        partitions=partitions,
        per_seg=per_seg,
        counts=counts,
        statistic=statistic,
        n_used=int(defined.sum()),
        n_skipped=int((~defined).sum()),
        confidence_interval=None,
        n_no_pair=int((counts == 0).sum()),
    )


def _add_intervals(results: Sequence[MetaResult], n_bootstrap: int, confidence: float, seed: int) -> None:
    """Set ``confidence_interval`` of each result (:func:`seg_mean_intervals`)."""
    intervals = seg_mean_intervals([(r.per_seg, r.partitions) for r in results], n_bootstrap, confidence, seed)
    for result, interval in zip(results, intervals):
        result.confidence_interval = interval


def _finite_std(values: np.ndarray, ddof: int = 0) -> float:
    """Std (``ddof`` 0: population) of the non-NaN values, computed on values scaled to [-1, 1] (no overflow at
    1e300, no underflow at 1e-300)."""
    values = values[~np.isnan(values)]
    if values.size <= ddof:
        return float("nan")
    top = float(np.abs(values).max())
    if not 0 < top < np.inf:
        return float(np.std(values, ddof=ddof))
    return float(np.std(values / top, ddof=ddof) * top)


def _nanmean(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else float("nan")
