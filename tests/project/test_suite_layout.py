"""The test suite's own house rules: test files mirror the package in one folder per layer, shared code lives in
tests/helpers (and tests/plugins), tests are named by subject rather than by issue, a test module imports no other
test module, and no hook rewrites an outcome. Also the release-file rule (tests/plugins/release_files.py) on code of
known kind."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.plugins.release_files import named_release_files

TESTS = Path(__file__).resolve().parents[1]
TEST_FILES = sorted(TESTS.rglob("test_*.py"))
SHARED = {"helpers", "plugins", "data"}  # folders of code or data shared by the tests, no tests in them


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def test_test_files_sit_in_layer_folders():
    assert len(TEST_FILES) > 80
    flat = [p.name for p in TEST_FILES if p.parent == TESTS]
    in_folders = len(TEST_FILES) - len(flat)
    assert in_folders >= 0.9 * len(TEST_FILES), flat
    assert not [p for p in TEST_FILES if p.parent.name in SHARED], "helpers and plugins hold no tests"
    for folder in {p.parent for p in TEST_FILES}:
        assert (folder / "__init__.py").is_file(), f"{folder} needs an __init__.py (module names stay unique)"


def test_folders_are_named_after_the_package_layers_or_the_project_parts():
    package = {p.name for p in (TESTS.parent / "scorers").iterdir() if p.is_dir() and not p.name.startswith("_")}
    project = {"ground", "project", "docs", "examples", "evaluate_modules", "dataset_script"}
    folders = {p.parent.name for p in TEST_FILES}
    assert folders <= package | project, folders - package - project


@pytest.mark.parametrize("path", sorted(TESTS.rglob("*.py")), ids=lambda p: p.relative_to(TESTS).as_posix())
def test_no_module_is_headed_by_an_issue_number(path):
    assert not re.search(r"\b[Ii]ssues? \d+", _docstring(path)), "name the subject: issue numbers stay in git history"


def test_test_modules_import_helpers_not_other_test_modules():
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            names += [f"{node.module}.{alias.name}" for alias in getattr(node, "names", [])
                      if isinstance(node, ast.ImportFrom) and node.module]
            offenders += [f"{path.relative_to(TESTS)}: {name}" for name in names
                          if re.search(r"(^|\.)test_\w+$", name) and name.startswith("tests.")]
    assert offenders == []


def test_no_hook_changes_a_test_outcome():
    """A failure is always reported as a failure: no conftest or plugin implements pytest_runtest_makereport."""
    hooks = [p.relative_to(TESTS).as_posix() for p in [TESTS / "conftest.py", *TESTS.rglob("conftest.py"),
                                                       *(TESTS / "plugins").glob("*.py")]
             if "pytest_runtest_makereport" in {n.name for n in ast.walk(ast.parse(p.read_text()))
                                                if isinstance(n, ast.FunctionDef)}]
    assert hooks == []


# --------------------------------------------------------------- the release-file rule on code of known kind

def _reads_the_papers_table(shared_ts2):
    return (shared_ts2 / "paper_table2.csv").read_text()


def _reads_a_raw_answer_file(shared_ts2):
    return shared_ts2 / "raw_answers/llava_dsg.csv"


def _calls_a_reader(shared_ts2):
    return _reads_the_papers_table(shared_ts2)


def _writes_its_own_table(tmp_path):
    return (tmp_path / "my_scores.csv").write_text("a\n1\n")


def _names_the_file_in_words_only():
    """Reads paper_table2.csv (in a docstring only)."""
    return 1  # "paper_table2.csv" in a comment


@pytest.mark.parametrize("function, named", [
    (_reads_the_papers_table, {"paper_table2.csv"}),
    (_reads_a_raw_answer_file, {"raw_answers/llava_dsg.csv"}),
    (_calls_a_reader, {"paper_table2.csv"}),
    (_writes_its_own_table, set()),
    (_names_the_file_in_words_only, set()),
])
def test_the_rule_finds_the_release_files_a_test_names(function, named):
    assert named_release_files([function]) == named


def test_a_test_on_the_release_folder_carries_the_files_it_names(request, shared_ts2):
    assert (shared_ts2 / "released_scores.csv").is_file()
    marker = request.node.get_closest_marker("release_files")
    assert marker is not None and marker.args == ("released_scores.csv",)


def test_property_tests_run_a_bounded_number_of_examples():
    """Every hypothesis test states its example count (at most 100), so the suite's time does not drift with
    hypothesis' default."""
    unbounded = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            calls = {ast.unparse(d.func): d for d in node.decorator_list if isinstance(d, ast.Call)}
            if not any(name.endswith("given") for name in calls):
                continue
            settings = next((d for name, d in calls.items() if name.endswith("settings")), None)
            counts = [k.value.value for k in getattr(settings, "keywords", []) if k.arg == "max_examples"
                      and isinstance(k.value, ast.Constant)]
            if not counts or counts[0] > 100:
                unbounded.append(f"{path.relative_to(TESTS)}::{node.name}")
    assert unbounded == []


def test_a_module_with_a_shared_fixture_runs_on_one_xdist_worker():
    """The grouping of tests/plugins/worker_groups.py takes effect: under ``-n 2`` the tests of a module with a
    module-scoped fixture all run on one worker, their ids carrying the group (a pytest that drops xdist's groups, as
    9.2 does, fails here rather than silently building each fixture once per worker)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider",
                           "tests/stats/test_agreement.py", "-k", "pooled_bootstrap_equals_explicit_resamples"],
                          cwd=TESTS.parent, capture_output=True, text=True, timeout=300)  # no release file needed
    assert done.returncode == 0, done.stdout[-2000:]
    passed = [line for line in done.stdout.splitlines() if " PASSED " in line]
    assert len(passed) >= 4, done.stdout[-2000:]
    assert all(line.endswith("@tests.stats.test_agreement") for line in (p.strip() for p in passed)), passed
    assert len({line.split()[0] for line in passed}) == 1, passed  # one worker, e.g. [gw0]


def test_the_reference_loop_kept_for_the_run_is_what_the_loop_computes(shared_ts2, tmp_path, monkeypatch):
    """tests/helpers/reference_meta.py keeps the reference loop's results in the run's shared folder: a result read
    back equals the loop's own (NaN included), and a changed table is computed afresh, never served from it."""
    import math
    import shutil

    from tests.helpers import reference_meta

    def same(a, b):
        return all(a[m]["per_seg"].keys() == b[m]["per_seg"].keys() and all(
            (math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a[m]["per_seg"].values(),
                                                                        b[m]["per_seg"].values()))
            for m in ("rank", "sep", "delta"))

    compute = reference_meta._released_reference.__wrapped__  # the loop itself, without the per-process cache
    folder = tmp_path / "run"
    folder.mkdir()
    monkeypatch.delenv(reference_meta.RUN_CACHE_ENV, raising=False)
    fresh = compute(str(shared_ts2), "llmscore_over", False, "paper", 6)
    monkeypatch.setenv(reference_meta.RUN_CACHE_ENV, str(folder))
    written = compute(str(shared_ts2), "llmscore_over", False, "paper", 6)
    assert len(list(folder.glob("reference-*.json"))) == 1
    read_back = compute(str(shared_ts2), "llmscore_over", False, "paper", 6)
    assert same(fresh, written) and same(fresh, read_back)
    changed = tmp_path / "changed"
    changed.mkdir()
    shutil.copy(shared_ts2 / "metadata.csv", changed / "metadata.csv")
    lines = (shared_ts2 / "released_scores.csv").read_text().splitlines()
    header = lines[0].split(",")
    column = header.index("llmscore_over")
    for k in (1, 2, 3):  # SEG 0's first images: their scores reversed
        cells = lines[k].split(",")
        cells[column] = str(-float(cells[column].strip("\"'")))
        lines[k] = ",".join(cells)
    (changed / "released_scores.csv").write_text("\n".join(lines) + "\n")
    other = compute(str(changed), "llmscore_over", False, "paper", 6)
    assert len(list(folder.glob("reference-*.json"))) == 2
    assert not same(other, fresh)
