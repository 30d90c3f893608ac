"""pyproject.toml tells the truth: every third-party import of the library is declared, the version has one source,
and a stray local ``scorers.py`` shadowing the package gives a clear error."""
from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import scorers

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = ("models", "served", "report", "demo", "generate", "ray", "all", "docs", "dev")


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _declared() -> set[str]:
    """Distribution names in pyproject's dependencies and every extra, normalised (self-references dropped)."""
    project = PYPROJECT["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += extra
    return {_name(r) for r in requirements} - {"ts2-evaluate"}


def _third_party_imports() -> dict[str, str]:
    """Top-level module names imported anywhere in scorers/ or ts2_evaluate.py (at any depth) -> first file."""
    stdlib = set(sys.stdlib_module_names)
    found: dict[str, str] = {}
    for path in sorted((ROOT / "scorers").rglob("*.py")) + [ROOT / "ts2_evaluate.py"]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in stdlib and top not in ("scorers", "__future__"):
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_declared():
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    undeclared = []
    for module, where in _third_party_imports().items():
        dists = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        if not dists & declared:
            undeclared.append(f"{module} ({where}; distribution {sorted(dists)})")
    assert not undeclared, f"imported but not in pyproject.toml: {undeclared}"


def test_extras_and_console_script_keep_their_names():
    project = PYPROJECT["project"]
    assert project["name"] == "ts2-evaluate"
    assert set(project["optional-dependencies"]) == set(EXTRAS)
    # one entry under two names: upstream T2IScoreScore also installs a `ts2`, `ts2-evaluate` is always this package's
    assert project["scripts"] == {"ts2": "ts2_evaluate:main", "ts2-evaluate": "ts2_evaluate:main"}
    # self-references name only extras that exist
    for extra in project["optional-dependencies"].values():
        for requirement in extra:
            if _name(requirement) == "ts2-evaluate":
                named = re.search(r"\[([^\]]+)\]", requirement).group(1).split(",")
                assert set(named) <= set(EXTRAS), requirement


def test_version_has_one_source():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "scorers.__version__"}
    assert "version=" not in (ROOT / "setup.py").read_text()  # not typed a second time
    out = subprocess.run([sys.executable, "setup.py", "--version"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    assert out == scorers.__version__


def _run_in(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the package is importable, but the folder comes first
    return subprocess.run([sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_a_stray_scorers_py_gives_a_clear_error(tmp_path):
    (tmp_path / "scorers.py").write_text("x = 1  # someone's own script, named like the package\n")
    result = _run_in(tmp_path, "-c", "import ts2_evaluate, sys; sys.exit(ts2_evaluate.main(['--help']))")
    assert result.returncode == 2
    assert result.stderr.strip() == (f"ts2: error: a file scorers.py in {tmp_path} shadows the ts2-evaluate package "
                                     "(import name `scorers`); rename it")
    assert "Traceback" not in result.stderr


def test_a_stray_scorers_folder_gives_a_clear_error(tmp_path):
    (tmp_path / "scorers").mkdir()  # a package of someone's own, named like ours
    (tmp_path / "scorers" / "__init__.py").write_text("")
    result = _run_in(tmp_path, "-m", "ts2_evaluate", "--help")
    # `python -m` puts the cwd first on sys.path, so the folder wins over the package on PYTHONPATH
    assert result.returncode == 2
    assert "a folder scorers in" in result.stderr and "shadows the ts2-evaluate package" in result.stderr


def test_without_a_stray_file_the_entry_runs_the_cli(tmp_path):
    result = _run_in(tmp_path, "-m", "ts2_evaluate", "--help")
    assert result.returncode == 0, result.stderr
    assert "reproduce" in result.stdout
