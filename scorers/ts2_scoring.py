"""Scoring the TS2 table: the images of ``metadata.csv`` rows (a data dir, or the Hub dataset) through the runner, and
the output files of ``ts2 score``.

:mod:`scorers.runner` is the engine and knows only the scorer protocol; this module knows TS2: it reads the metadata,
pairs rows with images, keys the cache by ``seg_id:file_name``, turns records into columns and writes
``<out>``, ``<out stem>.errors.csv`` and ``<out stem>.records.jsonl``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from .atomic import atomic_path
from .runner import RunResult, broadcast, check_run_options, process_state
from .set_scoring import score_rows

__all__ = ["build_run_scorer", "score_data_dir", "score_table", "write_outputs"]


def score_table(
    scorer,
    metadata,
    data_dir: str | Path | None = None,
    *,
    images: Sequence[Any] | None = None,
    engine=None,
    **run_kwargs,
):
    """Score every row of a canonical metadata frame (``scorers.table_readers.read_metadata``): its images are the files
    ``data_dir / file_name``, or ``images`` (one per row, e.g. :func:`scorers.ts2_dataset.hub_segs`' encoded images). Returns
    ``(frame, result)``: ``frame`` has ``seg_id, file_name, node, <scorer.name>``, the scalar record fields as
    columns, and ``error`` when any item was skipped; one row per metadata row, in order. ``engine``: a callable
    with :func:`scorers.runner.run`'s signature (default ``run``; ``--engine ray`` passes ``RayScorer.run``'s).
    """
    import pandas as pd

    if (data_dir is None) == (images is None):
        raise ValueError("score_table needs exactly one of data_dir (image files) and images (one per metadata row)")
    if images is None:
        data_dir = Path(data_dir)
        images = [str(data_dir / name) for name in metadata["file_name"]]
        if run_kwargs.get("on_error", "raise") == "raise":
            for row, path in enumerate(images):
                if not os.path.isfile(path):
                    raise FileNotFoundError(f"metadata row {row + 2}: image file {path} does not exist")
        run_kwargs.setdefault("inputs", {"data_dir": str(data_dir.resolve())})
    elif len(images) != len(metadata):
        raise ValueError(f"got {len(images)} images for {len(metadata)} metadata rows; expected one per row")
    keys = [f"{seg}:{name}" for seg, name in zip(metadata["seg_id"], metadata["file_name"])]
    rows = pd.DataFrame({"seg_id": metadata["seg_id"].to_numpy(), "file_name": metadata["file_name"].to_numpy(),
                         "node": metadata["node"].to_numpy()})
    frame, result = score_rows(scorer, rows, images, list(metadata["prompt"]), keys, engine=engine, **run_kwargs)
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


def score_data_dir(
    scorer_name: str,
    data_dir: str | Path | None,
    out: str | Path | None = None,
    *,
    model: str | None = None,
    precision: str | None = None,
    cache_dir: str | Path | None = None,
    scorer_options: dict | None = None,
    hub_revision: str | None = None,
    engine: str = "accelerate",
    engine_options: dict | None = None,
    **run_kwargs,
):
    """``ts2 score``: score TS2 with a registered scorer: a TS2-layout ``data_dir`` (``metadata.csv`` + ``images/``),
    or, with ``data_dir=None``, the Hub dataset through :func:`scorers.ts2_dataset.hub_segs` (downloaded once, cached;
    ``hub_revision`` defaults to the pinned commit). The output CSV is the same either way.

    The scorer is built on this process's device; the cache defaults to ``<out>.cache/``. The main process writes
    ``out``. Returns ``(frame, result)`` on every process. Question-based scorers read their question table from
    ``data_dir``, or, for the Hub, from the TS2 release (:mod:`scorers.release`) unless ``questions`` is given.
    ``engine="ray"`` scores on Ray Data actors (:mod:`scorers.engines.ray_data`; ``engine_options``: ``address``,
    ``num_gpus_per_worker``, ``workers``) with the same cache, resume rules and output.
    """
    from .table_readers import read_metadata

    options = dict(scorer_options or {})
    if data_dir is not None:
        data_dir = Path(data_dir)
        metadata_path = data_dir / "metadata.csv"
        if not metadata_path.is_file():
            raise FileNotFoundError(f"{metadata_path} does not exist (expected a TS2 data_dir: metadata.csv + images/)")
    check_run_options(**run_kwargs)
    state = process_state()
    if data_dir is not None:
        metadata, images = read_metadata(metadata_path), None
    else:
        from .ts2_dataset import hub_segs
        from .release import HUB_REPO, HUB_REVISION

        _hub_questions(state, scorer_name, options)
        metadata, images = _main_first(state, lambda: hub_segs(hub_revision))
        run_kwargs.setdefault("inputs", {"hub_dataset": f"{HUB_REPO}@{hub_revision or HUB_REVISION}"})
    scorer, engine_run = build_run_scorer(scorer_name, state, model=model, precision=precision, options=options,
                                          engine=engine, engine_options=engine_options,
                                          data_dir=None if data_dir is None else str(data_dir))
    if cache_dir is None and out is not None:
        cache_dir = Path(out).with_name(Path(out).name + ".cache")
    frame, result = score_table(scorer, metadata, data_dir, images=images, cache_dir=cache_dir, engine=engine_run,
                                **run_kwargs)
    if out is not None and state.is_main_process:
        write_outputs(frame, result, out)
    return frame, result


def build_run_scorer(scorer_name: str, state, *, model=None, precision=None, options: dict | None = None,
                     engine: str = "accelerate", engine_options: dict | None = None, data_dir: str | None = None):
    """``(scorer, engine_run)`` for an engine: the registered scorer built on this process's device and the default
    runner (``engine_run`` None), or for ``engine="ray"`` a :class:`scorers.engines.ray_data.RayScorer` (the spec
    its actors build) and ``run_ray``."""
    from .registry import build_scorer

    options = dict(options or {})
    if engine == "ray":
        from .engines.ray_data import RayScorer, run_ray

        spec = {"name": scorer_name, "model": model, "precision": precision, "data_dir": data_dir,
                "options": options}
        return RayScorer(spec, **dict(engine_options or {})), run_ray
    if engine != "accelerate":
        raise ValueError(f"engine {engine!r} is not one of accelerate, ray")
    return build_scorer(scorer_name, model=model, device=state.device, precision=precision, data_dir=data_dir,
                        **options), None


def _main_first(state, load):
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


def _hub_questions(state, scorer_name: str, options: dict) -> None:
    """Question-based scorers (``default_questions``) scoring the Hub dataset read the release's question table."""
    from .registry import get_factory

    default_questions = getattr(get_factory(scorer_name), "default_questions", None)
    if default_questions and options.get("questions") is None:
        from .release import path as release_path

        options["questions"] = str(_main_first(state, lambda: release_path(default_questions)))
