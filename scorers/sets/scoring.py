"""Scoring the (image, prompt) rows of any image-text set through the one runner (``ts2 score SCORER --set NAME``).

:func:`score_rows` is the one path from a set's rows to a score table: the runner (:func:`scorers.scoring.runner.run`, or the
engine given: ``--engine ray``) scores the items with its batching, crash-safe cache and resume, accelerate sharding
and ``--on-error``; the rows' own columns come back with the score column, the scalar record columns and ``error``.
TS2 (:func:`scorers.ts2.scoring.score_table`) and the TIFA v1.0 bench (:func:`scorers.tifa_bench.image_scoring.
score_images`) are users of it, as is :func:`score_set` for every set of :mod:`scorers.sets.registry` (its record
says how the set is loaded or scored, and where its images come from):

* ``ts2``: the TS2 table (``--data-dir``, else the Hub dataset): exactly ``ts2 score`` without ``--set``;
* ``tifa_v1``: the TIFA v1.0 bench on a folder of generated images (``--images-dir``); scorer ``tifa`` answers the
  bench's questions (the images table of ``ts2 tifa-bench score``), any other scorer scores (image, caption)
  (these two: :mod:`scorers.sets.own_paths`);
* rating sets (``tifa160``, ``genai_bench``, ``evalmuse``, ``gecko2k``): one score per rating row, written beside
  the set's own columns (``item, system, image, prompt``, the human ratings, reference metric columns where the set
  has them), so ``ts2 correlate`` and ``ts2 card`` read the file as it is;
* preference sets (``pickapic_v2``, ``hpdv2``, ``imagerewarddb``, ``mjbench_alignment``): one score per image
  (``image_a`` and ``image_b`` of every pair scored once, deduplicated by (image, prompt)), written as
  ``item, image, prompt, <score>``, plus ``<out stem>.pairs.csv``: the pair table with ``<score>_a`` and
  ``<score>_b`` joined on the image names.

Images come from the set: bytes embedded in the set's Parquet file (Pick-a-Pic v2, MJ-Bench, GenAI-Bench), else files
named by the set under ``images_dir``. A set whose images cannot be had raises :class:`SetImagesUnavailable`: one line
saying what is missing and how to supply it. ``<out stem>.set.json`` records the set, its provenance and counts.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from scorers.errors import ParameterError, Wording, wording_of
from scorers.scoring.rows import build_run_scorer, main_first, score_rows, write_outputs
from scorers.sets.set_files import SetImagesUnavailable
from scorers.sets.own_paths import prepare_run
from scorers.sets.registry import REGISTRY, SEGS, ImageSource, check_set_name, find_set, get_set

__all__ = ["load_set", "score_set", "score_sets", "set_images"]


# --------------------------------------------------------------------------------------------------------- the sets


def load_set(name: str, path: str | Path | None = None, *, offline: bool | None = None):
    """``(table, provenance, kind)`` of a rating or preference set (``kind`` ``"ratings"`` / ``"pairs"``): its
    registry record's loader; ``path`` reads a local copy of the set's file, else its pinned download (``offline``:
    cache only)."""
    record = get_set(name)
    if record.load is None:
        own = ", ".join(r.name for r in REGISTRY.values() if r.load is None)
        raise ValueError(f"load_set: {record.name!r} is scored by its own path ({own}), not as a table")
    table, prov = record.load(path, offline=offline)
    return table, prov, record.kind


def set_images(name: str, images: Sequence[str], provenance: dict, images_dir: str | Path | None = None, *,
               on_error: str = "raise") -> list[Any]:
    """One runner reference per entry of ``images`` (the set's image names): bytes embedded in the set's file, or
    the file ``images_dir / name`` (also tried: ``images_dir / basename``; an existing absolute name is used as it
    is). Raises :class:`SetImagesUnavailable` (one line: what is missing, how to supply it) when the images cannot
    be had, and with ``on_error="raise"`` when some files are absent; with ``"skip"`` an absent file goes to the
    runner, which records it as an error."""
    record = find_set(name)
    source = (record.images if record is not None else None) or ImageSource("the set's images")
    if source.embedded is not None:
        embedded = source.embedded(name, images, Path(provenance["file"]))
        absent = [ref for ref, data in zip(images, embedded) if not data]
        if absent and on_error == "raise":
            raise SetImagesUnavailable(Wording("{name}: {n} of {total} images have no bytes in {file} (first: "
                                               "{first}); {on_error='skip'} records them and goes on", name=name,
                                               n=len(absent), total=len(images), file=provenance["file"],
                                               first=absent[0]))
        return [data if data else f"{ref} (no image bytes in the set's file)" for ref, data in zip(images, embedded)]
    where = source.where
    named = [str(i) for i in images if str(i).strip()]
    if not named:
        raise SetImagesUnavailable(f"{name}: the set's rows name no images ({where})")
    if images_dir is None:
        absolute = [i for i in named if os.path.isabs(i) and os.path.isfile(i)]
        if len(absolute) == len(named):
            return list(images)
        raise SetImagesUnavailable(Wording("{name}: the images are not available offline ({n} files such as "
                                           "{first!r}); download {where} and pass {images_dir=DIR}", name=name,
                                           n=len(named), first=named[0], where=where))
    root = Path(images_dir)
    refs, missing = [], []
    for image in images:
        image = str(image)
        candidates = [Path(image)] if os.path.isabs(image) else [root / image, root / Path(image).name]
        found = next((str(c) for c in candidates if c.is_file()), None)
        refs.append(found or str(candidates[0]))
        if found is None:
            missing.append(str(candidates[0]))
    if len(missing) == len(refs):
        raise SetImagesUnavailable(f"{name}: none of the {len(refs)} images is under {root} (first: {missing[0]}); "
                                   f"download {where} into it")
    if missing and on_error == "raise":
        raise SetImagesUnavailable(Wording("{name}: {n} of {total} images are not under {root} (first: {first}); "
                                           "add them, or {on_error='skip'} to record them and go on", name=name,
                                           n=len(missing), total=len(refs), root=root, first=missing[0]))
    return refs


def _unique_items(table, kind: str):
    """The (image, prompt) items to score: per rating row, or per distinct (image, prompt) of the pairs (first
    occurrence order), with the rows' columns to keep."""
    import pandas as pd

    if kind == "ratings":
        return table.reset_index(drop=True), list(table["image"].astype(str)), list(table["prompt"])
    seen: dict[tuple[str, str], int] = {}
    rows = []
    for item, prompt, a, b in zip(table["item"], table["prompt"], table["image_a"], table["image_b"]):
        for image in (a, b):
            key = (str(image), str(prompt))
            if key not in seen:
                seen[key] = len(rows)
                rows.append({"item": str(item), "image": str(image), "prompt": prompt})
    frame = pd.DataFrame(rows, columns=["item", "image", "prompt"])
    return frame, list(frame["image"]), list(frame["prompt"])


def _keys(images: Sequence[str], prompts: Sequence[str]) -> list[str]:
    """Cache keys: ``image|prompt`` with ``#k`` for the k-th repeat of a rating row (a set may list one image twice)."""
    seen: dict[str, int] = {}
    keys = []
    for image, prompt in zip(images, prompts):
        key = f"{image}|{prompt}"
        count = seen.get(key, 0)
        seen[key] = count + 1
        keys.append(key if count == 0 else f"{key}#{count}")
    return keys


def score_set(
    scorer_name: str,
    set_name: str,
    out: str | Path | None = None,
    *,
    data_dir: str | Path | None = None,
    images_dir: str | Path | None = None,
    set_file: str | Path | None = None,
    offline: bool | None = None,
    model: str | None = None,
    precision: str | None = None,
    cache_dir: str | Path | None = None,
    scorer_options: dict | None = None,
    engine: str = "accelerate",
    engine_options: dict | None = None,
    tifa_bench=None,
    **run_kwargs,
):
    """``ts2 score SCORER --set NAME``: score the images of set ``set_name`` (see the module docstring) and, with
    ``out``, write the score table there (the main process). Returns ``(frame, result)``; ``result.extra["set"]``
    holds the set's name, kind, provenance and counts. ``ts2`` is :func:`scorers.ts2.scoring.score_data_dir`
    (``data_dir``); ``tifa_v1`` reads the bench files (``tifa_bench``: a loaded :class:`~scorers.tifa_bench.
    tifa_v1_files.TIFABench`, default the pinned files) and the images of ``images_dir``."""
    record = get_set(set_name)
    if record.score is not None:
        return record.score(scorer_name, out, data_dir=data_dir, images_dir=images_dir, set_file=set_file,
                            offline=offline, tifa_bench=tifa_bench, model=model, precision=precision,
                            cache_dir=cache_dir, scorer_options=scorer_options, engine=engine,
                            engine_options=engine_options, **run_kwargs)
    name = record.name
    state, cache_dir = prepare_run(name, data_dir, out, cache_dir, run_kwargs)
    # the main process first (a pinned download), then the other ranks of a launch read the cache
    table, prov, kind = main_first(state, lambda: load_set(name, set_file, offline=offline))
    rows, images, prompts = _unique_items(table, kind)
    refs = set_images(name, images, prov, images_dir, on_error=run_kwargs.get("on_error", "raise"))
    scorer, engine_run = build_run_scorer(scorer_name, state, model=model, precision=precision,
                                          options=dict(scorer_options or {}), engine=engine,
                                          engine_options=engine_options)
    if getattr(scorer, "name", None) in rows.columns:
        raise ParameterError("{set_name=}: the set already has a column {column!r}; its scores would replace it",
                             set_name=name, column=scorer.name)
    run_kwargs.setdefault("inputs", {"set": name, "sha256": prov.get("sha256"),
                                     "images_dir": None if images_dir is None else str(Path(images_dir).resolve())})
    key_columns = list(rows.columns)
    frame, result = score_rows(scorer, rows, refs, prompts, _keys(images, prompts), engine=engine_run,
                               cache_dir=cache_dir, **run_kwargs)
    column = result.extra["score_columns"][0]
    info = {"name": name, "kind": kind, "provenance": prov, "rows": len(table), "images": len(frame),
            "skipped": sum(1 for e in result.errors if e), "score_column": column}
    result.extra["set"] = info
    if kind == "pairs":
        pairs = _join_pairs(table, frame, column)
        result.extra["pairs"] = pairs
    if out is not None and state.is_main_process:
        out = Path(out)
        write_outputs(frame, result, out, key_columns=key_columns)
        if kind == "pairs":
            from scorers.atomic import atomic_path

            with atomic_path(out.with_name(out.stem + ".pairs.csv")) as tmp:
                pairs.to_csv(tmp, index=False)
        from scorers.atomic import write_text_atomic

        write_text_atomic(out.with_name(out.stem + ".set.json"), json.dumps(info, indent=2, default=str))
    return frame, result


def _join_pairs(pairs, images, column: str):
    """The pair table with ``<column>_a`` / ``<column>_b``: each image's score joined on (image, prompt)."""
    score = {(str(i), str(p)): s for i, p, s in zip(images["image"], images["prompt"], images[column])}
    out = pairs.copy()
    out[f"{column}_a"] = [score[(str(a), str(p))] for a, p in zip(pairs["image_a"], pairs["prompt"])]
    out[f"{column}_b"] = [score[(str(b), str(p))] for b, p in zip(pairs["image_b"], pairs["prompt"])]
    return out


def score_sets(scorers: str | Sequence[str], sets: Sequence[str], out_dir: str | Path, *,
               images_dirs: dict | None = None, set_files: dict | None = None, models: dict | None = None,
               **options) -> dict[str, dict]:
    """Score each of ``scorers`` (a name or several: the parts of a weighted reward) on each of ``sets`` through
    :func:`score_set` (``ts2 card --scorer``): into ``out_dir/<set>.csv`` for one scorer, ``out_dir/<scorer>/<set>.csv``
    for several. Returns ``{set: entry}``: ``{"status": "scored", "kind", "columns", "score_paths", "path", ...}``
    (``kind`` ``ts2`` / ``ratings`` / ``pairs`` / ``images``; ``score_paths`` one file per scorer, ``columns`` their
    score columns; a rating set's ``path`` holds every scorer's column beside the set's own; a preference set adds
    ``pairs_path``; ``human`` names a rating set's human columns where they are not ``human_<k>``), or ``{"status":
    "not evaluated", "reason"}`` for a set whose images or files cannot be had here (never dropped). ``images_dirs``
    and ``set_files`` map set names to ``--images-dir`` / ``--set-file``; for ``ts2`` the images dir is a TS2 data dir
    (``metadata.csv`` + ``images/``; default the Hub dataset). ``models``: scorer -> checkpoint (default each
    scorer's own). ``options`` go to :func:`score_set`."""
    names = [scorers] if isinstance(scorers, str) else list(dict.fromkeys(scorers))
    images_dirs, set_files = dict(images_dirs or {}), dict(set_files or {})
    out_dir = Path(out_dir)
    entries: dict[str, dict] = {}
    for asked in sets:
        parts = []
        for scorer in names:
            folder = out_dir if len(names) == 1 else out_dir / scorer
            entry = _score_for_card(scorer, asked, folder, images_dirs.get(asked), set_files.get(asked),
                                    dict(options, model=(models or {}).get(scorer)))
            if entry["status"] != "scored":
                break
            parts.append(entry)
        entries[asked] = entry if entry["status"] != "scored" else _combined(asked, parts, out_dir)
    return entries


def _one_line(error: BaseException) -> str:
    """The error's message on one line, the parameters it names kept (the card's command names its flags)."""
    wording = wording_of(error)
    return wording.one_line() if wording is not None else " ".join(str(error).split())


def _score_for_card(scorer: str, asked: str, folder: Path, images_dir, set_file, options: dict) -> dict:
    from scorers.tables.release import ReleaseFileUnavailable

    record = get_set(asked)
    name, core = record.name, record.kind == SEGS  # TS2: the images dir is its data dir, and the card's core
    out = folder / f"{name}.csv"
    try:
        if core:
            frame, result = score_set(scorer, name, out, data_dir=images_dir, **options)
        else:
            frame, result = score_set(scorer, name, out, images_dir=images_dir, set_file=set_file, **options)
    except (SetImagesUnavailable, ReleaseFileUnavailable) as error:
        return {"status": "not evaluated", "reason": _one_line(error)}
    except (FileNotFoundError, OSError) as error:  # e.g. a set's pinned file offline and not cached
        if core:  # the card's core: stop with the line that says how to get the images
            raise
        return {"status": "not evaluated", "reason": _one_line(error)}
    info = result.extra.get("set", {})
    entry = {"status": "scored", "path": str(out), "column": result.extra["score_columns"][0],
             "kind": info.get("kind", "ts2"), "info": info, "rows": len(frame),
             "skipped": sum(1 for e in result.errors if e), "computed": result.computed}
    if entry["kind"] == "pairs":
        entry["pairs_path"] = str(out.with_name(out.stem + ".pairs.csv"))
    if entry["kind"] == "ratings":
        entry["human"] = list(record.human)
    return entry


def _combined(asked: str, parts: list[dict], out_dir: Path) -> dict:
    """One entry for a set scored by every scorer: the first scorer's, with each scorer's file and column; a rating
    set's scorer columns joined into ``out_dir/<set>.csv`` (same rows in the same order, checked)."""
    from scorers.tables.pandas_tables import read_csv  # the one CSV reader (errors name the file; no duplicated names)

    entry = dict(parts[0], columns=[p["column"] for p in parts], score_paths=[p["path"] for p in parts])
    if len(parts) > 1 and entry["kind"] == "ratings":
        base = read_csv(parts[0]["path"], dtype=str, keep_default_na=False)
        for part in parts[1:]:
            other = read_csv(part["path"], dtype=str, keep_default_na=False)
            if len(other) != len(base) or not other["image"].equals(base["image"]):
                raise ValueError(f"{asked}: {part['path']} does not hold the rows of {parts[0]['path']}")
            if part["column"] in base.columns:
                raise ValueError(f"{asked}: two scorers write the column {part['column']!r}")
            base[part["column"]] = other[part["column"]]
        merged = out_dir / f"{check_set_name(asked)}.csv"
        from scorers.atomic import atomic_path

        with atomic_path(merged) as tmp:
            base.to_csv(tmp, index=False)
        entry["path"] = str(merged)
    return entry
