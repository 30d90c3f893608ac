"""Argument checks shared by every ``ts2`` command: argparse ``type=`` functions.

Each refuses a bad value at parse time, before any scoring, download or model load, with argparse's one error line
naming the argument (``ts2 meta: error: argument --n-bootstrap: must be an integer from 0 to 100,000, got '-5'``) and
exit status 2. Numbers are parsed strictly: ASCII digits only, so full-width ``"１２"`` and ``"1_000"`` are refused
(Python's ``int``/``float`` accept both).

And how a command says a library error (:class:`OptionNames`): the library names its parameters, a command line the
options that set them, through the parser's own dest -> option table.
"""
from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path

from scorers.checks import parse_float, parse_int  # the one reading of numbers (options take a leading '+')

__all__ = ["BOOTSTRAP_MAX", "PORT_MAX", "TIMEOUT_MAX", "bootstrap_count", "confidence", "count", "input_dir",
           "input_file", "number", "output_dir", "output_file", "port", "seconds",
           "seg_spec", "models_by_name", "reward_weights", "OptionNames", "SCORER_FLAGS_NOTE"]

#: bootstrap resamples at most: 1e5 percentile CIs are far finer than their own sampling error; 1e8 took 6.4 GB
BOOTSTRAP_MAX = 100_000
#: seconds at most for a timeout (one day); ``inf`` overflowed in the HTTP client
TIMEOUT_MAX = 86_400.0
PORT_MAX = 65_535

#: what ``ts2`` adds to an error naming a scorer's ``options`` (an unknown ``--option KEY``): the scorer options that
#: have flags of their own
SCORER_FLAGS_NOTE = "model, precision, pretrained, form, decode and allow_random_weights also have their own flags"


def _long_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """``parser``'s options by dest (positionals and ``--help`` left out)."""
    return {a.dest: a for a in parser._actions
            if a.option_strings and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))}


def _spelling(action: argparse.Action) -> str:
    return next((s for s in action.option_strings if s.startswith("--")), action.option_strings[0])


def _parsers(parser: argparse.ArgumentParser):
    """``parser`` and every sub-command parser under it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


class OptionNames:
    """The option that sets each library parameter, read from argparse's own tables (each option's dest and option
    strings), never from the text: a library error names parameters (:class:`scorers.errors.Wording`), the command line
    says options. A parameter is the option whose dest it is on the command that ran; else on any ``ts2`` command,
    where all spell it alike (a message may point to another command, as ``ts2 tifa-bench score --name``); else, on a
    command that passes ``--option KEY=VALUE`` to a scorer, ``--option NAME=`` (a scorer argument without a flag of its
    own); else it keeps its Python name."""

    def __init__(self, ran: argparse.ArgumentParser, root: argparse.ArgumentParser | None = None):
        self._ran = _long_options(ran)
        spellings: dict[str, set] = {}
        for parser in _parsers(root if root is not None else ran):
            for dest, action in _long_options(parser).items():
                spellings.setdefault(dest, set()).add(_spelling(action))
        self._anywhere = {dest: next(iter(s)) for dest, s in spellings.items() if len(s) == 1}

    def __call__(self, name: str) -> str | None:
        if name in self._ran:
            return _spelling(self._ran[name])
        if name in self._anywhere:
            return self._anywhere[name]
        if "option" in self._ran:
            return f"{_spelling(self._ran['option'])} {name}="
        return None

    def say(self, message: object) -> str:
        """``message`` (a text, or an error's message) as this command says it: each parameter as its option."""
        from scorers.errors import wording_of

        wording = wording_of(message)
        if wording is None:
            return str(message)
        text = wording.worded(self)
        if "options" in wording.parameters and "option" in self._ran:  # ts2 passes them as --option KEY=VALUE
            option = self._ran["option"]
            text += f" ({_spelling(option)} {option.metavar}; {SCORER_FLAGS_NOTE})"
        return text


def count(low: int, high: int | None = None):
    """A ``type=`` for an integer in ``[low, high]``."""
    span = f"from {low:,} to {high:,}" if high is not None else f">= {low:,}"

    def check(text: str) -> int:
        value = parse_int(text, plus=True)
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"must be an integer {span}, got {text!r}")
        return value

    check.__name__ = "integer"  # argparse names the type in some messages
    return check


#: ``--n-bootstrap``: 0 (no intervals) to :data:`BOOTSTRAP_MAX`
bootstrap_count = count(0, BOOTSTRAP_MAX)


def number(low: float, high: float):
    """A ``type=`` for a finite number ``> low`` and ``<= high``."""

    def check(text: str) -> float:
        value = parse_float(text)
        if value is None or not low < value <= high:
            raise argparse.ArgumentTypeError(f"must be a number > {low:g} and <= {high:,g}, got {text!r}")
        return value

    check.__name__ = "number"
    return check


def seconds(text: str) -> float:
    """``--timeout``: a finite number of seconds, > 0 and <= :data:`TIMEOUT_MAX`."""
    value = parse_float(text)
    if value is None or not 0 < value <= TIMEOUT_MAX:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0 and <= {TIMEOUT_MAX:,.0f}, got {text!r}")
    return value


def confidence(text: str) -> float:
    """``--confidence``: a level strictly between 0 and 1."""
    value = parse_float(text)
    if value is None or not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1 (e.g. 0.95), got {text!r}")
    return value


def port(text: str) -> int:
    """``--port``: 1 to 65535."""
    value = parse_int(text, plus=True)
    if value is None or not 1 <= value <= PORT_MAX:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to {PORT_MAX}, got {text!r}")
    return value


def seg_spec(text: str) -> str:
    """``--segs``: ``default``, ``all`` or a SEG range (``0-163``, ``0-10,20``), checked now (its size included);
    returned as given."""
    from scorers.stats.graph import parse_seg_range

    if text.strip().lower() not in ("default", "all"):
        try:
            parse_seg_range(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return text


def input_file(text: str) -> str:
    """An existing, readable file (not a folder)."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: not readable (permission denied)")
    return text


def input_dir(text: str) -> str:
    """An existing folder."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such folder")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    return text


def _writable_folder(folder: Path, text: str) -> None:
    """The nearest existing ancestor of ``folder`` must be a folder where this process can create a file."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: {existing} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise argparse.ArgumentTypeError(f"{text}: cannot write in {existing} ({error.strerror or error})") from None


def output_file(text: str) -> str:
    """A file this command can write: not a folder, its folder (or nearest existing ancestor) writable; an
    existing file must be writable too."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name, e.g. {path / 'scores.csv'}")
    _writable_folder(path.parent if str(path.parent) else Path("."), text)
    if path.exists():
        try:
            open(path, "ab").close()  # no write: checks the permission, leaves content and mtime
        except OSError as error:
            raise argparse.ArgumentTypeError(f"{text}: cannot write it ({error.strerror or error})") from None
    return text


def output_dir(text: str) -> str:
    """A folder this command can write into (created later if missing): not an existing file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; give a folder")
    _writable_folder(path, text)
    return text


def reward_weights(items, flag: str) -> dict[str, float]:
    """``["pickscore=1", "hpsv2=0.5"]`` (or one comma-separated string) -> ``{"pickscore": 1.0, "hpsv2": 0.5}``; a bare
    name weighs 1. ``ts2 serve``'s rewards and ``ts2 card --reward``. Raises ``ValueError`` naming ``flag`` and the
    bad item: a weight that is not a finite number, an empty name, a name given twice, nothing given."""
    if isinstance(items, str):
        items = items.split(",")
    weights: dict[str, float] = {}
    for part in (p.strip() for p in items):
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        try:
            weight = float(value) if sep else 1.0
        except ValueError:
            raise ValueError(f"{flag} {part}: the weight {value.strip()!r} is not a number") from None
        if not name or not math.isfinite(weight):
            raise ValueError(f"{flag} {part}: expected NAME=WEIGHT with a finite weight")
        if name in weights:
            raise ValueError(f"{flag}: {name} given twice")
        weights[name] = weight
    if not weights:
        raise ValueError(f"{flag}: expected NAME=WEIGHT[,NAME=WEIGHT...]")
    return weights


def models_by_name(given, names, flag: str) -> dict[str, str]:
    """``--model`` values for one or several named scorers -> ``{name: model}``: with one scorer, one bare ``MODEL``;
    otherwise each ``NAME=MODEL`` with ``NAME`` among ``names``. ``ts2 serve`` and ``ts2 card --scorer``."""
    names = list(names)
    models: dict[str, str] = {}
    for item in given:
        name, sep, model = item.partition("=")
        if sep and name in names:
            models[name] = model
        elif len(names) == 1 and len(given) == 1:
            models[names[0]] = item
        else:
            raise ValueError(f"--model {item}: with several {flag}, give NAME=MODEL with NAME one of "
                             f"{', '.join(names)}")
    return models
