"""The release tables for the benchmarks, found as the package finds them (``scorers.tables.release``), per file:

1. ``--data-dir DIR``, else ``$TS2_DATA``, else ``../shared/ts2`` beside the repository when it exists (there,
   ``table2_full_precision.csv`` may also sit in ``../shared/published/``);
2. the release cache (``ts2 release fetch``), then the pinned download (verified by sha256; not when
   ``HF_HUB_OFFLINE=1``).

A benchmark gets one folder laid out like the release (links to each file where it was found), usable as
``TS2_DATA`` by the processes it times. A file no source has stops the benchmark with one line naming the fix.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "ts2"
DATA_DIR_HELP = ("folder laid out like the TS2 release (default: $TS2_DATA, else ../shared/ts2 when it exists; files "
                 "it lacks come from the release cache or the pinned download: `ts2 release fetch`)")


def add_data_dir(parser: argparse.ArgumentParser) -> None:
    """``--data-dir DIR`` (and its old name ``--shared``, hidden)."""
    parser.add_argument("--data-dir", default=None, metavar="DIR", help=DATA_DIR_HELP)
    parser.add_argument("--shared", dest="data_dir", help=argparse.SUPPRESS)


def local_folder(data_dir: str | os.PathLike | None) -> tuple[Path | None, list[Path]]:
    """The local release folder chosen (``data_dir``, ``$TS2_DATA``, the existing default) and the folders to look in."""
    chosen = data_dir if data_dir is not None else os.environ.get("TS2_DATA") or None
    if chosen is not None:
        folder = Path(chosen).expanduser().resolve()
        if not folder.is_dir():
            raise SystemExit(f"--data-dir / TS2_DATA {chosen}: not a folder (it should hold the release tables)")
        return folder, [folder]
    if DEFAULT_DATA.is_dir():
        return DEFAULT_DATA, [DEFAULT_DATA, DEFAULT_DATA.parent / "published"]
    return None, []


def release_file(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Local path of release file ``name``: the local folder, else the cache, else the pinned download."""
    from scorers.tables.release import RELEASE_FILES, ChecksumMismatch, ReleaseFileUnavailable
    from scorers.tables.release_download import fetch

    _, folders = local_folder(data_dir)
    for folder in folders:
        if (folder / name).is_file():
            return folder / name
    try:
        return fetch(RELEASE_FILES[name], progress=False)
    except (ReleaseFileUnavailable, ChecksumMismatch) as error:
        raise SystemExit(f"release table {name} not found: pass --data-dir (or set TS2_DATA) to a release folder, or "
                         f"run `ts2 release fetch --all` ({str(error).splitlines()[0]})") from None


def release_folder(data_dir: str | os.PathLike | None, names: list[str], tmp: str | os.PathLike) -> Path:
    """A folder under ``tmp`` laid out like the release with links to ``names`` wherever each was found."""
    folder = Path(tmp) / "ts2-release"
    for name in names:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(release_file(name, data_dir))
    return folder
