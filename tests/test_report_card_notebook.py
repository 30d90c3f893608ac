"""examples/06_report_card.ipynb (a report card from generated score files and a generated rating set) is executed like
the other notebooks (tests/test_notebooks.py's checks), offline."""
from __future__ import annotations

from tests import test_notebooks as nb

NAME = "06_report_card.ipynb"


def test_notebook_is_committed_clean():
    nb.test_notebook_is_committed_clean(NAME)


def test_notebook_executes(shared_ts2, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # CI has no network; the notebook needs none
    nb.test_notebook_executes(NAME, shared_ts2, tmp_path, monkeypatch)
