"""``ts2 seg``: build your own semantic error graphs with TS2's three procedures (Synth, Nat, Real).

Each step lives in its own module of this package (``plan``, ``generate``, ``check``, ``build``, ``push``, mirroring
:mod:`scorers.ts2.seg`) exposing ``register(steps)``; this module makes the ``seg`` group and adds them in the order a
user runs them. The step modules import only ``argparse`` and the CLI's helpers at the top; the library is imported
inside their handlers.
"""
from __future__ import annotations

import argparse

from scorers.cli.seg import build, check, generate, plan, push

#: the steps, in the order of the Synth procedure; ``build`` is the core that the others feed
STEPS = (plan, generate, check, build, push)

DESCRIPTION = """Build SEGs for your domain and generator, then judge metrics on them with every ts2 command.

steps (Synth: plan -> generate -> check -> build; Real: generate --real -> annotate in the demo -> build):
  ts2 seg plan PROMPT... --model M      list each prompt's elements and write one prompt per ablation (a plan file)
  ts2 seg generate PLAN --pipeline P    generate images per node with diffusers (resumable; --real N: Real procedure)
  ts2 seg check ANNOTATIONS --judge J   ask a VQA judge whether each image shows its designed errors (a review list)
  ts2 seg build ANNOTATIONS --images D  one row per image + its error set -> a data dir in the release's layout
  ts2 seg push OUT --repo NAME          push the built dataset with a generated card to the Hub"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("seg", help="build your own SEGs (TS2's Synth / Nat / Real procedures)",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = parser.add_subparsers(dest="step", metavar="STEP")
    steps.required = True
    for step in STEPS:
        step.register(steps)
