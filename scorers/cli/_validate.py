"""Argument checks shared by every ``ts2`` command: argparse ``type=`` functions.

Each refuses a bad value at parse time, before any scoring, download or model load, with argparse's one error line
naming the argument (``ts2 meta: error: argument --n-bootstrap: must be an integer from 0 to 100,000, got '-5'``) and
exit status 2. Numbers are parsed strictly: ASCII digits only, so full-width ``"１２"`` and ``"1_000"`` are refused
(Python's ``int``/``float`` accept both).
"""
from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from pathlib import Path

from scorers.checks import parse_float, parse_int  # the one reading of numbers (options take a leading '+')

__all__ = ["BOOTSTRAP_MAX", "PORT_MAX", "TIMEOUT_MAX", "bootstrap_count", "confidence", "count", "input_dir",
           "input_file", "number", "output_dir", "output_file", "parse_float", "parse_int", "port", "seconds",
           "seg_spec", "models_by_name", "reward_weights", "LIBRARY_TO_FLAG", "flag_wording"]

#: bootstrap resamples at most: 1e5 percentile CIs are far finer than their own sampling error; 1e8 took 6.4 GB
BOOTSTRAP_MAX = 100_000
#: seconds at most for a timeout (one day); ``inf`` overflowed in the HTTP client
TIMEOUT_MAX = 86_400.0
PORT_MAX = 65_535

#: The library's errors name its Python parameters; a command's error line names the flag that sets each instead
#: (:func:`flag_wording`, applied by ``scorers.cli.main``). Library wording (a regular expression) -> the flag's.
LIBRARY_TO_FLAG = {
    r"clean_quotes=True": "--clean-quotes",
    r"n_bootstrap": "--n-bootstrap",
    r"grouping='item'": "--group-by item",
    r"each image \(items\)": "each image (--item-col)",
    r"each image \(systems\)": "each image (--system-col)",
    r"pick some with columns": "pick some with --column",
    r"(lower|higher)_is_better '": r"--\1-is-better '",
    r"seg_subset='all'": "--segs all",
    r"batch_size must": "--batch-size must",
    r"num_workers must": "--num-workers must",
    r"num_gpus_per_worker must": "--num-gpus-per-worker must",
    r"workers must": "--ray-workers must",
    r"on_error='skip'": "--on-error skip",
    r"overwrite=True": "--overwrite",
    r"another out / cache_dir": "another --out / --cache-dir",
    r"another cache_dir": "another --cache-dir",
    r"pass data_dir\)": "pass --data-dir)",
    r"drop data_dir": "drop --data-dir",
    r"offline=True": "--offline",
    r"on_blank='wrong'": "--on-blank wrong",
    r"allow_partial=True": "--allow-partial",
    r"max_batch_size must": "--max-batch-size must",
    r"batch_wait_ms must": "--batch-wait-ms must",
    r"token_env": "--token-env",
    r"human column '": "--human '",
    r"metrics column '": "--metric '",
    r"item_col '": "--item-col '",
    r"system_col '": "--system-col '",
    r"human: name at least one": "--human: name at least one",
    r"metrics: name at least one": "--metric: name at least one",
    r"the metrics columns": "the --metric columns",
    r"another out_dir": "another --out",
    r"images_per_prompt=(?=[0-9])": "--images-per-prompt ",
    r"\(use images_per_prompt\)": "(use --images-per-prompt)",
    r"give each a name \(read_results\(path, name=\.\.\.\)\)": "pass --name",
    r"pass data_dir=DIR": "pass --data-dir DIR",
    r"(has no option .*; its options: [^\n]*)$": r"\1 (--option KEY=VALUE; model, precision, pretrained, form, decode and "
                                                 "allow_random_weights also have their own flags)",
    r"\(model='openai:MODEL'\)": "(--model openai:MODEL)",
    r"check api_base / OPENAI_BASE_URL": "check --api-base / OPENAI_BASE_URL",  # scorers.models.openai_compat
    # scorers.sets.scoring
    r"set_name '": "--set '",
    r"set_name='([\w.-]+)'": r"--set \1",
    r"set_file=FILE": "--set-file FILE",
    r"images_dir=DIR": "--images-dir DIR",
    r"reads data_dir": "reads --data-dir",
    r"images_dir and set_file apply": "--images-dir and --set-file apply",
    r"data_dir is TS2's folder": "--data-dir is TS2's folder",
    r"takes images_dir \(and set_file\)": "takes --images-dir (and --set-file)",
    r"set_file does not apply": "--set-file does not apply",
    r"no jpeg_draft": "no --jpeg-draft",
    r"read from data_dir/\$TS2_DATA": "read from --data-dir/$TS2_DATA",  # scorers.tables.release: paper_table2.csv
    # scorers.models.open_clip_weights (before the model rules below)
    r"model='([^'\n]*)', pretrained=None:": r"--model \1:",
    r"model='([^'\n]*)', pretrained='([^'\n]*)':": r"--model \1 --pretrained \2:",
    r"model='([^'\n]*)': an open_clip architecture": r"--model \1: an open_clip architecture",
    r"pretrained=(TAG|FILE|PATH)": r"--pretrained \1",
    r"allow_random_weights=True": "--allow-random-weights",
}
#: scorers.models.loading.model_source's ``option`` (the parameter naming a model) -> the flag that sets it
_MODEL_OPTIONS = {"model": "--model", "sbert": "--sbert", "base": "--option base=", "processor": "--option processor=",
                  "tokenizer": "--option tokenizer="}
for _name, _flag in _MODEL_OPTIONS.items():
    LIBRARY_TO_FLAG.update({
        rf"{_name}=('[^'\n]*'): (not a local folder|cannot load it)": rf"{_flag} \1: \2",
        rf"{_name}='([^'\n]*)': no such folder": rf"{_flag} \1: no such folder",
        rf"with {_name}=PATH": f"with {_flag} PATH",
    })
LIBRARY_TO_FLAG[r"model='([^'\n]*)':"] = r"--model \1:"  # after the rules above: scorers.models.hpsv3, imagereward
_LIBRARY_WORDING = [(re.compile(rf"(?<![\w-]){pattern}" + (r"(?!\w)" if pattern[-1].isalnum() else "")), flag)
                    for pattern, flag in LIBRARY_TO_FLAG.items()]  # whole words only


def flag_wording(message: str) -> str:
    """A library error message as a command line says it: each parameter of :data:`LIBRARY_TO_FLAG` named as its flag
    (``n_bootstrap must be >= 0`` -> ``--n-bootstrap must be >= 0``)."""
    for pattern, flag in _LIBRARY_WORDING:
        message = pattern.sub(flag, message)
    return message


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
