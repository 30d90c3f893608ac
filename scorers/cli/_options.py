"""Options shared by several commands, declared once so that each flag means one thing everywhere."""
from __future__ import annotations

import argparse

__all__ = ["BARE", "N_BOOTSTRAP", "add_n_bootstrap_argument", "add_orientation_arguments", "lower_is_better_columns"]


#: ``--n-bootstrap`` default of every command (meta, reproduce, report, correlate, tifa-bench report): 95% percentile
#: intervals are part of an honest number, and resampling 164 SEGs 1,000 times is cheap (a fraction of a second for
#: the release's 19 metrics); ``--n-bootstrap 0`` turns them off.
N_BOOTSTRAP = 1000


def add_n_bootstrap_argument(parser: argparse.ArgumentParser, over: str = "SEGs") -> None:
    """``--n-bootstrap N`` with the one default, :data:`N_BOOTSTRAP`."""
    parser.add_argument("--n-bootstrap", type=int, default=N_BOOTSTRAP,
                        help=f"bootstrap resamples over {over} for 95%% intervals (0: none)")


#: what a bare ``--lower-is-better`` (no column named) stores: the one score column of the table
BARE = "\0single column"


def add_orientation_arguments(parser: argparse.ArgumentParser, *, bare: bool = False) -> None:
    """``--lower-is-better COLUMN`` / ``--higher-is-better COLUMN`` (repeatable) of meta, report and correlate: the
    user's side of :func:`scorers.orientation.resolve_orientation`. ``bare``: ``--lower-is-better`` alone means the
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
