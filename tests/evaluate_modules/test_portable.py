"""Each ``evaluate_modules/*`` folder is Hub-ready: it loads from a copy outside the repository and
carries what a Hub Space of the module needs (requirements.txt naming this package, card front matter, app.py)."""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = sorted(p for p in (ROOT / "evaluate_modules").iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
MODEL_FREE = {"ts2_meta", "human_agreement"}  # their imports need no model extra


def test_there_are_ten_modules():
    assert [f.name for f in FOLDERS] == ["align_score", "clip_score", "dsg_score", "hpsv2", "hpsv3", "human_agreement",
                                         "imagereward", "llmscore", "pickscore", "siglip_score", "tifa_score",
                                         "ts2_meta", "unifiedreward", "viescore", "vqa_score"]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_requirements_name_this_package(folder):
    lines = [ln.strip() for ln in (folder / "requirements.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines == (["ts2-evaluate"] if folder.name in MODEL_FREE else ["ts2-evaluate[models]"])
    for line in lines:
        if "[" in line:
            assert set(line[line.index("[") + 1:-1].split(",")) <= EXTRAS


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_card_front_matter_is_a_space_of_an_evaluate_metric(folder):
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n")
    front = yaml.safe_load(card.split("---\n", 2)[1])
    assert front["title"] and front["emoji"] and front["description"]
    assert front["sdk"] == "gradio" and front["app_file"] == "app.py"
    assert {"evaluate", "metric"} <= set(front["tags"])


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_app_launches_the_evaluate_widget_on_its_own_module(folder):
    tree = ast.parse((folder / "app.py").read_text())
    calls = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr for n in ast.walk(tree)
             if isinstance(n, ast.Call)}
    assert {"load", "launch_gradio_widget"} <= calls


def test_every_module_loads_from_a_copy_outside_the_repository(tmp_path):
    """One subprocess (fresh HF_HOME, cwd outside the repo) loads each copied folder; the cheap modules compute."""
    copies = tmp_path / "elsewhere"
    for folder in FOLDERS:
        shutil.copytree(folder, copies / folder.name)
    script = f"""
import json, sys
from pathlib import Path
import evaluate
out = {{}}
for folder in sorted(Path({str(copies)!r}).iterdir()):
    module = evaluate.load(str(folder))
    out[folder.name] = {{"class": type(module).__name__, "features": sorted(module.features)}}
# two SEGs, nodes 0 < 1 < 2 errors, scores falling as errors grow: a perfect ordering, rank = 1 by hand
meta = evaluate.load(str(Path({str(copies)!r}) / "ts2_meta"))
out["ts2_meta_rank"] = meta.compute(scores=[3, 2, 1, 3, 2, 1], seg_ids=[0, 0, 0, 1, 1, 1],
                                    nodes=["0", "1", "2", "0", "1", "2"])["rank"]
# references = 2 * predictions + 1: Pearson and Spearman are exactly 1 by definition
agree = evaluate.load(str(Path({str(copies)!r}) / "human_agreement"))
out["agreement"] = agree.compute(predictions=[0.1, 0.4, 0.2, 0.9], references=[1.2, 1.8, 1.4, 2.8],
                                 coefficients=["pearson", "spearman"])
print(json.dumps(out))
"""
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_MODULES_CACHE": str(tmp_path / "hf" / "modules"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for folder in FOLDERS:
        expected = ["predictions", "references"] if folder.name == "human_agreement" else (
            ["nodes", "partitions", "scores", "seg_ids"] if folder.name == "ts2_meta" else ["images", "prompts"])
        assert out[folder.name]["features"] == expected, folder.name
    assert out["ts2_meta_rank"] == pytest.approx(1.0)
    assert out["agreement"]["pearson"] == pytest.approx(1.0)  # float rounding of an exact 1
    assert out["agreement"]["spearman"] == pytest.approx(1.0)
    assert not (tmp_path / "hf" / "modules").is_relative_to(ROOT)
