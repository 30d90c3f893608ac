"""Compute cost per image (FLOPs) for the rank-vs-cost figure: the paper's ``604M``/``224T``/``1.66P`` strings as floats.

Costs come from the paper table's ``flop_per_image`` column, then :data:`MEASURED_FLOPS` (this toolkit's own
scorers that Table 2 lacks), then explicit ``COLUMN=1.2T`` overrides (a user's own metric); a metric without a cost is
left out of the figure with a note, never guessed.
"""
from __future__ import annotations

import math
from typing import Iterable, Mapping

import pandas as pd

from scorers.units import parse_quantity

__all__ = ["FLOPS_CONVENTION", "MEASURED_FLOPS", "flops_from_paper", "measured_flops_note", "merged_flops",
           "parse_flops", "parse_flops_overrides"]

#: how :data:`MEASURED_FLOPS` were counted
FLOPS_CONVENTION = ("torch.utils.flop_counter.FlopCounterMode, 2 FLOPs per multiply-add (matmuls, convolutions, "
                    "attention), on the real architecture's config (meta device)")
#: CLIP ViT-B/16 (TS2's CLIPScore) by that count (35.1G image + 1.1G text) and in the paper's Table 2: Table 2 follows
#: another, unstated count, 59.9x below this one
CLIP_B16_FLOPS = {"counted": 36.2e9, "table2": 604e6}

#: FLOPs per (image, prompt) of the default checkpoints of the reward scorers (issue 26), measured by
#: ``python benchmarks/bench_rewards.py --only flops`` (:data:`FLOPS_CONVENTION`; how each is counted and its image
#: and text sizes: that script and each scorer's evaluate card)
MEASURED_FLOPS: dict[str, float] = {
    "pickscore": 343.1e9,       # CLIP ViT-H/14 at 224 px + 14 text tokens
    "hpsv2": 381.7e9,           # open_clip ViT-H-14 at 224 px + 77 text tokens (open_clip pads to 77)
    "imagereward": 137.8e9,     # BLIP ViT-L/16 at 224 px + BERT-base with cross-attention over 35 tokens + MLP
    "hpsv3": 11.7e12,           # Qwen2-VL-7B at 448 x 448 px, 776 LM tokens (text length estimated)
    "unifiedreward": 7.9e12,    # Qwen3-VL-8B at 512 x 512 px, 488 LM tokens incl. a 32-token reply (estimated)
}

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


def merged_flops(paper: pd.DataFrame | None, overrides: Mapping[str, float] | None = None, *,
                 measured: Mapping[str, float] | None = None) -> dict[str, float]:
    """Paper costs, then ``measured`` ones (e.g. :data:`MEASURED_FLOPS`) for columns the paper lacks, updated by
    explicit overrides (an override wins)."""
    out = flops_from_paper(paper)
    out.update({column: value for column, value in (measured or {}).items() if column not in out})
    out.update(overrides or {})
    return out


def measured_flops_note(columns: Iterable[str], paper: pd.DataFrame | None,
                        overrides: Mapping[str, float] | None = None) -> str | None:
    """The report note for the ``columns`` whose cost is one of :data:`MEASURED_FLOPS` (None if none is)."""
    from_paper, overrides = flops_from_paper(paper), overrides or {}
    used = [c for c in columns if c in MEASURED_FLOPS and c not in from_paper and c not in overrides]
    if not used:
        return None
    counted, table2 = CLIP_B16_FLOPS["counted"], CLIP_B16_FLOPS["table2"]
    return (f"rank_vs_flops.png: the FLOPs of {', '.join(used)} are this toolkit's counts ({FLOPS_CONVENTION}); "
            f"Table 2's costs follow another count (CLIP ViT-B/16: {counted / 1e9:.1f}G by ours, "
            f"{table2 / 1e6:.0f}M in Table 2, {counted / table2:.1f}x), so read their x positions against each other, "
            "not against the paper's metrics (pass --flops COLUMN=VALUE to set another figure)")
