"""The saved result file that ``ts2 meta --out`` writes (and ``ts2 report``, ``ts2 correlate``,
``ts2 tifa-bench report``, ``ts2 submit``): the writer, the checks of its fields, and the check that its ``ts2 meta``
table is the one re-derived from its numbers (the table's text: :mod:`scorers.ts2.result_text`).

A saved result holds what was printed and everything needed to make it again: the command line, the package
version, the SEG set, the seed and number of bootstrap resamples, the delta variant, each input file with its sha256,
the scorer configuration when the scores came from ``ts2 score`` (``<scores>.cache/fingerprint.json``), and the
numbers (each metric's ``TS2Result.to_dict()``, fractions).

It lives in the library (not in ``scorers.cli``) so that :mod:`scorers.ts2.submission.folder` writes and checks the
very same file; ``scorers.cli._saved`` reads it with these checks and adds the re-printing of ``ts2 meta --from``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

from scorers.atomic import write_text_atomic
from scorers.formatting import escape_controls
from scorers.ts2.result_text import meta_table_layouts

__all__ = ["FORMAT", "check_payload", "check_table", "meta_results", "save_result"]

FORMAT = "ts2-evaluate result/1"


def save_result(out: str | os.PathLike, *, command: str, results: Mapping, table: str, segs, seed: int,
                n_bootstrap: int, variant: str | None, inputs: Mapping[str, str | os.PathLike],
                scorer_config: Mapping | None = None, recorded_paths: Mapping[str, str] | None = None) -> Path:
    """Write the result file (atomically) and return its path. ``segs`` and ``variant`` are None for results that
    are not TS2 meta-metrics (``ts2 correlate``, ``ts2 tifa-bench report``).

    ``scorer_config`` (``{role: config}``): the scorer configuration to record; default: each input's
    ``<path>.cache/fingerprint.json`` when ``ts2 score`` left one. ``recorded_paths`` (``{role: text}``): what to write
    as an input's ``path`` instead of its absolute path (a submission folder records ``scores.csv``, not the folder
    it was written in); the sha256 is always the file's."""
    from scorers import __version__
    from scorers.tables.release import sha256_file

    if scorer_config is None:
        scorer_config = {}
        for role, path in inputs.items():
            fingerprint = Path(f"{path}.cache") / "fingerprint.json"
            if fingerprint.is_file():
                scorer_config[role] = json.loads(fingerprint.read_text(encoding="utf-8"))
    recorded = dict(recorded_paths or {})
    payload = {
        "format": FORMAT,
        "command": command,
        "ts2_evaluate_version": __version__,
        "segs": segs if segs is None or isinstance(segs, str) else [int(s) for s in segs],
        "seed": seed,
        "n_bootstrap": n_bootstrap,
        "variant": variant,
        "units": "fractions (the table: %)",
        "inputs": {role: {"path": recorded.get(role, str(Path(path).resolve())), "sha256": sha256_file(path)}
                   for role, path in inputs.items()},
        "scorer_config": dict(scorer_config) or None,
        "results": {name: (result.to_dict() if hasattr(result, "to_dict") else result)
                    for name, result in results.items()},
        "table": table,
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_text_atomic(out, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")


def _type_name(value) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


#: the fields of a saved result: name -> (check, what it must be)
_FIELDS = {
    "command": (lambda v: isinstance(v, str), "text"),
    "ts2_evaluate_version": (lambda v: isinstance(v, str), "text"),
    "seed": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), "an integer or null"),
    "n_bootstrap": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), "an integer or null"),
    "variant": (lambda v: v is None or isinstance(v, str), "text or null"),
    "segs": (lambda v: v is None or isinstance(v, str) or (isinstance(v, list) and all(
        isinstance(s, int) and not isinstance(s, bool) for s in v)), "a list of SEG ids, text or null"),
    "inputs": (lambda v: isinstance(v, dict) and all(
        isinstance(i, dict) and isinstance(i.get("path"), str) and isinstance(i.get("sha256"), str)
        for i in v.values()), "an object {role: {\"path\": text, \"sha256\": text}}"),
    "scorer_config": (lambda v: v is None or isinstance(v, dict), "an object or null"),
    "results": (lambda v: isinstance(v, dict), "an object"),
    "table": (lambda v: isinstance(v, str), "text"),
}


def check_payload(payload: dict, where: str) -> None:
    """Refuse a saved result with a missing or malformed field: one line naming ``where`` (the file) and the field."""
    missing = [name for name in _FIELDS if name not in payload]
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(repr(m) for m in missing)}; not a complete saved "
                         "result (re-run the command that wrote it)")
    for name, (ok, what) in _FIELDS.items():
        if not ok(payload[name]):
            raise ValueError(f"{where}: field {name!r} must be {what}, got {_type_name(payload[name])}")


def meta_results(results: dict):
    """``{column: TS2Result}`` rebuilt from the results of a ``ts2 meta`` result file (each ``TS2Result.to_dict()``),
    or None when the results are not those of ``ts2 meta`` (``ts2 report``, ``ts2 correlate``...)."""
    import numpy as np

    from scorers.stats.graph import partition_of
    from scorers.stats.meta import META_METRICS, MetaResult, TS2Result
    from scorers.stats.resampling import ConfidenceInterval

    if not results or not all(isinstance(r, dict) and all(isinstance(r.get(m), dict) for m in META_METRICS)
                              for r in results.values()):
        return None

    def number(value) -> float:
        return float("nan") if value is None else float(value)

    def meta(name: str, data: dict) -> MetaResult:
        seg_ids = np.asarray([int(s) for s in data["per_seg"]], dtype=np.int64)
        ci = data.get("ci")
        return MetaResult(
            name=name, seg_ids=seg_ids, partitions=np.asarray([partition_of(int(s)) for s in seg_ids], dtype=object),
            per_seg=np.asarray([number(v) for v in data["per_seg"].values()]),
            counts=np.asarray([int(c) for c in data.get("counts", {}).values()], dtype=np.int64),
            statistic={k: number(v) for k, v in data["summary"].items()},
            n_used=int(data["n_used"]), n_skipped=int(data["n_skipped"]), n_no_pair=int(data.get("n_no_pair", 0)),
            confidence_interval=None if ci is None else {k: ConfidenceInterval(number(lo), number(hi))
                                                         for k, (lo, hi) in ci.items()})

    rebuilt = {}
    for column, result in results.items():
        rebuilt[column] = TS2Result(*(meta(m, result[m]) for m in META_METRICS),
                                    variant=result.get("variant", "paper"),
                                    higher_is_better=bool(result.get("higher_is_better", True)))
    return rebuilt


def check_table(payload: dict, where: str) -> bool:
    """For a ``ts2 meta`` result: re-derive the printed table from ``results`` and refuse a saved ``table`` that
    differs (a hand edit of either), naming the first line that differs. Returns whether the table was checked
    (False: results of another command, whose table is re-printed as saved)."""
    try:
        rebuilt = meta_results(payload["results"])
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"{where}: field 'results' is not the results of ts2 meta ({type(error).__name__}: "
                         f"{error})") from None
    if rebuilt is None:
        return False

    saved = payload["table"].split("\n")
    layouts = [text.split("\n") for text in meta_table_layouts(rebuilt)]  # default, --wide, before empty columns left
    derived = next((lines for lines in layouts if saved[1:2] == lines[1:2]), layouts[0])  # the one its header is
    for k, line in enumerate(derived):
        if k >= len(saved) or saved[k] != line:
            found = saved[k] if k < len(saved) else "(no such line)"
            raise ValueError(f"{where}: field 'table' does not match 'results' at line {k + 1} (saved: "
                             f"{escape_controls(found.strip())!r}; from the results: {line.strip()!r}): the file was "
                             "edited; re-run its command to make it again")
    return True
