"""The bootstrap over SEGs of every meta-metric table, written out as a plain loop from its documented rule
(:mod:`scorers.stats.resampling`): per result one generator ``numpy.random.default_rng(seed)``; for ``avg`` and then
each partition (synth, nat, real, then the others sorted) in turn, the result's defined (non-None / non-NaN) SEG values
of that group, in SEG order, are resampled ``rng.integers(0, n, (n_bootstrap, n))`` (a group without a value draws
nothing), and the interval is the percentile interval of the resampled means."""
from __future__ import annotations

import math

import numpy as np

PARTITION_ORDER = ("synth", "nat", "real")


def reference_intervals(per_seg: dict, partitions: dict, n_bootstrap: int, confidence: float, seed: int) -> dict:
    """``{key: (low, high)}`` (NaN, NaN for an empty group) of SEG values ``per_seg`` (``{seg: value}``) whose
    partitions are ``partitions`` (``{seg: name}``)."""
    present = set(partitions[s] for s in per_seg)
    keys = ["avg"] + [p for p in PARTITION_ORDER if p in present] + sorted(present - set(PARTITION_ORDER))
    rng = np.random.default_rng(seed)
    out = {}
    for key in keys:
        values = [v for s, v in sorted(per_seg.items())
                  if v is not None and not math.isnan(v) and (key == "avg" or partitions[s] == key)]
        if not values:
            out[key] = (math.nan, math.nan)
            continue
        draws = rng.integers(0, len(values), size=(n_bootstrap, len(values)))
        means = [sum(values[i] for i in row) / len(values) for row in draws]
        low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
        out[key] = (float(low), float(high))
    return out
