"""Speed of ``ts2 elements --released``: the six per-question files (about 116,000 answer rows) -> wrong-answer rates
per node error count with 1,000-resample bootstrap intervals over SEGs, end to end as a whole process. Target (issue
44): under 2 s.

Baselines, in the same run and the same way (whole processes, median of ``--repeat``): ``python -c pass`` (the
interpreter), and the reading alone -- a process that imports pandas and reads the same seven files with
``pandas.read_csv`` and groups the ``correct`` column by error count (a plain pandas groupby, no intervals): what any
tool must pay to touch the data. The ratio to it says what the command adds (the checks of the release's layout, the
bootstrap, the JSON). CPU seconds are printed too: they move less than wall time on a shared machine.

    python benchmarks/bench_elements.py [--data-dir DIR] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "scorers.cli"]
VARIANTS = ("mplug_tifa", "llava_tifa", "blip1_tifa", "mplug_dsg", "llava_dsg", "blip1_dsg")
TARGET_S = 2.0

#: the reading alone: the seven files through pandas and one groupby per file
READING = """
import os, numpy as np, pandas as pd
folder = os.environ["TS2_DATA"]
meta = pd.read_csv(os.path.join(folder, "metadata.csv"), dtype=str)
counts = meta["rank"].str.extract(r"(\\d+)")[0].astype(int).to_numpy()
for v in %r:
    f = pd.read_csv(os.path.join(folder, "per_question", v + ".csv"))
    image = np.cumsum(f["question_id"].to_numpy() == 0) - 1
    (1 - f["correct"]).groupby(counts[image]).agg(["mean", "size"])
""" % (VARIANTS,)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sys.path.insert(0, str(ROOT))
    from benchmarks.bench_startup import timed
    from benchmarks.release_tables import add_data_dir, release_folder

    add_data_dir(parser)
    parser.add_argument("--repeat", type=int, default=5, help="runs per case (the median is printed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = release_folder(args.data_dir, ["metadata.csv", *(f"per_question/{v}.csv" for v in VARIANTS)],
                                Path(tmp) / "release")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep), TS2_DATA=str(folder), HF_HUB_OFFLINE="1")
        cases = [("python -c pass", [sys.executable, "-c", "pass"], None),
                 ("reading alone (pandas read_csv + groupby)", [sys.executable, "-c", READING], None),
                 ("ts2 elements --released", CLI + ["elements", "--released"], TARGET_S),
                 ("ts2 elements --released --json", CLI + ["elements", "--released", "--json"], TARGET_S)]
        for _, argv, _ in cases:  # warm the byte-code and file caches once
            timed(argv, env, 1)
        medians = {}
        print(f"{'case':<44} {'median s':>9} {'min s':>7} {'x reading':>10} {'cpu s':>7}  target (median)")
        for label, argv, target in cases:
            runs, cpu = timed(argv, env, args.repeat)
            medians[label] = statistics.median(runs)
            reading = medians.get("reading alone (pandas read_csv + groupby)")
            ratio = f"{medians[label] / reading:10.2f}" if reading else f"{'':>10}"
            verdict = "" if target is None else f"< {target} s {'ok' if medians[label] < target else 'OVER'}"
            print(f"{label:<44} {medians[label]:9.3f} {min(runs):7.3f} {ratio} {statistics.median(cpu):7.3f}  "
                  f"{verdict}")
    load = ", load average %.1f" % os.getloadavg()[0] if hasattr(os, "getloadavg") else ""
    print(f"({args.repeat} runs each, {sys.executable}, {os.cpu_count()} CPUs{load})")


if __name__ == "__main__":
    main()
