"""The crash-safe score cache every scorer shares: append-only JSON Lines, one shard file per writer, fsync per batch.

Layout of a cache folder::

    fingerprint.json         the scorer's ``config``; a cache made by another config is refused, not mixed
    inputs.json              what is being scored (``{"data_dir": <absolute path>}``); another data dir is refused
    rank0.jsonl, rank1.jsonl one file per process rank (no two processes ever write the same file)
    lock                     advisory ``flock`` held by the run using the cache; a second run stops with a message

Each line is one finished item: ``{"key": str, "score": float | null, "record": {...} | null, "error": str | null,
"stamp": str | null}``. ``stamp`` (:func:`item_stamp`) identifies the item's input when it was scored: a hash of the
image file's bytes (with ``--fast-stamp`` its size and mtime; or a hash of an encoded image's bytes, or of an in-memory
image's pixels) and a hash of the prompt. An entry whose stamp differs
from the input's stamp now is stale and is scored again, so a changed image under the same cache is never served.
A batch is written with one ``write`` then ``flush`` + ``os.fsync``, so a SIGKILL loses at most the batch in flight;
a line torn by a kill mid-write is not valid JSON and is dropped on reading (and the writer starts a fresh line).
Reading takes every shard (a rerun may use another number of processes); a key seen twice keeps its last entry.
Entries with an ``error`` are not "finished": a rerun retries them.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable

from scorers.atomic import write_text_atomic
from scorers.errors import ParameterError
from scorers.json_safe import json_default, json_float, jsonable

__all__ = ["CacheBusyError", "RequestCache", "ScoreCache", "ShardWriter", "item_stamp", "release_locks"]

#: lock files this process holds (``ScoreCache.lock``), so a process about to stop can release them at once
_HELD_LOCKS: set = set()


class CacheBusyError(ParameterError):
    """Another process holds the cache's lock (two runs on one ``--out``)."""


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _file_digest(path) -> str:
    digest = hashlib.blake2b(digest_size=8)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def item_stamp(image: Any, prompt: str, *, fast: bool = False) -> str:
    """What identifies one input item in the cache: a hash of an image file's bytes (a file rewritten with the same
    size and its mtime restored is still seen as changed; ``fast=True``, ``--fast-stamp``: its ``size-mtime_ns``
    only, no content read), a hash of an encoded image's bytes (e.g. a JPEG read from a ``datasets`` Arrow table), a
    hash of an in-memory PIL image's mode, size and pixels, and a hash of the prompt."""
    if isinstance(image, (str, os.PathLike)):
        try:
            if fast:
                stat = os.stat(image)
                source = f"{stat.st_size}-{stat.st_mtime_ns}"
            else:
                source = "file-" + _file_digest(image)
        except OSError:
            source = "missing"
    elif isinstance(image, (bytes, bytearray, memoryview)):
        source = "bytes-" + _digest(bytes(image))
    elif hasattr(image, "tobytes") and hasattr(image, "mode"):
        source = "pil-" + _digest(f"{image.mode}{image.size}".encode() + image.tobytes())
    else:
        source = "obj-" + _digest(repr(image).encode())
    return f"{source}:{_digest(str(prompt).encode('utf-8'))}"


def _raw_score(raw: bytes) -> str:
    """The ``score`` field as written in a cache line (``1e999`` reads back as inf: show the text)."""
    import re

    found = re.search(rb'"score"\s*:\s*("(?:[^"\\]|\\.)*"|[^,}\s]+)', raw)
    return found.group(1).decode("utf-8", "replace") if found else "?"




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
            line = {"key": str(entry["key"]), "score": json_float(entry.get("score")),
                    "record": entry.get("record"), "error": entry.get("error"), "stamp": entry.get("stamp")}
            lines.append(json.dumps(line, ensure_ascii=False, default=json_default))
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


def release_locks() -> None:
    """Release every cache lock this process holds, now (``LOCK_UN``: also when a forked child still shares the
    file): for a process that is about to stop, so that a rerun is not refused while it winds down."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return
    for handle in list(_HELD_LOCKS):
        _HELD_LOCKS.discard(handle)
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            handle.close()
        except (OSError, ValueError):  # already closed
            pass


class ScoreCache:
    """A cache folder (see module docstring). ``fingerprint`` is a JSON-able dict identifying the scorer, ``inputs``
    one identifying what is scored (e.g. ``{"data_dir": "/abs/path"}``); each must match an existing cache's."""

    def __init__(self, directory: str | Path, fingerprint: dict, inputs: dict | None = None):
        self.directory = Path(directory)
        self.fingerprint = json.loads(json.dumps(fingerprint, sort_keys=True, default=str))
        self.inputs = json.loads(json.dumps(inputs or {}, sort_keys=True, default=str))
        self._lock_handle = None

    @property
    def fingerprint_path(self) -> Path:
        return self.directory / "fingerprint.json"

    @property
    def inputs_path(self) -> Path:
        return self.directory / "inputs.json"

    @property
    def lock_path(self) -> Path:
        return self.directory / "lock"

    def lock(self) -> None:
        """Take the cache's advisory lock (``fcntl.flock``, released by the OS when the process dies), or raise
        :class:`CacheBusyError` naming the process that holds it. No-op where ``fcntl`` does not exist (Windows)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        handle = open(self.lock_path, "a+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise CacheBusyError("cache {directory} is in use by another run (pid {holder}); wait for it to finish, or "
                                 "pass another {out} / {cache_dir}", directory=self.directory, holder=holder) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._lock_handle = handle
        _HELD_LOCKS.add(handle)

    def unlock(self) -> None:
        """Release the lock taken by :meth:`lock` (closing the file releases the ``flock``)."""
        if self._lock_handle is not None:
            _HELD_LOCKS.discard(self._lock_handle)
            self._lock_handle.close()
            self._lock_handle = None

    @staticmethod
    def _write_json(path: Path, value: dict) -> None:
        write_text_atomic(path, json.dumps(value, sort_keys=True))

    def prepare(self) -> None:
        """Create the folder, fingerprint and inputs files, or check existing ones (call on one process only)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.fingerprint_path.exists():
            found = json.loads(self.fingerprint_path.read_text(encoding="utf-8"))
            if found != self.fingerprint and not self.finished():
                # no finished score under the old configuration (a run that failed before its first batch ended):
                # nothing to mix up, so this run's configuration takes over; requests/ (keyed by the request's
                # content) stays valid, so the served requests already paid for are not sent again
                self._write_json(self.fingerprint_path, self.fingerprint)
            elif found != self.fingerprint:
                requests = self.directory / "requests"
                keep = (f"; its served requests stay valid for any settings that send the same requests: copy "
                        f"{requests} into the new cache folder's requests/ to reuse them") if requests.is_dir() else ""
                raise ParameterError("cache {directory} was written by a different scorer configuration ({found}) than "
                                     "this run ({fingerprint}); delete it or pass another {cache_dir}{keep}",
                                     directory=self.directory, found=found, fingerprint=self.fingerprint, keep=keep)
        else:
            self._write_json(self.fingerprint_path, self.fingerprint)
        if self.inputs_path.exists():
            found = json.loads(self.inputs_path.read_text(encoding="utf-8"))
            if found != self.inputs:
                differ = ", ".join(f"{k} {found.get(k)!r} (this run: {self.inputs.get(k)!r})"
                                   for k in sorted(set(found) | set(self.inputs)) if found.get(k) != self.inputs.get(k))
                raise ParameterError("cache {directory} holds scores of other inputs: {differ}; pass another {out} / "
                                     "{cache_dir}, or delete the cache", directory=self.directory, differ=differ)
        else:
            self._write_json(self.inputs_path, self.inputs)

    def entries(self) -> Iterable[dict]:
        """Every valid line of every shard, shard by shard in file order (torn or foreign lines skipped). A line whose
        ``score`` is neither null nor a finite number (``"abc"``, ``NaN``, ``1e999``: the writer never writes one)
        is a ``ValueError`` naming the file, line and key, so it never reaches a score table."""
        for shard in sorted(self.directory.glob("*.jsonl")):
            with open(shard, "rb") as handle:
                for number, raw in enumerate(handle, 1):
                    try:
                        entry = json.loads(raw)
                    except ValueError:
                        continue
                    if isinstance(entry, dict) and "key" in entry:
                        score = entry.get("score")
                        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                                  or not math.isfinite(score)):
                            raise ValueError(
                                f"cache file {shard}, line {number}: key {entry['key']!r} has score {_raw_score(raw)}, "
                                "not a finite number or null; delete that line (or the cache folder) and rerun")
                        yield entry

    def load(self) -> dict[str, dict]:
        """All entries by key; a key seen twice keeps its last entry."""
        return {str(entry["key"]): entry for entry in self.entries()}

    def finished(self, stamps: dict[str, str] | None = None) -> dict[str, dict]:
        """Entries that need no recomputation: no ``error`` and, when ``stamps`` (key -> :func:`item_stamp` of the
        input now) is given, the stamp of the input now (any shard may hold it: a rerun may use fewer processes)."""
        if stamps is None:
            return {k: e for k, e in self.load().items() if not e.get("error")}
        return {str(e["key"]): e for e in self.entries()
                if not e.get("error") and e.get("stamp") is not None and e.get("stamp") == stamps.get(str(e["key"]))}

    def writer(self, rank: int) -> ShardWriter:
        """The append-only writer of process ``rank``."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return ShardWriter(self.directory / f"rank{int(rank)}.jsonl")


class RequestCache:
    """Durable ``key -> response`` store for single model requests (served chat completions, judge stages), kept by
    the runner in ``<cache>/requests/`` so a killed run never sends a finished request again.

    Same files as :class:`ScoreCache` (``rank<N>.jsonl`` shards, one JSON entry per line, torn lines dropped); each
    :meth:`put` is written and flushed at once (a SIGKILL loses nothing already answered) and fsynced. Keys are
    content hashes of the whole request (:func:`scorers.json_safe.content_key`), so a changed input is a different key and a cached
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


