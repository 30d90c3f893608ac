"""The figures of ``ts2 report`` left undrawn, for tests that read its tables or only some of its figures (each
figure function returns the path it would have written; tests/cli/test_report.py and tests/report/test_figures.py
draw and check every figure)."""
from __future__ import annotations

from pathlib import Path

#: the figure functions ``scorers.report.write_report`` calls, with what each returns besides drawing
_STUBS = {
    "rank_vs_cost": lambda board, flops, path, **kw: (Path(path), []),
    "seg_histograms": lambda results, path, **kw: Path(path),
    "correlation_heatmap": lambda results, path, **kw: (Path(path), None),
    "error_graph": lambda seg, scores, path, **kw: Path(path),
}


def skip_report_figures(monkeypatch, keep=()) -> None:
    """For the rest of the test, ``write_report`` draws only the figures named in ``keep`` (function names)."""
    import scorers.report

    for name, stub in _STUBS.items():
        if name not in keep:
            monkeypatch.setattr(scorers.report, name, stub)
