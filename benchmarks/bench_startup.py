"""Start-up time of the ``ts2`` command and of the light library modules, as whole processes.

Each case is a fresh ``python`` process (this interpreter, the checkout first on ``PYTHONPATH``), timed from spawn to
exit, ``--repeat`` times; the median is printed with its ratio to ``python -c pass`` timed in the same run (the
interpreter's own start-up on this machine, the baseline), so figures from a busy or slow machine stay comparable.

Cases: ``ts2 --help``; ``ts2 reproduce`` on the release tables (``TS2_DATA`` = a temporary release folder linking
metadata.csv, released_scores.csv and the paper's printed ``paper_table2.csv`` from ``--data-dir``, see
``benchmarks/release_tables.py``); ``ts2 reproduce`` with the official full-precision Table 2 (metadata.csv,
released_scores.csv and ``table2_full_precision.csv``, a release file: the folder, the cache or the pinned download); ``python -c "import scorers.stats.meta"``. Targets (issue 25): ``ts2
--help`` <= 0.3 s, ``ts2 reproduce`` <= 0.6 s, ``import scorers.stats.meta`` <= 0.25 s; a case over its target is marked.

    python benchmarks/bench_startup.py [--data-dir DIR] [--repeat 7]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "scorers.cli"]


def timed(argv: list[str], env: dict[str, str], repeat: int) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + system) of ``repeat`` runs of ``argv`` (each must exit 0; its output is
    discarded). CPU time moves less than wall time when other jobs share the machine."""
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr.decode(errors='replace')}")
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sys.path.insert(0, str(ROOT))
    from benchmarks.release_tables import add_data_dir, release_folder

    add_data_dir(parser)
    parser.add_argument("--repeat", type=int, default=7, help="runs per case (the median is printed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        printed = release_folder(args.data_dir, ["metadata.csv", "released_scores.csv", "paper_table2.csv"],
                                 Path(tmp) / "printed")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep), TS2_DATA=str(printed), HF_HUB_OFFLINE="1", PYTHONDONTWRITEBYTECODE="0")
        cases = [
            ("python -c pass", [sys.executable, "-c", "pass"], env, None),
            ("ts2 --help", CLI + ["--help"], env, 0.3),
            ("ts2 reproduce (paper_table2.csv)", CLI + ["reproduce"], env, 0.6),
        ]
        try:
            folder = release_folder(args.data_dir, ["metadata.csv", "released_scores.csv",
                                                    "table2_full_precision.csv"], Path(tmp) / "full")
        except SystemExit as missing:  # that case is skipped, saying why
            print(f"skipped ts2 reproduce (table2_full_precision.csv): {missing}")
        else:
            cases.append(("ts2 reproduce (table2_full_precision.csv)", CLI + ["reproduce"],
                          dict(env, TS2_DATA=str(folder)), 0.6))
        cases.append(('python -c "import scorers.stats.meta"', [sys.executable, "-c", "import scorers.stats.meta"], env, 0.25))
        for _, argv, case_env, _ in cases:  # warm the byte-code and file caches once
            timed(argv, case_env, 1)
        medians = {}
        print(f"{'case':<44} {'median s':>9} {'min s':>7} {'x python':>9} {'cpu s':>7}  target (median)")
        for label, argv, case_env, target in cases:
            runs, cpu = timed(argv, case_env, args.repeat)
            medians[label] = statistics.median(runs)
            ratio = medians[label] / medians["python -c pass"]
            verdict = "" if target is None else f"<= {target} s {'ok' if medians[label] <= target else 'OVER'}"
            print(f"{label:<44} {medians[label]:9.3f} {min(runs):7.3f} {ratio:9.1f} {statistics.median(cpu):7.3f}  "
                  f"{verdict}")
    load = ", load average %.1f" % os.getloadavg()[0] if hasattr(os, "getloadavg") else ""
    print(f"({args.repeat} runs each, {sys.executable}, {os.cpu_count()} CPUs{load})")


if __name__ == "__main__":
    main()
