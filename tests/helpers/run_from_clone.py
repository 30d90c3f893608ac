"""Run the README's test command from a copy of the repository, as a new user's clone would run it.

The copy (the files ``git ls-files`` lists: tracked, plus untracked ones git does not ignore) goes to a fresh temporary
folder with no ``../shared`` beside it, and the suite runs there with no network: ``HF_HUB_OFFLINE=1`` and the other
offline switches, a fresh empty ``HF_HOME`` (no release cache), ``TS2_DATA`` unset unless ``--ts2-data`` names a
release folder, and no proxy settings (the tests' own loopback servers stay reachable; on a machine with network, the
offline switches are what keeps the run off it). It prints the failures, the errors and the skips counted per reason, then pytest's last line.

    python tests/helpers/run_from_clone.py                        # the whole suite (tens of minutes on 2 cores)
    python tests/helpers/run_from_clone.py -- -m "not slow"       # the quick tier; anything after -- goes to pytest
    python tests/helpers/run_from_clone.py --ts2-data ~/ts2 --keep -- tests/tables/test_release.py

Exit status: pytest's. ``--keep`` keeps the copy (its path is printed); ``--python`` picks the interpreter (default:
this one, whose environment has the package's dependencies; the copy comes first on ``PYTHONPATH``).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the README's test command, after the interpreter
TEST_COMMAND = ["-m", "pytest", "-q", "-n", "auto", "tests"]
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False", "TOKENIZERS_PARALLELISM": "false", "PIP_NO_INDEX": "1"}


def listed_files() -> list[str]:
    """The repository's files: ``git ls-files`` (tracked, and untracked ones git does not ignore); outside a git
    checkout (a copy made by this script), every file but hidden folders, ``__pycache__`` and build leftovers."""
    if (REPO / ".git").exists():
        return subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              check=True, capture_output=True).stdout.decode().split("\0")
    names = []
    for folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d != "__pycache__"
                         and not d.endswith(".egg-info")]
        names += [os.path.relpath(os.path.join(folder, f), REPO) for f in files if not f.endswith(".pyc")]
    return names


def copy_repository(dest: Path) -> Path:
    """Copy the repository's files (tracked, and untracked ones git does not ignore) to ``dest``; returns it."""
    listed = listed_files()
    for name in filter(None, listed):
        source = REPO / name
        if not source.is_file() and not source.is_symlink():  # deleted in the working tree
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    return dest


def clone_env(copy: Path, home: Path, ts2_data: Path | None) -> dict:
    """The environment of a user's clone without network: offline switches, an empty HF_HOME, no TS2_DATA (unless
    given), no proxies, the copy first on PYTHONPATH."""
    env = {key: value for key, value in os.environ.items()
           if key not in {"TS2_DATA", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_DATASETS_CACHE", "HF_ENDPOINT",
                          "TS2_TESTS_USER_ENV", "TS2_TESTS_RUN_CACHE",
                          "TS2_GITHUB_URL", "XDG_CACHE_HOME"} and not key.lower().endswith("_proxy")}
    env.update(OFFLINE, HF_HOME=str(home), XDG_CACHE_HOME=str(home.parent / "xdg-cache"), PYTHONPATH=str(copy))
    if ts2_data is not None:
        env["TS2_DATA"] = str(ts2_data)
    return env


#: pytest's short summary lines and the conftest's "skips by reason" block
_OUTCOME = re.compile(r"^(FAILED|ERROR) ")
_LAST = re.compile(r"^=* ?(.*\b(passed|failed|skipped|error|errors|deselected)\b.*?) ?=*$")


def summarise(output: str) -> str:
    """Failures and errors (one line each), the skips per reason, and pytest's last line, from a run's output."""
    lines = output.splitlines()
    bad = [line for line in lines if _OUTCOME.match(line)]
    skips, inside = [], False
    for line in lines:
        if re.match(r"^-+ skips by reason", line):
            inside = True
            skips.append(line.strip("- "))
            continue
        if inside:
            if re.match(r"^\s+\d+\s", line):
                skips.append(line)
            else:
                inside = False
    last = next((m.group(1) for line in reversed(lines) if (m := _LAST.match(line.strip()))), "(no pytest summary)")
    parts = [f"failures and errors: {len(bad)}", *bad, *(skips or ["skips by reason: none"]), f"result: {last}"]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ts2-data", type=Path, help="a release folder to set TS2_DATA to (default: unset)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy (its path is printed)")
    parser.add_argument("--python", default=sys.executable, help="interpreter to run the suite (default: this one)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds before the run is stopped")
    parser.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments (e.g. -m 'not slow')")
    args = parser.parse_args(argv)
    if args.ts2_data is not None and not args.ts2_data.is_dir():
        parser.error(f"--ts2-data {args.ts2_data}: not a folder")
    root = Path(tempfile.mkdtemp(prefix="ts2-clone-"))
    try:
        copy = copy_repository(root / "repo")  # nothing beside it: no ../shared
        home = root / "hf-home"
        home.mkdir()
        env = clone_env(copy, home, args.ts2_data.resolve() if args.ts2_data else None)
        base = TEST_COMMAND
        if any(arg.startswith("tests/") for arg in args.pytest_args):  # test files named: they replace "tests"
            base = [arg for arg in TEST_COMMAND if arg != "tests"]
        command = [args.python, *base, "-p", "no:cacheprovider", "-rfE", *args.pytest_args]
        log = root / "pytest-output.txt"  # written as the run goes: `tail -f` it
        print(f"copy: {copy}\nrunning: {' '.join(command)}\noutput: {log}", flush=True)
        with open(log, "w") as out:
            try:
                code = subprocess.run(command, cwd=copy, env=env, stdout=out, stderr=subprocess.STDOUT,
                                      timeout=args.timeout).returncode
            except subprocess.TimeoutExpired:
                code = 124
                out.write(f"\n(stopped after {args.timeout:g} s)\n")
        print(summarise(log.read_text(errors="replace")))
        if args.keep:
            print(f"kept: {root} (pytest's whole output: {root / 'pytest-output.txt'})")
        return code
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
