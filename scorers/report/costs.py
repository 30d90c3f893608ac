"""Compute cost per image (FLOPs) for the rank-vs-cost figure: the paper's ``604M``/``224T``/``1.66P`` strings as floats.

Costs come from the paper table's ``flop_per_image`` column and/or explicit ``COLUMN=1.2T`` overrides (a user's own
metric has no paper entry); a metric without a cost is left out of the figure with a note, never guessed.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping

import pandas as pd

from ..units import parse_quantity

__all__ = ["flops_from_paper", "merged_flops", "parse_flops", "parse_flops_overrides"]

def parse_flops(text: object) -> float:
    """``"604M" -> 6.04e8``, ``"1.66P" -> 1.66e15``, ``"2.5e9" -> 2.5e9``; ``ValueError`` for anything else."""
    return parse_quantity(text, units=("FLOP", "FLOPs"), what="FLOPs value", example="604M, 1.2T")


def flops_from_paper(paper: pd.DataFrame | None) -> dict[str, float]:
    """``{column: FLOPs per image}`` from the paper table (rows with an empty ``flop_per_image`` are skipped)."""
    if paper is None or "flop_per_image" not in paper.columns:
        return {}
    out: dict[str, float] = {}
    for row, (column, raw) in enumerate(zip(paper["column"], paper["flop_per_image"])):
        if raw is None or (isinstance(raw, float) and math.isnan(raw)) or str(raw).strip() == "":
            continue
        try:
            value = parse_flops(raw)
        except ValueError as error:
            raise ValueError(f"paper table row {row + 2} ({column}): {error}") from None
        if column in out and out[column] != value:
            raise ValueError(f"paper table row {row + 2}: {column} has two FLOPs values ({out[column]:g} and {value:g})")
        out[column] = value
    return out


def parse_flops_overrides(specs: Iterable[str] | None) -> dict[str, float]:
    """``["mymetric=1.2T", ...]`` (the ``--flops`` option) -> ``{"mymetric": 1.2e12}``."""
    out: dict[str, float] = {}
    for spec in specs or ():
        column, sep, value = str(spec).partition("=")
        if not sep or not column.strip():
            raise ValueError(f"--flops {spec!r}: expected COLUMN=VALUE, e.g. mymetric=1.2T")
        try:
            out[column.strip()] = parse_flops(value)
        except ValueError as error:
            raise ValueError(f"--flops {spec!r}: {error}") from None
    return out


def merged_flops(paper: pd.DataFrame | None, overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """Paper costs updated by explicit overrides (an override wins)."""
    out = flops_from_paper(paper)
    out.update(overrides or {})
    return out
