"""``ts2 meta``: one score table -> rank/sep/delta (``ts2 reproduce`` lives in :mod:`scorers.cli.reproduce`)."""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

from scorers.cli._options import (DATA_DIR_HELP, SEGS_HELP, VARIANT_HELP, add_command, add_n_bootstrap_argument,
                       add_orientation_arguments, add_walks_argument, lower_is_better_columns, release_or_given,
                       walks_options)
from scorers.cli._validate import count, input_dir, input_file, seg_spec


def register(subparsers: argparse._SubParsersAction) -> None:
    meta = add_command(subparsers, "meta", run_meta, help="rank/sep/delta of per-image scores")
    meta.add_argument("scores", nargs="?", type=input_file, metavar="SCORES",
                      help="per-image scores CSV: joined with --metadata on seg_id + file_name (or image_id) when it "
                           "has them, in any row order (on a data dir built by ts2 seg build, file_name may be the "
                           "built name or the image's source_file); a table without keys is paired by row position "
                           "(the output says so)")
    meta.add_argument("--metadata", type=input_file,
                      help="TS2 metadata.csv (id, target_prompt, file_name, rank...); default: the "
                           "release's, from --data-dir / $TS2_DATA, else the cache (downloaded once)")
    meta.add_argument("--data-dir", type=input_dir, help=DATA_DIR_HELP)
    meta.add_argument("--column", action="append", dest="columns",
                      help="score column (repeatable; default: every non-key column)")
    add_orientation_arguments(meta, bare=True)
    meta.add_argument("--variant", choices=["paper", "official", "published"], default="paper", help=VARIANT_HELP)
    meta.add_argument("--on", nargs="+", metavar="KEY", help="join on these key columns, e.g. --on seg_id file_name "
                                                             "(default: the table's own keys)")
    meta.add_argument("--segs", dest="seg_subset", type=seg_spec, default="default", help=SEGS_HELP)
    add_walks_argument(meta)
    add_n_bootstrap_argument(meta)
    meta.add_argument("--seed", type=count(0), default=0, help="random seed of the bootstrap resampling")
    meta.add_argument("--clean-quotes", action="store_true", help="strip stray quote characters from numeric cells")
    meta.add_argument("--by-error-type", action="store_true",
                      help="also rank/sep/delta over the walks along edges of one error type (missing, attribute, "
                           "relation, action): walks from node 0 that add errors of that type only; needs metadata "
                           "with errors and error_types (a data dir built by ts2 seg build), paper variant")
    meta.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    meta.add_argument("--wide", action="store_true",
                      help="one row per metric, every partition's cell with its interval (wider than 100 columns); "
                           "default: one row per metric and meta-metric, Avg with its interval, one value per partition")
    meta.add_argument("--out", metavar="RESULT_JSON", help="also save the result: numbers, command, SEG set, seed, "
                                                          "package version, inputs' sha256, scorer config")
    meta.add_argument("--from", dest="from_result", metavar="RESULT_JSON",
                      help="re-print a result saved with --out (and whether its inputs changed); nothing is computed: "
                           "its table is checked against its numbers, --json prints the saved numbers (fractions), "
                           "and options that would compute (--seed, --n-bootstrap, --lower-is-better...) are refused")


#: ``ts2 meta`` shows progress (stderr) from this many score columns on; a large file's read is announced too
PROGRESS_MIN_COLUMNS = 20
ANNOUNCE_READ_BYTES = 50 * 1024 * 1024


def run_meta(args: argparse.Namespace) -> int:
    """TS2 meta-metrics of one or more score columns of a per-image scores CSV."""
    if args.from_result is not None:
        from scorers.cli._saved import load_result, reprint

        if args.scores is not None:
            raise ValueError("--from re-prints a saved result: give it alone, without SCORES")
        given = _computing_options(args)
        if given:
            raise ValueError(f"--from re-prints a saved result and computes nothing: {', '.join(given)} would need a "
                             "new computation; run the saved command (ts2 meta --from FILE prints it) with "
                             f"{'them' if len(given) > 1 else 'it'}")
        payload = load_result(args.from_result)
        if args.json:  # what --json printed when the result was made (fractions)
            print(json.dumps(payload["results"]))
        else:
            print(reprint(payload))
        return 0
    if args.scores is None:
        raise ValueError("SCORES: the per-image scores CSV is required (or --from RESULT_JSON)")
    from scorers.tables.columns import check_score_header
    from scorers.tables.csv_tables import csv_header
    from scorers.ts2.meta_from_tables import meta_from_tables
    from scorers.ts2.options import MetaOptions

    if not os.path.isfile(args.scores):  # local arguments first: no network wait before a typo is reported
        raise FileNotFoundError(f"SCORES {args.scores}: no such file")
    metadata = release_or_given(args.metadata, "metadata.csv", args.data_dir)
    walks = walks_options(args.walks, metadata)
    if os.path.getsize(args.scores) >= ANNOUNCE_READ_BYTES:
        print(f"ts2 meta: reading {args.scores} ({os.path.getsize(args.scores) / 2**20:,.0f} MiB)...", file=sys.stderr)
    available = check_score_header(args.scores, csv_header(args.scores), args.columns)  # the file is read below
    columns = list(args.columns) if args.columns else available
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, unit="SEG", file=sys.stderr, desc=f"ts2 meta: {len(columns)} column(s)")
        bar.update(1)

    try:
        evaluated = _with_built_dir_hint(args, metadata, lambda: meta_from_tables(  # a path: read without pandas when the file is plain (csv_tables)
            args.scores, metadata, columns=args.columns,
            options=MetaOptions(lower_is_better=lower_is_better_columns(args.lower_is_better, columns),
                                higher_is_better=args.higher_is_better, seg_subset=args.seg_subset, variant=args.variant,
                                n_bootstrap=args.n_bootstrap, seed=args.seed, clean_quotes=args.clean_quotes,
                                on=args.on, by_error_type=args.by_error_type, **walks),
            progress=progress if len(columns) >= PROGRESS_MIN_COLUMNS else None,
        ))
    finally:
        if bar is not None:
            bar.close()
    from scorers.ts2.result_text import meta_text

    text = meta_text(evaluated, args.variant, wide=args.wide)
    if args.json:
        print(json.dumps(evaluated.to_dict()))  # "pairing" and "notes" per column say how rows were matched
    else:
        print(text)
    if args.out:
        from scorers.cli._saved import command_line
        from scorers.ts2.result_file import save_result

        saved = save_result(args.out, command=command_line(args.argv), results=evaluated.to_dict(),  # = --json
                            table=text,
                            segs=next(iter(evaluated.results.values())).rank.seg_ids, seed=args.seed,
                            n_bootstrap=args.n_bootstrap, variant=args.variant,
                            inputs={"scores": args.scores, "metadata": metadata,
                                    **({"segs": walks["segs_file"]} if args.walks == "edges" else {})})
        print(f"saved {saved} (re-print: ts2 meta --from {saved})", file=sys.stderr)
    return 0


#: a file name as ``ts2 seg build`` names a built data dir's images (``images/SSS-KK.ext``: SEG id, position)
_BUILT_NAME = re.compile(r"images/\d{3,}-\d{2,}\.\w+")


def _with_built_dir_hint(args: argparse.Namespace, metadata, compute):
    """``compute()``; when it fails on the release's metadata (no --metadata given) and the scores' file names look
    like a built data dir's but are not the release's, the error also names ``--metadata OUT/metadata.csv``."""
    try:
        return compute()
    except ValueError as error:
        if args.metadata is not None or not _names_a_built_dir(args.scores, metadata):
            raise
        from scorers.errors import value_error

        raise value_error("{error}; these file names look like a data dir built by ts2 seg build (images/SSS-KK), "
                          "not the release's: pass --metadata OUT/metadata.csv of that dir", error=error) from None


def _names_a_built_dir(scores: str, metadata) -> bool:
    """Whether the scores' ``file_name`` column holds a built dir's image name that the release metadata lacks."""
    import pandas as pd

    try:
        names = pd.read_csv(scores, usecols=["file_name"], dtype=str)["file_name"].dropna().str.strip()
        known = set(pd.read_csv(metadata, usecols=["file_name"], dtype=str)["file_name"].str.strip())
    except (ValueError, OSError):  # no file_name column, or a table that does not read: no hint
        return False
    return any(_BUILT_NAME.fullmatch(n) and n not in known for n in names)


#: the options of ``ts2 meta`` that change what is computed: refused with ``--from`` (dest, flag, default)
_COMPUTING = (("columns", "--column", None), ("metadata", "--metadata", None), ("data_dir", "--data-dir", None),
              ("lower_is_better", "--lower-is-better", []), ("higher_is_better", "--higher-is-better", []),
              ("variant", "--variant", "paper"), ("on", "--on", None), ("seg_subset", "--segs", "default"),
              ("n_bootstrap", "--n-bootstrap", None), ("seed", "--seed", 0), ("clean_quotes", "--clean-quotes", False),
              ("out", "--out", None), ("by_error_type", "--by-error-type", False), ("walks", "--walks", "levels"))


def _computing_options(args: argparse.Namespace) -> list[str]:
    """The options given with ``--from`` that would change what is computed: a value other than the default, or the
    flag written on the command line (``--seed 0`` too)."""
    from scorers.cli._options import N_BOOTSTRAP

    tokens = {t.split("=", 1)[0] for t in getattr(args, "argv", []) if t.startswith("--")}
    given = []
    for dest, flag, default in _COMPUTING:
        default = N_BOOTSTRAP if dest == "n_bootstrap" else default
        if flag in tokens or getattr(args, dest, default) != default:
            given.append(flag)
    return given
