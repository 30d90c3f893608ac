"""``ts2 reproduce``: the paper's Table 2 recomputed from released scores, ours vs published."""
from __future__ import annotations

import argparse
import json

from scorers.cli._options import DATA_DIR_HELP, SEGS_HELP, VARIANT_HELP, add_n_bootstrap_argument, release_or_given
from scorers.cli._validate import input_dir, input_file, seg_spec


def register(subparsers: argparse._SubParsersAction) -> None:
    rep = subparsers.add_parser(
        "reproduce",
        help="the paper's Table 2 from released scores: ours vs paper",
        description="Recompute rank/sep/delta of every published metric and compare with the paper's Table 2.",
    )
    rep.add_argument("--scores", type=input_file,
                     help="per-image scores, joined with --metadata on seg_id + file_name when it has them, "
                          "else row-aligned (default: the release's released_scores.csv, its stray "
                          "quotes cleaned)")
    rep.add_argument("--metadata", type=input_file, help="metadata.csv (default: the release's)")
    rep.add_argument("--paper", type=input_file,
                     help="paper_table2.csv (default: from --data-dir / $TS2_DATA, else the release's "
                          "table2_full_precision.csv from the cache or one download)")
    rep.add_argument("--data-dir", type=input_dir, help=DATA_DIR_HELP)
    rep.add_argument("--segs", dest="seg_subset", type=seg_spec, default="default", help=SEGS_HELP)
    rep.add_argument("--variant", choices=["paper", "official", "published"], default="paper", help=VARIANT_HELP)
    rep.add_argument("--clean-quotes", action="store_true", help="strip stray quote characters (llmscore_over)")
    add_n_bootstrap_argument(rep)
    rep.add_argument("--json", action="store_true",
                     help='print one JSON object {"segs", "unit": "fraction", "rows": [...], "notes"} (fractions; '
                          "the tables print %%)")
    rep.add_argument("--markdown", action="store_true", help="print the Avg column as a Markdown table")
    rep.set_defaults(handler=run_reproduce)


def run_reproduce(args: argparse.Namespace) -> int:
    from scorers.tables.csv_tables import paper_table as read_paper_table  # pandas only for a file the light reader leaves
    from scorers.ts2.options import MetaOptions
    from scorers.ts2.reproduce import release_paper_table, reproduce_table
    from scorers.cli._format import format_reproduction, format_reproduction_markdown

    notes = []
    paper = None if args.paper is None else read_paper_table(args.paper)
    if paper is None:
        paper, _, notes = release_paper_table(args.data_dir)
    released = args.scores is None
    if released and not args.clean_quotes:
        notes.append("released_scores.csv: its known stray quotes (llmscore_over, e.g. '\"3') are cleaned")
    reproduction = reproduce_table(
        release_or_given(args.scores, "released_scores.csv", args.data_dir),
        release_or_given(args.metadata, "metadata.csv", args.data_dir),
        paper,
        options=MetaOptions(seg_subset=args.seg_subset, clean_quotes=args.clean_quotes or released, variant=args.variant,
                            n_bootstrap=args.n_bootstrap),
    )
    reproduction.notes[:0] = notes
    if args.json:
        print(json.dumps(reproduction.to_dict()))  # fractions, like every JSON output; unit and segs stated
    elif args.markdown:
        print(format_reproduction_markdown(reproduction.rows, segs=reproduction.segs))
        for note in reproduction.notes:
            print(f"\n{note}")
    else:
        print(format_reproduction(reproduction.rows, once(reproduction), segs=reproduction.segs))
    return 0


def once(reproduction) -> list[str]:
    """The notes the text table prints under it: the LLMScore delta swap is said once, by the footnote its rows carry
    (:data:`~scorers.ts2.reproduce.DELTA_SWAP_ROW_NOTE`), not again as a note line (JSON and Markdown keep the note:
    they have no footnotes)."""
    from scorers.ts2.reproduce import DELTA_SWAP_NOTE, DELTA_SWAP_ROW_NOTE

    footnoted = any(DELTA_SWAP_ROW_NOTE in (row.get("note") or "") for row in reproduction.rows)
    return [n for n in reproduction.notes if not (footnoted and n == DELTA_SWAP_NOTE)]
