"""Element-level verdicts: did a question-based metric find the element that is wrong?

Plain arrays in (one entry per (image, question) answer), frozen dataclasses out, as in :mod:`scorers.stats.coverage`:

* :func:`wrong_rates` -- the rate of answers that disagree with the expected answer per node error count (at count 0,
  where the image shows every element, the false-alarm rate);
* :func:`element_detection` -- "the metric says this element is wrong" against the truth: precision, recall, F1,
  balanced accuracy, accuracy and, with a probability, the AUROC;
* :func:`paired_element_test` -- two metrics answered on the same questions: McNemar's test on the discordant answers
  (exact binomial below 25 discordant pairs, else chi-square with continuity correction, as ``statsmodels``'
  ``mcnemar``), or a paired bootstrap of the accuracy difference.

Every interval is a percentile interval over ``groups`` (SEGs, prompts) resampled with the package's one draw
(:func:`scorers.stats.resampling.resample_indices`): a figure is recomputed from the pooled counts of the resampled
groups. A figure with no case of its class (precision when nothing is said wrong) is NaN here and ``null`` in
``to_dict``; an interval with fewer than two groups is (NaN, NaN).

References: McNemar, Q. (1947), Psychometrika 12(2); Mann, H. B. & Whitney, D. R. (1947), Ann. Math. Statist. 18(1)
(AUROC = U / (n_pos n_neg), ties counted one half).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from scorers.errors import ParameterError
from scorers.json_safe import json_float
from scorers.stats.resampling import percentile_interval, resample_counts, resample_indices

__all__ = ["DETECTION_FIGURES", "ElementDetection", "PairedElementTest", "WrongRates", "detection_figures",
           "element_detection", "group_rate", "mcnemar", "weighted_auroc",
           "paired_element_test", "wrong_rates"]

#: the figures of :class:`ElementDetection`, in their JSON order
DETECTION_FIGURES = ("precision", "recall", "f1", "balanced_accuracy", "accuracy", "auroc")
#: McNemar's test is exact (binomial) below this many discordant pairs, else chi-square with continuity correction
EXACT_BELOW = 25


def _bool_array(values, name: str, n: int | None = None) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ParameterError("{name} must be one-dimensional, got shape {shape}", name=name, shape=array.shape)
    if array.dtype != bool:
        numeric = array.astype(np.float64)
        if not np.isin(numeric, (0.0, 1.0)).all():
            raise ParameterError("{name} must hold booleans (or 0/1), got {value!r}", name=name,
                                 value=array[~np.isin(numeric, (0.0, 1.0))][0])
        array = numeric.astype(bool)
    if n is not None and array.size != n:
        raise ParameterError("{name} has {got} entries but the answers are {n}", name=name, got=array.size, n=n)
    return array


def _groups(groups, n: int) -> tuple[np.ndarray, int]:
    groups = np.asarray(groups)
    if groups.shape != (n,):
        raise ParameterError("{groups} must hold one group (SEG or prompt) per answer: {n} entries, got shape {shape}",
                             n=n, shape=groups.shape)
    _, inverse = np.unique(groups, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), int(inverse.max()) + 1 if n else 0


def _check_confidence(confidence: float) -> float:
    if not 0.0 < float(confidence) < 1.0:
        raise ParameterError("{confidence} must be in (0, 1), got {value!r}", value=confidence)
    return float(confidence)


def _interval(boot: np.ndarray, confidence: float, n_groups: int) -> tuple[float, float]:
    if n_groups < 2 or boot.size == 0:
        return float("nan"), float("nan")
    low, high = percentile_interval(boot, confidence)
    return low, high


def _ratio(num: np.ndarray | float, den: np.ndarray | float):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(den) > 0, np.asarray(num, dtype=np.float64) / np.maximum(den, 1), np.nan)


# --- wrong rates -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WrongRates:
    """The rate of wrong answers per node error count: ``counts[k]`` errors, ``rates[k]`` of ``n[k]`` answers wrong,
    ``low[k]``/``high[k]`` its bootstrap interval over groups (``n_groups[k]`` of them hold answers at that count).

    Examples:
        >>> r = wrong_rates([0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], n_bootstrap=0)
        >>> r.to_dict()["0"]["wrong_rate"], r.to_dict()["1"]["n"]
        (0.5, 2)
    """

    counts: np.ndarray
    rates: np.ndarray
    n: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_groups: np.ndarray
    confidence: float = 0.95
    n_bootstrap: int = 1000

    def to_dict(self) -> dict:
        """``{"0": {"wrong_rate": f, "n": k, "low": f, "high": f}, ...}`` (error counts as strings; None for NaN)."""
        return {str(int(c)): {"wrong_rate": json_float(r), "n": int(k), "low": json_float(lo), "high": json_float(hi)}
                for c, r, k, lo, hi in zip(self.counts, self.rates, self.n, self.low, self.high)}


def group_rate(wrong: np.ndarray, group_index: np.ndarray, n_groups: int, *, n_bootstrap: int, confidence: float,
               seed: int) -> tuple[float, int, float, float, int]:
    """``(rate, n, low, high, groups used)`` of the boolean ``wrong`` pooled over its groups, with the percentile
    interval of the pooled rate over ``n_bootstrap`` resamples of the groups that hold an answer."""
    num = np.bincount(group_index, weights=wrong.astype(np.float64), minlength=n_groups)
    den = np.bincount(group_index, minlength=n_groups).astype(np.float64)
    used = den > 0
    num, den = num[used], den[used]
    n = int(den.sum())
    rate = float(num.sum() / n) if n else float("nan")
    if num.size < 2:
        return rate, n, float("nan"), float("nan"), int(num.size)
    idx = resample_indices(num.size, n_bootstrap, seed, name="n_bootstrap")
    boot = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    low, high = _interval(boot, confidence, num.size)
    return rate, n, low, high, int(num.size)


def wrong_rates(wrong, error_count, groups, *, n_bootstrap: int = 1000, confidence: float = 0.95,
                seed: int = 0) -> WrongRates:
    """The rate of answers that disagree with the expected answer, per node error count.

    Parameters
    ----------
    wrong : array of bool, one per answer -- the answer disagrees with the expected one.
    error_count : array of int -- the error count of the answer's image (its node label's digits).
    groups : array -- the unit the intervals resample (the image's SEG id).

    The rate at a count is pooled (wrong answers / answers at that count); its interval resamples the groups holding
    answers at that count (:func:`scorers.stats.resampling.resample_indices`, seeded ``seed`` for every count).

    Raises
    ------
    ParameterError
        arrays of different lengths, a ``wrong`` that is not boolean, ``n_bootstrap`` < 0, ``confidence`` outside
        (0, 1).
    """
    confidence = _check_confidence(confidence)
    wrong = _bool_array(wrong, "wrong")
    error_count = np.asarray(error_count)
    if error_count.shape != wrong.shape:
        raise ParameterError("{error_count} has {got} entries but {wrong} has {n}", got=error_count.size, n=wrong.size)
    error_count = error_count.astype(np.int64)
    group_index, n_groups = _groups(groups, wrong.size)
    counts = np.unique(error_count)
    rows = []
    for count in counts:
        mask = error_count == count
        rows.append(group_rate(wrong[mask], group_index[mask], n_groups, n_bootstrap=n_bootstrap,
                               confidence=confidence, seed=seed))
    cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
    return WrongRates(counts=counts, rates=np.asarray(cols[0], dtype=np.float64),
                      n=np.asarray(cols[1], dtype=np.int64), low=np.asarray(cols[2], dtype=np.float64),
                      high=np.asarray(cols[3], dtype=np.float64), n_groups=np.asarray(cols[4], dtype=np.int64),
                      confidence=confidence, n_bootstrap=int(n_bootstrap))


# --- detection ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ElementDetection:
    """"The metric says this element is wrong" (``said_wrong``) against the truth (``truly_wrong``, the positive
    class): ``precision`` = TP / (TP + FP), ``recall`` = TP / (TP + FN), ``f1`` = 2 TP / (2 TP + FP + FN),
    ``balanced_accuracy`` = (recall + TN / (TN + FP)) / 2, ``accuracy`` = (TP + TN) / n, ``auroc`` of the probability
    that the element is wrong (None without one); ``intervals[name]`` = (low, high) over groups."""

    precision: float
    recall: float
    f1: float
    balanced_accuracy: float
    accuracy: float
    auroc: float | None
    n: int
    n_wrong: int
    tp: int
    fp: int
    fn: int
    tn: int
    intervals: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The contract's FIG: the figures, ``n``, ``n_wrong``, the confusion counts and ``intervals``."""
        out = {name: json_float(getattr(self, name)) for name in DETECTION_FIGURES}
        out.update(n=self.n, n_wrong=self.n_wrong, tp=self.tp, fp=self.fp, fn=self.fn, tn=self.tn)
        out["intervals"] = {name: [json_float(lo), json_float(hi)] for name, (lo, hi) in self.intervals.items()}
        return out


def detection_figures(tp, fp, fn, tn) -> dict[str, np.ndarray]:
    """Precision, recall, F1, balanced accuracy and accuracy of confusion counts (arrays broadcast; NaN where a
    figure has no case of its class)."""
    tp, fp, fn, tn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn, tn))
    recall = _ratio(tp, tp + fn)
    specificity = _ratio(tn, tn + fp)
    return {"precision": _ratio(tp, tp + fp), "recall": recall, "f1": _ratio(2 * tp, 2 * tp + fp + fn),
            "balanced_accuracy": (recall + specificity) / 2, "accuracy": _ratio(tp + tn, tp + fp + fn + tn)}


def weighted_auroc(scores: np.ndarray, positive: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AUROC of ``scores`` (higher = positive) with frequency ``weights`` (one row per resample, shape (B, n)):
    ``sum_l P_l (N_below_l + N_l / 2) / (P N)`` over the distinct score levels l (ties count one half), i.e. the
    Mann-Whitney ``U / (n_pos n_neg)`` of the weighted sample. NaN where a row has no positive or no negative."""
    order = np.argsort(scores, kind="stable")
    sorted_scores = scores[order]
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    pos = positive[order].astype(np.float64)
    out = np.empty(weights.shape[0])
    for s in range(0, weights.shape[0], 256):  # rows in chunks: memory stays (256, n)
        w = weights[s:s + 256][:, order].astype(np.float64)
        p_level = np.add.reduceat(w * pos, starts, axis=1)
        n_level = np.add.reduceat(w * (1.0 - pos), starts, axis=1)
        below = np.cumsum(n_level, axis=1) - n_level
        total = p_level.sum(axis=1) * n_level.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[s:s + 256] = np.where(total > 0, (p_level * (below + n_level / 2)).sum(axis=1) / total, np.nan)
    return out


def element_detection(said_wrong, truly_wrong, groups, *, prob_wrong=None, n_bootstrap: int = 1000,
                      confidence: float = 0.95, seed: int = 0) -> ElementDetection:
    """How well "the metric says this element is wrong" finds the elements that are wrong.

    Parameters
    ----------
    said_wrong : array of bool, one per (image, element) answer -- the metric's verdict.
    truly_wrong : array of bool -- the truth (the element is in the image's error set).
    groups : array -- the unit the intervals resample (SEG id, prompt).
    prob_wrong : optional array of float -- the metric's probability that the element is wrong (1 - P(expected
        answer)); gives the AUROC (NaN entries are left out of it).

    Every interval resamples the groups (``n_bootstrap`` times, seeded ``seed``) and recomputes the figure from the
    pooled counts of the resample.

    Raises
    ------
    ParameterError
        arrays of different lengths, non-boolean verdicts, ``n_bootstrap`` < 0, ``confidence`` outside (0, 1).
    """
    confidence = _check_confidence(confidence)
    said = _bool_array(said_wrong, "said_wrong")
    truth = _bool_array(truly_wrong, "truly_wrong", said.size)
    group_index, n_groups = _groups(groups, said.size)
    cells = np.stack([said & truth, said & ~truth, ~said & truth, ~said & ~truth], axis=1).astype(np.float64)
    per_group = np.zeros((n_groups, 4))
    np.add.at(per_group, group_index, cells)
    tp, fp, fn, tn = per_group.sum(axis=0)
    figures = {k: float(v) for k, v in detection_figures(tp, fp, fn, tn).items()}
    auroc, prob = None, None
    if prob_wrong is not None:
        prob = np.asarray(prob_wrong, dtype=np.float64)
        if prob.shape != said.shape:
            raise ParameterError("{prob_wrong} has {got} entries but the answers are {n}", got=prob.size, n=said.size)
        known = ~np.isnan(prob)
        auroc = float(weighted_auroc(prob[known], truth[known], np.ones((1, int(known.sum()))))[0])
    intervals: dict[str, tuple[float, float]] = {}
    if n_groups >= 2:
        idx = resample_indices(n_groups, n_bootstrap, seed, name="n_bootstrap")
        weights = resample_counts(idx, n_groups).astype(np.float64)
        boot = weights @ per_group
        for name, values in detection_figures(*boot.T).items():
            intervals[name] = _interval(values, confidence, n_groups)
        if prob is not None:
            intervals["auroc"] = _interval(weighted_auroc(prob[known], truth[known], weights[:, group_index[known]]),
                                           confidence, n_groups)
    else:
        intervals = {name: (float("nan"), float("nan")) for name in DETECTION_FIGURES if name != "auroc"
                     or prob is not None}
    return ElementDetection(**figures, auroc=auroc, n=int(said.size), n_wrong=int(truth.sum()), tp=int(tp),
                            fp=int(fp), fn=int(fn), tn=int(tn), intervals=intervals)


# --- paired test -------------------------------------------------------------------------------------------------

PAIRED_METHODS = ("mcnemar", "bootstrap")


@dataclass(frozen=True)
class PairedElementTest:
    """Metric A against metric B on the same answers: ``n_a_only`` answers only A got right, ``n_b_only`` only B;
    ``difference`` = accuracy A - accuracy B with its bootstrap interval over groups (``low``, ``high``);
    ``statistic`` and ``p_value`` of ``method`` (its words in ``test``)."""

    statistic: float
    p_value: float
    method: str
    test: str
    n_a_only: int
    n_b_only: int
    n: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    low: float
    high: float

    def to_dict(self) -> dict:
        return {"method": self.method, "test": self.test, "statistic": json_float(self.statistic),
                "p_value": json_float(self.p_value), "n_a_only": self.n_a_only, "n_b_only": self.n_b_only,
                "n": self.n, "accuracy_a": json_float(self.accuracy_a), "accuracy_b": json_float(self.accuracy_b),
                "difference": json_float(self.difference), "low": json_float(self.low), "high": json_float(self.high)}


def mcnemar(n_a_only: int, n_b_only: int, *, exact: bool | None = None) -> tuple[float, float, str]:
    """``(statistic, p_value, words)`` of McNemar's test on the discordant counts. ``exact`` (default: fewer than
    :data:`EXACT_BELOW` discordant pairs): statistic min(b, c), two-sided binomial p = min(1, 2 P(X <= min) ),
    X ~ Bin(b + c, 1/2); else (|b - c| - 1)^2 / (b + c) against chi-square with one degree of freedom (as
    ``statsmodels.stats.contingency_tables.mcnemar``)."""
    from scipy import stats

    b, c = int(n_a_only), int(n_b_only)
    if exact is None:
        exact = b + c < EXACT_BELOW
    if b + c == 0:
        return 0.0, 1.0, "McNemar (no discordant answers)"
    if exact:
        statistic = float(min(b, c))
        return statistic, float(min(1.0, 2.0 * stats.binom.cdf(min(b, c), b + c, 0.5))), \
            "McNemar exact binomial test (two-sided)"
    statistic = (abs(b - c) - 1.0) ** 2 / (b + c)
    return float(statistic), float(stats.chi2.sf(statistic, 1)), \
        "McNemar chi-square test with continuity correction (1 df)"


def paired_element_test(correct_a, correct_b, groups, *, method: str = "mcnemar", exact: bool | None = None,
                        n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0) -> PairedElementTest:
    """Two metrics answered on the same questions: is one right more often?

    ``method="mcnemar"``: :func:`mcnemar` on the answers only one metric got right (exact below
    :data:`EXACT_BELOW` discordant pairs unless ``exact`` says). ``method="bootstrap"``: the paired bootstrap over
    ``groups`` of the accuracy difference; ``statistic`` is the difference and ``p_value`` two-sided,
    ``min(1, 2 min(P*(d <= 0), P*(d >= 0)))`` over the resamples. Both report the difference and its percentile
    interval over groups.

    Raises
    ------
    ParameterError
        an unknown ``method``, arrays of different lengths or none at all, non-boolean entries.
    """
    if method not in PAIRED_METHODS:
        raise ParameterError("{method} must be one of {choices}, got {value!r}", choices=", ".join(PAIRED_METHODS),
                             value=method)
    confidence = _check_confidence(confidence)
    a = _bool_array(correct_a, "correct_a")
    b = _bool_array(correct_b, "correct_b", a.size)
    if a.size == 0:
        raise ParameterError("{correct_a} and {correct_b} hold no answers to compare")
    group_index, n_groups = _groups(groups, a.size)
    diff = a.astype(np.float64) - b.astype(np.float64)
    num = np.bincount(group_index, weights=diff, minlength=n_groups)
    den = np.bincount(group_index, minlength=n_groups).astype(np.float64)
    difference = float(diff.mean())
    boot = np.zeros(0)
    if n_groups >= 2:
        idx = resample_indices(n_groups, n_bootstrap, seed, name="n_bootstrap")
        boot = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    low, high = _interval(boot, confidence, n_groups)
    n_a_only, n_b_only = int((a & ~b).sum()), int((~a & b).sum())
    if method == "mcnemar":
        statistic, p_value, words = mcnemar(n_a_only, n_b_only, exact=exact)
    else:
        statistic = difference
        p_value = float(min(1.0, 2.0 * min((boot <= 0).mean(), (boot >= 0).mean()))) if boot.size else float("nan")
        words = f"paired bootstrap over groups ({int(n_bootstrap)} resamples), two-sided"
    return PairedElementTest(statistic=statistic, p_value=p_value, method=method, test=words, n_a_only=n_a_only,
                             n_b_only=n_b_only, n=int(a.size), accuracy_a=float(a.mean()), accuracy_b=float(b.mean()),
                             difference=difference, low=low, high=high)
