"""An ANNOTATIONS file and its images uploaded in the Build a SEG tab: copied into a working folder and opened there."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pandas as pd

from scorers.checks import resolve_inside
from scorers.demo.seg_builder.annotations import SegAnnotations

__all__ = ["MAX_UNZIPPED_BYTES", "missing_images", "open_upload"]

#: the most bytes a zip of uploaded images may unpack to
MAX_UNZIPPED_BYTES = 2 * 1024**3


def _unzip(archive: Path, into: Path) -> list[Path]:
    """The files of ``archive`` extracted under ``into`` (members that would land outside it are refused)."""
    import zipfile

    try:
        with zipfile.ZipFile(archive) as opened:
            members = [m for m in opened.infolist() if not m.is_dir()]
            if sum(m.file_size for m in members) > MAX_UNZIPPED_BYTES:
                raise ValueError(f"{archive.name}: unpacks to more than {MAX_UNZIPPED_BYTES // 1024**3} GB")
            out = []
            for member in members:
                try:
                    target = Path(resolve_inside(into, member.filename))
                except ValueError:
                    raise ValueError(f"{archive.name}: member {member.filename!r} would land outside the "
                                     "folder") from None
                target.parent.mkdir(parents=True, exist_ok=True)
                with opened.open(member) as source, open(target, "wb") as sink:
                    shutil.copyfileobj(source, sink)
                out.append(target)
            return out
    except zipfile.BadZipFile as error:
        raise ValueError(f"{archive.name}: not a zip file that can be read ({error})") from None


def open_upload(annotations: str | Path, images=(), *, max_bytes: int | None = None,
                work: str | Path | None = None) -> SegAnnotations:
    """An uploaded ANNOTATIONS file and its images, copied into a new working folder and opened there.

    ``images``: image files and/or zips of them. Each row's ``file_name`` is looked for under the folder (a zip keeps
    its paths), else among the uploaded files whose path ends with it (a single uploaded file loses its folders: it
    matches by name when that name is unique). The working copy is what the tab saves to (offered for download); it
    lives in ``work`` (a new empty folder; default: a new temporary folder).

    Raises
    ------
    ValueError
        An upload over ``max_bytes``, an unreadable zip, or an ANNOTATIONS file the tab cannot open (one line).
    """
    from scorers.demo.config import check_upload_size

    uploads = [Path(p) for p in ([images] if isinstance(images, (str, Path)) else list(images or []))]
    for path in [Path(annotations), *uploads]:
        if max_bytes is not None:
            try:
                check_upload_size(path, max_bytes)
            except ValueError as problem:
                raise ValueError(f"{path.name}: {problem}") from None
    work = Path(work) if work is not None else Path(tempfile.mkdtemp(prefix="ts2-seg-annotate-"))
    work.mkdir(parents=True, exist_ok=True)
    target = work / (Path(annotations).name if Path(annotations).suffix.lower() == ".csv" else "annotations.csv")
    shutil.copyfile(annotations, target)
    opened = SegAnnotations(target, work)  # the file's own checks (every file_name inside work), before any copy
    frame = opened.frame
    unpacked = work / ".unpacked"
    candidates: list[Path] = []
    for upload in uploads:
        if upload.suffix.lower() == ".zip":
            candidates += _unzip(upload, unpacked)
        else:
            candidates.append(upload)
    root = unpacked.resolve()
    relative = {c: (c.relative_to(root).as_posix() if root in c.resolve().parents else c.name) for c in candidates}
    for file_name in pd.unique(frame["file_name"]):
        wanted = opened.file(file_name)  # inside work: the file's checks refused any other
        if wanted.exists():
            continue
        name = str(file_name).replace("\\", "/").removeprefix("./")
        found = [c for c, rel in relative.items() if rel == name or rel.endswith("/" + name)
                 or ("/" not in rel and rel == name.rsplit("/", 1)[-1])]
        if len(found) == 1:
            wanted.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(found[0], wanted)
    shutil.rmtree(unpacked, ignore_errors=True)
    book = SegAnnotations(target, work)
    book.uploaded = True
    return book


def missing_images(book: SegAnnotations) -> list[str]:
    """The ``file_name`` s of the open file that are not under its images folder."""
    names = pd.unique(book.frame["file_name"])
    return [str(n) for n in names if not book.file(str(n)).is_file()]
