"""The saved result file that ``ts2 meta --out`` writes (and ``ts2 report``, ``ts2 correlate``,
``ts2 tifa-bench report``, ``ts2 submit``): the writer, the checks of its fields, and the ``ts2 meta`` table
re-derived from its numbers.

A saved result holds what was printed and everything needed to make it again: the command line, the package
version, the SEG set, the seed and number of bootstrap resamples, the delta variant, each input file with its sha256,
the scorer configuration when the scores came from ``ts2 score`` (``<scores>.cache/fingerprint.json``), and the
numbers (each metric's ``TS2Result.to_dict()``, fractions).

It lives in the library (not in ``scorers.cli``) so that :mod:`scorers.ts2.submission` writes and checks the very same
file; ``scorers.cli._saved`` re-exports it and adds the re-printing of ``ts2 meta --from``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

from scorers.atomic import write_text_atomic
from scorers.formatting import format_number
from scorers.stats.graph import summary_keys
from scorers.stats.meta import META_METRICS, TS2Result

__all__ = ["FORMAT", "check_payload", "check_table", "escape_controls", "format_error_type_table", "format_meta_table",
           "meta_text", "meta_results", "pct",
           "save_result", "segs_line", "sha256", "text_grid"]


def sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file (:func:`scorers.tables.release.sha256_file`)."""
    from scorers.tables.release import sha256_file

    return sha256_file(path)


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
        "inputs": {role: {"path": recorded.get(role, str(Path(path).resolve())), "sha256": sha256(path)}
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


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control and other non-printing characters written as escapes (``\\x1b``, ``\\n``,
    ``\\u202e``), so that a saved file cannot move the cursor, recolour or reorder the terminal's text; spaces and
    (``keep_newlines``) line breaks stay."""
    def one(ch: str) -> str:
        if ch.isprintable() or ch == " " or (keep_newlines and ch == "\n"):
            return ch
        return ch.encode("unicode_escape").decode("ascii")

    return "".join(one(ch) for ch in text)


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

    derived = format_meta_table(rebuilt).split("\n")
    saved = payload["table"].split("\n")
    for k, line in enumerate(derived):
        if k >= len(saved) or saved[k] != line:
            found = saved[k] if k < len(saved) else "(no such line)"
            raise ValueError(f"{where}: field 'table' does not match 'results' at line {k + 1} (saved: "
                             f"{escape_controls(found.strip())!r}; from the results: {line.strip()!r}): the file was "
                             "edited; re-run its command to make it again")
    return True


def pct(value: float | None, digits: int = 1) -> str:
    """A fraction as a percentage string; blank-safe for None/NaN."""
    return format_number(value, digits, scale=100.0)


def format_meta_table(results: Mapping[str, TS2Result]) -> str:
    """One row per metric: rank/sep/delta x avg/synth/nat/real in %, then SEGs used/skipped; a first line states the
    evaluated SEGs. With bootstrap intervals (``n_bootstrap``), each cell shows its 95% interval:
    ``68.2 [63.8, 71.8]``."""
    keys = summary_keys(k for result in results.values() for k in result.rank.statistic)  # a built dir's partitions
    header = ["metric"] + [f"{m}:{p}" for m in META_METRICS for p in keys] + ["segs used/skipped"]
    lines = []
    for name, result in results.items():
        cells = [name]
        for metric in META_METRICS:
            summary, ci = result[metric].statistic, result[metric].confidence_interval
            cells += [pct(summary.get(p)) + (f" [{pct(ci[p][0])}, {pct(ci[p][1])}]" if ci and p in ci else "")
                      for p in keys]
        cells.append(f"{result.rank.n_used}/{result.rank.n_skipped}")
        lines.append(cells)
    return segs_line(results) + "\n" + text_grid([header] + lines)


def format_error_type_table(by_type: Mapping[str, Mapping[str, object]]) -> str:
    """``ts2 meta --by-error-type``: one row per metric and error type, rank/sep/delta x avg and partitions in %, and
    the SEGs / walks / edges of that type (:mod:`scorers.stats.error_type_walks`)."""
    first = next((r for types in by_type.values() for r in types.values()), None)
    if first is None:
        return "by error type: no error types in the evaluated SEGs"
    keys = list(first.statistic["rank"])
    header = ["metric", "error type"] + [f"{m}:{p}" for m in META_METRICS for p in keys] + ["segs/walks/edges"]
    rows = [[name, kind] + [pct(result.statistic[m].get(p)) for m in META_METRICS for p in keys]
            + [f"{result.n_segs}/{result.n_walks}/{result.n_edges}"]
            for name, types in by_type.items() for kind, result in types.items()]
    return ("by error type: walks from node 0 along edges of one type (each step adds one error of that type)\n"
            + text_grid([header] + rows) + "\nvalues in %")


def meta_text(evaluated, variant: str) -> str:
    """What ``ts2 meta`` prints and keeps in a result file's ``table`` (``ts2 submit`` too): the table, its unit, the
    by-error-type table when computed, and the notes."""
    lines = [format_meta_table(evaluated.results), "values in % (--json gives fractions)"]
    if getattr(evaluated, "by_error_type", None) is not None:
        lines += ["", format_error_type_table(evaluated.by_error_type)]
    lines += [f"note: {note}" for note in evaluated.notes]
    if variant == "official":
        from scorers.ts2.reproduce import OFFICIAL_RAW_NOTE

        lines.append(OFFICIAL_RAW_NOTE)
    return "\n".join(lines)


def segs_line(results: Mapping[str, TS2Result]) -> str:
    described = {f"{r.segs} ({r.rank.seg_ids.size} SEGs)" for r in results.values()}
    return "SEGs: " + "; ".join(sorted(described))


def text_grid(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for k, row in enumerate(rows):
        out.append("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


