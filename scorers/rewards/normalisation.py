"""Reward normalisation, once: the ``n_k`` of a weighted reward ``sum_k w_k * n_k(r_k)``, for the in-process reward
(:class:`scorers.rewards.api.Reward`, torch tensors, batch after batch) and the report card's reward over score files
(:func:`weighted_reward`, numpy arrays, one pass).

``normalize`` is ``"none"`` (identity), a fixed affine ``{name: (shift, scale)}`` giving ``(r - shift) / scale``
(names left out: identity), or ``"running"``: ``(r - mean) / std`` with the mean and population std (ddof 0) of every
finite value seen so far, this batch included (``r - mean`` while std is 0); batches are merged by Chan et al.'s
parallel update of (count, mean, M2). Numpy only: no torch at import.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["RewardNormaliser", "weighted_reward", "weighted_sum"]


class RewardNormaliser:
    """``normaliser(name, values)``: part ``name``'s values normalised (a numpy array or a torch tensor, returned as
    the same kind; ``"running"`` first adds the finite ones to that part's statistics). ``stats``: ``{name: {"count",
    "mean", "std"}}`` (running), ``{name: {"shift", "scale"}}`` (fixed affine) or ``{}`` (none)."""

    def __init__(self, normalize: Any, names: Sequence[str]):
        self.normalize = normalize
        self._running = {name: {"count": 0, "mean": 0.0, "m2": 0.0} for name in names}

    def reset(self) -> None:
        """Forget the running statistics."""
        for state in self._running.values():
            state.update(count=0, mean=0.0, m2=0.0)

    @property
    def stats(self) -> dict:
        if self.normalize == "running":
            return {name: {"count": s["count"], "mean": s["mean"],
                           "std": math.sqrt(s["m2"] / s["count"]) if s["count"] else 0.0}
                    for name, s in self._running.items()}
        if isinstance(self.normalize, Mapping):
            return {name: {"shift": float(shift), "scale": float(scale)}
                    for name, (shift, scale) in self.normalize.items()}
        return {}

    def __call__(self, name: str, value):
        if self.normalize == "none":
            return value
        if isinstance(self.normalize, Mapping):
            if name not in self.normalize:
                return value
            shift, scale = self.normalize[name]
            return (value - float(shift)) / float(scale)
        state = self._running[name]
        plain = value.detach().double().cpu().numpy() if hasattr(value, "detach") else np.asarray(value, np.float64)
        finite = plain[np.isfinite(plain)]
        if finite.size:
            n_b = int(finite.size)
            mean_b = float(finite.mean())
            deviation = finite - mean_b
            m2_b = float(np.add.reduce(deviation * deviation))
            n_a, mean_a, m2_a = state["count"], state["mean"], state["m2"]
            if n_a == 0:
                state.update(count=n_b, mean=mean_b, m2=m2_b)
            else:  # Chan et al.'s parallel update of (count, mean, M2) with this batch
                n = n_a + n_b
                delta = mean_b - mean_a
                state.update(count=n, mean=mean_a + delta * n_b / n, m2=m2_a + m2_b + delta * delta * n_a * n_b / n)
        std = math.sqrt(state["m2"] / state["count"]) if state["count"] else 0.0
        centred = value - state["mean"]
        return centred / std if std > 0 else centred


def weighted_sum(values: Mapping[str, Any], weights: Mapping[str, float]):
    """``sum_k w_k * values_k``, summed in the order of ``weights``; None without weights."""
    total = None
    for name, weight in weights.items():
        term = float(weight) * values[name]
        total = term if total is None else total + term
    return total


def weighted_reward(components: Mapping[str, Sequence[float]], weights: Mapping[str, float],
                    normalize="none") -> tuple[np.ndarray, dict]:
    """Per-image ``sum_k w_k * n_k(r_k)`` over score arrays of the same images, and the normalisation stats (in the
    order of ``weights``): what :class:`scorers.rewards.api.Reward` returns after one call on all of these images
    (``"running"``: the statistics of every finite score of each part, each image's own included). An image lacking
    any part's score (NaN) has no reward (NaN)."""
    normaliser = RewardNormaliser(normalize, list(weights))
    normalised = {name: normaliser(name, np.asarray(components[name], dtype=np.float64)) for name in weights}
    stats = normaliser.stats
    return weighted_sum(normalised, weights), {name: stats[name] for name in weights if name in stats}
