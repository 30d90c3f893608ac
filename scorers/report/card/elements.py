"""The card's optional "finds the error" section: which element a question-based metric finds wrong, read from a
``ts2 elements --json`` file or per-question records (:func:`scorers.ts2.elements.load_element_summary` reads both),
one entry per metric of the card.

An elements file maps metric (or release variant) names to their figures beside the reserved keys ``unit``,
``truth`` (``released``, ``built`` or ``evalmuse``), ``interval`` and ``paired``. A card takes the entry named as its
metric; a file given as ``NAME=PATH`` is that card's (its entry ``NAME``, or its only entry). Nothing is computed
here: the section is the entry as the file holds it, with where it came from.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from scorers.ts2.elements import RESERVED

__all__ = ["ElementSource", "element_entries", "element_section", "read_element_summaries"]


@dataclass(frozen=True)
class ElementSource:
    """An elements file as the card reads it: ``path`` (a ``ts2 elements --json`` file or a records file) and
    ``metric``: the card it belongs to (``ts2 card --elements NAME=PATH``), None: each card takes the entry named as
    its metric."""

    path: str
    metric: str | None = None


def element_entries(summary: Mapping) -> dict[str, dict]:
    """``{metric: entry}`` of an elements summary: every key but the reserved ones
    (:data:`scorers.ts2.elements.RESERVED`)."""
    return {k: v for k, v in summary.items() if k not in RESERVED}


def read_element_summaries(sources: Sequence[ElementSource], *, metadata=None,
                           questions=None) -> list[tuple[ElementSource, dict]]:
    """Each source read once through :func:`scorers.ts2.elements.load_element_summary` (``metadata``: a built dir's
    ``metadata.csv`` for records of built SEGs; ``questions``: their question table)."""
    from scorers.ts2.elements import load_element_summary

    out = []
    for source in sources:
        if not Path(source.path).is_file():
            raise FileNotFoundError(f"elements {source.path}: no such file")
        out.append((source, load_element_summary(source.path, metadata=metadata, questions=questions)))
    return out


def element_section(summaries: Sequence[tuple[ElementSource, dict]], metric: str, *,
                    only_card: bool = False) -> dict | None:
    """Metric ``metric``'s "finds the error" section: the first summary with an entry for it, as ``{"status":
    "evaluated", "source", "entry", "truth", "interval", "unit", **entry}`` (plus ``paired``, the file's paired test,
    when it names this metric); ``{"status": "not evaluated", "reason"}`` when elements were given but none is this
    metric's; None when no elements were given (the card has no such section). ``only_card``: this is the only card,
    so a plain file with a single entry is its own."""
    if not summaries:
        return None
    for source, summary in summaries:
        entries = element_entries(summary)
        if source.metric is not None and source.metric != metric:
            continue
        name = metric if metric in entries else None
        if name is None and len(entries) == 1 and (source.metric is not None or only_card):
            name = next(iter(entries))
        if name is None:
            continue
        section = {"status": "evaluated", "source": str(source.path), "entry": name,
                   "truth": summary.get("truth"), "interval": summary.get("interval"),
                   "unit": summary.get("unit", "fraction"), **entries[name]}
        paired = summary.get("paired")
        if isinstance(paired, Mapping) and name in _named(paired):
            section["paired"] = dict(paired)
        return section
    names = sorted({n for _s, summary in summaries for n in element_entries(summary)})
    files = ", ".join(str(s.path) for s, _ in summaries)
    return {"status": "not evaluated",
            "reason": f"no entry for {metric} in {files} (entries: {', '.join(names) or 'none'}); give "
                      f"--elements {metric}=FILE to use another entry"}


def _named(paired: Mapping) -> set[str]:
    """The metric names a paired-test object mentions (its string values: ``a``, ``b``, ``metrics``...)."""
    names = set()
    for value in paired.values():
        if isinstance(value, str):
            names.add(value)
        elif isinstance(value, (list, tuple)):
            names.update(v for v in value if isinstance(v, str))
    return names
