"""Bootstrap intervals over SEGs of a table of meta-metrics: :func:`seg_mean_intervals` (``ts2 meta``'s table and
``--by-error-type``'s), over the groups of :func:`summary_groups` (``avg`` and each partition, in summary order).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from scorers.stats.graph import PARTITIONS
from scorers.stats.resampling import ConfidenceInterval, percentile_interval, resample_indices

__all__ = ["seg_mean_intervals", "summary_groups"]


def summary_groups(partitions: np.ndarray) -> dict[str, np.ndarray]:
    """SEG positions of ``avg`` (all) and of each partition present, in summary order."""
    groups = {"avg": np.arange(partitions.size)}
    present = [p for p in PARTITIONS if p in set(partitions)] + sorted(set(partitions) - set(PARTITIONS))
    for part in present:
        groups[part] = np.flatnonzero(partitions == part)
    return groups


def seg_mean_intervals(values: Sequence[tuple[np.ndarray, np.ndarray]], n_bootstrap: int, confidence: float,
                       seed: int) -> list[dict[str, ConfidenceInterval]]:
    """The bootstrap intervals over SEGs of every table of meta-metrics (``ts2 meta``'s, ``--by-error-type``'s): per
    ``(per_seg, partitions)`` pair, for ``avg`` and each partition (in summary order: synth, nat, real, then the
    others sorted), the percentile interval of the mean of its defined (non-NaN) SEG values over ``n_bootstrap``
    resamples of them.

    The draws are those of :func:`scorers.stats.resampling.bootstrap_mean_interval` with one generator seeded ``seed`` per
    pair, drawing for its keys in turn (a key without a defined value draws nothing and gets (NaN, NaN)): they depend
    only on the numbers of defined values, so pairs with the same numbers share them, and their resampled means and
    quantiles are computed together (the same reductions, row by row, as one pair at a time).

    Raises:
        ParameterError: ``n_bootstrap`` is not an integer >= 0 (a ``ValueError`` naming it).

    Examples:
        >>> (ci,) = seg_mean_intervals([(np.array([0.2, 0.4, np.nan]), np.array(["x", "x", "y"]))], 100, 0.9, 0)
        >>> [str(key) for key in ci], ci["y"]
        (['avg', 'x', 'y'], ConfidenceInterval(low=nan, high=nan))
    """
    alpha = (1.0 - confidence) / 2.0
    out: list[dict[str, ConfidenceInterval]] = [{} for _ in values]
    batches: dict[tuple, list[tuple[int, dict[str, np.ndarray]]]] = {}
    for position, (per_seg, partitions) in enumerate(values):
        kept = {key: per_seg[idx][~np.isnan(per_seg[idx])] for key, idx in summary_groups(partitions).items()}
        batches.setdefault(tuple((k, v.size) for k, v in kept.items()), []).append((position, kept))
    for sizes, members in batches.items():
        rng = np.random.default_rng(seed)
        for key, size in sizes:
            if not size:
                for position, _ in members:
                    out[position][key] = ConfidenceInterval(float("nan"), float("nan"))
                continue
            idx = resample_indices(size, n_bootstrap, rng, name="n_bootstrap")
            boot = np.empty((len(members), n_bootstrap))  # (pairs, n_bootstrap)
            for row, (_, kept) in enumerate(members):
                kept[key][idx].mean(axis=1, out=boot[row])
            finite = not np.isnan(boot).any()
            bounds = np.quantile(boot, [alpha, 1.0 - alpha], axis=1) if finite else None
            for row, (position, _) in enumerate(members):
                out[position][key] = (ConfidenceInterval(float(bounds[0, row]), float(bounds[1, row])) if finite
                                      else percentile_interval(boot[row], confidence))
    return out
