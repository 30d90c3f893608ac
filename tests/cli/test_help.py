"""Every ``ts2 ... --help`` shows each option's default and describes each option."""
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
        flag = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
        if action.default not in (None, False, [], argparse.SUPPRESS) and not flag:
            # the default as argparse prints it, right after the option's own text, or in the help's own words
            # (issue 23: stated once, not both)
            shown = re.sub(r"\s+", "", f"(default: {action.default})")
            assert shown in text or "default" in action.help.lower(), \
                f"{command} {name}: default {action.default!r} not shown"


def test_named_descriptions():
    def help_of(command, option):
        return next(a.help for a in PARSERS[command]._actions if option in a.option_strings)

    assert "images per model call" in help_of("ts2 score", "--batch-size")
    for command in ("ts2 meta", "ts2 report"):
        assert "seed" in help_of(command, "--seed") and "bootstrap" in help_of(command, "--seed")
    score_help = " ".join(PARSERS["ts2 score"].format_help().split())
    assert re.search(r"--batch-size BATCH_SIZE images per model call .* \(default: 32\)", score_help)


def _option_helps(parser: argparse.ArgumentParser) -> dict[str, str]:
    """``--option`` -> its help text as printed (defaults added by the formatter), whitespace collapsed."""
    formatter = parser._get_formatter()
    out = {}
    for action in parser._actions:
        if action.option_strings and action.help != argparse.SUPPRESS:
            out[action.option_strings[-1]] = " ".join(formatter._expand_help(action).split())
    return out


@pytest.mark.parametrize("command", sorted(PARSERS))
def test_no_option_states_its_default_twice(command):
    """Issue 23: `(default: item) (default: item)`, `(default: 0-163 ...) (default: default)`, `--no-check-images
    ... (default: True)`: one default per option, said once, and none printed for a flag."""
    for name, text in _option_helps(PARSERS[command]).items():
        said = len(re.findall(r"\bdefault\b", text, flags=re.I))
        assert said <= 1, f"{command} {name}: the default is stated {said} times: {text!r}"
        action = next(a for a in PARSERS[command]._actions if a.option_strings and a.option_strings[-1] == name)
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            assert "(default: True)" not in text and "(default: False)" not in text, f"{command} {name}: {text!r}"


@pytest.mark.parametrize("command", sorted(c for c, p in PARSERS.items()
                                           if any("--seed" in a.option_strings for a in p._actions)))
def test_seed_shows_its_default(command):
    text = _option_helps(PARSERS[command])["--seed"]
    assert re.search(r"default:? \S+", text, flags=re.I), f"{command} --seed: {text!r}"


def test_top_level_help_shows_the_workflow_and_version():
    text = build_parser().format_help()
    assert text.index("ts2 score") < text.index("ts2 meta my.csv") < text.index("ts2 report my.csv")
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["--version"])


def test_top_help_and_readme_name_the_same_key_columns():
    """``ts2 --help`` says what a score file is keyed by in the README's words."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    said = set(re.findall(r"keyed by `([\w,]+)`", readme))
    assert said, "the README says what a score file is keyed by"
    help_text = PARSERS["ts2"].format_help()
    keyed = re.findall(r"keyed by ([\w,]+)", help_text)
    assert keyed and set(keyed) == said, (keyed, said)
