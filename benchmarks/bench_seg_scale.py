"""Scale of ``ts2 seg build`` and ``ts2 meta`` on a built data dir: the release's size and 100 times it.

Generates, in a temp dir, ANNOTATIONS for N SEGs (about 17.2 images each, as the release: 165 SEGs / 2,840 images;
at scale 16,500 SEGs / 284,000 images) with error sets at counts 0-3 (two sets at count 1, two at count 2) and a
``partition`` column, then times in fresh processes:

* ``ts2 seg build ANNOTATIONS --out OUT`` (metadata only; ``--tiny-files`` writes 1x1 PNG files and passes
  ``--images``, so every image is opened and copied),
* ``ts2 meta SCORES --metadata OUT/metadata.csv`` (one score column),

and prints each run's wall time, CPU time (user + system: steadier than wall time on a shared machine) and peak
memory (the process's max RSS, imports included), and the scale / release-size ratios (linear work gives ratios near
the size ratio, 100, less the fixed start-up cost). The generation is vectorised (numpy).

    python benchmarks/bench_seg_scale.py [--segs 16500] [--images 284000] [--tiny-files] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: the error sets of a generated SEG, as node templates (labels a-d are the SEG's elements)
TEMPLATE = ("", "a", "b", "a;b", "a;c", "a;b;c", "c", "b;d")
#: their error types (aligned, per element: a, c missing; b attribute; d relation)
TYPES = {"a": "missing", "b": "attribute", "c": "missing", "d": "relation"}

LABELS = {"build": "ts2 seg build", "meta": "ts2 meta", "meta_by_type": "ts2 meta --by-error-type"}

_RUN = """
import json, resource, sys, time
sys.argv = ["ts2"] + {argv!r}
start = time.perf_counter()
from scorers.cli import main
code = main({argv!r})
elapsed = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({{"code": code, "seconds": elapsed, "cpu": usage.ru_utime + usage.ru_stime,
                   "peak_bytes": usage.ru_maxrss * 1024}}), file=sys.stderr)
"""


def generate(folder: Path, n_segs: int, n_images: int, *, tiny_files: bool) -> tuple[Path, Path | None]:
    """ANNOTATIONS for ``n_segs`` SEGs and ``n_images`` images, built with whole arrays."""
    import pandas as pd

    base, extra = divmod(n_images, n_segs)
    per_seg = np.full(n_segs, base) + (np.arange(n_segs) < extra)
    seg = np.repeat(np.arange(n_segs), per_seg)
    position = np.arange(n_images) - np.repeat(np.cumsum(per_seg) - per_seg, per_seg)
    node = position % len(TEMPLATE)
    errors = np.asarray(TEMPLATE, dtype=object)[node]
    type_text = np.asarray([";".join(TYPES[e] for e in t.split(";")) if t else "" for t in TEMPLATE],
                           dtype=object)[node]
    file_name = np.char.add(np.char.add(np.char.add("s", seg.astype(str)), "_"), position.astype(str))
    file_name = np.char.add(file_name, ".png")
    frame = pd.DataFrame({"seg_id": seg, "prompt": np.char.add("prompt of SEG ", seg.astype(str)),
                          "file_name": file_name, "errors": errors, "error_types": type_text,
                          "partition": np.where(seg % 3 == 0, "dev", "test"), "image_source": "gen"})
    ann = folder / "annotations.csv"
    frame.to_csv(ann, index=False)
    images = None
    if tiny_files:
        from PIL import Image

        images = folder / "imgs"
        images.mkdir()
        buffer = folder / "one.png"
        Image.new("RGB", (1, 1), (200, 10, 10)).save(buffer)
        data = buffer.read_bytes()
        for name in file_name.tolist():  # writing the files is the benchmark's set-up, not what is measured
            (images / name).write_bytes(data)
    return ann, images


def scores_for(out: Path, target: Path) -> Path:
    import pandas as pd

    meta = pd.read_csv(out / "metadata.csv", usecols=["id", "file_name", "rank"], dtype=str)
    rng = np.random.default_rng(0)
    errors = meta["rank"].str.extract(r"^(\d+)", expand=False).astype(float).to_numpy()
    pd.DataFrame({"seg_id": meta["id"], "file_name": meta["file_name"],
                  "metric": -errors + rng.normal(scale=0.8, size=len(meta))}).to_csv(target, index=False)
    return target


def timed(argv: list[str]) -> dict:
    """Run ``ts2 ARGV`` in a fresh process: its exit code, seconds (import included) and peak RSS."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _RUN.format(argv=argv)], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    wall = time.perf_counter() - start
    report = json.loads(done.stderr.strip().splitlines()[-1])
    if report["code"] != 0:
        raise SystemExit(f"ts2 {' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    report["wall"] = wall
    return report


def run_size(root: Path, n_segs: int, n_images: int, tiny_files: bool) -> dict:
    folder = root / f"segs{n_segs}"
    folder.mkdir()
    ann, images = generate(folder, n_segs, n_images, tiny_files=tiny_files)
    out = folder / "out"
    build = ["seg", "build", str(ann), "--out", str(out)] + (["--images", str(images)] if images else [])
    result = {"segs": n_segs, "images": n_images, "build": timed(build)}
    scores = scores_for(out, folder / "scores.csv")
    result["meta"] = timed(["meta", str(scores), "--metadata", str(out / "metadata.csv"), "--n-bootstrap", "0"])
    result["meta_by_type"] = timed(["meta", str(scores), "--metadata", str(out / "metadata.csv"), "--n-bootstrap", "0",
                                    "--by-error-type"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segs", type=int, default=16_500)
    parser.add_argument("--images", type=int, default=284_000)
    parser.add_argument("--tiny-files", action="store_true", help="write 1x1 PNGs and build with --images")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR (kept) instead of a temp dir")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ts2-seg-scale-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        small = run_size(root, 165, 2_840, args.tiny_files)
        large = run_size(root, args.segs, args.images, args.tiny_files)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{'run':<26}{'SEGs':>8}{'images':>10}{'wall s':>10}{'CPU s':>10}{'peak GB':>10}")
    for result in (small, large):
        for step in ("build", "meta", "meta_by_type"):
            r = result[step]
            print(f"{LABELS[step]:<26}{result['segs']:>8,}{result['images']:>10,}"
                  f"{r['seconds']:>10.2f}{r['cpu']:>10.2f}{r['peak_bytes'] / 1e9:>10.3f}")
    size_ratio = large["images"] / small["images"]
    print(f"\nscale / release size: {size_ratio:.0f}x the images")
    for step in ("build", "meta", "meta_by_type"):
        t = large[step]["seconds"] / small[step]["seconds"]
        c = large[step]["cpu"] / small[step]["cpu"]
        m = large[step]["peak_bytes"] / small[step]["peak_bytes"]
        print(f"  {LABELS[step]:<26} wall x{t:.1f}, CPU x{c:.1f}, peak memory x{m:.2f}")


if __name__ == "__main__":
    main()
