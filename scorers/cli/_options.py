"""Options shared by several commands, declared once so that each flag means one thing everywhere.

The model options that every scoring command takes (``ts2 score``, ``ts2 tifa-bench score``), defined once:
served models (``--api-base``, ``--api-key-env``, ``--max-concurrency``, ``--timeout``, ``--max-retries``, prices) and
the answer-matching options of question-based scorers (``--sbert``, ``--yes-rule``); plus the one usage summary both
print. Imports stay light: ``ts2 --help`` loads no model library.
"""
from __future__ import annotations

import argparse
import inspect
import sys

from scorers.metrics.qga.matching import YES_RULES  # numpy only
from scorers.cli._validate import bootstrap_count, count, seconds
from scorers.cli.answers import YES_RULE_HELP

__all__ = ["BARE", "WALKS_HELP", "add_walks_argument", "walks_options", "add_command", "DATA_DIR_HELP", "SEGS_HELP", "VARIANT_HELP", "release_or_given", "N_BOOTSTRAP", "add_model_options", "add_n_bootstrap_argument", "add_orientation_arguments",
           "lower_is_better_columns", "model_options", "print_usage"]


def add_command(subparsers: argparse._SubParsersAction, name: str, handler, *, help: str) -> argparse.ArgumentParser:
    """The sub-command ``name``, run as ``handler(args)``: ``ts2 --help`` lists it with ``help``, and ``ts2 NAME
    --help`` shows the handler's docstring as its description (one text for both readers, as click does).

    The handler imports what it runs when it runs, so building the parser (``ts2 --help``) imports none of it."""
    parser = subparsers.add_parser(name, help=help, description=inspect.getdoc(handler))
    parser.set_defaults(handler=handler)
    return parser


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--sbert``, ``--yes-rule`` and the served-model group to ``parser``."""
    parser.add_argument("--yes-rule", choices=YES_RULES, help="tifa/dsg: " + YES_RULE_HELP + " (default: word)")
    parser.add_argument("--sbert", metavar="MODEL",
                        help="tifa/dsg: sentence-transformers model (Hub id or local folder) matching free-form answers "
                             "to choices (default sentence-transformers/all-mpnet-base-v2); loaded before any request "
                             "is sent")
    served = parser.add_argument_group("served models (--model openai:MODEL: vLLM, SGLang, TGI, Ollama, OpenAI)")
    served.add_argument("--api-base", help="chat-completions base URL, e.g. http://localhost:8000/v1 "
                                           "(default: $OPENAI_BASE_URL, then OpenAI's)")
    served.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key "
                                                             "(default OPENAI_API_KEY; never written anywhere)")
    served.add_argument("--max-concurrency", type=count(1, 4096), help="requests in flight at most (default 8)")
    served.add_argument("--timeout", type=seconds, help="total seconds per request attempt, connecting and reading the "
                                                      "whole reply included (default 60)")
    served.add_argument("--max-retries", type=count(0, 100), help="retries on 429/5xx/timeouts/dropped connections (default 5)")
    served.add_argument("--price-per-1k", type=float, metavar="PRICE",
                        help="price per 1,000 prompt tokens: report the cost (completion tokens too, unless "
                             "--price-per-1k-output is given)")
    served.add_argument("--price-per-1k-output", type=float, metavar="PRICE", help="price per 1,000 completion tokens")


def served_options(args: argparse.Namespace) -> dict:
    """The served-model options set on the command line (the key read from its environment variable, stripped)."""
    import os

    from scorers.models.openai_compat import clean_api_key

    options = {"api_base": args.api_base, "max_concurrency": args.max_concurrency, "timeout": args.timeout,
               "max_retries": args.max_retries}
    if args.api_key_env:
        if args.api_key_env not in os.environ:
            raise ValueError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
        options["api_key"] = clean_api_key(os.environ[args.api_key_env], f"--api-key-env {args.api_key_env}")
    return {k: v for k, v in options.items() if v is not None}


def model_options(args: argparse.Namespace, scorer: str) -> dict:
    """Scorer options from the shared flags (checked against what scorer ``scorer`` takes)."""
    from scorers.scoring.registry import get_factory

    for flag, price in (("--price-per-1k", args.price_per_1k), ("--price-per-1k-output", args.price_per_1k_output)):
        if price is not None and not 0 <= price < float("inf"):
            raise ValueError(f"{flag} must be a finite number >= 0, got {price}")
    options = served_options(args)
    for flag, name, value, what in (("--yes-rule", "yes_rule", args.yes_rule, "reads no yes/no answers"),
                                    ("--sbert", "sbert", args.sbert, "matches no answers with SBERT")):
        if value is None:
            continue
        if name not in inspect.signature(get_factory(scorer)).parameters:
            raise ValueError(f"{flag}: scorer {scorer!r} {what} (tifa and dsg do)")
        options[name] = value
    return options


def print_usage(records, args: argparse.Namespace, from_cache=None) -> None:
    """The served-request summary (stderr): requests and tokens sent now, and what the caches answered, always
    apart (``scorers.scoring.usage.usage_summary``). Nothing when no item used a served model."""
    from scorers.scoring.usage import format_usage, usage_summary

    usage = usage_summary(records, args.price_per_1k, args.price_per_1k_output, from_cache=from_cache)
    if usage is not None:
        print(format_usage(usage), file=sys.stderr)


#: ``--n-bootstrap`` default of every command (meta, reproduce, report, correlate, tifa-bench report): 95% percentile
#: intervals are part of an honest number, and resampling 164 SEGs 1,000 times is cheap (a fraction of a second for
#: the release's 19 metrics); ``--n-bootstrap 0`` turns them off.
N_BOOTSTRAP = 1000


def add_n_bootstrap_argument(parser: argparse.ArgumentParser, over: str = "SEGs") -> None:
    """``--n-bootstrap N`` with the one default, :data:`N_BOOTSTRAP`."""
    parser.add_argument("--n-bootstrap", type=bootstrap_count, default=N_BOOTSTRAP,
                        help=f"bootstrap resamples over {over} for 95%% intervals (0: none)")


#: what a bare ``--lower-is-better`` (no column named) stores: the one score column of the table
BARE = "\0single column"


def add_orientation_arguments(parser: argparse.ArgumentParser, *, bare: bool = False) -> None:
    """``--lower-is-better COLUMN`` / ``--higher-is-better COLUMN`` (repeatable) of meta, report and correlate: the
    user's side of :func:`scorers.stats.orientation.resolve_orientation`. ``bare``: ``--lower-is-better`` alone means the
    table's single score column."""
    extra = {"nargs": "?", "const": BARE} if bare else {}
    parser.add_argument("--lower-is-better", action="append", default=[], metavar="COLUMN", **extra,
                        help="a score column whose lower scores are better, e.g. error counts (repeatable"
                             + ("; alone: the table's single score column" if bare else "")
                             + "); the release's llmscore_ec and llmscore_over are known to be")
    parser.add_argument("--higher-is-better", action="append", default=[], metavar="COLUMN",
                        help="a score column whose higher scores are better, overriding a known lower-is-better "
                             "column of the same name (repeatable)")


def lower_is_better_columns(given: list[str], columns: list[str]) -> list[str]:
    """``--lower-is-better`` values with a bare flag replaced by the single score column (an error with several)."""
    if BARE not in given:
        return list(given)
    if len(columns) != 1:
        raise ValueError(f"--lower-is-better without a column name needs a single score column, and there are "
                         f"{len(columns)} ({', '.join(columns[:5])}{' ...' if len(columns) > 5 else ''}); name it: "
                         "--lower-is-better COLUMN (repeatable)")
    return [c for c in given if c != BARE] + columns


#: --data-dir of the commands that read release tables
DATA_DIR_HELP = ("folder laid out like the TS2 release (metadata.csv, released_scores.csv, paper_table2.csv...); "
                 "default: $TS2_DATA, else the Hugging Face cache, downloading a missing file once (scorers.tables.release)")

#: --variant of meta and reproduce
VARIANT_HELP = ("paper: the spec's definitions; official: the official TS2 evaluator (raw scores, all-pairs delta); "
                "published: the code behind the paper's Table 2 (walks visit level 0 twice)")

#: --segs of meta, reproduce and report
SEGS_HELP = "SEG ids to evaluate, e.g. 0-10,20, or 'all' (default: 0-163, the paper's Table 2 set)"


def release_or_given(given: str | None, name: str, data_dir: str | None):
    """``given`` if the user passed a path, else the release file ``name`` (local copy, cache or one download)."""
    if given is not None:
        return given
    from scorers.tables.release_download import path

    return path(name, data_dir)


#: --walks of meta, report, card and submit
WALKS_HELP = ("levels (default): TS2's rule, one node per error level, as the official evaluators and the release's "
              "numbers; edges: along each SEG's own edges, from the segs.json beside the metadata (ts2 seg build "
              "writes it): walks from node 0 to each sink, sep/delta over node pairs joined by a directed path")


def add_walks_argument(parser: argparse.ArgumentParser) -> None:
    """``--walks {levels,edges}``: one definition for every command that computes rank / sep / delta."""
    from scorers.stats.graph import WALK_RULES

    parser.add_argument("--walks", choices=WALK_RULES, default=WALK_RULES[0], help=WALKS_HELP)


def walks_options(walks: str, metadata) -> dict:
    """``{"walks", "segs_file"}`` for :class:`~scorers.ts2.options.MetaOptions`: ``segs_file`` is the ``segs.json``
    beside the ``metadata`` path when there is one (the edge rule follows it; figures draw its edges), else None.
    ``--walks edges`` without one is refused in one line, before any work."""
    from scorers.tables.segs_file import find_segs_file, segs_file_beside

    found = find_segs_file(walks, metadata=metadata)
    beside = segs_file_beside(metadata)
    return {"walks": walks, "segs_file": str(found) if found is not None else str(beside) if beside.is_file() else None}
