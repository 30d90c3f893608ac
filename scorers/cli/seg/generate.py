"""``ts2 seg generate``: Synth step 2 (images per node of a plan) and the Real procedure's images (``--real N``)."""
from __future__ import annotations

import argparse
import sys

from scorers.cli._validate import count

DESCRIPTION = """Generate images for each node of a plan (`ts2 seg plan`) with a diffusers pipeline, through the
same seeded, resumable code as `ts2 tifa-bench generate`, and write OUT/annotations.csv: one row per image with its
node's designed error set (seg_id, prompt, file_name, errors, error_types, image_source, node_prompt, seed), the
file `ts2 seg check` and `ts2 seg build` read (--images OUT).

Every image has its own seed, drawn from --seed, its SEG, its node and its index and recorded in the seed column:
batching and the number of processes never change an image. A rerun skips the images already there (a killed run
goes on where it stopped), and a rerun with another pipeline, seed or call argument in the same OUT is refused.
Editing a node's prompt in the plan gives that node new images (its folder name carries a hash of the prompt).

Several GPUs: accelerate launch $(which ts2) seg generate ... shares the missing images between the processes, each
made once.

--real N (the Real procedure): N images of each unmodified prompt, with empty errors, written to
OUT/real_annotations.csv for a person to annotate (the demo's "Build a SEG" tab). PLAN may then be a text file with one
prompt per line instead of a plan."""

EXAMPLES = """examples:
  ts2 seg generate plan/plan.json --pipeline stabilityai/sdxl-turbo --images-per-node 4 --seed 0 --out segs_raw \\
      --steps 4 --guidance-scale 0
  ts2 seg generate prompts.txt --pipeline black-forest-labs/FLUX.1-schnell --real 24 --out real_raw
  accelerate launch $(which ts2) seg generate plan/plan.json --pipeline stabilityai/sdxl-turbo --out segs_raw"""


def register(steps: argparse._SubParsersAction) -> None:
    parser = steps.add_parser("generate", help="Synth step 2: images per plan node (or --real N) + ANNOTATIONS",
                              description=DESCRIPTION, epilog=EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plan", metavar="PLAN", help="plan file from `ts2 seg plan` (or, with --real, a text file "
                                                     "of prompts)")
    parser.add_argument("--pipeline", required=True, help="diffusers pipeline: Hub name or local folder")
    parser.add_argument("--out", required=True, help="output folder (images, annotations.csv, plan.json)")
    parser.add_argument("--images-per-node", type=count(1), default=4, metavar="N", help="images per node (default 4)")
    parser.add_argument("--real", type=count(1), metavar="N",
                        help="Real procedure: N images of each unmodified prompt with empty errors, instead of nodes")
    parser.add_argument("--seed", type=int, default=0,
                        help="base seed; each image's own seed is drawn from it (default 0)")
    parser.add_argument("--batch-size", type=count(1), default=4, help="prompts per pipeline call (default 4)")
    parser.add_argument("--steps", type=count(1), help="num_inference_steps (default: the pipeline's)")
    parser.add_argument("--guidance-scale", type=float, help="classifier-free guidance (default: the pipeline's)")
    parser.add_argument("--height", type=count(8), help="image height in pixels (default: the pipeline's)")
    parser.add_argument("--width", type=count(8), help="image width in pixels (default: the pipeline's)")
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], help="pipeline dtype (default fp32)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="extra pipeline call argument (repeatable; JSON values), e.g. negative_prompt=...")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from scorers.cli.score import parse_options
    from scorers.models.diffusion import check_settings, load_pipeline
    from scorers.scoring.runner import finish, process_state
    from scorers.ts2.seg.generate import generate_seg_images, generation_settings, plan_or_prompts

    plan = plan_or_prompts(args.plan)
    call = {"num_inference_steps": args.steps, "guidance_scale": args.guidance_scale, "height": args.height,
            "width": args.width}
    call = {k: v for k, v in call.items() if v is not None}
    call.update(parse_options(args.option))
    check_settings(args.out, generation_settings(args.pipeline, args.seed, call), parameter="out")  # before loading
    state = process_state()
    pipeline = load_pipeline(args.pipeline, device=state.device, precision=args.precision)
    result = generate_seg_images(pipeline, plan, args.out, images_per_node=args.images_per_node, seed=args.seed,
                                 real=args.real or 0, batch_size=args.batch_size, model_name=args.pipeline,
                                 call_kwargs=call, progress=not args.no_progress)
    finish()
    if state.is_main_process:
        for line in result.skipped:
            print(f"skipped {line}", file=sys.stderr)
        by = f" by {result.processes} processes" if result.processes > 1 else ""
        print(f"wrote {result.annotations}: {result.total} images ({result.existing} existed, {result.generated} "
              f"generated now{by})")
    return 0
