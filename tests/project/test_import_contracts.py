"""The house plan's "never" rules (``../shared/DESIGN.md``), checked on the import graph of ``scorers/``.

A short AST walk: every ``import``/``from ... import`` of every module, at the top or inside a function (a lazy import
is still an arrow), relative imports resolved. The rules:

1. ``graph``, ``meta`` and ``agreement`` -- and every ``scorers`` module they import, transitively -- import no
   ``torch``, ``transformers``, ``datasets`` or ``pandas``.
2. The library (``scorers/`` except ``cli/``, ``report/`` and ``demo/``) never imports ``scorers.cli``,
   ``scorers.report``, ``scorers.demo`` or ``evaluate_modules``: arrows point down. One exception, from the plan's
   parts table: ``scorers/tifa_bench/`` (TIFA v1.0 with its own leaderboard) may import ``scorers.report``.
3. Only ``scorers/tables/release_download.py`` downloads release tables (the pinned files it fetches, their sha256 and
   ``TS2_DATA`` are ``scorers/tables/release.py``'s, which imports no network module). Checkable form: the modules and
   names that fetch files by URL -- ``urllib.request``, ``http.client``, ``requests``, ``httpx``, ``urllib3``,
   ``aiohttp``, ``fsspec``, and ``huggingface_hub``'s ``hf_hub_download``, ``snapshot_download``, ``hf_hub_url``,
   ``HfFileSystem``, ``get_session`` (and the writers ``HfApi``, ``create_commit``, ``upload_folder``,
   ``upload_file``) -- are imported by ``scorers/tables/release_download.py`` only, plus the uses listed in
   :data:`NETWORK_ALLOWED`, each with its reason (none fetches a release table). A new network path is a new line
   there.
4. ``ray`` is imported only by the engines and the service (``scorers/scoring/engines/``, ``scorers/rewards/serve.py``).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scorers"

LIGHT = ("scorers.stats.graph", "scorers.stats.meta", "scorers.stats.agreement")
LIGHT_FORBIDDEN = ("torch", "transformers", "datasets", "pandas")
UPPER_LAYERS = ("scorers.cli", "scorers.report", "scorers.demo", "evaluate_modules")
NOT_LIBRARY = ("scorers/cli/", "scorers/report/", "scorers/demo/")
#: (importing files under this prefix, imported module prefix): arrows the plan's parts table allows
UPPER_ALLOWED: set = set()
#: the floor plan, lowest first: (layer, the module prefixes it holds). A module imports its own layer or lower ones.
LAYERS = (
    ("ground", ("scorers.checks", "scorers.units", "scorers.formatting", "scorers.atomic", "scorers.json_safe",
                "scorers.errors")),
    ("stats", ("scorers.stats",)),          # numbers from arrays: walks, rank/sep/delta, agreement, resampling
    ("tables", ("scorers.tables",)),        # reading and joining tables; the one download path (release)
    ("models", ("scorers.models",)),        # one file per model family: load + batched forward
    ("metrics", ("scorers.metrics",)),      # the scoring rules: embedding, reward models, qga/, judges/
    ("scoring", ("scorers.scoring",)),      # running scorers over rows: runner, cache, engines, registry
    ("rewards", ("scorers.rewards",)),      # the reward API and the reward service
    ("ts2", ("scorers.ts2",)),              # the TS2 dataset, scoring it, tables -> meta, reproduce
    ("tifa_bench", ("scorers.tifa_bench",)),  # TIFA v1.0: a set the registry scores, so below sets
    ("sets", ("scorers.sets",)),            # one registry of image-text sets, their loaders, set scoring
    ("report", ("scorers.report",)),        # leaderboard tables, figures, the report card
    ("demo", ("scorers.demo",)),            # the Gradio app (never the CLI)
    ("cli", ("scorers.cli",)),              # the ts2 command
)
FRONT_DOOR = ("scorers", ("scorers.stats",))  # scorers/__init__.py re-exports ts2_meta, walks ...
MAX_TOP_LEVEL = 6
NETWORK_MODULES = ("urllib.request", "http.client", "requests", "httpx", "urllib3", "aiohttp", "fsspec")
NETWORK_NAMES = {"huggingface_hub": ("hf_hub_download", "snapshot_download", "hf_hub_url", "HfFileSystem",
                                     "get_session", "HfApi", "create_commit", "upload_folder", "upload_file")}
#: file -> network modules/names it may import, and why (none of them fetches a release table)
NETWORK_ALLOWED = {
    "scorers/tables/release_download.py": ({"urllib.request", "huggingface_hub.hf_hub_download"}, "the release tables "
                                           "and every pinned file (release_download.fetch)"),
    "scorers/models/openai_compat.py": ({"httpx"}, "chat requests to served models (vLLM, SGLang, TGI, OpenAI)"),
    "scorers/demo/sources.py": ({"huggingface_hub.hf_hub_download"}, "one image of the Hub dataset for the demo"),
    "scorers/models/http_deadline.py": ({"httpx"}, "the HTTP transport with a total deadline per attempt (served models "
                                        "and RemoteReward)"),
    "scorers/models/hpsv3.py": ({"huggingface_hub.hf_hub_download"}, "the HPSv3 reward checkpoint (model weights)"),
    "scorers/models/imagereward.py": ({"huggingface_hub.hf_hub_download"}, "the ImageReward checkpoint (model weights)"),
    "scorers/models/open_clip_weights.py": ({"huggingface_hub.hf_hub_download"}, "the HPSv2 checkpoint (model weights)"),
    "scorers/rewards/remote.py": ({"httpx"}, "RemoteReward: POST /score to a `ts2 serve` reward service"),
    "scorers/ts2/seg/push.py": ({"huggingface_hub.HfApi"}, "ts2 seg push: segs.json, warnings.txt and the question "
                                "tables beside the Parquet shards (create_commit)"),
    "scorers/ts2/submission/hub.py": ({"huggingface_hub.snapshot_download", "huggingface_hub.HfApi"}, "every Hub "
                                      "read and write of a submission: ts2 submit --push, a leaderboard submission as "
                                      "a pull request on a Hub dataset (create_commit, create_pr=True); the "
                                      "leaderboard's submissions from a Hub dataset at a pinned revision, their sizes "
                                      "listed first (ts2 leaderboard, the demo's tab)"),
}
RAY_ALLOWED = ("scorers/scoring/engines/", "scorers/scoring/engines.py", "scorers/rewards/serve.py")


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
    problems, seen, todo = [], set(), sorted(m for m in graph if any(_is(m, light) for light in LIGHT))
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
            problems.append(f"{path} imports {name}: only scorers/tables/release_download.py downloads release tables "
                            "(other network uses are listed, with their reason, in NETWORK_ALLOWED)")
    return problems


def ray_violations(graph) -> list[str]:
    return sorted({f"{path}:{line} imports {target}" for path, imports in graph.values() for target, line in imports
                   if _is(target, "ray") and not path.startswith(RAY_ALLOWED)})


def layer_of(module: str) -> int | None:
    """Index in :data:`LAYERS` of the layer holding ``module`` (None: not in the plan)."""
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(_is(module, p) for p in prefixes):
            return index
    return None


def _targets(graph, imports) -> list[tuple[str, int]]:
    """The ``scorers`` modules named by ``imports``: ``from a import b`` counts as ``a.b`` when that is a module."""
    found = []
    for target, line in imports:
        if not _is(target, "scorers"):
            continue
        while target and target not in graph:
            target = target.rpartition(".")[0]
        if target:
            found.append((target, line))
    return found


def layer_violations(graph) -> list[str]:
    """Rule 5, the direction: an import of a higher layer, or of a module outside the plan."""
    problems = []
    for module, (path, imports) in graph.items():
        if module == "scorers":  # the front door
            allowed = FRONT_DOOR[1]
            problems += [f"{path}:{line} imports {t}: the front door re-exports {', '.join(allowed)} only"
                         for t, line in _targets(graph, imports) if t != "scorers" and not any(_is(t, a) for a in allowed)]
            continue
        here = layer_of(module)
        if here is None:
            problems.append(f"{path}: {module} is in no layer of LAYERS")
            continue
        for target, line in _targets(graph, imports):
            if target == "scorers" or target == module:
                continue
            there = layer_of(target)
            if there is None or there > here:
                name = "no layer" if there is None else f"layer {LAYERS[there][0]}"
                problems.append(f"{path}:{line} imports {target} ({name}) from layer {LAYERS[here][0]}: arrows point "
                                "down")
    return sorted(set(problems))


def import_circles(graph) -> list[str]:
    """Rule 5, no circle: every strongly connected set of two or more modules (a package's ``__init__`` counts as
    importing what it imports, nothing more)."""
    edges = {m: {t for t, _ in _targets(graph, imports) if t != m} for m, (_, imports) in graph.items()}
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan, iterative enough for a package of a few hundred modules
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(" <-> ".join(sorted(component)))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def top_level_modules(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "scorers").glob("*.py") if p.name != "__init__.py")


def private_violations(graph) -> list[str]:
    """Rule 7: ``from x import _y`` anywhere in ``scorers``, and a private module imported from outside its package."""
    problems = []
    for module, (path, imports) in graph.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        for target, line in imports:
            if not _is(target, "scorers"):
                continue
            owner_module = target
            while owner_module and owner_module not in graph:
                owner_module = owner_module.rpartition(".")[0]
            name = target[len(owner_module) + 1:] if owner_module else ""
            if name.startswith("_") and not name.startswith("__") and owner_module != module:
                problems.append(f"{path}:{line} imports the private name {target}")
                continue
            parts = owner_module.split(".")
            private = [i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")]
            if private:  # a private module: fine inside the package that holds it
                owner = ".".join(parts[:private[0]])
                if not _is(package, owner):
                    problems.append(f"{path}:{line} imports the private module {owner_module} from outside {owner}")
    return sorted(set(problems))


GRAPH = graph_of(ROOT)


def test_the_walk_sees_the_package():
    assert {"scorers.stats.graph", "scorers.stats.meta", "scorers.stats.agreement", "scorers.tables.release",
            "scorers.tables.release_download", "scorers.cli"} <= set(GRAPH)
    assert "scorers.stats.graph" in {t for t, _ in GRAPH["scorers.stats.meta"][1]}  # ``from .graph import ...`` resolved


def test_graph_meta_agreement_import_no_models_datasets_or_pandas():
    assert light_violations(GRAPH) == []


def test_library_never_imports_cli_report_demo_or_evaluate_modules():
    assert upper_violations(GRAPH) == []


def test_only_release_downloads_release_tables():
    assert network_violations(GRAPH) == []
    used = network_imports(GRAPH)
    assert "urllib.request" in used["scorers/tables/release_download.py"]  # the vocabulary still matches the download
    assert "scorers/tables/release.py" not in used  # the pinned files and their sha256: no network module
    stale = sorted(p for p in NETWORK_ALLOWED if p not in used)
    assert stale == [], f"NETWORK_ALLOWED names files that no longer use the network: {stale}"


def test_ray_only_in_engines_and_service():
    assert ray_violations(GRAPH) == []


def test_every_import_points_down_the_layers():
    assert layer_violations(GRAPH) == []


def test_no_import_circle():
    assert import_circles(GRAPH) == []


def test_at_most_six_top_level_modules():
    top = top_level_modules(ROOT)
    assert len(top) <= MAX_TOP_LEVEL, top
    assert {m for m, _ in GRAPH.items() if m.count(".") == 1 and not GRAPH[m][0].endswith("__init__.py")} <= set(
        LAYERS[0][1]), "a top-level module outside the ground floor"


def test_no_private_name_crosses_a_module():
    assert private_violations(GRAPH) == []


#: the longest a module of scorers/ may be: past it, a module holds more than one job (the house plan's "split at the
#: seams"; issue 41 set it at 700 lines)
MAX_MODULE_LINES = 700


def test_no_module_above_the_line_limit():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"modules above {MAX_MODULE_LINES} lines: {long}"


def test_cli_commands_are_imported_plainly():
    """``ts2``'s commands are plain imports (no ``importlib`` in ``cli/``, no ``cli/_seg_*.py`` loaded by name), and
    ``command_modules`` lists every public module of ``cli/``, so a new command file cannot be forgotten silently."""
    cli = PACKAGE / "cli"
    assert sorted(str(p.relative_to(ROOT)) for p in cli.rglob("*.py") if "importlib" in p.read_text()) == []
    assert list(cli.glob("_seg_*.py")) == []
    from scorers.cli import command_modules

    listed = {m.__name__.rsplit(".", 1)[1] for m in command_modules()}
    files = {p.stem for p in cli.glob("*.py") if not p.stem.startswith("_")} | {
        p.parent.name for p in cli.glob("*/__init__.py")}
    assert listed == files


# --- the checker catches what it should (a fabricated tree per rule) -------------------------------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"scorers/__init__.py": "", **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize("files, check, expected", [
    ({"scorers/stats/meta.py": "from .graph import x\n", "scorers/stats/graph.py": "def f():\n    import torch\n"},
     light_violations, "scorers/stats/graph.py:2 imports torch"),
    ({"scorers/stats/agreement.py": "from ..util import y\n", "scorers/util.py": "import pandas as pd\n"},
     light_violations, "scorers/util.py:1 imports pandas"),
    ({"scorers/stats/meta.py": "", "scorers/sub/__init__.py": "import datasets\n", "scorers/stats/graph.py": "from ..sub import m\n"},
     light_violations, "scorers/sub/__init__.py:1 imports datasets"),
    ({"scorers/tables/pandas_tables.py": "def f():\n    from ..report.tables import t\n", "scorers/report/__init__.py": ""},
     upper_violations, "scorers/tables/pandas_tables.py:2 imports scorers.report"),
    ({"scorers/scoring/runner.py": "from scorers.cli import main\n"}, upper_violations, "scorers/scoring/runner.py:1 imports scorers.cli"),
    ({"scorers/sets/ratings.py": "import urllib.request\n"}, network_violations, "scorers/sets/ratings.py imports urllib.request"),
    ({"scorers/sets/tifa.py": "from huggingface_hub import hf_hub_download\n"}, network_violations,
     "scorers/sets/tifa.py imports huggingface_hub.hf_hub_download"),
    ({"scorers/scoring/runner.py": "import ray.data\n"}, ray_violations, "scorers/scoring/runner.py:1 imports ray.data"),
    # rule 5: a model file calling a scoring rule (lazily), a table reader reaching the TS2 layer, the demo the CLI
    ({"scorers/models/served.py": "def f():\n    from ..metrics.qga.vqascore import rule\n",
      "scorers/metrics/__init__.py": "", "scorers/metrics/qga/__init__.py": "", "scorers/metrics/qga/vqascore.py": ""},
     layer_violations, "scorers/models/served.py:2 imports scorers.metrics.qga.vqascore (layer metrics) from layer models"),
    ({"scorers/demo/upload.py": "from scorers.cli._validate import OptionNames\n", "scorers/cli/__init__.py": "",
      "scorers/cli/_validate.py": ""}, layer_violations, "scorers/demo/upload.py:1 imports scorers.cli._validate"),
    ({"scorers/stray.py": "import numpy\n"}, layer_violations, "scorers/stray.py: scorers.stray is in no layer"),
    ({"scorers/tables/join.py": "from .pandas_tables import x\n",
      "scorers/tables/pandas_tables.py": "def f():\n    from .join import y\n"},
     import_circles, "scorers.tables.join <-> scorers.tables.pandas_tables"),
    # rule 7
    ({"scorers/sets/scoring.py": "from scorers.ts2.scoring import _main_first\n", "scorers/ts2/scoring.py": ""},
     private_violations, "scorers/sets/scoring.py:1 imports the private name scorers.ts2.scoring._main_first"),
    ({"scorers/report/card.py": "from ..sets._common import provenance\n", "scorers/sets/_common.py": ""},
     private_violations, "scorers/report/card.py:1 imports the private module scorers.sets._common from outside"),
])
def test_each_rule_flags_a_forbidden_import(tmp_path, files, check, expected):
    problems = check(graph_of(_tree(tmp_path, files)))
    assert any(p.startswith(expected) for p in problems), problems


def test_allowed_arrows_pass(tmp_path):
    graph = graph_of(_tree(tmp_path, {
        "scorers/sets/scoring.py": "from ..tifa_bench.image_scoring import score_images\n",  # a lower layer
        "scorers/sets/_common.py": "", "scorers/sets/ratings.py": "from ._common import HubFile\n",  # own package
        "scorers/tifa_bench/image_scoring.py": "", "scorers/report/__init__.py": "",
        "scorers/cli/meta.py": "from ..report import r\nimport pandas\n",  # the CLI may import anything
        "scorers/stats/meta.py": "def f():\n    from scipy import stats\n",  # scipy is allowed in meta
        "scorers/models/loading.py": "from huggingface_hub import constants\n",  # not a download
    }))
    assert light_violations(graph) == upper_violations(graph) == network_violations(graph) == []
    assert layer_violations(graph) == import_circles(graph) == private_violations(graph) == []
