"""``ts2 seg check``: Synth step 3, a VQA judge's review of generated images against their designed error sets."""
from __future__ import annotations

import argparse
import sys

from scorers.cli._validate import count

DESCRIPTION = """Ask a VQA judge, for every image of ANNOTATIONS, the yes/no question of each element of its SEG (from
the plan): the elements its node keeps should be answered yes, those in its error set no (elements that left with a
removed entity are not asked). Writes the images whose answers disagree with their designed error set to --out, with
the judge's answers (P(yes) per question), most confident disagreement first: "the teddy bear was removed, but the
judge sees one". Labels are never changed; fix them (or drop images) yourself, e.g. in the demo's "Build a SEG" tab.

The judge is any VQA backend of the package: a local checkpoint (BLIP VQA, InstructBLIP, LLaVA, a chat VLM) or a
served openai:MODEL (its first-token logprobs give P(yes); --no-probabilities reads the text answers instead)."""

EXAMPLES = """examples:
  ts2 seg check segs_raw/annotations.csv --images segs_raw --judge Salesforce/blip-vqa-base --out review.csv
  ts2 seg check segs_raw/annotations.csv --images segs_raw --judge openai:Qwen/Qwen2-VL-7B-Instruct \\
      --api-base http://localhost:8000/v1 --out review.csv"""


def register(steps: argparse._SubParsersAction) -> None:
    from scorers.cli.seg.plan import add_served_group

    parser = steps.add_parser("check", help="Synth step 3: a VQA judge lists images that disagree with their node",
                              description=DESCRIPTION, epilog=EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("annotations", metavar="ANNOTATIONS", help="ANNOTATIONS CSV (from `ts2 seg generate`)")
    parser.add_argument("--images", required=True, metavar="DIR", help="folder the file_name column is relative to")
    parser.add_argument("--judge", required=True, help="VQA model: local checkpoint or openai:MODEL (served)")
    parser.add_argument("--plan", metavar="PLAN.json",
                        help="plan with the elements and questions (default: plan.json beside ANNOTATIONS)")
    parser.add_argument("--out", required=True, metavar="REVIEW.csv", help="review list to write")
    parser.add_argument("--all", dest="include_all", action="store_true",
                        help="list every image, agreeing ones too (disagreements 0)")
    parser.add_argument("--backend", default="auto", help="local VQA backend (auto, blip_vqa, instructblip, llava, "
                                                          "chat_vlm; default auto)")
    parser.add_argument("--no-probabilities", action="store_true",
                        help="read the judge's text answers (yes/no) instead of its P(yes)")
    parser.add_argument("--batch-size", type=count(1), default=8, help="images per judge call (default 8)")
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], help="local judge precision")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_served_group(parser, "--judge")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from scorers.atomic import write_text_atomic
    from scorers.cli._options import served_options
    from scorers.models.openai_compat import is_served
    from scorers.ts2.seg.check import check_images, load_judge, read_annotation_table
    from scorers.ts2.seg.plan import read_plan

    plan_path = Path(args.plan) if args.plan else Path(args.annotations).parent / "plan.json"
    if not plan_path.is_file():
        raise ValueError(f"--plan {plan_path}: no plan there (the elements to ask about); pass --plan PLAN.json")
    plan = read_plan(plan_path)
    frame = read_annotation_table(args.annotations)
    served = served_options(args)
    judge = load_judge(args.judge, backend=args.backend, precision=args.precision,
                       served=served if is_served(args.judge) else (served or None))
    review = check_images(frame, args.images, plan, judge, batch_size=args.batch_size,
                          probabilities=not args.no_probabilities, include_all=args.include_all,
                          progress=not args.no_progress)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(args.out, review.to_csv(index=False))
    flagged = int((review["disagreements"] > 0).sum())
    print(f"wrote {args.out}: {flagged} of {len(frame)} images disagree with their designed error set")
    for row in review.head(5).itertuples():
        if row.disagreements:
            print(f"  {row.file_name} (confidence {row.confidence:.2f}): {row.details}", file=sys.stderr)
    return 0
