"""The :class:`Card` dataclass: what :func:`~scorers.report.card.build.build_cards` makes, what the renderers, the CLI
and the demo read, and what ``NAME.json`` holds (:meth:`Card.to_dict`; :meth:`Card.from_dict` reads it back).

A card's ``sets`` map each set's name to its section, a JSON object of one of three layouts (:func:`section_kind`):

* ``ts2``: ``meta`` (``ts2 meta --json``'s object of the metric; when the metadata carries error types, a data dir
  built by ``ts2 seg build``, with ``by_error_type`` as ``ts2 meta --by-error-type --json`` gives it: per error type
  ``summary`` and ``ci`` per meta-metric, ``n_segs``, ``n_walks``, ``n_edges``), ``published`` (its place among the
  release's rows),
  ``baseline_meta``, ``comparison`` (one paired test per meta-metric), ``parts`` (a weighted reward's parts);
* a rating set: ``rows`` (``ts2 correlate --json``'s rows of the metric's column), ``headline_coefficient``,
  ``headline_value``, ``baseline_row``, ``comparison``, ``parts``, ``other_metrics``;
* a preference set: ``rows`` (pairwise accuracy, one row per tie convention, the headline one first),
  ``headline_ties``, ``headline_value``, ``baseline_rows``, ``comparison``, ``parts``, ``other_metrics``;

each with ``status`` ``"evaluated"`` and ``headline`` (the convention, in words), ``verdict`` when it was compared
with the baseline, and ``notes``; a set that was not evaluated has ``status`` ``"not evaluated"`` and ``reason``.
:func:`set_headline` reads a section's headline numbers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CARD_FIELDS", "DISPLAY_UNITS", "Card", "SetHeadline", "display_unit", "section_kind", "set_headline"]

#: the fields every card has (what ``from_dict`` requires)
CARD_FIELDS = ("metric", "baseline", "verdict", "sets", "provenance")


@dataclass
class Card:
    """One metric's report card: its ``verdict`` line against the ``baseline``, one section per set (see the module
    docstring), ``notes``, ``provenance`` (the command, the package version, the SEG set, bootstrap settings, each
    input's sha256) and, for a weighted reward, ``reward`` (its definition and normalisation statistics) and
    ``parts_verdict`` (its line against each part); ``elements``: the "finds the error" section when elements were
given (:func:`scorers.report.card.elements.element_section`), else None and absent from the JSON. Values are
fractions (``unit``)."""

    metric: str
    baseline: str | None
    verdict: str
    sets: dict[str, dict]
    provenance: dict
    notes: list[str] = field(default_factory=list)
    reward: dict | None = None
    parts_verdict: str | None = None
    unit: str = "fraction"
    elements: dict | None = None

    @property
    def not_evaluated(self) -> dict[str, str]:
        """``{set: reason}`` of the sets that were not evaluated."""
        return {k: v["reason"] for k, v in self.sets.items() if v["status"] == "not evaluated"}

    def to_dict(self) -> dict:
        """The card as ``NAME.json`` and ``ts2 card --json`` hold it."""
        extra = {} if self.reward is None else {"reward": self.reward, "parts_verdict": self.parts_verdict}
        found = {} if self.elements is None else {"elements": self.elements}
        return {"metric": self.metric, "baseline": self.baseline, "verdict": self.verdict, **extra, "sets": self.sets,
                **found, "not_evaluated": self.not_evaluated, "notes": self.notes, "provenance": self.provenance,
                "unit": self.unit}

    @classmethod
    def from_dict(cls, data: dict) -> Card:
        """A card from its JSON object (:meth:`to_dict`); a missing field is a ``KeyError`` naming it."""
        return cls(metric=data["metric"], baseline=data["baseline"], verdict=data["verdict"], sets=data["sets"],
                   provenance=data["provenance"], notes=list(data.get("notes", [])), reward=data.get("reward"),
                   parts_verdict=data.get("parts_verdict"), unit=data.get("unit", "fraction"),
                   elements=data.get("elements"))


def section_kind(set_name: str, section: dict) -> str:
    """``"ts2"``, ``"pairs"`` (a preference set: it has a headline tie convention) or ``"ratings"``."""
    if set_name == "ts2":
        return "ts2"
    return "pairs" if "headline_ties" in section else "ratings"


@dataclass(frozen=True)
class SetHeadline:
    """A set's headline as a card shows it first: ``label`` (the statistic), this metric's ``value`` with its
    interval ``ci`` (``(low, high)`` or None), the baseline's value and interval, the first paired ``comparison``
    (a dict with ``statistic``, ``ci_low``, ``ci_high``...) and the ``verdict`` (None: not compared)."""

    kind: str
    label: str
    value: float | None
    ci: tuple | None
    baseline: float | None
    baseline_ci: tuple | None
    comparison: dict | None
    verdict: str | None


#: how a person reads a set's numbers (the JSON keeps fractions): TS2's meta-metrics and a preference set's accuracy in
#: % (as ``ts2 meta`` and ``ts2 report`` print TS2), their paired differences in percentage points; a rating set's
#: coefficients as ``ts2 correlate`` prints them (-1 to 1)
DISPLAY_UNITS = {"ts2": (100.0, "%", "pp"), "pairs": (100.0, "%", "pp"), "ratings": (1.0, "", "")}


def display_unit(kind: str) -> tuple[float, str, str]:
    """``(scale, unit, difference unit)`` of a section kind's numbers as tables and figures show them:
    ``(100, "%", "pp")`` for TS2 and preference sets, ``(1, "", "")`` for rating sets' coefficients."""
    return DISPLAY_UNITS[kind]


def _ci(low, high):
    return None if low is None or high is None else (low, high)


def set_headline(set_name: str, section: dict) -> SetHeadline:
    """The headline numbers of an evaluated set's section: TS2's rank (avg over SEGs), a rating set's headline
    coefficient, a preference set's accuracy under its headline tie convention."""
    kind = section_kind(set_name, section)
    comparisons = section.get("comparison") or []
    comparison, verdict = (comparisons[0] if comparisons else None), section.get("verdict")
    if kind == "ts2":
        rank = section["meta"]["rank"]
        base = section.get("baseline_meta")
        base_ci = None
        if base and base["ci"].get("rank"):
            base_ci = base["ci"]["rank"].get("avg")
        return SetHeadline(kind, "rank (avg)", rank["summary"].get("avg"), (rank.get("ci") or {}).get("avg"),
                           base["summary"]["rank"].get("avg") if base else None, base_ci, comparison, verdict)
    if kind == "pairs":
        head = (section.get("rows") or [{}])[0]
        base = (section.get("baseline_rows") or [None])[0]
        return SetHeadline(kind, f"pairwise accuracy (ties {section['headline_ties']})", section.get("headline_value"),
                           _ci(head.get("ci_low"), head.get("ci_high")),
                           None if base is None else base.get("statistic"),
                           None if base is None else _ci(base.get("ci_low"), base.get("ci_high")), comparison, verdict)
    coefficient = section.get("headline_coefficient")
    head = next((r for r in section.get("rows") or () if r["metric"] == section.get("column")
                 and r["coefficient"] == coefficient), {})
    base = section.get("baseline_row")
    return SetHeadline(kind, coefficient, section.get("headline_value"), _ci(head.get("ci_low"), head.get("ci_high")),
                       None if base is None else base.get("value"),
                       None if base is None else _ci(base.get("ci_low"), base.get("ci_high")), comparison, verdict)
