"""Speed of the TS2 meta-metrics: all 19 released metrics x rank/sep/delta on the shared release tables.

Baseline: the straightforward per-walk / per-pair pandas + scipy loop (``tests/helpers/reference_meta.py``, the same code the
tests cross-check against), run in the same process on the same data. Prints seconds and the speed-up ratio, and
checks that both give the same per-SEG values.

    python benchmarks/bench_meta.py [--data-dir DIR] [--repeat 5]   # DIR: see benchmarks/release_tables.py
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorers.ts2.reproduce import higher_is_better_from_paper  # noqa: E402
from scorers.stats.meta import TS2Evaluator  # noqa: E402
from scorers.tables.pandas_tables import column_scores, read_metadata, read_paper_table, read_score_table  # noqa: E402
from tests.helpers.reference_meta import reference_meta  # noqa: E402
from benchmarks.release_tables import add_data_dir, release_file  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    parser.add_argument("--repeat", type=int, default=5, help="timed repeats of the vectorised path (best is kept)")
    args = parser.parse_args()
    metadata = read_metadata(release_file("metadata.csv", args.data_dir))
    scores = read_score_table(release_file("released_scores.csv", args.data_dir))
    paper = read_paper_table(release_file("paper_table2.csv", args.data_dir))
    columns = list(dict.fromkeys(paper["column"]))
    values = {c: column_scores(scores, c, clean_quotes=True) for c in columns}
    orient = {c: higher_is_better_from_paper(paper, c) for c in columns}
    seg_ids, nodes = metadata["seg_id"].to_numpy(), metadata["node"].to_numpy()

    best = float("inf")
    for _ in range(args.repeat):
        start = time.perf_counter()
        ours = TS2Evaluator(seg_ids, nodes).evaluate_many(values, higher_is_better=orient)
        best = min(best, time.perf_counter() - start)

    start = time.perf_counter()
    reference = {c: reference_meta(values[c], seg_ids, nodes, higher_is_better=orient[c]) for c in columns}
    baseline = time.perf_counter() - start

    worst = 0.0
    for c in columns:
        for metric in ("rank", "sep", "delta"):
            want = np.array([reference[c][metric][s] for s in ours[c][metric].seg_ids])
            got = ours[c][metric].per_seg
            both = ~np.isnan(want)
            assert np.array_equal(np.isnan(got), ~both), (c, metric)
            worst = max(worst, float(np.max(np.abs(got[both] - want[both]), initial=0.0)))

    n_images = len(seg_ids)
    print(f"{len(columns)} metrics x 3 meta-metrics, {n_images} images, {len(ours[columns[0]].rank.seg_ids)} SEGs")
    print(f"baseline (pandas + scipy loop per walk/pair): {baseline:8.3f} s")
    print(f"ts2-evaluate (vectorised, best of {args.repeat}):       {best:8.3f} s")
    print(f"speed-up: {baseline / best:.0f}x   (max |per-SEG difference| = {worst:.2e})")


if __name__ == "__main__":
    main()
