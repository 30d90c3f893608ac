"""The help formatter of every ``ts2`` parser (argparse only, so each command module can use it)."""
from __future__ import annotations

import argparse

__all__ = ["DefaultsHelpFormatter"]


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default (0 included), except where there is nothing to show: flags
    (``store_true``/``store_false``), options without a default (their help says what happens instead), empty
    repeatable lists, and help that already states its default in its own words."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default is None or action.default is False or action.default == [] \
                or action.default == argparse.SUPPRESS or "default" in text.lower():
            return text  # nothing to show, or the help states its default in its own words: once is enough
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction)):
            return text  # a flag: its help says what it does
        if not action.option_strings and action.nargs not in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"
