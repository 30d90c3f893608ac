"""ts2-evaluate: TS2 meta-metrics, dataset helpers and faithfulness scorers.

``import scorers`` stays light: the meta-metrics need only NumPy; model code is imported from its own modules.
"""
from scorers.stats.graph import build_segs, error_count, walks
from scorers.stats.meta import TS2Evaluator, TS2Result, compare, ts2_meta

__version__ = "0.1.0"
__all__ = ["TS2Evaluator", "TS2Result", "build_segs", "compare", "error_count", "list_scorers", "ts2_meta", "walks"]


def list_scorers():
    """Every registered scorer with its default model, the pip extra it needs and what it outputs
    (:func:`scorers.scoring.registry.list_scorers`; the registry is imported on first call, so ``import scorers`` stays
    light)."""
    import importlib

    return importlib.import_module(f"{__name__}.scoring.registry").list_scorers()
