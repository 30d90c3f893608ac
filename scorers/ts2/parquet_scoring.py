"""Scoring a Parquet export of SEG rows as a stream (``ts2 score SCORER --parquet EXPORT --out s.csv``): the rows are
read, decoded, scored and written in bounded chunks (:mod:`scorers.scoring.stream`), never all in memory, and a killed
run resumes where it stopped.

What ``--parquet`` reads: a ``ts2 dataset export`` / ``ts2 seg push`` folder (its ``segs/*.parquet``), a folder of
Parquet files, or one file; the rows of the files in name order. Each row needs the ``segs`` columns ``seg_id``,
``prompt``, ``image`` (``datasets``' image struct: ``bytes``, or a ``path`` when bytes are null), ``file_name`` and
``node``. The output is the CSV ``ts2 score`` writes for the same rows from a data dir or the Hub dataset.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from scorers.scoring.rows import build_run_scorer
from scorers.scoring.runner import check_run_options, process_state
from scorers.scoring.stream import Chunk, StreamResult, score_stream

__all__ = ["SEGS_COLUMNS", "SegsParquet", "parquet_files", "score_parquet"]

#: the columns of a ``segs`` row that scoring reads
SEGS_COLUMNS = ("seg_id", "prompt", "image", "file_name", "node")
KEY_COLUMNS = ("seg_id", "file_name", "node")


def parquet_files(path: str | os.PathLike) -> list[Path]:
    """The Parquet files of ``path``: an export folder's ``segs/*.parquet``, a folder's ``*.parquet``, or the file
    itself; in name order. ``ValueError`` (one line) when there is none."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ValueError(f"{path}: no such file or folder (give a ts2 dataset export folder or a .parquet file)")
    folder = path / "segs" if (path / "segs").is_dir() else path
    files = sorted(p for p in folder.glob("*.parquet") if p.is_file())
    if not files:
        raise ValueError(f"{path}: no Parquet files (expected segs/*.parquet of a ts2 dataset export, or *.parquet)")
    return files


class SegsParquet:
    """The rows of Parquet ``files`` as a stream reader for :func:`scorers.scoring.stream.score_stream`:
    ``reader(skip, images=True)`` yields :class:`~scorers.scoring.stream.Chunk` s of at most ``chunk_rows`` rows from
    row ``skip`` on. Whole files and row groups before ``skip`` are passed over from the footers, unread; pyarrow
    reads one row group at a time (no read-ahead). ``rows``: the number of rows (from the footers)."""

    def __init__(self, files: list[Path], chunk_rows: int = 10_000):
        import pyarrow.parquet as pq

        if not isinstance(chunk_rows, int) or chunk_rows < 1:
            raise ValueError(f"chunk_rows must be an integer >= 1, got {chunk_rows!r}")
        self.files, self.chunk_rows = list(files), chunk_rows
        self.sizes = []
        for file in self.files:
            meta = pq.ParquetFile(file)
            missing = [c for c in SEGS_COLUMNS if c not in meta.schema_arrow.names]
            if missing:
                raise ValueError(f"{file}: no column(s) {', '.join(missing)} (a segs row needs "
                                 f"{', '.join(SEGS_COLUMNS)}, as ts2 dataset export writes them)")
            self.sizes.append([meta.metadata.row_group(g).num_rows for g in range(meta.num_row_groups)])
            meta.close()
        self.rows = sum(sum(groups) for groups in self.sizes)

    def __call__(self, skip: int = 0, images: bool = True) -> Iterator[Chunk]:
        import pyarrow.parquet as pq

        columns = list(SEGS_COLUMNS) if images else [c for c in SEGS_COLUMNS if c != "image"]
        for file, groups in zip(self.files, self.sizes):
            first = 0
            while first < len(groups) and skip >= groups[first]:
                skip -= groups[first]
                first += 1
            if first == len(groups):
                continue
            with pq.ParquetFile(file) as parquet:
                # use_threads=False: one row group at a time (with threads, pyarrow reads ahead up to half a file)
                for batch in parquet.iter_batches(batch_size=self.chunk_rows, row_groups=range(first, len(groups)),
                                                  columns=columns, use_threads=False):
                    if skip:
                        batch, skip = batch.slice(skip), max(0, skip - batch.num_rows)
                    if batch.num_rows:
                        yield self.chunk(batch, images)

    @staticmethod
    def chunk(batch, images: bool) -> Chunk:
        """One record batch as a :class:`~scorers.scoring.stream.Chunk` (keys ``seg_id:file_name``, as
        :func:`scorers.ts2.scoring.score_table` keys the cache)."""
        seg_ids = batch.column("seg_id").to_pylist()
        names = batch.column("file_name").to_pylist()
        rows = {"seg_id": seg_ids, "file_name": names, "node": batch.column("node").to_pylist()}
        keys = [f"{s}:{n}" for s, n in zip(seg_ids, names)]
        pictures = None
        if images:
            cells = batch.column("image")
            data, paths = cells.field("bytes").to_pylist(), cells.field("path").to_pylist()
            pictures = [d if d is not None else p for d, p in zip(data, paths)]
        return Chunk(rows=rows, keys=keys, prompts=batch.column("prompt").to_pylist(), images=pictures)


def score_parquet(
    scorer_name: str,
    parquet: str | os.PathLike,
    out: str | os.PathLike,
    *,
    model: str | None = None,
    precision: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    scorer_options: dict | None = None,
    chunk_rows: int = 10_000,
    engine: str = "accelerate",
    engine_options: dict | None = None,
    **run_kwargs,
) -> StreamResult:
    """``ts2 score --parquet``: score the ``segs`` rows of ``parquet`` (:func:`parquet_files`) with a registered
    scorer as a stream of ``chunk_rows``-row chunks (:func:`scorers.scoring.stream.score_stream`); writes ``out`` as
    :func:`scorers.ts2.scoring.score_data_dir` does, with the checkpoint in ``cache_dir`` (default
    ``<out>.cache``). The default engine only (``engine="ray"`` is a ``ValueError``)."""
    if engine != "accelerate":
        raise ValueError("--parquet streams on the default engine (accelerate, one process); --engine ray reads "
                         "--data-dir or the Hub dataset")
    check_run_options(**run_kwargs)
    files = parquet_files(parquet)
    reader = SegsParquet(files, chunk_rows)
    inputs = {"parquet": [[str(f.resolve()), f.stat().st_size] for f in files]}
    scorer, _ = build_run_scorer(scorer_name, process_state(), model=model, precision=precision,
                                 options=dict(scorer_options or {}), engine=engine, engine_options=engine_options)
    return score_stream(scorer, reader, out, cache_dir=cache_dir, inputs=inputs, total=reader.rows,
                        key_columns=KEY_COLUMNS, **run_kwargs)
