"""ts2-evaluate: TS2 meta-metrics, dataset helpers and faithfulness scorers.

``import scorers`` stays light: the meta-metrics need only NumPy; model code is imported from its own modules.
"""
from .graph import build_segs, error_count, walks
from .meta import TS2Evaluator, TS2Result, compare, ts2_meta

from .registry import list_scorers

__version__ = "0.1.0"
__all__ = ["TS2Evaluator", "TS2Result", "build_segs", "compare", "error_count", "list_scorers", "ts2_meta", "walks"]
