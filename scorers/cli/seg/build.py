"""``ts2 seg build ANNOTATIONS --images DIR --out OUT``: one row per image + its error set -> a TS2 data dir."""
from __future__ import annotations

import argparse
import sys

from scorers.cli._options import add_command
from scorers.cli._validate import input_dir, input_file

#: warnings printed on the terminal (all of them are in OUT/warnings.txt)
SHOWN_WARNINGS = 20


def register(steps: argparse._SubParsersAction) -> None:
    build = add_command(steps, "build", run_seg_build,
                        help="ANNOTATIONS (one row per image + its error set) -> a data dir in the release's layout")
    build.add_argument("annotations", type=input_file, metavar="ANNOTATIONS",
                       help="CSV, one row per image: seg_id, prompt, file_name (relative to --images, inside "
                            "it), errors (error labels joined with ';', empty for an error-free image); optional "
                            "image_source, partition, error_types (missing/attribute/relation/action, aligned with "
                            "errors)")
    build.add_argument("--images", type=input_dir, metavar="DIR",
                       help="the folder file_name is relative to (without it: metadata only, images neither "
                            "checked nor copied)")
    build.add_argument("--out", required=True, metavar="OUT",
                       help="the data dir to write: metadata.csv, images/, segs.json (and warnings.txt)")
    build.add_argument("--overwrite", action="store_true",
                       help="replace a build in a non-empty OUT (only the files a build writes)")


def run_seg_build(args: argparse.Namespace) -> int:
    """Build SEGs from per-image error sets (TS2 paper, sections 3.1-3.2).

    Images with the same error set share a node; the node's label is the set's size, with a letter when several
    sets have that size (1a, 1b); an edge runs from set A to set B when B is A plus one error. OUT is read by
    load_ts2(data_dir=OUT), `ts2 dataset export --data-dir OUT`, `ts2 score ... --data-dir OUT`,
    `ts2 meta/report/card --metadata OUT/metadata.csv` (per partition, from the partition column) and the demo.

    Refused, one line naming the ANNOTATIONS line: a file_name outside --images (an absolute path elsewhere, '..',
    a symlink leading out), a SEG with no error-free image, a missing or unreadable image, an image listed twice,
    the same file under two SEGs (compared after resolving), a SEG with fewer than two error levels, an error label
    with two types or a control character, an integer seg_id above 2**63 - 1, an empty prompt. Warned (listed in
    OUT/warnings.txt and counted): a node with one image, a node not reachable one error at a time."""
    from scorers.ts2.seg.build import build_seg_dir

    built = build_seg_dir(args.annotations, images=args.images, out=args.out, overwrite=args.overwrite)
    parts = ", ".join(f"{name}: {n}" for name, n in built.partitions.items())
    print(f"built {built.n_segs} SEG(s), {built.n_images} image(s), {built.n_nodes} node(s), {built.n_edges} edge(s) "
          f"in {built.out} (partitions: {parts})")
    if args.images is None:
        print("metadata only (no --images): images were neither checked nor copied", file=sys.stderr)
    for line in built.warnings[:SHOWN_WARNINGS]:
        print(f"warning: {line}", file=sys.stderr)
    if built.warnings:
        more = len(built.warnings) - SHOWN_WARNINGS
        kinds = built.warning_counts
        print(f"{len(built.warnings)} warning(s): {kinds.get('one image', 0)} node(s) with one image, "
              f"{kinds.get('not reachable', 0)} not reachable one error at a time"
              + (f" ({more} more not shown)" if more > 0 else "") + f"; all in {built.out / 'warnings.txt'}",
              file=sys.stderr)
    else:
        print("0 warnings", file=sys.stderr)
    return 0
