"""examples/04_human_agreement.ipynb is executed like the other notebooks (tests/test_notebooks.py's checks)."""
from __future__ import annotations


from tests import test_notebooks as nb

NAME = "04_human_agreement.ipynb"


def test_notebook_is_committed_clean():
    nb.test_notebook_is_committed_clean(NAME)


def test_notebook_executes(shared_ts2, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # CI has no network: the notebook must take its stand-in path
    nb.test_notebook_executes(NAME, shared_ts2, tmp_path, monkeypatch)
