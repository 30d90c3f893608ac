"""Streaming a scoring run: rows arrive in bounded chunks, each chunk is scored through the runner and appended to an
ordered checkpoint, and the score table is written from that checkpoint at the end. Memory holds one chunk at a time,
whatever the number of rows (a million-row Parquet export scores in the memory of ten thousand rows).

The reader (``read``) is a callable ``read(skip, images=True)`` that yields :class:`Chunk` s in a fixed row order,
starting at row ``skip``; with ``images=False`` it yields the same rows without their images (the final pass reads
only the key columns). :mod:`scorers.ts2.parquet_scoring` reads a ``ts2 dataset export`` this way.

The checkpoint is ``<cache>/stream.jsonl``: one line per scored row, in row order, in the cache's entry format
(:class:`scorers.scoring.cache.ShardWriter`: key, score, record, error, stamp), appended and fsynced once per chunk.
The cache folder's fingerprint, inputs and lock are the cache's own (:class:`scorers.scoring.cache.ScoreCache`), so a
stream is never resumed under another scorer configuration or other inputs, and two runs never share it.

Resume after a kill at any point: the complete lines are the rows done (a torn last line, from a kill mid-write, is
cut off), so a rerun starts at the next row; the last line's key and stamp must be the input's at that row, and the
final pass checks every line's key against the rows, so nothing is lost and nothing is scored or written twice. An
image skipped with ``on_error="skip"`` stays skipped on resume (listed in ``<out stem>.errors.csv``); a fresh cache
folder retries it.
"""
from __future__ import annotations

import json
import os
import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from scorers.atomic import atomic_path
from scorers.scoring.cache import ScoreCache, ShardWriter, item_stamp
from scorers.scoring.runner import check_run_options, process_state, run, run_fingerprint

__all__ = ["STREAM_FILE", "Chunk", "StreamResult", "committed_rows", "score_stream"]

#: the ordered checkpoint of a stream, inside the cache folder
STREAM_FILE = "stream.jsonl"


@dataclass
class Chunk:
    """Consecutive rows of a streamed set: ``rows`` (the output's key columns, one list per column), ``keys`` (the
    items' unique keys), ``prompts`` and ``images`` (anything the runner reads: bytes, paths; None when the reader was
    asked for no images)."""

    rows: dict[str, list]
    keys: list[str]
    prompts: list[str]
    images: list[Any] | None = None


@dataclass
class StreamResult:
    """What :func:`score_stream` did: ``rows`` in the output, ``computed`` scored by this run, ``resumed`` done by an
    earlier run (from the checkpoint), ``skipped`` unreadable images, the ``score_columns`` of the output (the score
    column, then the numeric record columns), ``higher_is_better`` (the scorer's) and the files ``written``."""

    rows: int = 0
    computed: int = 0
    resumed: int = 0
    skipped: int = 0
    score_columns: list[str] = field(default_factory=list)
    higher_is_better: dict = field(default_factory=dict)
    written: list[Path] = field(default_factory=list)


Reader = Callable[..., Iterator[Chunk]]


def committed_rows(path: str | Path) -> tuple[int, dict | None]:
    """The rows a checkpoint file holds: ``(n, last entry)`` over its complete, valid lines from the start; the rest
    (a line torn by a kill mid-write) is cut off the file, so appending goes on from row ``n``. ``(0, None)`` for no
    file. Reads line by line (memory does not grow with the file)."""
    path = Path(path)
    if not path.is_file():
        return 0, None
    n, last, good = 0, None, 0
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break
            try:
                entry = json.loads(raw)
            except ValueError:
                break
            if not isinstance(entry, dict) or "key" not in entry:
                break
            n, last, good = n + 1, entry, good + len(raw)
    if good != path.stat().st_size:
        with open(path, "r+b") as handle:
            handle.truncate(good)
            handle.flush()
            os.fsync(handle.fileno())
    return n, last


def score_stream(scorer, read: Reader, out: str | Path, *, cache_dir: str | Path | None = None,
                 inputs: dict | None = None, total: int | None = None, column: str | None = None,
                 key_columns: Sequence[str] = ("seg_id", "file_name", "node"), engine=None, batch_size: int = 32,
                 num_workers: int = 2, on_error: str = "raise", progress: bool = True,
                 jpeg_draft: int | None = None) -> StreamResult:
    """Score the rows ``read`` yields, chunk by chunk, and write ``out`` (``key_columns``, the score column
    ``column`` (default ``scorer.name``) and the scalar record columns, as :func:`scorers.scoring.rows.write_outputs`
    writes them), ``<out stem>.errors.csv`` for skipped images and ``<out stem>.records.jsonl`` when records hold
    lists or dicts. Each chunk goes through ``engine`` (default :func:`scorers.scoring.runner.run`, with its
    ``batch_size``, ``num_workers``, ``on_error`` and ``jpeg_draft``); ``cache_dir`` (default ``<out>.cache``) holds
    the checkpoint (module docstring), ``inputs`` what is scored (another input's cache is refused), ``total`` the
    number of rows (for the progress bar). One process: under a multi-process launch it is a ``ValueError``."""
    from tqdm.auto import tqdm

    check_run_options(batch_size=batch_size, num_workers=num_workers, on_error=on_error)
    if process_state().num_processes > 1:
        raise ValueError("a streamed run scores in one process; start it without accelerate launch")
    out = Path(out)
    cache = ScoreCache(cache_dir if cache_dir is not None else out.with_name(out.name + ".cache"),
                       run_fingerprint(scorer, jpeg_draft), inputs)
    cache.lock()
    try:
        cache.prepare()
        path = cache.directory / STREAM_FILE
        done, last = committed_rows(path)
        if done:
            check_resume_point(read, done, last, path)
        result = StreamResult(resumed=done)
        bar = tqdm(total=total, initial=done, unit="img", desc=getattr(scorer, "name", "score"), disable=not progress)
        try:
            start = done
            with ShardWriter(path) as writer:
                for chunk in read(done):
                    scored = (engine or run)(scorer, chunk.images, chunk.prompts, chunk.keys, batch_size=batch_size,
                                             num_workers=num_workers, on_error=on_error, progress=False,
                                             jpeg_draft=jpeg_draft)
                    writer.append({"key": k, "score": None if np.isnan(s) else float(s), "record": r,
                                   "error": e and numbered_from(e, start), "stamp": item_stamp(im, p)}
                                  for k, s, r, e, im, p in zip(scored.keys, scored.scores, scored.records,
                                                               scored.errors, chunk.images, chunk.prompts))
                    result.computed += scored.computed
                    start += len(chunk.keys)
                    bar.update(len(chunk.keys))
        finally:
            bar.close()
        write_stream_outputs(read, path, out, result, column=column or scorer.name, key_columns=key_columns)
    finally:
        cache.unlock()
    result.higher_is_better = dict(getattr(scorer, "higher_is_better", {}))
    return result


def numbered_from(message: str, start: int) -> str:
    """The runner's ``cannot read image #i`` (``i`` counted in the chunk) counted from the first row, as a run over
    all rows says it."""
    found = re.match(r"cannot read image #(\d+)", message)
    return message if found is None else f"cannot read image #{int(found.group(1)) + start}{message[found.end():]}"


def check_resume_point(read: Reader, done: int, last: dict, path: Path) -> None:
    """A checkpoint of ``done`` rows resumes only on the same rows: its last entry's key and stamp must be those of
    row ``done - 1`` of the input now (else one ``ValueError`` naming the cache file)."""
    chunk = next(iter(read(done - 1)), None)
    if chunk is None or not chunk.keys:
        raise ValueError(f"{path} holds {done} scored rows, more than the input has now; delete the cache folder "
                         "(or pass another --cache-dir) to score it afresh")
    key, stamp = chunk.keys[0], item_stamp(chunk.images[0], chunk.prompts[0])
    if last.get("key") != key or last.get("stamp") != stamp:
        raise ValueError(f"{path}: row {done} was {last.get('key')!r} when scored, and is {key!r} (or its image or "
                         "prompt changed) now; delete the cache folder (or pass another --cache-dir) to score afresh")


def _entries(path: Path) -> Iterator[dict]:
    with open(path, "rb") as handle:
        for raw in handle:
            yield json.loads(raw)


def write_stream_outputs(read: Reader, path: Path, out: Path, result: StreamResult, *, column: str,
                         key_columns: Sequence[str]) -> None:
    """The output files from the checkpoint ``path``, chunk by chunk in row order (two passes over the file: the
    record columns first, so that the CSV header is known). Every line's key must be the row's (``RuntimeError``
    otherwise: the checkpoint does not match the rows)."""
    scalar: dict[str, bool] = {}  # record column -> numeric so far
    nested = False
    for entry in _entries(path):
        for name, value in (entry.get("record") or {}).items():
            if isinstance(value, (int, float, str, bool)) or value is None:
                numeric = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
                scalar[name] = scalar.get(name, True) and numeric
            else:
                nested = True
    result.score_columns = [column] + [n for n, numeric in scalar.items() if numeric]
    out.parent.mkdir(parents=True, exist_ok=True)
    errors_path = out.with_name(out.stem + ".errors.csv")
    records_path = out.with_name(out.stem + ".records.jsonl")
    entries = _entries(path)
    try:
        write_rows(read, path, out, result, entries, column=column, key_columns=key_columns, scalar=scalar,
                   nested=nested, errors_path=errors_path, records_path=records_path)
    finally:
        entries.close()
    if result.skipped == 0 and errors_path.exists():  # an earlier run's list: nothing is skipped now
        errors_path.unlink()
    result.written = [out] + ([errors_path] if result.skipped else []) + ([records_path] if nested else [])


def write_rows(read: Reader, path: Path, out: Path, result: StreamResult, entries: Iterator[dict], *, column: str,
               key_columns: Sequence[str], scalar: dict, nested: bool, errors_path: Path, records_path: Path) -> None:
    """The second pass of :func:`write_stream_outputs`: the CSV (atomically), the skipped images' list and the
    records file, one chunk of rows at a time."""
    import pandas as pd

    errors_handle = None
    try:
        with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="") as handle, \
                (open(records_path, "w", encoding="utf-8") if nested else nullcontext()) as records_handle:
            header = True
            for chunk in read(0, images=False):
                lines = [next(entries, None) for _ in chunk.keys]
                for key, entry in zip(chunk.keys, lines):
                    if entry is None or entry["key"] != key:
                        raise RuntimeError(f"{path} does not match the rows: row {result.rows + 1} is {key!r}, the "
                                           f"checkpoint has {None if entry is None else entry['key']!r}")
                frame = pd.DataFrame({name: chunk.rows[name] for name in key_columns})
                frame[column] = np.array([np.nan if e["score"] is None else float(e["score"]) for e in lines])
                for name in scalar:
                    frame[name] = [(e.get("record") or {}).get(name) for e in lines]
                frame.to_csv(handle, index=False, header=header)
                header = False
                failed = [i for i, e in enumerate(lines) if e.get("error")]
                if failed:
                    if errors_handle is None:
                        errors_handle = open(errors_path, "w", encoding="utf-8", newline="")
                    bad = frame.iloc[failed][list(key_columns)].copy()
                    bad["error"] = [lines[i]["error"] for i in failed]
                    bad.to_csv(errors_handle, index=False, header=result.skipped == 0)
                    result.skipped += len(failed)
                if nested:
                    for e in lines:
                        records_handle.write(json.dumps({"key": e["key"], "record": e.get("record")},
                                                        ensure_ascii=False) + "\n")
                result.rows += len(lines)
            if header:  # no rows: the header alone
                pd.DataFrame(columns=[*key_columns, column, *scalar]).to_csv(handle, index=False)
            if next(entries, None) is not None:
                raise RuntimeError(f"{path} holds more rows than the input ({result.rows}); delete the cache folder")
    finally:
        if errors_handle is not None:
            errors_handle.close()
