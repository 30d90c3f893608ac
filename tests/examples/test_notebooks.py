"""The example notebooks run top to bottom (cwd = examples/, as a user opens them), offline, and are committed without
outputs. Those of the release (01-04, 06, 08) read its tables through ``TS2_DATA``; ``05_tifa_benchmark`` (TIFA v1.0 on
tiny local models) and ``07_build_your_own_segs`` (the Synth path plan -> generate -> check -> build -> score -> meta
-> card) need neither the release nor the network."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RELEASE_NOTEBOOKS = ("01_quickstart.ipynb", "02_reproduce_table2.ipynb", "03_bring_your_own_metric.ipynb",
                     "04_human_agreement.ipynb", "06_report_card.ipynb", "08_which_error.ipynb")
OFFLINE_NOTEBOOKS = ("05_tifa_benchmark.ipynb", "07_build_your_own_segs.ipynb")
#: the notebooks that read the paper's Table 2 (``find_release_table2``: paper_table2.csv from TS2_DATA, else
#: table2_full_precision.csv from the cache or its download): without either they skip before they run
NEEDS_TABLE2 = {"02_reproduce_table2.ipynb", "03_bring_your_own_metric.ipynb"}
CELL_TIMEOUT_S = {"05_tifa_benchmark.ipynb": 180, "07_build_your_own_segs.ipynb": 180}  # tiny models: slower cells


def _read(name: str):
    path = EXAMPLES / name
    assert path.is_file(), f"examples/{name} is missing (a listed notebook must exist: no skip)"
    return nbformat.read(path, as_version=4)


def _execute(name: str, tmp_path: Path, monkeypatch, cwd: Path | None = None) -> None:
    from nbclient import NotebookClient

    nb = _read(name)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # tempfile.mkdtemp() in the notebooks lands here
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S.get(name, 120), kernel_name="python3",
                            resources={"metadata": {"path": str(cwd or EXAMPLES)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors[0]["evalue"] if errors else ""


@pytest.mark.parametrize("name", RELEASE_NOTEBOOKS + OFFLINE_NOTEBOOKS)
def test_notebook_is_committed_clean(name):
    nb = _read(name)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code), "strip outputs before committing"
    first = code[0].source
    assert "find_spec" in first and "pip install" in first, "first code cell installs the package, guarded"


@pytest.mark.parametrize("name", RELEASE_NOTEBOOKS)
def test_release_notebook_executes(name, shared_ts2, tmp_path, monkeypatch):
    from tests.helpers import release_data

    if name in NEEDS_TABLE2 and not any(release_data.find(table) for table in ("paper_table2.csv",
                                                                             "table2_full_precision.csv")):
        pytest.skip(f"release tables paper_table2.csv and table2_full_precision.csv not found: {release_data.FETCH_HINT}")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # CI has no network: a notebook must take its stand-in path
    # the release tables as the CLI takes them (scorers.tables.release): a local copy through TS2_DATA, as the README says
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    _execute(name, tmp_path, monkeypatch)


@pytest.mark.parametrize("name", OFFLINE_NOTEBOOKS)
def test_offline_notebook_executes(name, tmp_path, monkeypatch):
    _execute(name, tmp_path, monkeypatch)


def test_quickstart_without_hf_hub_offline_and_without_network(shared_ts2, tmp_path, monkeypatch):
    """Notebook 01 with HF_HUB_OFFLINE unset on a machine whose Hub does not answer (a closed loopback port), run from
    a folder with no shared/ts2 above it: it finds the release's metadata.csv through TS2_DATA, as the CLI does, and
    takes its offline path instead of a traceback."""
    from tests.helpers.environment import refused_port

    with refused_port() as port:  # held while the notebook runs: refused, never taken by another socket meanwhile
        for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
        monkeypatch.setenv("TS2_DATA", str(shared_ts2))
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        _execute("01_quickstart.ipynb", tmp_path, monkeypatch, cwd=elsewhere)
