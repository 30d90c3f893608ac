"""Saved, reproducible results (``ts2 meta ... --out result.json``; ``ts2 meta --from result.json`` re-prints;
``ts2 report`` writes ``result.json`` beside its tables).

A saved result holds what was printed and everything needed to make it again: the command line, the package
version, the SEG set, the seed and number of bootstrap resamples, the delta variant, each input file with its sha256,
the scorer configuration when the scores came from ``ts2 score`` (``<scores>.cache/fingerprint.json``), and the
numbers (each metric's ``TS2Result.to_dict()``, fractions).
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Mapping

from scorers.atomic import write_text_atomic

__all__ = ["FORMAT", "load_result", "reprint", "save_result"]

FORMAT = "ts2-evaluate result/1"


def _sha256(path: str | os.PathLike) -> str:
    from scorers.tables.release import sha256_file

    return sha256_file(path)


def save_result(out: str | os.PathLike, *, command: str, results: Mapping, table: str, segs, seed: int,
                n_bootstrap: int, variant: str | None, inputs: Mapping[str, str | os.PathLike]) -> Path:
    """Write the result file (atomically) and return its path. ``segs`` and ``variant`` are None for results that
    are not TS2 meta-metrics (``ts2 correlate``, ``ts2 tifa-bench report``)."""
    from scorers import __version__

    scorer_config = {}
    for role, path in inputs.items():
        fingerprint = Path(f"{path}.cache") / "fingerprint.json"
        if fingerprint.is_file():
            scorer_config[role] = json.loads(fingerprint.read_text(encoding="utf-8"))
    payload = {
        "format": FORMAT,
        "command": command,
        "ts2_evaluate_version": __version__,
        "segs": segs if segs is None or isinstance(segs, str) else [int(s) for s in segs],
        "seed": seed,
        "n_bootstrap": n_bootstrap,
        "variant": variant,
        "units": "fractions (the table: %)",
        "inputs": {role: {"path": str(Path(path).resolve()), "sha256": _sha256(path)} for role, path in inputs.items()},
        "scorer_config": scorer_config or None,
        "results": {name: (result.to_dict() if hasattr(result, "to_dict") else result)
                    for name, result in results.items()},
        "table": table,
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(out, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")


def command_line(argv: list[str] | None = None) -> str:
    return shlex.join(["ts2", *(sys.argv[1:] if argv is None else argv)])


def load_result(path: str | os.PathLike) -> dict:
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"--from {path}: no such file") from None
    except ValueError as error:
        raise ValueError(f"--from {path}: not a JSON result file ({error})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"--from {path}: not a saved ts2 result (no \"format\": \"{FORMAT}\")")
    return payload


def reprint(payload: dict) -> str:
    """The saved table, then how it was made; inputs whose sha256 changed since (or that are gone) are named."""
    lines = [payload["table"], "", f"saved by: {payload['command']}  (ts2-evaluate {payload['ts2_evaluate_version']})",
             f"seed {payload['seed']}, {payload['n_bootstrap']} bootstrap resamples"
             + ("" if payload.get("variant") is None else f", delta variant {payload['variant']}")]
    for role, info in payload["inputs"].items():
        path, digest = info["path"], info["sha256"]
        state = ("unchanged" if os.path.isfile(path) and _sha256(path) == digest
                 else "CHANGED since" if os.path.isfile(path) else "missing now")
        lines.append(f"{role}: {path} sha256 {digest[:12]}... ({state})")
    if payload.get("scorer_config"):
        lines.append("scorer config: " + json.dumps(payload["scorer_config"], sort_keys=True))
    return "\n".join(lines)
