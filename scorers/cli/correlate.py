"""``ts2 correlate``: agreement of metric scores with human ratings (Pearson, Spearman, Kendall b/c, pairwise
accuracy)."""
from __future__ import annotations

import argparse
import os
import json
import sys

from scorers.stats.agreement import COEFFICIENTS, GROUPINGS  # light: scipy.stats is imported where a coefficient needs it
from scorers.formatting import MISSING, format_number
from scorers.ts2.result_text import text_grid
from scorers.cli._validate import confidence, count
from scorers.cli._options import add_command, add_n_bootstrap_argument, add_orientation_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "correlate", run_correlate,
                         help="agreement of metric scores with human ratings (correlations, tie-calibrated "
                              "pairwise accuracy)")
    parser.add_argument("ratings", metavar="RATINGS", help="ratings table (.csv/.parquet/.json) or 'tifa160'")
    parser.add_argument("--human", action="append", required=True, metavar="COL",
                        help="human rating column; repeat (or comma-separate) for several raters: they are averaged "
                             "per item and inter-rater agreement is reported")
    parser.add_argument("--metric", action="append", required=True, dest="metrics", metavar="COL",
                        help="metric score column (repeatable, or comma-separated)")
    parser.add_argument("--group-by", dest="grouping", choices=GROUPINGS, default="none",
                        help="none: all items pooled; item: per prompt, then averaged; system: per T2I model means")
    parser.add_argument("--item-col", default="item", metavar="COL", help="prompt id column (default: item)")
    parser.add_argument("--system-col", default="system", metavar="COL", help="T2I model column (default: system)")
    parser.add_argument("--coefficients", default=",".join(COEFFICIENTS),
                        help=f"comma-separated subset of {','.join(COEFFICIENTS)} (default: all)")
    add_orientation_arguments(parser)
    add_n_bootstrap_argument(parser, over="rows (or groups)")
    parser.add_argument("--confidence", type=confidence, default=0.95, help="CI level (default 0.95)")
    parser.add_argument("--seed", type=count(0), default=0, help="random seed of the bootstrap resampling")
    parser.add_argument("--offline", action="store_true", help="use the Hugging Face cache only (tifa160)")
    parser.add_argument("--json", action="store_true", help='print one JSON object {"rows": [...]}')
    parser.add_argument("--out", metavar="RESULT_JSON", help="also save the result: numbers, command, seed, package "
                                                           "version, the ratings file's sha256 (ts2 meta --from "
                                                           "RESULT_JSON re-prints it)")


def _split(values: list[str]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def run_correlate(args: argparse.Namespace) -> int:
    """Correlate metric columns with human ratings, pooled or grouped by prompt or T2I model, with bootstrap
    intervals. RATINGS is a CSV/Parquet table, a TIFA-format JSON, a GenAI-Bench Parquet or the name 'tifa160'
    (downloaded once into the Hugging Face cache).
    """

    from scorers.sets.ratings import read_ratings
    from scorers.stats.correlation import correlate_frame

    coefficients = _split([args.coefficients])
    unknown = [c for c in coefficients if c not in COEFFICIENTS]
    if unknown or not coefficients:
        raise ValueError(f"--coefficients: unknown {unknown or coefficients}; choose from {','.join(COEFFICIENTS)}")
    frame = read_ratings(args.ratings, offline=True if args.offline else None)
    table = correlate_frame(
        frame,
        human=_split(args.human),
        metrics=_split(args.metrics),
        coefficients=coefficients,
        grouping=args.grouping,
        item_col=args.item_col,
        system_col=args.system_col,
        n_bootstrap=args.n_bootstrap,
        confidence=args.confidence,
        seed=args.seed,
        lower_is_better=_split(args.lower_is_better),
        higher_is_better=_split(args.higher_is_better),
    )
    text = "\n".join([format_agreement(table.to_dict()["rows"]), *table.notes])
    if args.json:
        print(json.dumps(table.to_dict()))
    else:
        print(text)
    if args.out:
        from scorers.cli._saved import command_line
        from scorers.ts2.result_file import save_result

        inputs = {"ratings": args.ratings} if os.path.isfile(args.ratings) else {}
        saved = save_result(args.out, command=command_line(getattr(args, "argv", None)), results=table.to_dict(),
                            table=text, segs=None, seed=args.seed, n_bootstrap=args.n_bootstrap, variant=None,
                            inputs=inputs)
        print(f"saved {saved} (re-print: ts2 meta --from {saved})", file=sys.stderr)
    return 0


def _num(value, digits: int = 3) -> str:
    return format_number(value, digits)


def format_agreement(rows: list[dict]) -> str:
    """One line per metric x coefficient: value, CI, items used, groups used/skipped, epsilon."""
    header = ["metric", "coefficient", "grouping", "value", "CI", "items", "groups (skipped)",
              "epsilon"]
    lines = [header]
    for row in rows:
        ci = MISSING if row["ci_low"] is None else f"[{_num(row['ci_low'])}, {_num(row['ci_high'])}]"
        lines.append([row["metric"], row["coefficient"], row["grouping"], _num(row["value"]), ci,
                      str(row["n_items"]), f"{row['n_groups']} ({row['n_groups_skipped']})",
                      _num(row["epsilon"], 4) if row["epsilon"] is not None else ""])
    return text_grid(lines)
