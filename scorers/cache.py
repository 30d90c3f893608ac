"""The crash-safe score cache every scorer shares: append-only JSON Lines, one shard file per writer, fsync per batch.

Layout of a cache folder::

    fingerprint.json         the scorer's ``config``; a cache made by another config is refused, not mixed
    rank0.jsonl, rank1.jsonl one file per process rank (no two processes ever write the same file)

Each line is one finished item: ``{"key": str, "score": float | null, "record": {...} | null, "error": str | null}``.
A batch is written with one ``write`` then ``flush`` + ``os.fsync``, so a SIGKILL loses at most the batch in flight;
a line torn by a kill mid-write is not valid JSON and is dropped on reading (and the writer starts a fresh line).
Reading takes every shard (a rerun may use another number of processes); a key seen twice keeps its last entry.
Entries with an ``error`` are not "finished": a rerun retries them.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Iterable

__all__ = ["RequestCache", "ScoreCache", "ShardWriter", "jsonable", "request_key"]


def _json_default(value):
    """NumPy scalars/arrays in records -> plain Python (anything else is a TypeError naming its type)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"record value of type {type(value).__name__} is not JSON-serialisable")


def jsonable(value):
    """``value`` as it will read back from the cache (NumPy -> Python, tuples -> lists), so fresh and cached
    records are identical."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=_json_default))


def _clean(value: float | None) -> float | None:
    """NaN/inf -> None (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


class ShardWriter:
    """Appends entries to one shard file durably (one fsync per :meth:`append` call)."""

    def __init__(self, path: Path):
        self.path = path
        self._handle = open(path, "ab")
        if self._handle.tell() > 0:  # a previous writer may have been killed mid-line: never extend a torn line
            with open(path, "rb") as reader:
                reader.seek(-1, os.SEEK_END)
                if reader.read(1) != b"\n":
                    self._handle.write(b"\n")

    def append(self, entries: Iterable[dict]) -> None:
        """Write ``entries`` (dicts with ``key`` and optional ``score``/``record``/``error``) and fsync."""
        lines = []
        for entry in entries:
            line = {"key": str(entry["key"]), "score": _clean(entry.get("score")),
                    "record": entry.get("record"), "error": entry.get("error")}
            lines.append(json.dumps(line, ensure_ascii=False, default=_json_default))
        if not lines:
            return
        self._handle.write(("\n".join(lines) + "\n").encode("utf-8"))
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ScoreCache:
    """A cache folder (see module docstring). ``fingerprint`` is a JSON-able dict identifying the scorer."""

    def __init__(self, directory: str | Path, fingerprint: dict):
        self.directory = Path(directory)
        self.fingerprint = json.loads(json.dumps(fingerprint, sort_keys=True, default=str))

    @property
    def fingerprint_path(self) -> Path:
        return self.directory / "fingerprint.json"

    def prepare(self) -> None:
        """Create the folder and fingerprint, or check an existing one (call on one process only)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.fingerprint_path.exists():
            found = json.loads(self.fingerprint_path.read_text(encoding="utf-8"))
            if found != self.fingerprint:
                raise ValueError(
                    f"cache {self.directory} was written by a different scorer configuration "
                    f"({found}) than this run ({self.fingerprint}); delete it or pass another --cache-dir"
                )
            return
        tmp = self.fingerprint_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.fingerprint, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.fingerprint_path)

    def load(self) -> dict[str, dict]:
        """All entries of all shards, by key (torn or foreign lines skipped)."""
        entries: dict[str, dict] = {}
        for shard in sorted(self.directory.glob("*.jsonl")):
            with open(shard, "rb") as handle:
                for raw in handle:
                    try:
                        entry = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(entry, dict) and "key" in entry:
                        entries[str(entry["key"])] = entry
        return entries

    def finished(self) -> dict[str, dict]:
        """Entries that need no recomputation (no ``error``)."""
        return {k: e for k, e in self.load().items() if not e.get("error")}

    def writer(self, rank: int) -> ShardWriter:
        """The append-only writer of process ``rank``."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return ShardWriter(self.directory / f"rank{int(rank)}.jsonl")


class RequestCache:
    """Durable ``key -> response`` store for single model requests (served chat completions, judge stages), kept by
    the runner in ``<cache>/requests/`` so a killed run never sends a finished request again.

    Same files as :class:`ScoreCache` (``rank<N>.jsonl`` shards, one JSON entry per line, torn lines dropped); each
    :meth:`put` is written and flushed at once (a SIGKILL loses nothing already answered) and fsynced. Keys are
    content hashes of the whole request (:func:`request_key`), so a changed input is a different key and a cached
    response is never served for it. Thread-safe: served backends put from their worker threads.
    """

    def __init__(self, directory: str | Path, rank: int = 0):
        import threading

        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._entries = {k: e.get("record") for k, e in ScoreCache(self.directory, {}).finished().items()}
        self._writer = ShardWriter(self.directory / f"rank{int(rank)}.jsonl")
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str):
        """The stored response for ``key``, or ``None``."""
        return self._entries.get(key)

    def put(self, key: str, response) -> None:
        """Store ``response`` (JSON-able) for ``key`` durably."""
        response = jsonable(response)
        with self._lock:
            self._entries[key] = response
            if self._writer is not None:
                self._writer.append([{"key": key, "record": response}])

    def map(self, keys: list[str], compute) -> list:
        """Values for ``keys``: stored ones as they are, the missing ones from one ``compute(positions)`` call
        (a list of values for those positions, in order), which are stored before returning."""
        values = [self.get(k) for k in keys]
        missing = [i for i, v in enumerate(values) if v is None]
        if missing:
            fresh = list(compute(missing))
            if len(fresh) != len(missing):
                raise ValueError(f"computed {len(fresh)} values for {len(missing)} missing requests")
            for i, value in zip(missing, fresh):
                self.put(keys[i], value)
                values[i] = jsonable(value)
        return values

    def close(self) -> None:
        with self._lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None


def request_key(*parts) -> str:
    """SHA-256 of the JSON of ``parts`` (keys sorted): the cache key of one request."""
    import hashlib

    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=_json_default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
