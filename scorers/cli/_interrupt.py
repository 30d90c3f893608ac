"""Ctrl+C ends a ``ts2`` command with one line (``ts2 score: interrupted``) and exit status 130 (128 + SIGINT), at any
moment: while it imports torch or gradio, loads a model, scores, or serves.

Python turns SIGINT into ``KeyboardInterrupt`` in whatever Python code runs at that moment; :func:`scorers.cli.main`
catches it and prints the line. Two moments escape that: a ``KeyboardInterrupt`` raised inside a finalizer
(``__del__``, run by the garbage collector) is dropped by Python with an "Exception ignored in" traceback, and the run
would go on; and a second Ctrl+C while the command is still stopping. Both end the process at once with the same line
(``os._exit``: finished batches are already in the crash-safe cache, so nothing written is lost).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["INTERRUPTED_STATUS", "interrupts_in_one_line"]

#: the exit status of a command stopped by Ctrl+C (128 + SIGINT, as shells report it)
INTERRUPTED_STATUS = 128 + signal.SIGINT


def _stop_now(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    finally:
        os._exit(INTERRUPTED_STATUS)


@contextmanager
def interrupts_in_one_line(line: str) -> Iterator[None]:
    """Within the block, a Ctrl+C raises ``KeyboardInterrupt`` once (the caller prints ``line`` and returns
    :data:`INTERRUPTED_STATUS`); one that Python would drop (raised in a finalizer) or a second one prints ``line`` and
    ends the process. Outside the main thread (a test runner's worker) only the finalizer case is handled."""
    interrupted: list[bool] = []
    previous_hook = sys.unraisablehook

    def on_sigint(signum, frame):
        if interrupted:  # a second Ctrl+C while the first one is being handled
            _stop_now(line)
        interrupted.append(True)
        raise KeyboardInterrupt

    def unraisable(args) -> None:
        if args.exc_type is not None and issubclass(args.exc_type, KeyboardInterrupt):
            _stop_now(line)  # Python would print "Exception ignored in ..." and carry on
        previous_hook(args)

    main_thread = threading.current_thread() is threading.main_thread()
    previous_handler = signal.signal(signal.SIGINT, on_sigint) if main_thread else None
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        if main_thread:
            signal.signal(signal.SIGINT, previous_handler)
