"""``ts2 release list|fetch``: the official TS2 release files, their pinned sources, and the local cache."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("release", help="list or download the official TS2 release tables (pinned, verified)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    data_dir_help = "a local copy laid out like the release (same file names); default: $TS2_DATA, else the cache"

    listing = actions.add_parser(
        "list", help="each release file: name, status, sha256, source URL",
        description="A header line, then one line per release file: its local name, where it is now (cached / "
        "missing / local ok / local differs), its pinned sha256 ('unpinned' when its digest could not be read: the "
        "first download's digest is recorded and checked on every later read) and its source URL at a pinned "
        "revision. Makes no request.",
    )
    listing.add_argument("--data-dir", help=data_dir_help)
    listing.set_defaults(handler=_list)

    fetch = actions.add_parser(
        "fetch", help="download release files once into the Hugging Face cache (verified by sha256)",
        description="Download the named release files (or --all that have a public source) into the cache and verify "
        "their sha256; files already cached and verified make no request. Prints one line per file: its release name, "
        "a tab, and where it is now (the package finds cached files without TS2_DATA). --out DIR also copies them "
        "into DIR under their release names: a release folder for TS2_DATA (or --data-dir).",
    )
    fetch.add_argument("names", nargs="*", metavar="NAME", help="release file names, e.g. metadata.csv "
                       "raw_answers/mplug_tifa.csv (see `ts2 release list`)")
    fetch.add_argument("--all", action="store_true", help="every release file that has a public download")
    fetch.add_argument("--data-dir", help=data_dir_help)
    fetch.add_argument("--out", metavar="DIR", help="also copy the files into DIR under their release names (a "
                       "release folder: then set TS2_DATA=DIR); the printed paths are the copies")
    fetch.add_argument("--quiet", action="store_true", help="no progress bars")
    fetch.set_defaults(handler=_fetch)


def _status(file, folder) -> str:
    from scorers.tables.release import cached_path, sha256_file

    if folder is not None:
        local = folder / file.filename
        if not local.is_file():
            return "local missing"
        if file.sha256 is None:  # nothing pinned to compare with
            return "local (unpinned)"
        return "local ok" if sha256_file(local) == file.sha256 else "local differs"
    return "cached" if cached_path(file) is not None else "missing"


#: ``ts2 release list`` column headers
LIST_HEADER = ("name", "status", "sha256", "source")


def _list(args: argparse.Namespace) -> int:
    from scorers.tables.release import RELEASE_FILES, local_data_dir, resolved_url

    folder = local_data_dir(args.data_dir)
    # a file whose digest could not be read shows "unpinned" (its first download's digest is recorded, then checked)
    rows = [LIST_HEADER] + [(name, _status(f, folder), f.sha256 or "unpinned",
                             resolved_url(f) or f"(no public download: {args.option_names.say(f.note)})")
                            for name, f in RELEASE_FILES.items()]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    print(f"source: {folder if folder is not None else 'cache (download on demand)'}")
    for name, status, sha, url in rows:
        print(f"{name:<{widths[0]}}  {status:<{widths[1]}}  {sha:<{widths[2]}}  {url}")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from scorers.tables.release import RELEASE_FILES, local_data_dir
    from scorers.tables.release_download import paths

    if args.all == bool(args.names):
        raise ValueError("name the files to fetch (see `ts2 release list`) or pass --all, not both")
    names, skipped = list(args.names), []
    if args.all:
        folder = local_data_dir(args.data_dir)  # a local copy may hold files that have no download
        names = [n for n, f in RELEASE_FILES.items() if f.url is not None or (folder and (folder / n).is_file())]
        skipped = [f for n, f in RELEASE_FILES.items() if n not in names]
        if folder is not None:
            _check_local_copy(folder, names, args.data_dir is None)
    found = paths(names, args.data_dir, progress=not args.quiet)
    if args.out is not None:
        found = _copy_into(found, Path(args.out))
    for name, where in found.items():
        print(f"{name}\t{where}")
    for file in skipped:
        print(f"{file.filename}\tnot fetched: no public download; {args.option_names.say(file.note)}")
    if args.out is not None:
        print(f"release folder: {Path(args.out).resolve()} (use it with TS2_DATA={Path(args.out).resolve()} or "
              f"--data-dir)", file=sys.stderr)
    return 0


def _check_local_copy(folder: Path, names: list, from_env: bool) -> None:
    """``fetch --all`` reads a local release copy (``$TS2_DATA`` / ``--data-dir``), never the network: one short line
    when it lacks files (the fix: add them there, or fetch them into the cache without it)."""
    from scorers.tables.release import DATA_ENV, is_offline

    missing = [n for n in names if not (folder / n).is_file()]
    if not missing:
        return
    origin, drop = (f"${DATA_ENV}={folder}", f"unset {DATA_ENV}") if from_env else (f"--data-dir {folder}",
                                                                                  "drop --data-dir")
    more = f" and {len(missing) - 2} more" if len(missing) > 2 else ""
    raise ValueError(f"{origin} lacks {', '.join(missing[:2])}{more}; add {'it' if len(missing) == 1 else 'them'} "
                     f"there, or {drop} to download {'it' if len(missing) == 1 else 'them'}"
                     + (" (needs network; HF_HUB_OFFLINE=1 is set)" if is_offline() else ""))


def _copy_into(found: dict, out: Path) -> dict:
    """Copy each verified file into ``out`` under its release name (atomically, keeping an identical copy); returns
    the copies' paths. A file already at its place (``--data-dir`` = ``--out``) stays."""
    import os
    import shutil
    import tempfile

    umask = os.umask(0)
    os.umask(umask)
    copies = {}
    for name, source in found.items():
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if not (target.exists() and os.path.samefile(source, target)):
            handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=".part-", delete=False)
            handle.close()
            try:
                shutil.copyfile(source, handle.name)
                os.chmod(handle.name, 0o666 & ~umask)  # an ordinary file (the temporary one is private)
                os.replace(handle.name, target)
            finally:
                Path(handle.name).unlink(missing_ok=True)
        copies[name] = target.resolve()
    return copies
