"""What start-up loads: the import sets of ``import scorers.stats.meta``, ``ts2 --help`` and ``ts2 reproduce``.

Times are measured by ``benchmarks/bench_startup.py``; these tests pin what makes them: which heavy modules a fresh
interpreter has loaded after each step. Each case runs in its own subprocess, so nothing another test imported counts.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: never needed to compute or print meta-metrics, nor to build the parser
MODEL_STACK = ("torch", "transformers", "datasets", "open_clip", "sentence_transformers", "accelerate", "diffusers")
#: needed by some commands' handlers only: never while the parser is built
HANDLER_ONLY = ("pandas", "pyarrow", "scipy.stats", "matplotlib", "gradio", "huggingface_hub", "httpx", "PIL",
                "tqdm", "ts2_dataset_script")


def loaded_after(code: str, watched: tuple[str, ...], **env: str) -> list[str]:
    """The modules of ``watched`` that a fresh interpreter has in ``sys.modules`` after running ``code``."""
    probe = (f"{code}\nimport json, sys\n"
             f"print('\\n' + json.dumps([m for m in {list(watched)!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_meta_loads_no_model_stack_and_no_pandas():
    assert loaded_after("import scorers.stats.meta", MODEL_STACK + ("pandas", "scipy.stats")) == []


@pytest.mark.parametrize("module", ["scorers.stats.graph", "scorers.stats.meta", "scorers.stats.agreement"])
def test_light_modules_load_no_dataframes_or_models(module):
    assert loaded_after(f"import {module}", MODEL_STACK + ("pandas", "scipy.stats")) == [], module


def test_building_the_parser_imports_no_handler_library():
    """``ts2 --help`` (and every ``ts2 COMMAND --help``) declares the options without importing what the handlers
    run: the cli modules import the library inside their handler functions."""
    code = ("import contextlib, io\nfrom scorers.cli import build_parser, main\nbuild_parser()\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n")
    assert loaded_after(code, MODEL_STACK + HANDLER_ONLY) == []


def test_reproduce_loads_no_model_stack_nor_dataset_script(shared_ts2):
    """``ts2 reproduce`` reads three CSVs and computes meta-metrics: no pandas (the release tables are well-formed, so
    :mod:`scorers.tables.csv_tables` reads them), no models, no ``datasets``, no dataset builder script, no scipy.stats, no
    plotting."""
    code = ("import contextlib, io\nfrom scorers.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['reproduce']) == 0\n")
    loaded = loaded_after(code, MODEL_STACK + ("pandas", "scipy.stats", "matplotlib", "ts2_dataset_script"),
                          TS2_DATA=str(shared_ts2), HF_HUB_OFFLINE="1")
    assert loaded == []


def test_question_tables_are_read_without_the_dataset_script(shared_ts2):
    """The rules layer validates question tables itself (issue 25.2): no ``datasets``, no builder script, no pandas."""
    code = ("from scorers.metrics.qga.questions import read_question_set\n"
            f"assert len(read_question_set({str(shared_ts2 / 'dsg_questions.csv')!r})) > 0\n"
            f"assert len(read_question_set({str(shared_ts2 / 'tifa_questions.csv')!r})) > 0\n")
    assert loaded_after(code, MODEL_STACK + ("pandas", "ts2_dataset_script")) == []
