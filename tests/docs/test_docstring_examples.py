"""The public functions of ``graph``, ``meta``, ``agreement`` and ``embedding`` document what they raise and show a
runnable example, and the examples run (``pytest --doctest-modules`` on exactly those four files, as torchmetrics runs
its examples)."""
from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = ("scorers.stats.graph", "scorers.stats.meta", "scorers.stats.agreement", "scorers.metrics.embedding")


def test_the_examples_run():
    files = [str(ROOT / (m.replace(".", "/") + ".py")) for m in MODULES]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "--doctest-modules", "-p", "no:cacheprovider",
                           "--rootdir", str(ROOT), *files], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    counts = dict((kind, int(n)) for n, kind in re.findall(r"(\d+) (passed|failed|skipped|error)", done.stdout))
    assert counts.get("passed", 0) >= 25 and "skipped" not in counts, done.stdout[-1000:]


def _section(doc: str, name: str) -> bool:
    """Google style (``Raises:``) or NumPy style (``Raises`` over a dashed line)."""
    return re.search(rf"^\s*{name}(:\s*$|\s*\n\s*-+\s*$)", doc, flags=re.M) is not None


@pytest.mark.parametrize("module_name", MODULES)
def test_public_functions_have_raises_and_examples(module_name):
    module = importlib.import_module(module_name)
    missing = []
    for name in module.__all__:
        obj = getattr(module, name)
        if not inspect.isfunction(obj):
            continue
        doc = inspect.getdoc(obj) or ""
        runnable = [line for line in doc.splitlines() if line.strip().startswith(">>>") and "+SKIP" not in line]
        if not _section(doc, "Raises"):
            missing.append(f"{name}: no Raises section")
        if not _section(doc, "Examples") or not runnable:
            missing.append(f"{name}: no runnable Examples section")
    assert missing == [], f"{module_name}: {missing}"
