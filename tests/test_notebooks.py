"""The example notebooks run top to bottom (cwd = examples/, as a user opens them) and are committed without outputs."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NOTEBOOKS = ("01_quickstart.ipynb", "02_reproduce_table2.ipynb", "03_bring_your_own_metric.ipynb")
CELL_TIMEOUT_S = 120


def _read(name: str):
    path = EXAMPLES / name
    assert path.is_file(), f"examples/{name} is missing (a listed notebook must exist: no skip)"
    return nbformat.read(path, as_version=4)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_is_committed_clean(name):
    nb = _read(name)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code), "strip outputs before committing"
    first = code[0].source
    assert "find_spec" in first and "pip install" in first, "first code cell installs the package, guarded"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes(name, shared_ts2, tmp_path, monkeypatch, cwd=None):
    from nbclient import NotebookClient

    nb = _read(name)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # tempfile.mkdtemp() in the notebooks lands here
    # the release tables as the CLI takes them (scorers.tables.release): a local copy through TS2_DATA, as the README says
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd or EXAMPLES)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


def test_quickstart_without_hf_hub_offline_and_without_network(shared_ts2, tmp_path, monkeypatch):
    """Issue 23: notebook 01 with HF_HUB_OFFLINE unset on a machine whose Hub does not answer (a closed loopback port),
    run from a folder with no shared/ts2 above it: it finds the release's metadata.csv through TS2_DATA, as the CLI
    does, and takes its offline path instead of a traceback."""
    from tests.conftest import refused_port

    with refused_port() as port:  # held while the notebook runs: refused, never taken by another socket meanwhile
        for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        test_notebook_executes("01_quickstart.ipynb", shared_ts2, tmp_path, monkeypatch, cwd=elsewhere)
