"""The correlation kernels behind :mod:`scorers.stats.agreement`: Pearson, Spearman and Kendall's tau-b / tau-c as plain
array number crunching, on one group (:func:`single_correlation`), on every row of ``(groups, size)`` arrays at once
(:func:`dense_correlations`) and on every row of bootstrap frequency weights (:func:`weighted_correlations`, equal to
the coefficient of the explicitly resampled arrays). NumPy, and SciPy imported where a coefficient needs it. The
tie-calibrated pairwise accuracy kernels are :mod:`scorers.stats.preference_accuracy`'s.
"""
from __future__ import annotations

import numpy as np

__all__ = ["dense_correlations", "is_constant", "single_correlation", "weighted_correlations"]


def single_correlation(coefficient: str, h: np.ndarray, m: np.ndarray) -> float:
    """One correlation on one (non-constant, NaN-free) group of any size."""
    from scipy import stats  # here, not at the top: ``import scorers.stats.agreement`` (and ``ts2 --help``) stays light

    if coefficient == "pearson":
        hc, mc = _unit(_unit(h) - _unit(h).mean()), _unit(_unit(m) - _unit(m).mean())  # no over/underflow
        return float(np.clip(hc @ mc / np.sqrt((hc @ hc) * (mc @ mc)), -1.0, 1.0))
    if coefficient == "spearman":
        return single_correlation("pearson", stats.rankdata(h), stats.rankdata(m))
    return float(stats.kendalltau(h, m, variant=coefficient[-1]).statistic)


def dense_correlations(coefficient: str, H: np.ndarray, M: np.ndarray) -> np.ndarray:
    """A correlation for every row of two ``(groups, size)`` arrays (no NaN); NaN where a row is constant."""
    size = H.shape[1]
    constant = (H.max(axis=1) == H.min(axis=1)) | (M.max(axis=1) == M.min(axis=1))
    if coefficient in ("pearson", "spearman"):
        if coefficient == "spearman":
            H, M = _dense_ranks(H), _dense_ranks(M)
        H, M = _unit(H, axis=1), _unit(M, axis=1)
        hc = _unit(H - H.mean(axis=1, keepdims=True), axis=1)
        mc = _unit(M - M.mean(axis=1, keepdims=True), axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = (hc * mc).sum(axis=1) / np.sqrt((hc * hc).sum(axis=1) * (mc * mc).sum(axis=1))
        value = np.clip(value, -1.0, 1.0)
    else:
        i, j = np.triu_indices(size, 1)
        dh = np.sign(H[:, j] - H[:, i])
        dm = np.sign(M[:, j] - M[:, i])
        s = (dh * dm).sum(axis=1)
        total = i.size
        with np.errstate(divide="ignore", invalid="ignore"):
            if coefficient == "kendall_b":
                value = s / np.sqrt(total - (dh == 0).sum(axis=1)) / np.sqrt(total - (dm == 0).sum(axis=1))
            else:
                classes = np.minimum(_distinct(H), _distinct(M))
                value = 2.0 * s / (size ** 2 * (classes - 1) / classes)
        value = np.clip(value, -1.0, 1.0)
    return np.where(constant, np.nan, value)


def _unit(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    """``x`` divided by its largest absolute value (per row with ``axis=1``; rows of zeros unchanged): a correlation
    is scale-free, and products of scores like 1e200 or 1e-200 would overflow or underflow."""
    x = np.asarray(x, dtype=np.float64)
    top = np.abs(x).max(axis=axis, keepdims=axis is not None) if x.size else 1.0
    return x / np.where(top > 0, top, 1.0)


def _dense_ranks(X: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) within each row, as ``scipy.stats.rankdata``."""
    less = (X[:, None, :] < X[:, :, None]).sum(axis=2)
    equal = (X[:, None, :] == X[:, :, None]).sum(axis=2)
    return less + (equal + 1) / 2.0


def _distinct(X: np.ndarray) -> np.ndarray:
    s = np.sort(X, axis=1)
    return 1 + (np.diff(s, axis=1) != 0).sum(axis=1)


def weighted_correlations(coefficient: str, h: np.ndarray, m: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A correlation of the pooled items for every row of frequency weights ``w`` (B, n): equal to the coefficient
    of the explicitly resampled arrays (each item repeated ``w`` times)."""
    if coefficient == "pearson":
        return _weighted_pearson(h[None, :], m[None, :], w)
    if coefficient == "spearman":
        return _weighted_pearson(_weighted_ranks(h, w), _weighted_ranks(m, w), w)
    from scipy import stats

    out = np.full(w.shape[0], np.nan)
    variant = coefficient[-1]
    for b in range(w.shape[0]):
        hb, mb = np.repeat(h, w[b]), np.repeat(m, w[b])
        if not (is_constant(hb) or is_constant(mb)):
            out[b] = stats.kendalltau(hb, mb, variant=variant).statistic
    return out


def _weighted_pearson(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    x, y = _unit(x, axis=1), _unit(y, axis=1)  # scale-free; no over/underflow in the products below
    total = w.sum(axis=1, keepdims=True)
    mx = (w * x).sum(axis=1, keepdims=True) / total
    my = (w * y).sum(axis=1, keepdims=True) / total
    dx, dy = _unit(x - mx, axis=1), _unit(y - my, axis=1)
    sxx = (w * dx * dx).sum(axis=1)
    syy = (w * dy * dy).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (w * dx * dy).sum(axis=1) / np.sqrt(sxx * syy)
    r = np.clip(r, -1.0, 1.0)
    # constant resamples: every item with weight shares one value
    spread_x = np.where(w > 0, x, np.inf).min(axis=1) == np.where(w > 0, x, -np.inf).max(axis=1)
    spread_y = np.where(w > 0, y, np.inf).min(axis=1) == np.where(w > 0, y, -np.inf).max(axis=1)
    return np.where(spread_x | spread_y, np.nan, r)


def _weighted_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks of every item within the multiset given by each row of ``w`` (B, n) -> (B, n)."""
    values, inverse = np.unique(x, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(values.size))
    per_value = np.add.reduceat(w[:, order].astype(np.float64), starts, axis=1)  # (B, U)
    below = np.cumsum(per_value, axis=1) - per_value
    ranks = below + (per_value + 1.0) / 2.0
    return ranks[:, inverse]


def is_constant(x: np.ndarray) -> bool:
    """Whether ``x`` is empty or holds one value only (a correlation is undefined there)."""
    return bool(x.size == 0 or x.min() == x.max())
