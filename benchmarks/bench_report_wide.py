"""Time and peak memory of ``ts2 report`` on wide score tables (issue 22.13: flat in the number of columns).

Builds tables of N columns from the release's ``released_scores.csv`` columns plus noise, runs ``ts2 report`` on each
in a child process and prints wall seconds and peak RSS (``os.wait4``), and the ratio of the widest to the narrowest.

    python benchmarks/bench_report_wide.py [--data-dir DIR] [--columns 20 200]   # DIR: benchmarks/release_tables.py
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.score_tables import wide_table  # noqa: E402
from benchmarks.release_tables import add_data_dir, release_folder  # noqa: E402


def run_report(scores: Path, metadata: Path, out: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one ``ts2 report`` child process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "scorers.cli", "report", str(scores), "--metadata", str(metadata),
                              "--out", str(out)], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ts2 report failed on {scores}")
    return seconds, usage.ru_maxrss / 1024  # Linux: kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    parser.add_argument("--columns", type=int, nargs="+", default=[20, 200])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        shared = release_folder(args.data_dir, ["metadata.csv", "released_scores.csv"], tmp)
        for n in args.columns:
            path = Path(tmp) / f"wide{n}.csv"
            wide_table(shared, n).to_csv(path, index=False)
            seconds, mb = run_report(path, shared / "metadata.csv", Path(tmp) / f"report{n}")
            rows.append((n, seconds, mb))
            print(f"{n:5d} columns: {seconds:6.1f} s, peak {mb:7.0f} MB", flush=True)
    (n0, s0, m0), (n1, s1, m1) = rows[0], rows[-1]
    print(f"ratio {n1} vs {n0} columns: time {s1 / s0:.2f}x, peak memory {m1 / m0:.2f}x "
          f"(columns {n1 / n0:.0f}x)")


if __name__ == "__main__":
    main()
