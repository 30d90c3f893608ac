"""``ts2 seg plan``: Synth step 1, a plan file (elements, one prompt per ablation) + TIFA / DSG question tables."""
from __future__ import annotations

import argparse
import sys

from scorers.cli._validate import count, seconds

DESCRIPTION = """List each prompt's typed elements (entity, attribute, relation, action) with a text model, and write
one prompt per ablation: every element removed alone, then every pair (--max-errors), where removing an entity also
removes its attributes, relations and actions. The model also writes each element's TIFA questions, so the plan's
folder gets tifa_questions.csv and dsg_questions.csv in the release's layout (SEG id = the plan's seg_id): the SEGs
you build from it work with `ts2 score tifa|dsg` at once.

The plan is JSON for a person to edit before `ts2 seg generate` (fix a node's prompt, delete a node, add an element).
A reply the parser cannot read never stops the run: that prompt gets no elements (or that node no prompt) and a
reason, printed here and kept in the plan."""

EXAMPLES = """examples:
  ts2 seg plan "A red dog chases a ball on the grass." --model openai:Qwen/Qwen2.5-7B-Instruct \\
      --api-base http://localhost:8000/v1 --out plan/plan.json
  ts2 seg plan --prompts prompts.txt --model meta-llama/Llama-3.2-3B-Instruct --max-errors 1 --out plan/plan.json"""


def add_served_group(parser: argparse.ArgumentParser, what: str = "--model") -> None:
    """The served-model options (the names and meanings of `ts2 score`'s), for ``what`` = openai:MODEL."""
    served = parser.add_argument_group(f"served models ({what} openai:MODEL: vLLM, SGLang, TGI, Ollama, OpenAI)")
    served.add_argument("--api-base", help="chat-completions base URL, e.g. http://localhost:8000/v1 "
                                           "(default: $OPENAI_BASE_URL, then OpenAI's)")
    served.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key "
                                                             "(default OPENAI_API_KEY; never written anywhere)")
    served.add_argument("--max-concurrency", type=count(1, 4096), help="requests in flight at most (default 8)")
    served.add_argument("--timeout", type=seconds, help="total seconds per request attempt (default 60)")
    served.add_argument("--max-retries", type=count(0, 100), help="retries on 429/5xx/timeouts (default 5)")


def register(steps: argparse._SubParsersAction) -> None:
    parser = steps.add_parser("plan", help="Synth step 1: a prompt's elements and one prompt per ablation (a plan)",
                              description=DESCRIPTION, epilog=EXAMPLES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prompt", nargs="*", help="prompts, one SEG each (or --prompts FILE)")
    parser.add_argument("--prompts", metavar="FILE", help="text file with one prompt per line (added after PROMPT...)")
    parser.add_argument("--model", required=True,
                        help="text model: a local causal LM (Hub id or folder) or openai:MODEL (served)")
    parser.add_argument("--out", required=True, metavar="PLAN.json",
                        help="plan file; tifa_questions.csv and dsg_questions.csv are written beside it")
    parser.add_argument("--max-errors", type=count(1, 4), default=2,
                        help="largest error set planned: 1 = each element alone, 2 = also pairs (default 2)")
    parser.add_argument("--first-id", type=count(0), default=0, help="SEG id of the first prompt (default 0)")
    parser.add_argument("--max-new-tokens", type=count(16, 8192), default=768, help="tokens per reply (default 768)")
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], help="local model precision")
    add_served_group(parser)
    parser.set_defaults(handler=run)


def read_prompts(args: argparse.Namespace) -> list[str]:
    prompts = list(args.prompt)
    if args.prompts:
        from pathlib import Path

        try:
            text = Path(args.prompts).read_text(encoding="utf-8")
        except OSError as error:
            raise ValueError(f"--prompts {args.prompts}: {error.strerror or error}") from None
        prompts += [line.strip() for line in text.splitlines() if line.strip()]
    if not prompts:
        raise ValueError("give at least one PROMPT or --prompts FILE")
    return prompts


def run(args: argparse.Namespace) -> int:
    from scorers.cli._options import served_options
    from scorers.models.text_backends import load_text_lm
    from scorers.models.openai_compat import is_served
    from scorers.ts2.seg.plan import plan_segs, write_plan

    prompts = read_prompts(args)
    served = served_options(args)
    lm = load_text_lm(args.model, max_new_tokens=args.max_new_tokens, precision=args.precision,
                      served=served if is_served(args.model) else None)
    plan = plan_segs(prompts, lm, max_errors=args.max_errors, first_id=args.first_id, model_name=args.model)
    paths = write_plan(plan, args.out)
    nodes = sum(sum(1 for n in seg["nodes"] if n["prompt"]) for seg in plan["segs"])
    for seg in plan["segs"]:
        if seg["reason"]:
            print(f"SEG {seg['seg_id']} ({seg['prompt']!r}): no elements: {seg['reason']}", file=sys.stderr)
        for node in seg["nodes"]:
            if node["reason"]:
                print(f"SEG {seg['seg_id']} node {sorted(node['errors'])}: no prompt: {node['reason']}",
                      file=sys.stderr)
    print(f"wrote {paths['plan']}: {len(plan['segs'])} SEGs, "
          f"{sum(len(s['elements']) for s in plan['segs'])} elements, {nodes} nodes with a prompt; questions in "
          f"{paths['tifa_questions'].name} and {paths['dsg_questions'].name}")
    return 0
