"""Orientation of score columns (is a higher score better?): the one resolver every caller passes down.

Facts known about scores live here (the release's error-count columns), next to the rule that combines them with what
the user says. :func:`resolve_orientation` returns ``{column: higher_is_better}`` for ``ts2 meta``, ``ts2 report``,
``ts2 reproduce``, ``ts2 score --meta``, ``ts2 correlate`` and the demo; :mod:`scorers.stats.meta` then negates the
lower-is-better columns once, before anything is computed.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from scorers.errors import ParameterError, mention

__all__ = ["RELEASED_LOWER_IS_BETTER", "resolve_orientation"]

#: Score columns that are error counts (lower is better): the TS2 release's ``llmscore_ec`` and ``llmscore_over``, as
#: the release's README and the paper's Table 2 say; ``ts2 score llmscore`` writes ``llmscore_ec`` the same way.
RELEASED_LOWER_IS_BETTER = ("llmscore_ec", "llmscore_over")

_TRUE = ("1", "true", "yes")


def resolve_orientation(
    columns: Sequence[str],
    *,
    lower_is_better: Iterable[str] = (),
    higher_is_better: Mapping[str, bool] | Iterable[str] | bool | None = None,
    paper=None,
    known_lower_is_better: Iterable[str] = RELEASED_LOWER_IS_BETTER,
) -> dict[str, bool]:
    """``{column: higher_is_better}`` for every one of ``columns``.

    In increasing precedence: higher is better; the known error-count columns (``known_lower_is_better``, default
    :data:`RELEASED_LOWER_IS_BETTER`) are lower-is-better; a paper table's explicit ``higher_is_better`` column;
    ``higher_is_better`` (a bool for every column, a ``{column: bool}`` mapping such as a scorer's own facts, or column
    names that are higher-is-better); ``lower_is_better`` (column names). A name in ``lower_is_better`` or
    ``higher_is_better`` that is not one of ``columns``, or in both, is a ``ValueError`` naming it.
    """
    columns = list(columns)
    known = set(known_lower_is_better)
    out = {c: c not in known for c in columns}
    if paper is not None and "higher_is_better" in getattr(paper, "columns", ()):
        for record in paper.drop_duplicates("column").to_dict("records"):
            if record["column"] in out:
                out[record["column"]] = str(record["higher_is_better"]).strip().lower() in _TRUE
    if isinstance(higher_is_better, bool):
        out = {c: higher_is_better for c in columns}
        higher = {}
    elif isinstance(higher_is_better, Mapping):
        higher = {str(c): bool(v) for c, v in higher_is_better.items()}
    else:
        higher = {str(c): True for c in (higher_is_better or ())}
    lower = [str(c) for c in lower_is_better]
    both = sorted(set(lower) & {c for c, v in higher.items() if v})
    if both:
        raise ValueError(f"column(s) {both} are named both lower-is-better and higher-is-better")
    checked = lower + ([] if isinstance(higher_is_better, Mapping) else list(higher))  # a mapping may name more
    unknown = [c for c in checked if c not in out]
    if unknown:
        option = "lower_is_better" if unknown[0] in lower else "higher_is_better"
        raise ParameterError("{option} {column!r}: no such score column; available: {available}",
                             option=mention(option), column=unknown[0], available=columns[:20])
    out.update({c: v for c, v in higher.items() if c in out})
    out.update({c: False for c in lower})
    return out
