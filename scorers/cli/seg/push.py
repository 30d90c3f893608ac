"""``ts2 seg push``: publish built SEGs (Parquet export + a generated card) to the Hub with ``push_to_hub``."""
from __future__ import annotations

import argparse

DESCRIPTION = """Export a built data dir (the OUT of `ts2 seg build`) as Parquet, as `ts2 dataset export` does (config
segs, with the build's partition, errors, error_types and source_file columns, plus tifa_questions / dsg_questions
when their CSVs are in OUT), copy segs.json, warnings.txt and the question CSVs beside it, write a dataset card
(procedures used, generators, images per node, per partition and per error type, the licence), load every config back
from that local export with datasets.load_dataset, and push each with push_to_hub, then those files, the card last.
`ts2 dataset unpack` turns a download of the repository back into a data dir.

--dry-run stops before the upload: the export folder then holds exactly what would be sent (README.md is the card).
The token is huggingface_hub's (HF_TOKEN or `hf auth login`) unless --token-env names another variable."""

EXAMPLES = """examples:
  ts2 seg push built_segs --repo me/my-segs --license cc-by-4.0 --dry-run   # look at built_segs-hub/README.md
  ts2 seg push built_segs --repo me/my-segs --license cc-by-4.0 --private"""


def register(steps: argparse._SubParsersAction) -> None:
    parser = steps.add_parser("push", help="publish built SEGs to the Hub (Parquet + generated card, push_to_hub)",
                              description=DESCRIPTION, epilog=EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", metavar="OUT", help="built data dir (`ts2 seg build --out`)")
    parser.add_argument("--repo", required=True, metavar="OWNER/NAME", help="Hub dataset repository")
    parser.add_argument("--license", default="unknown", metavar="ID",
                        help="licence id for the card, e.g. cc-by-4.0 (default: unknown)")
    parser.add_argument("--procedure", action="append", dest="procedures", choices=["synth", "nat", "real"],
                        help="procedure used (repeatable; default: the partitions named so, else synth)")
    parser.add_argument("--export", metavar="DIR", help="export folder (default: OUT-hub)")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier export in --export")
    parser.add_argument("--private", action="store_true", help="create the repository private")
    parser.add_argument("--token-env", metavar="VAR", help="environment variable holding the Hub token")
    parser.add_argument("--dry-run", action="store_true", help="export and write the card, upload nothing")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from scorers.ts2.seg.push import prepare_push, push_segs

    token = None
    if args.token_env:
        token = os.environ.get(args.token_env, "").strip()
        if not token:
            raise ValueError(f"--token-env {args.token_env}: that environment variable is not set")
    export = Path(args.export) if args.export else Path(f"{str(args.data_dir).rstrip('/')}-hub")
    plan = prepare_push(args.data_dir, export, repo=args.repo, license=args.license, procedures=args.procedures,
                        overwrite=args.overwrite)
    rows = ", ".join(f"{name} {sum(d.num_rows for d in ds.values()):,} rows" for name, ds in plan.datasets.items())
    print(f"exported {plan.export} ({rows}); card {plan.readme}")
    if args.dry_run:
        print(f"dry run: nothing sent to {args.repo}")
        return 0
    for line in push_segs(plan, args.repo, token=token, private=args.private):
        print(f"pushed {line} to {args.repo}")
    return 0
