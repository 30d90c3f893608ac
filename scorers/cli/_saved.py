"""Saved, reproducible results (``ts2 meta ... --out result.json``; ``ts2 meta --from result.json`` re-prints;
``ts2 report`` writes ``result.json`` beside its tables).

A saved result holds what was printed and everything needed to make it again: the command line, the package
version, the SEG set, the seed and number of bootstrap resamples, the delta variant, each input file with its sha256,
the scorer configuration when the scores came from ``ts2 score`` (``<scores>.cache/fingerprint.json``), and the
numbers (each metric's ``TS2Result.to_dict()``, fractions). The writer and the checks live in the library
(:mod:`scorers.ts2.result_file`, shared with ``ts2 submit``); this module loads with them and re-prints.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from scorers.formatting import escape_controls
from scorers.ts2.result_file import FORMAT, check_payload, check_table

__all__ = ["command_line", "load_result", "reprint"]


def command_line(argv: list[str] | None = None) -> str:
    return shlex.join(["ts2", *(sys.argv[1:] if argv is None else argv)])


def load_result(path: str | os.PathLike) -> dict:
    """The saved result at ``path``, its fields checked (:func:`check_payload`) and a ``ts2 meta`` table checked
    against its results (:func:`check_table`): one line naming the file and the field otherwise."""
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"--from {path}: no such file") from None
    except (ValueError, OSError) as error:  # not JSON, not UTF-8, a folder...
        raise ValueError(f"--from {path}: not a JSON result file ({error})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"--from {path}: not a saved ts2 result (no \"format\": \"{FORMAT}\")")
    check_payload(payload, f"--from {path}")
    check_table(payload, f"--from {path}")
    return payload


def reprint(payload: dict) -> str:
    """The saved table (:func:`load_result` has checked a ``ts2 meta`` table against its numbers), then how it was
    made; inputs whose sha256 changed since (or that are gone) are named. Every text from the file is printed with
    its control characters escaped."""
    from scorers.tables.release import sha256_file

    e = escape_controls
    lines = [e(payload["table"], keep_newlines=True), "",
             f"saved by: {e(payload['command'])}  (ts2-evaluate {e(payload['ts2_evaluate_version'])})",
             f"seed {payload['seed']}, {payload['n_bootstrap']} bootstrap resamples"
             + ("" if payload.get("variant") is None else f", delta variant {e(payload['variant'])}")]
    for role, info in payload["inputs"].items():
        path, digest = info["path"], info["sha256"]
        state = ("unchanged" if os.path.isfile(path) and sha256_file(path) == digest
                 else "CHANGED since" if os.path.isfile(path) else "missing now")
        lines.append(f"{e(role)}: {e(path)} sha256 {e(digest[:12])}... ({state})")
    if payload.get("scorer_config"):
        lines.append("scorer config: " + e(json.dumps(payload["scorer_config"], sort_keys=True)))
    return "\n".join(lines)
