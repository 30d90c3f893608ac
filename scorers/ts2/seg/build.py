"""``ts2 seg build``: ANNOTATIONS (one row per image + its error set) -> a data dir in the release's layout (issue 35).

ANNOTATIONS is a CSV with one row per image:

* ``seg_id``: the SEG (any text; integers up to 2**63 - 1 are kept as the SEG ids, other names are numbered 0, 1,
  ... in order of first appearance, and ``segs.json`` keeps the names);
* ``prompt``: the SEG's prompt (the same on every row of a SEG);
* ``file_name``: the image, relative to ``images`` (resolved, symlinks followed: it must lie inside ``images``);
* ``errors``: the prompt's elements the image gets wrong, joined with ``;`` (empty: an error-free image; no control
  characters);
* optional ``image_source`` (the generator), ``partition`` (one per SEG; default :data:`DEFAULT_PARTITION`) and
  ``error_types`` (``missing`` / ``attribute`` / ``relation`` / ``action``, joined with ``;``, aligned with ``errors``).

Images with the same error set share a node, labelled by :func:`scorers.stats.error_sets.node_labels`; an edge runs
from set A to set B when B is A plus one error (:func:`scorers.stats.error_sets.error_set_edges`).

OUT holds ``metadata.csv`` (``id, target_prompt, file_name, image_source, rank, partition, errors, error_types,
source_file``: the release's columns, then the partition, each image's sorted error set with its types, and the file
it was copied from as ANNOTATIONS names it, normalised, so that scores keyed by either name join), ``images/``
(copies, named ``images/SSS-KK.ext`` as the release names them) and ``segs.json`` (each SEG's nodes, error sets, edges
and error types), plus ``warnings.txt`` when there are warnings, and the question tables (:data:`QUESTION_TABLES`)
found beside ANNOTATIONS when the SEG ids are kept (renumbered ids would no longer match them: a warning says so).

Every refusal is one line naming the ANNOTATIONS line, its SEG and its file. The table is checked with whole-column
operations (pandas); only the image files are touched one by one (they must be opened and copied).
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from scorers.checks import resolve_inside
from scorers.errors import ParameterError
from scorers.stats.error_sets import (ERROR_SEPARATOR, ERROR_TYPES, KEY_SEPARATOR, error_set_edges, label_sets,
                                      unreachable)
from scorers.tables.error_columns import fail_first_row, parse_error_columns, row_location
from scorers.tables.join import SOURCE_COLUMN, normal_file_name

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["DEFAULT_PARTITION", "MAX_SEG_ID", "OUT_FILES", "QUESTION_TABLES", "REQUIRED_COLUMNS", "OPTIONAL_COLUMNS",
           "SegBuild", "build_seg_dir", "read_annotations"]

REQUIRED_COLUMNS = ("seg_id", "prompt", "file_name", "errors")
OPTIONAL_COLUMNS = ("image_source", "partition", "error_types")
#: the largest integer ``seg_id`` (int64, as every table reads SEG ids)
MAX_SEG_ID = np.iinfo(np.int64).max
#: the partition of SEGs whose ANNOTATIONS have no ``partition`` column
DEFAULT_PARTITION = "custom"
#: question tables that ``ts2 seg plan`` writes (and ``ts2 seg generate`` copies) beside ANNOTATIONS: copied into OUT
#: when the SEG ids are kept (integer ``seg_id``), so ``ts2 score tifa|dsg --data-dir OUT`` works at once
QUESTION_TABLES = ("tifa_questions.csv", "dsg_questions.csv")
#: what a build writes under OUT (``--overwrite`` replaces exactly these)
OUT_FILES = ("metadata.csv", "images", "segs.json", "warnings.txt") + QUESTION_TABLES


@dataclass
class SegBuild:
    """What :func:`build_seg_dir` wrote: ``out``, the numbers of SEGs and images, and the ``warnings`` (one line
    each)."""

    out: Path
    n_segs: int
    n_images: int
    warnings: list[str] = field(default_factory=list)
    n_nodes: int = 0
    n_edges: int = 0
    partitions: dict[str, int] = field(default_factory=dict)
    #: warnings by kind: ``{"one image": n, "not reachable": n}``
    warning_counts: dict[str, int] = field(default_factory=dict)


def read_annotations(path: str | os.PathLike, images: str | os.PathLike | None = None) -> pd.DataFrame:
    """The validated ANNOTATIONS table: one row per image, with the columns of the module docstring plus ``line``
    (its CSV line), ``key`` (its sorted error set joined with :data:`scorers.stats.error_sets.KEY_SEPARATOR`),
    ``n_errors``, ``sorted_errors`` and ``sorted_types`` (``;``-joined, aligned), ``partition`` and ``image_source``
    (filled), and ``file`` (the image's file: with ``images``, its resolved path; else ``file_name`` normalised).

    Parameters
    ----------
    path : str or PathLike
        A UTF-8 CSV file (a byte-order mark is accepted).
    images : str or PathLike, optional
        The folder ``file_name`` is relative to: each is resolved (:func:`scorers.checks.resolve_inside`) and must
        lie inside it; two rows are one file when they resolve to one path (``sub/../0.png``, ``.//0.png``, the
        absolute path, a symlink). Without it, names are compared as normalised text.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        One line naming the file, the line, the SEG and the image, for the first row that breaks a rule: a missing
        column, an empty ``seg_id``, ``prompt`` or ``file_name``; a ``file_name`` outside ``images``; an image
        listed twice in a SEG; the same file under two SEGs; a SEG with two prompts or two partitions; ``error_types``
        not aligned with ``errors`` or not one of :data:`scorers.stats.error_sets.ERROR_TYPES`; an error label with a
        control character, or used with two different types in one SEG.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.csv").write_text("seg_id,prompt,file_name,errors\\n0,a dog,x.png,\\n0,a dog,y.png,dog\\n")
    >>> read_annotations(folder / "a.csv")[["seg_id", "n_errors", "sorted_errors"]].values.tolist()
    [['0', 0, ''], ['0', 1, 'dog']]
    >>> _ = (folder / "b.csv").write_text("seg_id,prompt,file_name,errors\\n0,,x.png,\\n")
    >>> read_annotations(folder / "b.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ... line 2 (SEG 0, x.png): empty prompt
    """
    from scorers.tables.pandas_tables import read_csv

    source = str(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ANNOTATIONS {source}: no such file")
    frame = read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{source}: missing column(s) {', '.join(missing)}; ANNOTATIONS needs "
                         f"{', '.join(REQUIRED_COLUMNS)} (optional: {', '.join(OPTIONAL_COLUMNS)})")
    if frame.empty:
        raise ValueError(f"{source}: no rows")
    for column in REQUIRED_COLUMNS + OPTIONAL_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].str.strip()
    frame["line"] = np.arange(2, len(frame) + 2)
    fail_first_row(frame, frame["seg_id"] == "", source, "empty seg_id")
    fail_first_row(frame, frame["prompt"] == "", source, "empty prompt")
    fail_first_row(frame, frame["file_name"] == "", source, "empty file_name")
    frame["file"] = _files(frame, images, source)
    keyed = frame.assign(_f=frame["file"])
    twice = keyed.duplicated(["seg_id", "_f"])
    first_line = keyed.groupby(["seg_id", "_f"], sort=False)["line"].transform("min")
    fail_first_row(frame, twice, source, lambda k, row: f"image listed twice (first on line {first_line.iloc[k]})")
    other = keyed.groupby("_f", sort=False)["seg_id"].transform("first")
    other_line = keyed.groupby("_f", sort=False)["line"].transform("first")
    fail_first_row(frame, other != frame["seg_id"], source,
                   lambda k, row: f"the same file is under SEG {other.iloc[k]} too (line {other_line.iloc[k]}); an "
                                  "image belongs to one SEG")
    _one_per_seg(frame, "prompt", source)
    if "partition" in frame.columns:
        fail_first_row(frame, frame["partition"] == "", source,
                       "empty partition (the column is optional; a given cell needs a name)")
        _one_per_seg(frame, "partition", source)
    else:
        frame["partition"] = DEFAULT_PARTITION
    if "image_source" not in frame.columns:
        frame["image_source"] = ""
    parse_error_columns(frame, source)
    return frame


def _files(frame: pd.DataFrame, images, source: str) -> list[str]:
    """Each row's file: resolved inside ``images`` (the first row outside it refused, naming the row), else its
    ``file_name`` normalised as text (``\\`` as ``/``, ``.`` and ``..`` folded)."""
    import posixpath

    names = frame["file_name"].tolist()
    if images is None:
        return [posixpath.normpath(name.replace("\\", "/")) for name in names]
    files, folders, what = [], {}, f"the images folder {os.fspath(images)}"
    for k, name in enumerate(names):
        try:
            files.append(resolve_inside(images, name, what=what, folders=folders))
        except ValueError as problem:
            raise ValueError(f"{row_location(source, frame.iloc[k])}: file_name {problem}") from None
    return files


def _source_files(frame: pd.DataFrame, images) -> list[str]:
    """Each image's ``source_file``: its ``file_name`` as ANNOTATIONS gives it, normalised
    (:func:`scorers.tables.join.normal_file_name`); an absolute name inside ``images`` is made relative to it."""
    root = os.path.abspath(images) if images is not None else None
    names = []
    for name in frame["file_name"].tolist():
        text = normal_file_name(name)
        if root is not None and os.path.isabs(text):
            relative = os.path.relpath(text, root).replace(os.sep, "/")
            text = text if relative.startswith("..") else relative
        names.append(text)
    return names


def _one_per_seg(frame: pd.DataFrame, column: str, source: str) -> None:
    first = frame.groupby("seg_id", sort=False)[column].transform("first")
    first_line = frame.groupby("seg_id", sort=False)["line"].transform("first")
    fail_first_row(frame, first != frame[column], source,
                   lambda k, row: f"the SEG has two {column}s: {row[column]!r} here and {first.iloc[k]!r} on line "
                                  f"{first_line.iloc[k]}")


def _seg_ids(frame: pd.DataFrame, source: str) -> np.ndarray:
    """Integer SEG ids: the given ones when all are ASCII digits naming distinct SEGs, else 0, 1, ... by first
    appearance (refused, naming the row: an integer id above :data:`MAX_SEG_ID`)."""
    text = frame["seg_id"]
    if text.str.fullmatch(r"[0-9]+").all():
        digits, limit = text.str.lstrip("0"), str(MAX_SEG_ID)  # compared as text: int64 would overflow
        too_big = (digits.str.len() > len(limit)) | ((digits.str.len() == len(limit)) & (digits > limit))
        fail_first_row(frame, too_big.to_numpy(), source,
                       lambda k, row: f"seg_id {row['seg_id']} is too large: an integer SEG id is at most "
                                      f"{MAX_SEG_ID} (2**63 - 1)")
        as_int = text.astype(np.int64)
        if as_int.nunique() == text.nunique():
            return as_int.to_numpy()
    codes, _ = frame["seg_id"].factorize()
    return codes.astype(np.int64)


def _check_structure(frame: pd.DataFrame, source: str) -> None:
    """Refuse a SEG with no error-free image, or with fewer than two error levels (naming its first line)."""
    by_seg = frame.groupby("seg_id", sort=False)["n_errors"]
    lowest, levels = by_seg.transform("min"), by_seg.transform("nunique")
    fail_first_row(frame, lowest > 0, source,
                   lambda k, row: "the SEG has no error-free image (a row with empty errors); node 0 holds the images "
                                  "that get the prompt right")
    fail_first_row(frame, levels < 2, source,
                   lambda k, row: "the SEG has one error level only (every image has 0 errors); a SEG needs at least "
                                  "two")


def _check_images(frame: pd.DataFrame, source: str) -> list[Path]:
    """The image paths (``file``: resolved inside the images folder by :func:`read_annotations`), each checked to
    exist and to open as an image: its header is parsed and PIL's ``verify`` run (PNG checksums included); not
    decoded (``load_ts2`` decodes every image)."""
    from PIL import Image, UnidentifiedImageError

    paths = [Path(name) for name in frame["file"].tolist()]
    exists = np.fromiter((p.is_file() for p in paths), dtype=bool, count=len(paths))
    fail_first_row(frame, ~exists, source, lambda k, row: f"missing image: no file {paths[k]}")
    for k, p in enumerate(paths):
        try:
            with Image.open(p) as image:
                image.verify()
        except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as error:  # SyntaxError: a bad PNG chunk
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ValueError(f"{row_location(source, frame.iloc[k])}: unreadable image {p} ({detail})") from None
    return paths


def _out_names(frame: pd.DataFrame) -> pd.Series:
    """``images/SSS-KK.ext``: SEG id (3 digits at least), position in the SEG (2 digits at least), the file's suffix."""
    position = frame.groupby("id", sort=False).cumcount()
    suffix = frame["file_name"].str.extract(r"(\.[A-Za-z0-9]+)$", expand=False).fillna("").str.lower()
    return "images/" + frame["id"].astype(str).str.zfill(3) + "-" + position.astype(str).str.zfill(2) + suffix


def _nodes(frame: pd.DataFrame) -> tuple[np.ndarray, list[dict], list[str], dict[str, int], int, int]:
    """Node labels per row, the ``segs.json`` entries, the warnings and their counts by kind, and the numbers of
    nodes and edges.

    The labels, edges and unreachable nodes of each SEG come from :mod:`scorers.stats.error_sets` (one call per SEG,
    over its distinct error sets, never per image); images are grouped by one ``groupby``."""
    out_names, sources = frame["out_name"].to_numpy(dtype=object), frame["source_file"].to_numpy(dtype=object)
    members = frame.groupby(["id", "key"], sort=False).indices  # {(id, key): row positions}, file order
    first = frame.drop_duplicates("id")
    info = dict(zip(first["id"].tolist(), zip(first["seg_id"].tolist(), first["prompt"].tolist(),
                                              first["partition"].tolist())))
    type_of: dict[tuple[int, str], str] = {}
    if frame["sorted_types"].ne("").any():
        pairs = frame.loc[frame["n_errors"] > 0, ["id", "sorted_errors", "sorted_types"]].drop_duplicates()
        for seg, errs, kinds in pairs.itertuples(index=False):  # distinct (SEG, error set) pairs, not images
            for e, t in zip(errs.split(ERROR_SEPARATOR), kinds.split(ERROR_SEPARATOR)):
                type_of[(seg, e)] = t
    keys_of: dict[int, list[str]] = {}
    for seg, key in members:
        keys_of.setdefault(seg, []).append(key)
    label_of: dict[tuple[int, str], str] = {}
    segs, warnings = [], []
    counts = {"one image": 0, "not reachable": 0}
    n_nodes = n_edges = 0
    for seg in sorted(keys_of):
        sets = [frozenset(k.split(KEY_SEPARATOR)) if k else frozenset() for k in keys_of[seg]]
        labelled = label_sets(sets)
        name, prompt, partition = info[seg]
        nodes = []
        for label, s in labelled.items():
            key = KEY_SEPARATOR.join(sorted(s))
            label_of[(seg, key)] = label
            rows = members[(seg, key)]
            files = out_names[rows].tolist()
            entry = {"label": label, "error_count": len(s), "errors": sorted(s), "n_images": len(files),
                     "images": files, "sources": sources[rows].tolist()}
            if type_of:
                entry["error_types"] = [type_of.get((seg, e), "") for e in sorted(s)]
            nodes.append(entry)
            if len(files) == 1:
                warnings.append(f"SEG {name}: node {label} {_show(s)} has one image ({files[0]})")
                counts["one image"] += 1
        edges = [{"from": a, "to": b, "error": e, **({"type": type_of.get((seg, e), "")} if type_of else {})}
                 for a, b, e in error_set_edges(sets)]
        for label in unreachable(sets):
            warnings.append(f"SEG {name}: node {label} {_show(labelled[label])} is not reachable one error at a time "
                            "(no node one error smaller inside it); valid, worth a look")
            counts["not reachable"] += 1
        n_nodes += len(nodes)
        n_edges += len(edges)
        segs.append({"seg_id": int(seg), "name": str(name), "prompt": prompt, "partition": partition,
                     "nodes": nodes, "edges": edges})
    labels = np.empty(len(frame), dtype=object)
    for (seg, key), rows in members.items():  # one assignment per node, not per image
        labels[rows] = label_of[(seg, key)]
    return labels, segs, warnings, counts, n_nodes, n_edges


def _segs_json(payload: dict) -> str:
    """``segs.json``: one JSON document (read it whole, ``json.load``), laid out with each SEG on a line of its own
    (the C encoder writes each; an indented dump is ten times slower)."""
    head = {k: v for k, v in payload.items() if k != "segs"}
    lines = [json.dumps(seg, ensure_ascii=False) for seg in payload["segs"]]
    return json.dumps(head, ensure_ascii=False)[:-1] + ', "segs": [\n' + ",\n".join(lines) + "\n]}\n"


def _show(s) -> str:
    return "{" + ", ".join(sorted(s)) + "}"


def _prepare_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ParameterError("{out} {path} is a file, not a folder", path=str(out))
    present = [name for name in OUT_FILES if (out / name).exists()]
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise ParameterError("{out} {path} is not empty; pass {overwrite=True} to replace a build there",
                             path=str(out))
    for name in present:
        target = out / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    out.mkdir(parents=True, exist_ok=True)


def build_seg_dir(
    annotations: str | os.PathLike,
    *,
    images: str | os.PathLike | None,
    out: str | os.PathLike,
    overwrite: bool = False,
    copy_images: bool = True,
) -> SegBuild:
    """Build a TS2 data dir from ANNOTATIONS (see the module docstring for both layouts).

    Parameters
    ----------
    annotations : path of the ANNOTATIONS CSV.
    images : the folder ``file_name`` is relative to. None builds metadata only: the images are neither checked nor
        copied (``metadata.csv`` still names them under ``images/``), for planning and for the scale benchmark.
    out : the data dir to write; it must be empty or absent unless ``overwrite`` (which replaces only
        :data:`OUT_FILES`).
    copy_images : False with ``images`` checks the images but does not copy them.

    Returns
    -------
    SegBuild

    Raises
    ------
    FileNotFoundError
        ANNOTATIONS does not exist.
    ParameterError
        ``images`` is not a folder; ``out`` is a file, or not empty without ``overwrite``.
    ValueError
        One line naming the ANNOTATIONS line, SEG and image: what :func:`read_annotations` refuses, a SEG with no
        error-free image, a SEG with fewer than two error levels, a missing or unreadable image. Nothing is written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.csv").write_text("seg_id,prompt,file_name,errors\\n"
    ...     "0,a red dog,x.png,\\n0,a red dog,y.png,dog\\n0,a red dog,z.png,red\\n")
    >>> built = build_seg_dir(folder / "a.csv", images=None, out=folder / "out")
    >>> built.n_segs, built.n_images, built.n_nodes, built.n_edges, len(built.warnings)
    (1, 3, 3, 2, 3)
    >>> (folder / "out" / "metadata.csv").read_text().splitlines()[2]
    '0,a red dog,images/000-01.png,,1a,custom,dog,,y.png'
    """
    source = str(annotations)
    if images is not None and not os.path.isdir(images):
        raise ParameterError("{images} {path}: no such folder", path=str(images))
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ParameterError("{out} {path} is a file, not a folder", path=str(out))
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise ParameterError("{out} {path} is not empty; pass {overwrite=True} to replace a build there",
                             path=str(out))
    frame = read_annotations(annotations, images)
    _check_structure(frame, source)
    paths = _check_images(frame, source) if images is not None else None
    frame["id"] = _seg_ids(frame, source)
    frame["out_name"] = _out_names(frame)
    frame["source_file"] = _source_files(frame, images)
    nodes, segs, warnings, counts, n_nodes, n_edges = _nodes(frame)
    frame["node"] = nodes
    _prepare_out(out, overwrite)
    metadata = frame[["id", "prompt", "out_name", "image_source", "node", "partition", "sorted_errors",
                      "sorted_types", "source_file"]].copy()
    metadata.columns = ["id", "target_prompt", "file_name", "image_source", "rank", "partition", "errors",
                        "error_types", SOURCE_COLUMN]
    metadata.to_csv(out / "metadata.csv", index=False)
    (out / "images").mkdir(exist_ok=True)
    if paths is not None and copy_images:
        for src, name in zip(paths, frame["out_name"].tolist()):
            shutil.copyfile(src, out / name)
    payload = {"format": "ts2-segs/1", "annotations": os.path.basename(source),
               "error_types": list(ERROR_TYPES), "segs": segs}
    (out / "segs.json").write_text(_segs_json(payload), encoding="utf-8")
    tables = [Path(source).parent / name for name in QUESTION_TABLES if (Path(source).parent / name).is_file()]
    ids_kept = bool(frame["seg_id"].str.fullmatch(r"[0-9]+").all()
                    and (frame["seg_id"].astype(np.int64).to_numpy() == frame["id"].to_numpy()).all())
    if tables and not ids_kept:
        warnings.append(f"{', '.join(t.name for t in tables)} beside {os.path.basename(source)} not copied: the SEG "
                        "ids were renumbered (seg_id is not an integer), so their ids would not match")
        counts["question tables not copied"] = counts.get("question tables not copied", 0) + 1
    else:
        for table in tables:
            shutil.copyfile(table, out / table.name)
    if warnings:
        (out / "warnings.txt").write_text("\n".join(warnings) + "\n", encoding="utf-8")
    partitions = frame.drop_duplicates("id")["partition"].value_counts(sort=False)
    return SegBuild(out=out, n_segs=len(segs), n_images=len(frame), warnings=warnings, n_nodes=n_nodes,
                    n_edges=n_edges, partitions={str(k): int(v) for k, v in partitions.items()},
                    warning_counts=counts)
