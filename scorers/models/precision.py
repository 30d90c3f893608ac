"""The ``--precision`` names shared by every model family (one table, so fp16/bf16/fp32 mean the same everywhere)."""
from __future__ import annotations

import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def dtype_of(precision: str) -> torch.dtype:
    """``"bf16"`` -> ``torch.bfloat16``; a clear error for anything else."""
    try:
        return DTYPES[precision]
    except KeyError:
        raise ValueError(f"precision {precision!r} is not one of {sorted(DTYPES)}") from None
