"""Agreement of metric columns with human ratings, column by column: :func:`correlate_frame`.

``frame`` is any table of columns: a pandas DataFrame or a plain mapping of column name -> values (this module imports
no pandas). The coefficients, groupings and bootstrap are :mod:`scorers.stats.agreement`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from scorers.checks import as_scores
from scorers.errors import ParameterError, Wording, mention
from scorers.stats.agreement import COEFFICIENTS, Agreement, GroupedBootstrap, agreement_many, inter_rater

__all__ = ["CorrelationTable", "correlate_frame"]


@dataclass
class CorrelationTable:
    """What :func:`correlate_frame` computed: inter-rater rows (when several raters), then metric rows."""

    rows: list[Agreement]
    inter_rater: list[Agreement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"rows": [r.to_dict() for r in self.inter_rater + self.rows]}


#: how the errors name each column parameter: ``human column 'x'`` (``ts2 correlate``: ``--human 'x'``)
_HUMAN, _METRICS = Wording("{human:human column}"), Wording("{metrics:metrics column}")


def _column(frame, name: str, option: Wording):
    if name not in frame:
        raise ParameterError("{option} {name!r}: no such column; available: {available}", option=option, name=name,
                             available=", ".join(map(str, frame)))
    return list(frame[name])


def correlate_frame(
    frame: Mapping[str, Sequence],
    *,
    human: Sequence[str],
    metrics: Sequence[str],
    coefficients: Sequence[str] = COEFFICIENTS,
    grouping: str = "none",
    item_col: str = "item",
    system_col: str = "system",
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    lower_is_better: Sequence[str] = (),
    higher_is_better: Mapping[str, bool] | Sequence[str] | None = None,
) -> CorrelationTable:
    """Agreement of every ``metrics`` column with the human rating (the mean of the ``human`` columns per row, NaN
    raters skipped), plus inter-rater agreement when several ``human`` columns are given.

    Orientation: :func:`scorers.stats.orientation.resolve_orientation` (``lower_is_better`` / ``higher_is_better`` and the
    release's known error-count columns); a lower-is-better column's coefficients are those of its negated scores. Group columns are only
    required by the grouping that uses them (``system`` also uses ``item_col`` as bootstrap clusters when present).
    """
    human = list(human)
    metrics = list(metrics)
    if not human:
        raise ParameterError("{human}: name at least one human rating column")
    if not metrics:
        raise ParameterError("{metrics}: name at least one metric column")
    raters = {c: as_scores(_column(frame, c, _HUMAN), name=Wording("{label} {c!r}", label=_HUMAN, c=c)) for c in human}
    unknown = [c for c in lower_is_better if c not in metrics]
    if unknown:
        raise ParameterError("{lower_is_better} {column!r} is not one of the {metrics} columns {names}",
                             column=unknown[0], names=metrics)
    from scorers.stats.orientation import resolve_orientation

    orientation = resolve_orientation(metrics, lower_is_better=lower_is_better, higher_is_better=higher_is_better)
    values = {}
    for c in metrics:  # a coefficient's orientation is its sign: the resolver's lower-is-better columns are negated
        v = as_scores(_column(frame, c, _METRICS), name=Wording("{label} {c!r}", label=_METRICS, c=c))
        values[c] = v if orientation[c] else -v
    items = systems = None
    if grouping == "item" or (grouping == "system" and item_col in frame):
        items = _column(frame, item_col, mention("item_col"))
    if grouping == "system":
        systems = _column(frame, system_col, mention("system_col"))
    stacked = np.vstack(list(raters.values()))
    with np.errstate(invalid="ignore"), _quiet():
        mean_rating = np.nanmean(stacked, axis=0)
    design = GroupedBootstrap(grouping, items, systems, n_bootstrap, confidence, seed)
    rows = agreement_many(mean_rating, values, coefficients=coefficients, design=design)
    table = CorrelationTable(rows=rows)
    if len(human) > 1:
        table.inter_rater = [inter_rater(raters, coefficient=c, design=design) for c in coefficients]
        table.notes.append(f"human = mean of {len(human)} raters ({', '.join(human)}); inter-rater rows are the "
                           "mean coefficient over rater pairs")
    dropped = {r.metric: r.n_nan_dropped for r in rows if r.n_nan_dropped}
    if dropped:
        table.notes.append("rows dropped for a NaN: " + ", ".join(f"{k} {v}" for k, v in dropped.items()))
    return table


class _quiet:
    """Silence numpy's 'Mean of empty slice' for rows where every rater is NaN (they stay NaN and are dropped)."""

    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)
