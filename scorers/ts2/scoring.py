"""Scoring the TS2 table: the images of ``metadata.csv`` rows (a data dir, or the Hub dataset) through the runner, and
the output files of ``ts2 score``.

:mod:`scorers.scoring.runner` is the engine and knows only the scorer protocol; this module knows TS2: it reads the metadata,
pairs rows with images, keys the cache by ``seg_id:file_name``, turns records into columns and writes
``<out>``, ``<out stem>.errors.csv`` and ``<out stem>.records.jsonl``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from scorers.scoring.rows import build_run_scorer, main_first, score_rows, write_outputs
from scorers.scoring.runner import check_run_options, process_state

__all__ = ["score_data_dir", "score_table"]


def score_table(
    scorer,
    metadata,
    data_dir: str | Path | None = None,
    *,
    images: Sequence[Any] | None = None,
    engine=None,
    **run_kwargs,
):
    """Score every row of a canonical metadata frame (``scorers.tables.pandas_tables.read_metadata``): its images are the files
    ``data_dir / file_name``, or ``images`` (one per row, e.g. :func:`scorers.ts2.dataset.hub_segs`' encoded images). Returns
    ``(frame, result)``: ``frame`` has ``seg_id, file_name, node, <scorer.name>``, the scalar record fields as
    columns, and ``error`` when any item was skipped; one row per metadata row, in order. ``engine``: a callable
    with :func:`scorers.scoring.runner.run`'s signature (default ``run``; ``--engine ray`` passes ``RayScorer.run``'s).
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
    or, with ``data_dir=None``, the Hub dataset through :func:`scorers.ts2.dataset.hub_segs` (downloaded once, cached;
    ``hub_revision`` defaults to the pinned commit). The output CSV is the same either way.

    The scorer is built on this process's device; the cache defaults to ``<out>.cache/``. The main process writes
    ``out``. Returns ``(frame, result)`` on every process. Question-based scorers read their question table from
    ``data_dir``, or, for the Hub, from the TS2 release (:mod:`scorers.tables.release`) unless ``questions`` is given.
    ``engine="ray"`` scores on Ray Data actors (:mod:`scorers.scoring.engines.ray_data`; ``engine_options``: ``address``,
    ``num_gpus_per_worker``, ``workers``) with the same cache, resume rules and output.
    """
    from scorers.tables.pandas_tables import read_metadata

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
        from scorers.ts2.dataset import hub_segs
        from scorers.tables.release import HUB_REPO, HUB_REVISION

        _hub_questions(state, scorer_name, options)
        metadata, images = main_first(state, lambda: hub_segs(hub_revision))
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


def _hub_questions(state, scorer_name: str, options: dict) -> None:
    """Question-based scorers (``default_questions``) scoring the Hub dataset read the release's question table."""
    from scorers.scoring.registry import get_factory

    default_questions = getattr(get_factory(scorer_name), "default_questions", None)
    if default_questions and options.get("questions") is None:
        from scorers.tables.release_download import path as release_path

        options["questions"] = str(main_first(state, lambda: release_path(default_questions)))
