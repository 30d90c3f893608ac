"""Every ``ts2 ... --help`` shows each option's default and describes each option (issue 13, "Docs and CLI")."""
from __future__ import annotations

import argparse
import re

import pytest

from scorers.cli import build_parser


def _parsers(parser: argparse.ArgumentParser, name: str = "ts2"):
    """(command name, parser) for the top parser and every sub-command, nested ones included."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


PARSERS = dict(_parsers(build_parser()))


def test_every_command_is_covered():
    assert {"ts2 score", "ts2 meta", "ts2 answers-to-scores", "ts2 report", "ts2 reproduce", "ts2 demo",
            "ts2 dataset export"} <= set(PARSERS)


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_help_shows_every_default_and_describes_every_option(command):
    parser = PARSERS[command]
    text = re.sub(r"\s+", "", parser.format_help())  # argparse wraps lines, at hyphens too: compare without spaces
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        name = action.option_strings[-1]
        assert action.help and action.help.strip(), f"{command} {name}: no description"
        if action.default not in (None, False, [], argparse.SUPPRESS):
            # the default as argparse prints it, right after the option's own text
            shown = re.sub(r"\s+", "", f"(default: {action.default})")
            assert shown in text, f"{command} {name}: default {action.default!r} not shown"


def test_named_descriptions():
    def help_of(command, option):
        return next(a.help for a in PARSERS[command]._actions if option in a.option_strings)

    assert "images per model call" in help_of("ts2 score", "--batch-size")
    for command in ("ts2 meta", "ts2 report"):
        assert "seed" in help_of(command, "--seed") and "bootstrap" in help_of(command, "--seed")
    score_help = " ".join(PARSERS["ts2 score"].format_help().split())
    assert re.search(r"--batch-size BATCH_SIZE images per model call .* \(default: 32\)", score_help)
