"""``ts2 leaderboard``: the community leaderboard, every submission verified before it is listed."""
from __future__ import annotations

import argparse
import json

from scorers.cli._options import DATA_DIR_HELP, add_command
from scorers.cli._validate import input_dir, input_file, output_file


def register(subparsers: argparse._SubParsersAction) -> None:
    board = add_command(subparsers, "leaderboard", run_leaderboard,
                        help="verify every submission and list them beside the published metrics")
    board.add_argument("--submissions", required=True, metavar="PATH_OR_REPO[@REVISION]",
                       help="a local folder of submissions (with a submissions/ folder, or the submission folders "
                            "themselves), or a Hub dataset OWNER/NAME@REVISION read at that revision (pin a commit "
                            "sha for a listing anyone can repeat)")
    board.add_argument("--metadata", type=input_file,
                       help="TS2 metadata.csv to verify against (default: the release's, from --data-dir / $TS2_DATA, "
                            "else the cache)")
    board.add_argument("--data-dir", type=input_dir, help=DATA_DIR_HELP)
    board.add_argument("--no-published", dest="published", action="store_false",
                       help="the community rows alone, without the 19 published metrics")
    board.add_argument("--sort-by", choices=["rank", "sep", "delta"], default="rank",
                       help="the average each group is ranked by (default rank)")
    board.add_argument("--json", action="store_true", help="print one JSON object (values as fractions) instead")
    board.add_argument("--csv", type=output_file, metavar="FILE",
                       help="also write the table as CSV (every value in %%, the rejected ones are in the text/JSON)")


def run_leaderboard(args: argparse.Namespace) -> int:
    """Verify every submission of --submissions (a folder, or a Hub dataset at a pinned revision) and print the
    leaderboard: verified rows beside the published ones, marked with the ts2-evaluate version that verified them;
    rows on another variant or SEG set in their own group, never ranked with the default; rejected submissions
    listed apart, one line each with the reason. --json and --csv give the same table."""
    from scorers.report.community import community_leaderboard

    metadata = args.metadata
    if metadata is None and args.data_dir is not None:
        from scorers.tables.release_download import path

        metadata = path("metadata.csv", args.data_dir)
    board = community_leaderboard(args.submissions, data_dir=args.data_dir, metadata=metadata,
                                  published=args.published, sort_by=args.sort_by)
    if args.csv:
        board.write_csv(args.csv)
    print(json.dumps(board.to_dict()) if args.json else board.text())
    return 0
