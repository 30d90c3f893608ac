"""A witness of which process wrote which image, from outside the code under test, for runs started as subprocesses
(``accelerate launch``...): a ``sitecustomize`` module, put first on ``PYTHONPATH``, wraps ``os.replace`` in every
Python process of the run. Each rename onto a visible ``.png`` (the moment an image file appears: every image is
written to a temporary name and renamed) is appended to a log as ``<RANK> <path>``; optionally, process ``RANK``
dies (``os._exit``, as a kill would) just before its N-th such rename, leaving that image unwritten."""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

SITECUSTOMIZE = '''
import os


def _watch_image_writes():
    log = os.environ.get("TS2_TEST_IMAGE_LOG")
    if not log:
        return
    crash_rank = os.environ.get("TS2_TEST_CRASH_RANK")
    crash_at = int(os.environ.get("TS2_TEST_CRASH_AT", "0"))
    rank = os.environ.get("RANK", "0")
    replace, seen = os.replace, [0]

    def logged_replace(src, dst, *args, **kwargs):
        name = os.fspath(dst)
        image = name.endswith(".png") and not os.path.basename(name).startswith(".")
        if image:
            seen[0] += 1
            if rank == crash_rank and seen[0] == crash_at:
                os._exit(17)
        replace(src, dst, *args, **kwargs)
        if image:
            with open(log, "a", encoding="utf-8") as file:
                file.write(f"{rank} {os.path.abspath(name)}\\n")

    os.replace = logged_replace


_watch_image_writes()
'''


def watched_env(folder: Path, log: Path, *, crash_rank: int | None = None, crash_at: int = 0,
                env: dict | None = None) -> dict:
    """``env`` (default os.environ) with the witness installed (its ``sitecustomize.py`` written into ``folder``) and
    logging to ``log``; with ``crash_rank``, that process dies just before its ``crash_at``-th image rename."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(folder), env.get("PYTHONPATH", "")) if p)
    env["TS2_TEST_IMAGE_LOG"] = str(log)
    env.pop("TS2_TEST_CRASH_RANK", None)
    if crash_rank is not None:
        env.update(TS2_TEST_CRASH_RANK=str(crash_rank), TS2_TEST_CRASH_AT=str(crash_at))
    return env


def image_writes(log: Path, root: Path) -> list[tuple[int, str]]:
    """The log's ``(rank, path relative to root)`` entries, in order (none when the log does not exist)."""
    if not log.is_file():
        return []
    entries = []
    for line in log.read_text(encoding="utf-8").splitlines():
        rank, path = line.split(" ", 1)
        entries.append((int(rank), Path(path).resolve().relative_to(root.resolve()).as_posix()))
    return entries


def written_twice(entries: list[tuple[int, str]]) -> dict[str, int]:
    """The paths written more than once, with their counts."""
    return {path: n for path, n in Counter(path for _, path in entries).items() if n > 1}
