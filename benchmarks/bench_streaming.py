"""Memory and speed of a streamed ``ts2 score --parquet`` run: peak RSS at N rows and at 10 N rows (flat: the ratio
stays near 1.0), and rows/s.

Data: synthetic SEG rows in the ``ts2 dataset export`` layout (``tests.helpers.stream_parquet.write_segs_export``:
8 px PNGs, 64 variants, each row's bytes stored, 100,000-row shards, 1,000-row row groups), scored with
``clip_score`` on an 8 px open_clip CLIP with random weights (``build_open_clip_8px``: the per-row cost is the pipeline's: read, decode,
preprocess, score, checkpoint, CSV). Each size runs in a child process of its own (``score_parquet``, the library
call behind ``ts2 score --parquet``), which reports its peak RSS (``ru_maxrss``) after writing the CSV.

    OMP_NUM_THREADS=1 python benchmarks/bench_streaming.py                   # 100,000 and 1,000,000 rows
    OMP_NUM_THREADS=1 python benchmarks/bench_streaming.py --sizes 2000,20000  # a quick look
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def child(export: str, model: str, out: str, chunk_rows: int, batch_size: int) -> None:
    """One streamed run; prints ``{"rows", "seconds", "peak_rss_mb", "rss_before_mb"}`` as one JSON line."""
    from scorers.ts2.parquet_scoring import score_parquet
    from scorers.scoring.registry import build_scorer

    build_scorer("clip_score", model=model, device="cpu", allow_random_weights=True)  # imports + model: the floor
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    result = score_parquet("clip_score", export, out, model=model, scorer_options={"allow_random_weights": True},
                           chunk_rows=chunk_rows, batch_size=batch_size, num_workers=0, progress=False)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"rows": result.rows, "seconds": seconds, "peak_rss_mb": peak, "rss_before_mb": before}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000", help="row counts, comma-separated (each in a child)")
    parser.add_argument("--chunk-rows", type=int, default=10_000)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--child", nargs=5, metavar=("EXPORT", "MODEL", "OUT", "CHUNK", "BATCH"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        export, model, out, chunk, batch = args.child
        child(export, model, out, int(chunk), int(batch))
        return

    from tests.helpers.stream_parquet import build_open_clip_8px, write_segs_export

    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        tmp = Path(tmp)
        model = build_open_clip_8px(tmp)
        figures = []
        for rows in sizes:
            start = time.perf_counter()
            export = write_segs_export(tmp / f"export-{rows}", rows)
            made = time.perf_counter() - start
            size_mb = sum(p.stat().st_size for p in (export / "segs").glob("*.parquet")) / 1e6
            done = subprocess.run([sys.executable, __file__, "--child", str(export), model, str(tmp / f"s{rows}.csv"),
                                   str(args.chunk_rows), str(args.batch_size)], capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"child for {rows} rows failed:\n{done.stderr[-3000:]}")
            figure = json.loads(done.stdout.strip().splitlines()[-1])
            figures.append(figure)
            print(f"{rows:>9,} rows ({size_mb:.1f} MB of Parquet, written in {made:.1f} s): {figure['seconds']:.1f} s, "
                  f"{figure['rows'] / figure['seconds']:,.0f} rows/s, peak RSS {figure['peak_rss_mb']:.0f} MB "
                  f"(after imports + model: {figure['rss_before_mb']:.0f} MB)", flush=True)
            for path in (export / "segs").glob("*.parquet"):
                path.unlink()
        if len(figures) > 1:
            ratio = figures[-1]["peak_rss_mb"] / figures[0]["peak_rss_mb"]
            print(f"peak RSS {sizes[-1]:,} rows / {sizes[0]:,} rows: {ratio:.3f} (flat within 20%: "
                  f"{'yes' if abs(ratio - 1) <= 0.2 else 'NO'})")


if __name__ == "__main__":
    main()
