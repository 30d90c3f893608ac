"""Discoverability: `ts2 score --list` / `scorers.list_scorers()`, `ts2 --version`."""
from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import scorers
from scorers.cli import main
from scorers.scoring.registry import SCORERS, get_factory, list_scorers


def test_list_scorers_covers_the_registry_in_order():
    infos = scorers.list_scorers()
    assert [i.name for i in infos] == list(SCORERS)
    assert all(i.default_model and i.extra == "models" and i.outputs.startswith(i.name.split("_score")[0])
               for i in infos if i.name != "llmscore")
    assert {i.name: i for i in infos}["llmscore"].outputs.startswith("llmscore_ec")


def test_default_models_are_the_factories_own():
    """The table is written by hand; each default model must be the one the factory really uses."""
    from scorers.metrics.judges.llmscore import DEFAULT_CAPTIONER, DEFAULT_LLM
    from scorers.metrics.judges.viescore import DEFAULT_VIESCORE_MODEL
    from scorers.metrics.qga.matching import DEFAULT_SBERT
    from scorers.metrics.qga.question_scorers import DEFAULT_VQA_MODEL

    info = {i.name: i.default_model for i in list_scorers()}
    for name in ("clip_score", "align_score", "siglip_score"):
        assert info[name].startswith(inspect.signature(get_factory(name)).parameters["model"].default)
    for name in ("tifa", "dsg"):
        assert info[name].startswith(DEFAULT_VQA_MODEL) and DEFAULT_SBERT in info[name]
    assert info["vqa_score"].startswith(DEFAULT_VQA_MODEL)
    assert info["viescore"].startswith(DEFAULT_VIESCORE_MODEL)
    assert info["llmscore"].startswith(DEFAULT_CAPTIONER) and DEFAULT_LLM in info["llmscore"]
    from scorers.metrics.judges.unifiedreward import DEFAULT_UNIFIEDREWARD_MODEL
    from scorers.models.reward_checkpoints import DEFAULT_HPSV3_MODEL, DEFAULT_IMAGEREWARD_MODEL
    from scorers.metrics.reward_models import HPSV2_CHECKPOINTS, PICKSCORE_MODEL

    assert info["pickscore"].startswith(PICKSCORE_MODEL)
    assert info["hpsv2"].startswith(inspect.signature(get_factory("hpsv2")).parameters["model"].default)
    assert HPSV2_CHECKPOINTS["v2.1"] in info["hpsv2"]
    assert info["imagereward"].startswith(DEFAULT_IMAGEREWARD_MODEL)
    assert info["hpsv3"].startswith(DEFAULT_HPSV3_MODEL)
    assert info["unifiedreward"].startswith(DEFAULT_UNIFIEDREWARD_MODEL)


def test_score_list_prints_every_scorer_without_scorer_or_out(capsys):
    with pytest.raises(SystemExit) as done:
        main(["score", "--list"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for info in list_scorers():
        assert f"\n{info.name}\n" in f"\n{out}" and info.default_model in out and info.outputs in out
    assert out.count("pip install '.[models]'") == len(SCORERS)


def test_version_from_the_command_line():
    done = subprocess.run([sys.executable, "-m", "scorers.cli", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"ts2-evaluate {scorers.__version__}"


def test_worked_example_files_are_generated_not_edited(tmp_path, monkeypatch):
    """tests/data/*.csv are make_sample.py's output (made from scratch: no release data in them)."""
    import importlib.util
    from pathlib import Path

    data = Path(__file__).resolve().parents[1] / "data"
    spec = importlib.util.spec_from_file_location("make_sample", data / "make_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    module.main()
    for name in ("my_scores.csv", "sample_metadata.csv"):
        assert (tmp_path / name).read_bytes() == (data / name).read_bytes(), name


def test_worked_example_output_is_the_readmes(capsys):
    """The README's worked-example output is what the command prints (the first columns it shows)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme.split("## A worked example in one minute", 1)[1].split("\n## ", 1)[0]
    shown = re.search(r"```text\n(.*?)```", section, re.S).group(1).splitlines()
    assert main(["meta", str(root / "tests/data/my_scores.csv"), "--metadata",
                 str(root / "tests/data/sample_metadata.csv"), "--on", "seg_id", "file_name"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == shown[0]
    for readme_line in shown[1:]:
        row = next(line for line in printed if line.split()[:1] == readme_line.split()[:1])
        shown_tokens = readme_line.replace(" ...", "").split()  # the README cuts the wide table with " ..."
        assert row.split()[:len(shown_tokens)] == shown_tokens
