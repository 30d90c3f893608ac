"""The skips of a run counted per reason at its end (a plugin; tests/conftest.py registers it)."""
from __future__ import annotations

def pytest_terminal_summary(terminalreporter):
    """At the end of a run: the skips counted per reason (the reason names the fix), most frequent first."""
    import collections
    import re

    counts = collections.Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 else str(longrepr)
        counts[re.sub(r"^Skipped: ", "", reason)] += 1
    if not counts:
        return
    terminalreporter.write_sep("-", f"skips by reason ({sum(counts.values())})")
    for reason, count in counts.most_common():
        terminalreporter.write_line(f"{count:5d}  {reason}")
