"""setup.py tells the truth: every third-party import of the library is declared, and the version has one source."""
from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import scorers

ROOT = Path(__file__).resolve().parents[1]


def _declared() -> set[str]:
    """Distribution names in setup.py's module-level requirement lists (CORE, MODELS, ... any extra), normalised."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            for item in node.value.elts:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    names.add(re.split(r"[<>=!~\[;\s]", item.value, maxsplit=1)[0])
    return {n.lower().replace("_", "-") for n in names}


def _third_party_imports() -> dict[str, str]:
    """Top-level module names imported anywhere in scorers/ (at any depth) -> first file importing it."""
    stdlib = set(sys.stdlib_module_names)
    found: dict[str, str] = {}
    for path in sorted((ROOT / "scorers").rglob("*.py")):
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
                local = (ROOT / "examples" / "space" / top).is_dir()  # the demo package, shipped with the repo
                if top not in stdlib and top not in ("scorers", "__future__") and not local:
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
    assert not undeclared, f"imported but not in setup.py: {undeclared}"


def test_version_has_one_source():
    out = subprocess.run([sys.executable, "setup.py", "--version"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    assert out == scorers.__version__
    assert 'version="' not in (ROOT / "setup.py").read_text()  # not typed a second time
