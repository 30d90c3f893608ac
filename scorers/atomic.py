"""Atomic file writes: a reader (or a resumed run after a crash) sees the whole new file or the old one, never half.

Every write of a result, cache entry or generated image goes through :func:`atomic_path`: write to a temporary file
in the same folder (same file system, so the rename is atomic), then ``os.replace`` it over the target; on an error
the temporary file is removed and the target is left as it was.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["atomic_path", "write_text_atomic"]


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path`` (hidden, same suffix, so writers that infer a format from it work);
    on leaving the block without an error it replaces ``path``, otherwise it is deleted."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
