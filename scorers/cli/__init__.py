"""The ``ts2`` command line: parse and check the arguments, call the library, print its results (tables, JSON, saved
result files) and its errors as one line naming the flag; every number comes from the library.

Each sub-command group lives in its own module of this package and exposes ``register(subparsers)``; a new command
is a new module plus one name in :func:`command_modules` (imported plainly: each module imports the library only
inside its handlers, so ``ts2 --help`` stays light).
"""
from __future__ import annotations

import argparse
import sys

from scorers.cli._help import DefaultsHelpFormatter

__all__ = ["Parser", "build_parser", "command_modules", "main"]


class UsageError(SystemExit):
    """A bad command line (``Parser.error``): :func:`main` prints its one line and returns 2."""

    def __init__(self, line: str):
        super().__init__(2)
        self.line = line


class Parser(argparse.ArgumentParser):
    """The ``ts2`` parser class: sub-commands (``add_subparsers`` makes parsers of this class) show defaults too.
    A bad argument is one line naming it (``ts2 meta: error: argument --n-bootstrap: ...``), no usage block."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        raise UsageError(f"{self.prog}: error: {message}")

    def _check_value(self, action: argparse.Action, value) -> None:
        """A value outside ``choices`` (a mistyped command or choice) is refused with the close match first:
        ``ts2 scor`` -> ``invalid choice: 'scor' (did you mean 'score'?)``."""
        if action.choices is not None and value not in action.choices:
            from scorers.checks import did_you_mean

            choices = ", ".join(map(repr, action.choices))
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{did_you_mean(value, action.choices)} "
                                                 f"(choose from {choices})")

    def parse_known_args(self, args=None, namespace=None):
        """As argparse's, but an argument that no (sub-)command takes is refused by the sub-command that ran
        (``ts2 meta: error: unrecognized arguments: --bogus``), not by ``ts2``."""
        namespace, extras = super().parse_known_args(args, namespace)
        if extras and self.prog == "ts2":
            _command_parser(self, namespace).error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


#: the top-level help's epilog: the usual order of the commands
WORKFLOW = """workflow (judge your metric with TS2):
  1. ts2 score clip_score --out my.csv    score the 2,840 TS2 images (or bring my.csv keyed by seg_id,file_name)
  2. ts2 meta my.csv                      rank / sep / delta of your scores, per partition (release metadata.csv)
  3. ts2 report my.csv --out report/     the paper's table and figures, your metric among the 19 published ones
  ts2 reproduce: the paper's Table 2 from the release; ts2 score --list: the scorers; ts2 COMMAND --help: options"""


class _TopFormatter(argparse.RawDescriptionHelpFormatter, DefaultsHelpFormatter):
    """The top-level help keeps the workflow's line breaks."""


def command_modules() -> tuple:
    """The modules of the sub-command groups, in the order ``ts2 --help`` lists them (alphabetical)."""
    from scorers.cli import (answers, card, correlate, dataset, demo, elements, leaderboard, meta, release, report,
                             reproduce, score, seg, serve, submit, tifa_bench)

    return (answers, card, correlate, dataset, demo, elements, leaderboard, meta, release, report, reproduce, score,
            seg, serve, submit, tifa_bench)


def build_parser() -> argparse.ArgumentParser:
    from scorers import __version__

    parser = Parser(
        prog="ts2",
        description="T2IScoreScore (TS2): score text-to-image faithfulness metrics against semantic error graphs.",
        epilog=WORKFLOW, formatter_class=_TopFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ts2-evaluate {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module in command_modules():
        module.register(subparsers)
    return parser


def _secrets(args: argparse.Namespace) -> list[str]:
    """API keys this command may hold (``OPENAI_API_KEY``, the ``--api-key-env`` variable), stripped as read."""
    import os

    names = ["OPENAI_API_KEY", getattr(args, "api_key_env", None)]
    return [os.environ[n].strip() for n in names if n and os.environ.get(n, "").strip()]


def _redacting_excepthook(secrets: list[str]):
    """A ``sys.excepthook`` printing the traceback with every API key and ``Bearer ...`` hidden."""
    def hook(kind, value, tb):
        import traceback

        from scorers.models.redaction import redact

        sys.stderr.write(redact("".join(traceback.format_exception(kind, value, tb)), secrets))

    return hook


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub-)command parser that parsed ``args``: ``ts2 tifa-bench report``'s, not ``ts2``'s."""
    while True:
        sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, sub.dest, None) if sub is not None else None
        if chosen not in getattr(sub, "choices", {}):
            return parser
        parser = sub.choices[chosen]


def main(argv: list[str] | None = None) -> int:
    """Run one ``ts2`` command; Ctrl+C at any moment ends it with one line and exit status 130
    (:mod:`scorers.cli._interrupt`)."""
    from scorers.cli._interrupt import INTERRUPTED_STATUS, interrupts_in_one_line

    given = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
    line = f"ts2{' ' + given[0] if given else ''}: interrupted"
    try:
        with interrupts_in_one_line(line):
            return _main(argv)
    except KeyboardInterrupt:
        print(line, file=sys.stderr)
        return INTERRUPTED_STATUS


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as error:
        print(error.line, file=sys.stderr)
        return 2
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as given (saved results record it)
    from scorers.cli._validate import OptionNames

    args.option_names = OptionNames(_command_parser(parser, args), parser)  # library parameters -> this command's flags
    secrets = _secrets(args)
    if secrets:  # an unexpected traceback must not print a key either
        sys.excepthook = _redacting_excepthook(secrets)
    try:
        try:
            return int(args.handler(args) or 0)
        except ModuleNotFoundError as missing:  # an optional dependency: name the extra that installs it
            from scorers.errors import missing_extra_error

            raise (missing_extra_error(missing) or missing) from None
    except (ValueError, FileNotFoundError, KeyError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        message = args.option_names.say(message)  # library errors name parameters; the command names its options
        from scorers.models.redaction import redact  # keys, bearer tokens, credentials written into URLs

        message = redact(message, secrets)
        print(f"ts2 {args.command}: error: {message}", file=sys.stderr)
        return 2
    except (PermissionError, IsADirectoryError, NotADirectoryError) as error:  # e.g. an output path not writable
        print(f"ts2 {args.command}: error: {error.filename}: {error.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
