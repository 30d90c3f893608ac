"""The house plan's "never" rules (``../shared/DESIGN.md``), checked on the import graph of ``scorers/`` (issue 25.5).

A short AST walk: every ``import``/``from ... import`` of every module, at the top or inside a function (a lazy import
is still an arrow), relative imports resolved. The rules:

1. ``graph``, ``meta`` and ``agreement`` -- and every ``scorers`` module they import, transitively -- import no
   ``torch``, ``transformers``, ``datasets`` or ``pandas``.
2. The library (``scorers/`` except ``cli/``, ``report/`` and ``demo/``) never imports ``scorers.cli``,
   ``scorers.report``, ``scorers.demo`` or ``evaluate_modules``: arrows point down. One exception, from the plan's
   parts table: ``scorers/tifa_bench/`` (TIFA v1.0 with its own leaderboard) may import ``scorers.report``.
3. Only ``scorers/release.py`` downloads release tables. Checkable form: the modules and names that fetch files by
   URL -- ``urllib.request``, ``http.client``, ``requests``, ``httpx``, ``urllib3``, ``aiohttp``, ``fsspec``, and
   ``huggingface_hub``'s ``hf_hub_download``, ``snapshot_download``, ``hf_hub_url``, ``HfFileSystem``,
   ``get_session`` -- are imported by ``scorers/release.py`` only, plus the uses listed in :data:`NETWORK_ALLOWED`,
   each with its reason (none fetches a release table). A new network path is a new line there.
4. ``ray`` is imported only by the engines and the service (``scorers/engines/``, ``scorers/serve.py``).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "scorers"

LIGHT = ("scorers.graph", "scorers.meta", "scorers.agreement")
LIGHT_FORBIDDEN = ("torch", "transformers", "datasets", "pandas")
UPPER_LAYERS = ("scorers.cli", "scorers.report", "scorers.demo", "evaluate_modules")
NOT_LIBRARY = ("scorers/cli/", "scorers/report/", "scorers/demo/")
#: (importing files under this prefix, imported module prefix): arrows the plan's parts table allows
UPPER_ALLOWED = {("scorers/tifa_bench/", "scorers.report")}
NETWORK_MODULES = ("urllib.request", "http.client", "requests", "httpx", "urllib3", "aiohttp", "fsspec")
NETWORK_NAMES = {"huggingface_hub": ("hf_hub_download", "snapshot_download", "hf_hub_url", "HfFileSystem",
                                     "get_session")}
#: file -> network modules/names it may import, and why (none of them fetches a release table)
NETWORK_ALLOWED = {
    "scorers/release.py": ({"urllib.request", "huggingface_hub.hf_hub_download"}, "the release tables and every "
                           "pinned file (release.fetch)"),
    "scorers/models/openai_compat.py": ({"httpx"}, "chat requests to served models (vLLM, SGLang, TGI, OpenAI)"),
    "scorers/models/loading.py": ({"huggingface_hub.get_session"}, "a HEAD request: is the Hub reachable?"),
    "scorers/demo/sources.py": ({"huggingface_hub.hf_hub_download"}, "one image of the Hub dataset for the demo"),
    "scorers/models/_deadline.py": ({"httpx"}, "the served backend's HTTP transport with a total deadline per attempt"),
    "scorers/models/hpsv3.py": ({"huggingface_hub.hf_hub_download"}, "the HPSv3 reward checkpoint (model weights)"),
    "scorers/models/imagereward.py": ({"huggingface_hub.hf_hub_download"}, "the ImageReward checkpoint (model weights)"),
    "scorers/models/open_clip_weights.py": ({"huggingface_hub.hf_hub_download"}, "the HPSv2 checkpoint (model weights)"),
    "scorers/rewards.py": ({"urllib.request"}, "RemoteReward: POST /score to a `ts2 serve` reward service"),
}
RAY_ALLOWED = ("scorers/engines/", "scorers/engines.py", "scorers/serve.py")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> list[tuple[str, int]]:
    """``(module, line)`` for every import in ``path``: ``import a.b`` gives ``a.b``; ``from a import b`` gives
    ``a`` and ``a.b`` (b may be a submodule or a name); relative imports are made absolute."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((target, node.lineno))
            found += [(f"{target}.{alias.name}", node.lineno) for alias in node.names if alias.name != "*"]
    return found


def graph_of(root: Path) -> dict[str, tuple[str, list[tuple[str, int]]]]:
    """module name -> (file path relative to ``root``, its imports), for every module under ``root/scorers``."""
    return {module_name(p, root): (p.relative_to(root).as_posix(), imports_of(p, root))
            for p in sorted((root / "scorers").rglob("*.py"))}


def _is(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def light_violations(graph) -> list[str]:
    """Rule 1, through every ``scorers`` module the light ones reach (and the packages those live in)."""
    problems, seen, todo = [], set(), list(LIGHT)
    while todo:
        module = todo.pop()
        if module in seen or module not in graph:
            continue
        seen.add(module)
        path, imports = graph[module]
        parent = module.rpartition(".")[0]
        if parent:
            todo.append(parent)  # importing a.b runs a/__init__.py first
        for target, line in imports:
            if any(_is(target, f) for f in LIGHT_FORBIDDEN):
                problems.append(f"{path}:{line} imports {target} (reached from {', '.join(LIGHT)})")
            if _is(target, "scorers"):
                todo.append(target)
    return sorted(set(problems))


def upper_violations(graph) -> list[str]:
    problems = []
    for path, imports in graph.values():
        if path.startswith(NOT_LIBRARY):
            continue
        for target, line in imports:
            for upper in UPPER_LAYERS:
                if _is(target, upper) and not any(path.startswith(p) and _is(target, u) for p, u in UPPER_ALLOWED):
                    problems.append(f"{path}:{line} imports {target}: the library never imports {upper}")
    return sorted(set(problems))


def network_imports(graph) -> dict[str, set[str]]:
    """file -> the network modules/names it imports (rule 3's vocabulary)."""
    found: dict[str, set[str]] = {}
    for path, imports in graph.values():
        for target, _ in imports:
            hits = [m for m in NETWORK_MODULES if _is(target, m)]
            hits += [f"{m}.{target.rpartition('.')[2]}" for m, names in NETWORK_NAMES.items()
                     if _is(target, m) and target.rpartition(".")[2] in names]  # from huggingface_hub[.sub] import n
            if hits:
                found.setdefault(path, set()).update(hits)
    return found


def network_violations(graph) -> list[str]:
    problems = []
    for path, used in sorted(network_imports(graph).items()):
        allowed = NETWORK_ALLOWED.get(path, (set(), ""))[0]
        for name in sorted(used - allowed):
            problems.append(f"{path} imports {name}: only scorers/release.py downloads release tables (other network "
                            "uses are listed, with their reason, in NETWORK_ALLOWED)")
    return problems


def ray_violations(graph) -> list[str]:
    return sorted({f"{path}:{line} imports {target}" for path, imports in graph.values() for target, line in imports
                   if _is(target, "ray") and not path.startswith(RAY_ALLOWED)})


GRAPH = graph_of(ROOT)


def test_the_walk_sees_the_package():
    assert {"scorers.graph", "scorers.meta", "scorers.agreement", "scorers.release", "scorers.cli"} <= set(GRAPH)
    assert "scorers.graph" in {t for t, _ in GRAPH["scorers.meta"][1]}  # ``from .graph import ...`` resolved


def test_graph_meta_agreement_import_no_models_datasets_or_pandas():
    assert light_violations(GRAPH) == []


def test_library_never_imports_cli_report_demo_or_evaluate_modules():
    assert upper_violations(GRAPH) == []


def test_only_release_downloads_release_tables():
    assert network_violations(GRAPH) == []
    used = network_imports(GRAPH)
    assert "urllib.request" in used["scorers/release.py"]  # the rule's vocabulary still matches release.py
    stale = sorted(p for p in NETWORK_ALLOWED if p not in used)
    assert stale == [], f"NETWORK_ALLOWED names files that no longer use the network: {stale}"


def test_ray_only_in_engines_and_service():
    assert ray_violations(GRAPH) == []


# --- the checker catches what it should (a fabricated tree per rule) -------------------------------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"scorers/__init__.py": "", **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize("files, check, expected", [
    ({"scorers/meta.py": "from .graph import x\n", "scorers/graph.py": "def f():\n    import torch\n"},
     light_violations, "scorers/graph.py:2 imports torch"),
    ({"scorers/agreement.py": "from .util import y\n", "scorers/util.py": "import pandas as pd\n"},
     light_violations, "scorers/util.py:1 imports pandas"),
    ({"scorers/meta.py": "", "scorers/sub/__init__.py": "import datasets\n", "scorers/graph.py": "from .sub import m\n"},
     light_violations, "scorers/sub/__init__.py:1 imports datasets"),
    ({"scorers/table_readers.py": "def f():\n    from .report.tables import t\n", "scorers/report/__init__.py": ""},
     upper_violations, "scorers/table_readers.py:2 imports scorers.report"),
    ({"scorers/runner.py": "from scorers.cli import main\n"}, upper_violations, "scorers/runner.py:1 imports scorers.cli"),
    ({"scorers/ratings.py": "import urllib.request\n"}, network_violations, "scorers/ratings.py imports urllib.request"),
    ({"scorers/sets/tifa.py": "from huggingface_hub import hf_hub_download\n"}, network_violations,
     "scorers/sets/tifa.py imports huggingface_hub.hf_hub_download"),
    ({"scorers/runner.py": "import ray.data\n"}, ray_violations, "scorers/runner.py:1 imports ray.data"),
])
def test_each_rule_flags_a_forbidden_import(tmp_path, files, check, expected):
    problems = check(graph_of(_tree(tmp_path, files)))
    assert any(p.startswith(expected) for p in problems), problems


def test_allowed_arrows_pass(tmp_path):
    graph = graph_of(_tree(tmp_path, {
        "scorers/tifa_bench/model_leaderboard.py": "from ..report.tables import t\n",  # the parts table allows it
        "scorers/cli/meta.py": "from ..report import r\nimport pandas\n",  # the CLI may import anything
        "scorers/meta.py": "def f():\n    from scipy import stats\n",  # scipy is allowed in meta
        "scorers/models/loading.py": "from huggingface_hub import constants\n",  # not a download
    }))
    assert light_violations(graph) == upper_violations(graph) == network_violations(graph) == []
