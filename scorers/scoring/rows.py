"""The one path from rows to a score table: :func:`score_rows` (a set's (image, prompt) rows through the runner or
an engine), :func:`write_outputs` (the score CSV, the skipped-image list and nested records), :func:`build_run_scorer`
(a registered scorer on this process's device, or the Ray Data engine) and :func:`main_first` (the main process loads
first, the other ranks of a launch read its caches).

TS2 (:mod:`scorers.ts2.scoring`), the TIFA v1.0 bench (:mod:`scorers.tifa_bench.image_scoring`) and the human-judgment
sets (:mod:`scorers.sets.scoring`) all score through here.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from scorers.atomic import atomic_path
from scorers.scoring.runner import RunResult, broadcast, record_columns, run

__all__ = ["build_run_scorer", "main_first", "score_rows", "write_outputs"]


def score_rows(scorer, rows, images: Sequence[Any], prompts: Sequence[str], keys: Sequence[str], *, engine=None,
               column: str | None = None, records_as_columns: bool = True, **run_kwargs):
    """Score ``images[i]`` against ``prompts[i]`` for every row of ``rows`` (a frame of the rows' own columns, one
    per item) through the runner; returns ``(frame, result)``: ``rows`` itself (columns added in place) with the
    score column (``column``, default ``scorer.name``), the scalar record fields as columns (``records_as_columns``)
    and ``error`` when any item was skipped. ``keys`` identify the items in the cache. ``engine``: a callable with :func:`scorers.scoring.runner.run`'s
    signature (default ``run``). ``result.extra`` gains ``score_columns`` and ``higher_is_better``."""
    result = (engine or run)(scorer, images, list(prompts), list(keys), **run_kwargs)
    frame = rows
    frame[column or scorer.name] = result.scores
    scalar_columns = record_columns(result.records) if records_as_columns else {}
    for name, values in scalar_columns.items():
        frame[name] = values
    numeric = [n for n, v in scalar_columns.items()
               if all(x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)) for x in v)]
    result.extra["score_columns"] = [column or scorer.name] + numeric
    result.extra["higher_is_better"] = dict(getattr(scorer, "higher_is_better", {}))
    if any(result.errors):
        frame["error"] = [e or "" for e in result.errors]
    return frame, result


def write_outputs(frame, result: RunResult, out: str | Path,
                  key_columns: Sequence[str] = ("seg_id", "file_name", "node")) -> list[Path]:
    """Write the score CSV, ``<out stem>.errors.csv`` for skipped images (``key_columns`` + ``error``; their scores
    are empty in the CSV; an earlier run's list is removed when nothing is skipped now) and
    ``<out stem>.records.jsonl`` when records hold lists/dicts; returns the paths written."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        frame.drop(columns=["error"], errors="ignore").to_csv(tmp, index=False)
    written = [out]
    errors_path = out.with_name(out.stem + ".errors.csv")
    failed = frame.loc[frame["error"] != ""] if "error" in frame.columns else frame.iloc[:0]
    if len(failed):
        failed[[*key_columns, "error"]].to_csv(errors_path, index=False)
        written.append(errors_path)
    elif errors_path.exists():  # an earlier run's list: every image in it is scored now
        errors_path.unlink()
    nested = any(isinstance(v, (list, dict)) for r in result.records if r for v in r.values())
    if nested:
        path = out.with_name(out.stem + ".records.jsonl")
        with open(path, "w", encoding="utf-8") as handle:
            for key, record in zip(result.keys, result.records):
                handle.write(json.dumps({"key": key, "record": record}, ensure_ascii=False) + "\n")
        written.append(path)
    return written


def build_run_scorer(scorer_name: str, state, *, model=None, precision=None, options: dict | None = None,
                     engine: str = "accelerate", engine_options: dict | None = None, data_dir: str | None = None):
    """``(scorer, engine_run)`` for an engine: the registered scorer built on this process's device and the default
    runner (``engine_run`` None), or for ``engine="ray"`` a :class:`scorers.scoring.engines.ray_data.RayScorer` (the spec
    its actors build) and ``run_ray``."""
    from scorers.scoring.registry import build_scorer

    options = dict(options or {})
    if engine == "ray":
        from scorers.scoring.engines.ray_data import RayScorer, run_ray

        spec = {"name": scorer_name, "model": model, "precision": precision, "data_dir": data_dir,
                "options": options}
        return RayScorer(spec, **dict(engine_options or {})), run_ray
    if engine != "accelerate":
        raise ValueError(f"engine {engine!r} is not one of accelerate, ray")
    return build_scorer(scorer_name, model=model, device=state.device, precision=precision, data_dir=data_dir,
                        **options), None


def main_first(state, load):
    """``load()`` on the main process first (it downloads and builds caches), then on the others (they read the
    caches). A failure on the main process is raised on every process, so no rank waits forever at a barrier."""
    failure, value = None, None
    if state.is_main_process:
        try:
            value = load()
        except (OSError, ValueError) as error:
            failure = error
    message = broadcast(state, None if failure is None else f"{type(failure).__name__}: {failure}")
    if failure is not None:
        raise failure
    if message is not None:  # another rank: the main process's failure, as one line
        raise FileNotFoundError(f"main process: {message}")
    return value if state.is_main_process else load()
