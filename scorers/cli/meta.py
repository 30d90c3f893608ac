"""``ts2 meta`` (one score table -> rank/sep/delta) and ``ts2 reproduce`` (the paper's Table 2, ours vs published)."""
from __future__ import annotations

import argparse
import json
import os
import sys



#: --data-dir of the commands that read release tables
DATA_DIR_HELP = ("folder laid out like the TS2 release (metadata.csv, released_scores.csv, paper_table2.csv...); "
                 "default: $TS2_DATA, else the Hugging Face cache, downloading a missing file once (scorers.release)")

#: --segs of meta, reproduce and report
SEGS_HELP = "SEG ids to evaluate, e.g. 0-10,20, or 'all' (default: 0-163, the paper's Table 2 set)"


def register(subparsers: argparse._SubParsersAction) -> None:
    meta = subparsers.add_parser(
        "meta",
        help="rank/sep/delta of per-image scores",
        description="TS2 meta-metrics of one or more score columns of a per-image scores CSV.",
    )
    meta.add_argument("scores", help="per-image scores CSV (rows aligned with --metadata, or joined with --on)")
    meta.add_argument("--metadata", help="TS2 metadata.csv (id, target_prompt, file_name, rank...); default: the "
                                         "release's, from --data-dir / $TS2_DATA, else the cache (downloaded once)")
    meta.add_argument("--data-dir", help=DATA_DIR_HELP)
    meta.add_argument("--column", action="append", help="score column (repeatable; default: every non-key column)")
    meta.add_argument("--lower-is-better", action="store_true", help="scores are error counts (LLMScore style)")
    meta.add_argument("--variant", choices=["paper", "official"], default="paper", help="delta definition")
    meta.add_argument("--on", nargs="+", metavar="KEY", help="join on these key columns, e.g. --on seg_id file_name")
    meta.add_argument("--segs", default="default", help=SEGS_HELP)
    meta.add_argument("--n-bootstrap", type=int, default=0, help="bootstrap resamples over SEGs for CIs (0: none)")
    meta.add_argument("--seed", type=int, default=0, help="random seed of the bootstrap resampling")
    meta.add_argument("--clean-quotes", action="store_true", help="strip stray quote characters from numeric cells")
    meta.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    meta.set_defaults(handler=run_meta)

    rep = subparsers.add_parser(
        "reproduce",
        help="the paper's Table 2 from released scores: ours vs paper",
        description="Recompute rank/sep/delta of every published metric and compare with the paper's Table 2.",
    )
    rep.add_argument("--scores", help="per-image scores row-aligned with --metadata (default: the release's "
                                      "released_scores.csv, its stray quotes cleaned)")
    rep.add_argument("--metadata", help="metadata.csv (default: the release's)")
    rep.add_argument("--paper", help="paper_table2.csv (default: from --data-dir / $TS2_DATA, else the release's "
                                     "table2_full_precision.csv from the cache or one download)")
    rep.add_argument("--data-dir", help=DATA_DIR_HELP)
    rep.add_argument("--segs", default="default", help=SEGS_HELP)
    rep.add_argument("--variant", choices=["paper", "official"], default="paper", help="delta definition")
    rep.add_argument("--clean-quotes", action="store_true", help="strip stray quote characters (llmscore_over)")
    rep.add_argument("--n-bootstrap", type=int, default=0, help="bootstrap resamples over SEGs for CIs (0: none)")
    rep.add_argument("--json", action="store_true", help='print one JSON object {"rows": [...]}')
    rep.add_argument("--markdown", action="store_true", help="print the Avg column as a Markdown table")
    rep.set_defaults(handler=run_reproduce)


#: ``ts2 meta`` shows progress (stderr) from this many score columns on; a large file's read is announced too
PROGRESS_MIN_COLUMNS = 20
ANNOUNCE_READ_BYTES = 50 * 1024 * 1024


def release_or_given(given: str | None, name: str, data_dir: str | None):
    """``given`` if the user passed a path, else the release file ``name`` (local copy, cache or one download)."""
    if given is not None:
        return given
    from ..release import path

    return path(name, data_dir)


def run_meta(args: argparse.Namespace) -> int:
    from ..graph import resolve_seg_subset
    from ..meta import TS2Evaluator
    from ..tables import align_scores, column_scores, iter_columns, read_metadata, read_score_table
    from ._format import format_meta_table

    metadata = read_metadata(release_or_given(args.metadata, "metadata.csv", args.data_dir))
    if os.path.getsize(args.scores) >= ANNOUNCE_READ_BYTES:
        print(f"ts2 meta: reading {args.scores} ({os.path.getsize(args.scores) / 2**20:,.0f} MiB)...", file=sys.stderr)
    scores = align_scores(read_score_table(args.scores, args.column), metadata, on=args.on)
    columns = iter_columns(scores, args.column)
    values = {c: column_scores(scores, c, clean_quotes=args.clean_quotes) for c in columns}
    evaluator = TS2Evaluator(metadata["seg_id"].to_numpy(), metadata["node"].to_numpy(),
                             seg_subset=resolve_seg_subset(args.segs, metadata["seg_id"]))
    bar = None
    if len(columns) >= PROGRESS_MIN_COLUMNS:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(evaluator.segs), unit="SEG", file=sys.stderr,
                   desc=f"ts2 meta: {len(columns)} column(s)")
    try:
        results = evaluator.evaluate_many(
            values, higher_is_better=not args.lower_is_better, variant=args.variant,
            n_bootstrap=args.n_bootstrap, seed=args.seed,
            progress=None if bar is None else (lambda done, total: bar.update(1)),
        )
    finally:
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps({name: result.to_dict() for name, result in results.items()}))
    else:
        print(format_meta_table(results))
    return 0


def run_reproduce(args: argparse.Namespace) -> int:
    from ..reproduce import release_paper_table, reproduce_table
    from ..tables import read_metadata, read_paper_table, read_score_table
    from ._format import format_reproduction, format_reproduction_markdown

    notes, orientation = [], None
    paper = None if args.paper is None else read_paper_table(args.paper)
    if paper is None:
        paper, orientation, notes = release_paper_table(args.data_dir)
    released = args.scores is None
    if released and not args.clean_quotes:
        notes.append("released_scores.csv: its known stray quotes (llmscore_over, e.g. '\"3') are cleaned")
    reproduction = reproduce_table(
        read_score_table(release_or_given(args.scores, "released_scores.csv", args.data_dir)),
        read_metadata(release_or_given(args.metadata, "metadata.csv", args.data_dir)),
        paper,
        seg_subset=args.segs,
        clean_quotes=args.clean_quotes or released,
        variant=args.variant,
        n_bootstrap=args.n_bootstrap,
        higher_is_better=orientation,
    )
    reproduction.notes[:0] = notes
    if args.json:
        print(json.dumps({"segs": reproduction.segs, "rows": reproduction.rows}))
    elif args.markdown:
        print(format_reproduction_markdown(reproduction.rows, segs=reproduction.segs))
        for note in reproduction.notes:
            print(f"\n{note}")
    else:
        print(format_reproduction(reproduction.rows, reproduction.notes, segs=reproduction.segs))
    return 0
