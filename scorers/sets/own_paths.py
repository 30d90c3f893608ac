"""The sets scored by their own path rather than as a table of (image, prompt) rows: TS2 (its SEGs, through
:func:`scorers.ts2.scoring.score_data_dir`) and the TIFA v1.0 bench (your generated images, through
:mod:`scorers.tifa_bench.image_scoring`). The ``score`` of their :class:`scorers.sets.registry.SetRecord`."""
from __future__ import annotations

import json
from pathlib import Path

from scorers.errors import ParameterError, Wording
from scorers.scoring.rows import build_run_scorer, main_first, score_rows, write_outputs
from scorers.sets.set_files import SetImagesUnavailable

__all__ = ["prepare_run", "score_tifa_v1", "score_ts2"]


def prepare_run(name: str, data_dir, out, cache_dir, run_kwargs: dict):
    """``(process state, cache_dir)`` of a run over a set other than TS2: ``data_dir`` refused (it is TS2's), the
    runner's options checked, the cache beside ``out`` by default."""
    from scorers.scoring.runner import check_run_options, process_state

    if data_dir is not None:
        raise ParameterError("{data_dir} is TS2's folder; {set_name=} takes {images_dir} (and {set_file})",
                             set_name=name)
    check_run_options(**run_kwargs)
    state = process_state()
    if cache_dir is None and out is not None:
        cache_dir = Path(out).with_name(Path(out).name + ".cache")
    return state, cache_dir


def score_ts2(scorer_name: str, out: str | Path | None = None, *, data_dir=None, images_dir=None, set_file=None,
              offline: bool | None = None, tifa_bench=None, **options):
    """``--set ts2``: exactly ``ts2 score`` without ``--set`` (``data_dir``, else the Hub dataset)."""
    from scorers.ts2.scoring import score_data_dir

    if images_dir is not None or set_file is not None:
        raise ParameterError("{set_name='ts2'} reads {data_dir} (metadata.csv + images/); {images_dir} and "
                             "{set_file} apply to the other sets")
    frame, result = score_data_dir(scorer_name, data_dir, out, **options)
    result.extra["set"] = {"name": "ts2", "kind": "ts2", "rows": len(frame)}
    return frame, result


def score_tifa_v1(scorer_name: str, out: str | Path | None = None, *, data_dir=None, images_dir=None, set_file=None,
                  offline: bool | None = None, tifa_bench=None, model=None, precision=None, cache_dir=None,
                  scorer_options=None, engine: str = "accelerate", engine_options=None, **run_kwargs):
    """``--set tifa_v1``: scorer ``tifa`` answers the bench's questions (:func:`~scorers.tifa_bench.image_scoring.
    score_images`, whose images table is written to ``out`` and its questions/missing/run files beside it); any other
    scorer scores each image against its text's caption. ``tifa_bench``: a loaded :class:`~scorers.tifa_bench.
    tifa_v1_files.TIFABench` (default the pinned files)."""
    import pandas as pd

    from scorers.tifa_bench.image_scoring import find_images, score_images

    state, cache_dir = prepare_run("tifa_v1", data_dir, out, cache_dir, run_kwargs)
    bench = tifa_bench
    if images_dir is None:
        raise SetImagesUnavailable(Wording("tifa_v1: the TIFA v1.0 bench scores your generated images; pass "
                                           "{images_dir=DIR} (<text_id>.png or <text_id>/<k>.png, as `ts2 tifa-bench "
                                           "generate` writes)"))
    if set_file is not None:
        raise ParameterError("{set_name='tifa_v1'} reads the pinned TIFA v1.0 files (ts2 tifa-bench takes local "
                             "copies); {set_file} does not apply")
    if bench is None:
        from scorers.tifa_bench.tifa_v1_files import load_tifa_v1

        bench = main_first(state, lambda: load_tifa_v1(offline=offline, require_questions=scorer_name == "tifa"))
    if scorer_name == "tifa":
        if engine != "accelerate" or run_kwargs.pop("jpeg_draft", None):
            raise ParameterError("{set_name='tifa_v1'} with the tifa scorer runs as `ts2 tifa-bench score` does: "
                                 "accelerate engine, no {jpeg_draft}")
        bench_run = score_images(bench, images_dir, None, model=model, precision=precision,
                                 scorer_options=scorer_options, cache_dir=cache_dir, **run_kwargs)
        frame = bench_run.images
        from scorers.scoring.runner import RunResult

        errors = [e or None for e in frame["error"]] if "error" in frame.columns else [None] * len(frame)
        result = RunResult(keys=[f"{t}/{i}" for t, i in zip(frame["text_id"], frame["image"])],
                           scores=frame["tifa"].to_numpy(), records=bench_run.records, errors=errors,
                           computed=bench_run.info["computed_now"], from_cache=bench_run.from_cache)
        result.extra.update({"score_columns": ["tifa"], "higher_is_better": {}, "set": {"name": "tifa_v1",
                                                                                        **bench_run.info}})
        if out is not None and state.is_main_process:
            from scorers.atomic import atomic_path, write_text_atomic

            out = Path(out)
            out.parent.mkdir(parents=True, exist_ok=True)
            with atomic_path(out) as tmp:
                frame.drop(columns=["error"], errors="ignore").to_csv(tmp, index=False)
            for part in ("questions", "missing"):
                with atomic_path(out.with_name(f"{out.stem}.{part}.csv")) as tmp:
                    getattr(bench_run, part).to_csv(tmp, index=False)
            write_text_atomic(out.with_name(out.stem + ".set.json"),
                              json.dumps(result.extra["set"], indent=2, default=str))
        return frame, result
    index = find_images(images_dir, bench.text_ids)
    items = index.items.reset_index(drop=True)
    if items.empty:
        raise SetImagesUnavailable(f"tifa_v1: no image under {images_dir} is named after a text id (expected "
                                   f"<text_id>.png or <text_id>/<k>.png, e.g. {bench.text_ids[0]}.png)")
    captions = dict(zip(bench.texts["text_id"], bench.texts["caption"]))
    source = dict(zip(bench.texts["text_id"], bench.texts["source"]))
    scorer, engine_run = build_run_scorer(scorer_name, state, model=model, precision=precision,
                                          options=dict(scorer_options or {}), engine=engine,
                                          engine_options=engine_options)
    rows = pd.DataFrame({"text_id": items["text_id"], "image": items["image"],
                         "source": [source[t] for t in items["text_id"]]})
    run_kwargs.setdefault("inputs", {"set": "tifa_v1", "images_dir": str(Path(images_dir).resolve())})
    key_columns = list(rows.columns)
    frame, result = score_rows(scorer, rows, list(items["path"]), [captions[t] for t in items["text_id"]],
                               [f"{t}/{i}" for t, i in zip(items["text_id"], items["image"])], engine=engine_run,
                               cache_dir=cache_dir, **run_kwargs)
    info = {"name": "tifa_v1", "kind": "images", "texts": len(bench.texts), "images": len(frame),
            "texts_missing_image": len(index.missing), "score_column": result.extra["score_columns"][0]}
    result.extra["set"] = info
    if out is not None and state.is_main_process:
        from scorers.atomic import write_text_atomic

        write_outputs(frame, result, out, key_columns=key_columns)
        write_text_atomic(Path(out).with_name(Path(out).stem + ".set.json"), json.dumps(info, indent=2))
    return frame, result
