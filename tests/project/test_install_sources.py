"""Every file that names an installable source (the Space, the ``evaluate`` modules, the notebooks'
``%pip`` cells) keeps the distribution name, says how to install from a clone until the package is on PyPI, and its
requirement resolves to this checkout: a wheel built from the checkout, offered to pip offline (``--no-index
--find-links``), satisfies every one of them (``--dry-run``: nothing is installed)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scorers import __version__

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENT_FILES = sorted(ROOT.glob("evaluate_modules/*/requirements.txt")) + [
    ROOT / "examples" / "space" / "requirements.txt"]
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))
PIP_CELL = re.compile(r'%pip install -q "(ts2-evaluate[^"]*)"')


def _requirements(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def _pip_requirement(notebook: Path) -> str:
    source = "".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"]
                     if c["cell_type"] == "code")
    found = PIP_CELL.findall(source)
    assert len(found) == 1, f"{notebook.name}: one guarded %pip install of ts2-evaluate expected, found {found}"
    return found[0]


@pytest.mark.parametrize("path", REQUIREMENT_FILES, ids=lambda p: p.parent.name)
def test_requirement_file_says_how_to_install_from_a_clone(path):
    text = path.read_text()
    assert _requirements(path)[0].startswith("ts2-evaluate")
    assert "not on PyPI" in text or "Until ts2-evaluate is on PyPI" in text
    assert "from a clone" in text


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_pip_cell_says_how_to_install_from_a_clone(notebook):
    requirement = _pip_requirement(notebook)
    cells = ["".join(c["source"]) for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    install = next(c for c in cells if requirement in c)
    assert "not on PyPI yet" in install and f"path/to/{requirement}" in install, install


def test_every_named_source_resolves_to_this_checkout(tmp_path):
    """One wheel of the checkout; pip resolves each file's requirement to it, offline, without installing."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist),
                    str(ROOT)], env=env, check=True, capture_output=True, timeout=300)
    (wheel,) = dist.glob("ts2_evaluate-*.whl")
    assert wheel.name == f"ts2_evaluate-{__version__}-py3-none-any.whl"
    notebook_requirements = tmp_path / "notebooks.txt"
    notebook_requirements.write_text("\n".join(_pip_requirement(n) for n in NOTEBOOKS) + "\n")
    sources = [*REQUIREMENT_FILES, notebook_requirements]
    args = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "--ignore-installed",
            "--find-links", str(dist), "--report", str(tmp_path / "report.json"), "-q"]
    for source in sources:
        args += ["-r", str(source)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    (installed,) = json.loads((tmp_path / "report.json").read_text())["install"]
    assert installed["metadata"]["name"] == "ts2-evaluate" and installed["metadata"]["version"] == __version__
    assert installed["download_info"]["url"] == wheel.as_uri()
    wanted = set()
    for source in sources:
        for requirement in _requirements(source):
            wanted |= set(re.findall(r"\[(.*)\]", requirement)[0].split(",")) if "[" in requirement else set()
    assert wanted <= set(installed["metadata"]["provides_extra"]), wanted  # every extra named exists
