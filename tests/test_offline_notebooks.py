"""The notebooks that need neither the release nor the network (``05_tifa_benchmark``: TIFA v1.0 on tiny local
models; ``07_build_your_own_segs``: the Synth path plan -> generate -> check -> build -> score -> meta -> card) are
committed clean and run top to bottom offline, as the other notebooks (tests/test_notebooks.py)."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NOTEBOOKS = ("05_tifa_benchmark.ipynb", "07_build_your_own_segs.ipynb")
CELL_TIMEOUT_S = 180


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_committed_clean(name):
    nb = nbformat.read(EXAMPLES / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code), "strip outputs before committing"
    assert "find_spec" in code[0].source and "pip install" in code[0].source


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes(name, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    nb = nbformat.read(EXAMPLES / name, as_version=4)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # tempfile.mkdtemp() in the notebook lands here
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(EXAMPLES)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors[0]["evalue"] if errors else ""
