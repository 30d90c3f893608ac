"""An ANNOTATIONS file open for editing in the Build a SEG tab: each image's error set, saved at once.

The file is ``ts2 seg build``'s input (``seg_id, prompt, file_name, errors``, errors ``;``-joined; optional
``image_source``, ``partition``, ``error_types``). Every change rewrites it atomically (:mod:`scorers.atomic`), so
closing the page loses nothing. Node labels, edges and unreachable sets come from :mod:`scorers.stats.error_sets`;
the data dir is what :func:`scorers.ts2.seg.build.build_seg_dir` writes.
"""
from __future__ import annotations

import re
import shutil
import tempfile
import threading
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from scorers.atomic import atomic_path
from scorers.checks import resolve_inside
from scorers.errors import ParameterError, mention
from scorers.tables.error_columns import CONTROL_CHARACTERS
from scorers.stats.error_sets import (ERROR_SEPARATOR, ERROR_TYPES, error_set_edges, node_labels, split_error_labels,
                                      unreachable)
from scorers.demo.seg_figure import seg_graph_figure
from scorers.demo.seg_builder.side_files import PlanElements, read_plan_elements, read_review

__all__ = ["ANNOTATION_COLUMNS", "REVIEWED", "THUMBNAIL_PX", "SegAnnotations", "open_annotations"]

#: the columns every ANNOTATIONS file has (``ts2 seg build``'s input)
ANNOTATION_COLUMNS = ("seg_id", "prompt", "file_name", "errors")
#: the column the tab adds to mark the images a person has ticked or confirmed (``yes``; ``ts2 seg build`` ignores it)
REVIEWED = "reviewed"
#: longest side of an image as shown (pixels): the tab shows thumbnails, the file is never changed
THUMBNAIL_PX = 256


def _not_annotations(path: Path, why: str) -> ParameterError:
    return ParameterError("{given}: {why}", given=mention("annotations", str(path)), why=why)


class SegAnnotations:
    """An ANNOTATIONS file open for editing: its rows, each SEG's elements, and the saves.

    Every change is written back at once (the whole file, atomically: :func:`scorers.atomic.atomic_path`); the file's
    columns, their order and its other cells are kept. A file changed on disk since the last read or save is read
    again before the next view or change (:meth:`refresh`), so another editor's save is not overwritten blindly.

    Parameters
    ----------
    path : path
        The ANNOTATIONS CSV (``seg_id, prompt, file_name, errors``; optional ``image_source``, ``partition``,
        ``error_types``).
    images : path
        The folder that ``file_name`` is relative to (``ts2 seg build --images``).
    plan : path, optional
        A plan file of ``ts2 seg plan``: its elements are offered as checkboxes for the SEGs of its prompts.
    review : path, optional
        The review list of ``ts2 seg check``: those images are shown first in each SEG, with what the judge saw.

    Raises
    ------
    ParameterError
        In one line naming the demo's setting (``annotations``, ``seg_images``, ``seg_plan``, ``seg_review``; ``ts2
        demo`` says its flag) when a file cannot be used.
    """

    def __init__(self, path: str | Path, images: str | Path, *, plan: str | Path | None = None,
                 review: str | Path | None = None):
        self.path = Path(path)
        self.images = Path(images)
        if not self.images.is_dir():
            raise ParameterError("{given}: the images folder does not exist",
                                 given=mention("seg_images", str(self.images)))
        self.plan = read_plan_elements(plan) if plan else PlanElements()
        self.review = read_review(review) if review else None
        self.added: dict[str, list[str]] = {}  # SEG id -> elements added by name in the tab
        self.added_types: dict[str, str] = {}
        self._lock = threading.RLock()
        self._stamp: tuple[int, int] | None = None
        self.uploaded = False  # a working copy of an upload (offered for download), not the user's own file
        self.frame = self._read()

    # ------------------------------------------------------------------------------------------------ file
    def _read(self) -> pd.DataFrame:
        try:
            frame = pd.read_csv(self.path, dtype=str, keep_default_na=False)
        except FileNotFoundError:
            raise _not_annotations(self.path, "the file does not exist") from None
        except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
            raise _not_annotations(self.path, f"not a CSV that can be read: {str(error).splitlines()[0]}") from None
        missing = [c for c in ANNOTATION_COLUMNS if c not in frame.columns]
        if missing:
            raise _not_annotations(self.path, f"no {missing[0]} column (an ANNOTATIONS file has "
                                              f"{', '.join(ANNOTATION_COLUMNS)})")
        if frame.empty:
            raise _not_annotations(self.path, "a header but no rows")
        files, folders = [], {}
        for k, name in enumerate(frame["file_name"].tolist()):
            try:
                files.append(self.file(name, folders=folders))
            except ValueError as problem:
                raise _not_annotations(self.path, f"row {k + 2}: file_name {problem}") from None
        twice = frame.assign(_f=files).duplicated(["seg_id", "_f"], keep="first")
        if twice.any():
            k = int(twice.to_numpy().nonzero()[0][0])
            raise _not_annotations(self.path, f"row {k + 2}: file_name {frame['file_name'].iloc[k]!r} is listed twice "
                                              f"in SEG {frame['seg_id'].iloc[k]}")
        self._stamp = self._disk_stamp()
        return frame

    def _disk_stamp(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def refresh(self) -> None:
        """Read the file again when it changed on disk since this object last read or wrote it."""
        with self._lock:
            if self._disk_stamp() != self._stamp:
                self.frame = self._read()

    def save(self) -> None:
        """Write the whole file atomically (a reader sees the old file or the new one, never half)."""
        with self._lock:
            with atomic_path(self.path) as tmp:
                self.frame.to_csv(tmp, index=False)
            self._stamp = self._disk_stamp()

    # ------------------------------------------------------------------------------------------------ views
    def seg_ids(self) -> list[str]:
        """SEG ids in file order."""
        return list(pd.unique(self.frame["seg_id"]))

    def choices(self) -> list[tuple[str, str]]:
        """Dropdown entries ``("SEG 3: a prompt… (20 images)", "3")``."""
        firsts = self.frame.drop_duplicates("seg_id")
        counts = self.frame["seg_id"].value_counts()
        out = []
        for seg_id, prompt in zip(firsts["seg_id"], firsts["prompt"]):
            short = prompt if len(prompt) <= 60 else prompt[:57] + "..."
            out.append((f"SEG {seg_id}: {short} ({counts[seg_id]} images)", seg_id))
        return out

    def _check_seg(self, seg_id) -> str:
        seg_id = "" if seg_id is None else str(seg_id)
        if seg_id not in set(self.frame["seg_id"]):
            raise ValueError(f"unknown SEG id {seg_id!r}; the ANNOTATIONS file has SEG ids "
                             f"{', '.join(self.seg_ids()[:10])}{'...' if len(self.seg_ids()) > 10 else ''}")
        return seg_id

    def rows(self, seg_id) -> pd.DataFrame:
        """The SEG's rows in display order: the review list's images first (its order), then the file's order; the
        index is the row's position in the file, ``note`` what the judge saw (``""`` elsewhere)."""
        seg_id = self._check_seg(seg_id)
        rows = self.frame[self.frame["seg_id"] == seg_id].copy()
        rows["note"] = ""
        rows["_first"] = len(rows) + 1
        if self.review is not None and len(self.review):
            mine = self.review[(self.review["seg_id"] == "") | (self.review["seg_id"] == seg_id)]
            mine = mine.drop_duplicates("file_name")
            where = pd.Index(mine["file_name"]).get_indexer(rows["file_name"])
            hit = where >= 0
            rows.loc[hit, "_first"] = mine["order"].to_numpy()[where[hit]]
            rows.loc[hit, "note"] = mine["note"].to_numpy()[where[hit]]
            rows.loc[hit & (rows["note"] == ""), "note"] = "the judge disagrees with the designed set"
        rows["_position"] = range(len(rows))
        return rows.sort_values(["_first", "_position"], kind="stable").drop(columns=["_first", "_position"])

    def prompt(self, seg_id) -> str:
        rows = self.frame[self.frame["seg_id"] == self._check_seg(seg_id)]
        return str(rows["prompt"].iloc[0])

    def types(self) -> dict[str, str]:
        """``{error label: type}`` from the ``error_types`` column (aligned with ``errors``), the plan and the tab."""
        known = self.plan.types()
        if "error_types" in self.frame.columns:
            labels, kinds = self.frame["errors"].str.split(ERROR_SEPARATOR), self.frame["error_types"].str.split(ERROR_SEPARATOR)
            aligned = labels.str.len() == kinds.str.len()  # rows whose types line up with their errors
            pairs = pd.DataFrame({"label": labels[aligned].explode().str.strip().to_numpy(),
                                  "kind": kinds[aligned].explode().str.strip().to_numpy()})
            pairs = pairs[(pairs["label"] != "") & (pairs["kind"] != "")].drop_duplicates("label")
            known.update(zip(pairs["label"], pairs["kind"]))
        known.update(self.added_types)
        return known

    def elements(self, seg_id) -> list[str]:
        """The checkboxes of a SEG: the plan's elements of its prompt (in the plan's order), then the error labels its
        rows use (first use first), then those added in the tab."""
        rows = self.frame[self.frame["seg_id"] == self._check_seg(seg_id)]
        used = rows["errors"].str.split(ERROR_SEPARATOR).explode().str.strip()
        names = [name for name, _ in self.plan.of(seg_id, self.prompt(seg_id))]
        names += [e for e in pd.unique(used) if isinstance(e, str) and e]
        names += self.added.get(str(seg_id), [])
        return list(dict.fromkeys(names))

    def error_sets(self, seg_id) -> list[list[str]]:
        """Each image's error labels, in :meth:`rows` order."""
        return [split_error_labels(cell) for cell in self.rows(seg_id)["errors"]]

    def nodes(self, seg_id) -> pd.DataFrame:
        """One row per image (display order): ``file_name``, ``errors``, ``node`` (:func:`node_labels`), ``reviewed``
        (``yes`` once a person ticked or confirmed it), ``judge`` (the review list's note)."""
        rows = self.rows(seg_id)
        sets = [split_error_labels(cell) for cell in rows["errors"]]
        reviewed = rows[REVIEWED] if REVIEWED in rows.columns else pd.Series("", index=rows.index)
        return pd.DataFrame({"file_name": rows["file_name"].to_numpy(),
                             "errors": ["; ".join(s) if s else "(none)" for s in sets],
                             "node": node_labels(sets) if sets else [],
                             "reviewed": reviewed.to_numpy(),
                             "judge": rows["note"].to_numpy()})

    def summary(self, seg_id) -> str:
        """Markdown: the prompt, the nodes with their image counts, the edges and what ``ts2 seg build`` will say."""
        seg_id = self._check_seg(seg_id)
        sets = self.error_sets(seg_id)
        labels = node_labels(sets)
        counts = pd.Series(labels).value_counts(sort=False)
        ordered = sorted(counts.index, key=lambda label: (int("".join(ch for ch in label if ch.isdigit())), label))
        edges = error_set_edges(sets)
        lines = [f"### SEG {seg_id}", f"**Prompt:** {self.prompt(seg_id)}",
                 f"{len(sets)} images in {len(counts)} node(s): "
                 + ", ".join(f"`{label}` ({counts[label]})" for label in ordered)
                 + f"; {len(edges)} edge(s); {int((self.nodes(seg_id)['reviewed'] == 'yes').sum())} of "
                 f"{len(sets)} reviewed."]
        hints = []
        if "0" not in counts.index:
            hints.append("no error-free image yet (node `0`): `ts2 seg build` needs one per SEG")
        if len(counts) < 2:
            hints.append("one error level so far: a SEG needs at least two")
        lonely = [label for label in ordered if counts[label] == 1]
        if lonely:
            hints.append(f"node(s) with one image: {', '.join(f'`{label}`' for label in lonely)}")
        far = unreachable(sets)
        if far:
            hints.append(f"not reachable one error at a time: {', '.join(f'`{label}`' for label in far)} "
                         "(valid, worth a look)")
        if hints:
            lines.append("*" + "; ".join(hints) + ".*")
        return "\n\n".join(lines)

    def figure(self, seg_id) -> Figure:
        """The SEG's graph: nodes by error count left to right, an edge per added error (labelled with it)."""
        sets = self.error_sets(seg_id)
        labels = node_labels(sets)
        counts = pd.Series(labels).value_counts(sort=False)
        size = {label: len(s) for label, s in zip(labels, sets)}
        nodes = [(label, size[label], int(counts[label])) for label in sorted(counts.index, key=lambda l: (size[l], l))]
        return seg_graph_figure(nodes, error_set_edges(sets), ringed=set(unreachable(sets)), title_size=9,
                                title=f"SEG {seg_id}: error graph (red ring: not reachable one error at a time)")

    def file(self, file_name: str, *, folders: dict | None = None) -> Path:
        """The file a ``file_name`` names, resolved inside the images folder
        (:func:`scorers.checks.resolve_inside`, ``folders`` its memo for one pass); ``ValueError`` when it lies
        outside."""
        return Path(resolve_inside(self.images, str(file_name), what="the images folder", folders=folders))

    def image(self, file_name: str):
        """The image as a thumbnail (PIL), or None when the file is missing, unreadable or outside the images
        folder."""
        from PIL import Image

        try:
            candidate = self.file(file_name)
        except ValueError:
            return None
        if not candidate.is_file():
            return None
        try:
            with Image.open(candidate) as opened:
                opened.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))  # before decoding it whole in RGB
                return opened.convert("RGB")
        except (OSError, ValueError, Image.DecompressionBombError):
            return None

    # ------------------------------------------------------------------------------------------------ changes
    def set_errors(self, seg_id, file_name: str, errors) -> list[str]:
        """Set one image's error set (saved at once); returns it in the SEG's element order.

        Raises
        ------
        ValueError
            An unknown SEG or image, or a label that is not one of the SEG's elements.
        """
        with self._lock:
            self.refresh()
            seg_id = self._check_seg(seg_id)
            elements = self.elements(seg_id)
            wanted = [str(e).strip() for e in (errors or []) if str(e).strip()]
            unknown = [e for e in wanted if e not in elements]
            if unknown:
                raise ValueError(f"{unknown[0]!r} is not an element of SEG {seg_id} (add it by name first)")
            ordered = [e for e in elements if e in set(wanted)]
            hit = (self.frame["seg_id"] == seg_id) & (self.frame["file_name"] == str(file_name))
            if not hit.any():
                raise ValueError(f"SEG {seg_id} has no image {file_name!r}")
            frame = self.frame.copy()
            frame.loc[hit, "errors"] = ERROR_SEPARATOR.join(ordered)
            frame = self._typed(frame)
            if REVIEWED not in frame.columns:
                frame[REVIEWED] = ""
            frame.loc[hit, REVIEWED] = "yes"
            self.frame = frame
            self.save()
            return ordered

    def _typed(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` with its ``error_types`` column written from the known types, aligned with ``errors``.

        Every label typed: the column is (re)written, and added where the file had none but types are known (the
        plan's). A label with no type: refused when the file holds types (``ts2 seg build`` needs one per error),
        else the column, empty as ``ts2 seg generate --real`` writes it, is left out of the file."""
        known = self.types()
        has_column = "error_types" in frame.columns
        labels = frame["errors"].str.split(ERROR_SEPARATOR).explode().str.strip()
        labels = labels[labels.notna() & (labels != "")]
        untyped = sorted(set(labels) - set(known))
        if untyped:
            if has_column and frame["error_types"].str.strip().ne("").any():
                raise ValueError(f"element {untyped[0]!r} has no error type, and the file's errors are typed: "
                                 "add it again with a type")
            return frame.drop(columns=["error_types"]) if has_column else frame
        if not has_column and not known:
            return frame
        kinds = labels.map(known).groupby(level=0).agg(ERROR_SEPARATOR.join)
        frame = frame.copy()
        frame["error_types"] = kinds.reindex(frame.index).fillna("").to_numpy()
        return frame

    def confirm(self, seg_id, file_names) -> int:
        """Mark images reviewed with their error sets as they are (a designed set confirmed); saved at once.
        Returns how many images of the SEG were marked.

        Raises
        ------
        ValueError
            An unknown SEG.
        """
        with self._lock:
            self.refresh()
            seg_id = self._check_seg(seg_id)
            hit = (self.frame["seg_id"] == seg_id) & self.frame["file_name"].isin([str(f) for f in file_names])
            frame = self.frame.copy()
            if REVIEWED not in frame.columns:
                frame[REVIEWED] = ""
            frame.loc[hit, REVIEWED] = "yes"
            self.frame = frame
            self.save()
            return int(hit.sum())

    def add_element(self, seg_id, name: str, kind: str | None = None) -> list[str]:
        """Offer a new element (checkbox) for a SEG; returns the SEG's elements.

        Raises
        ------
        ValueError
            An empty name, one with ``;`` (the separator of the errors column) or a control character, one already
            there, an unknown type, or no type where the file has an ``error_types`` column.
        """
        with self._lock:
            self.refresh()
            seg_id = self._check_seg(seg_id)
            name = (name or "").strip()
            if not name:
                raise ValueError("type the new element's name first (e.g. 'red', 'dog', 'on the table')")
            if ";" in name:
                raise ValueError(f"element {name!r}: ';' separates errors in the ANNOTATIONS file, use another name")
            if re.search(CONTROL_CHARACTERS, name):
                raise ValueError(f"element {name!r} holds a control character; a label is printable text")
            if name in self.elements(seg_id):
                raise ValueError(f"SEG {seg_id} already has the element {name!r}")
            kind = kind or None
            if kind is not None and kind not in ERROR_TYPES:
                raise ValueError(f"error type {kind!r}: expected one of {', '.join(ERROR_TYPES)}")
            known = self.types()
            typed = "error_types" in self.frame.columns and self.frame["error_types"].str.strip().ne("").any()
            if kind is None and typed and name not in known:
                raise ValueError(f"element {name!r}: pick its error type (the file's errors are typed)")
            if kind is not None and known.get(name, kind) != kind:
                raise ValueError(f"element {name!r} is typed {known[name]!r} elsewhere in the file")
            self.added.setdefault(seg_id, []).append(name)
            if kind is not None:
                self.added_types[name] = kind
            return self.elements(seg_id)

    def build(self, out_root: str | Path | None = None) -> tuple[Path, object]:
        """Run ``ts2 seg build`` on the saved file; returns ``(zip of the data dir, SegBuild)``.

        The data dir is written under ``out_root`` (a new temporary folder by default) as ``seg_data/`` and zipped
        beside it as ``seg_data.zip``. Errors are the builder's (``ParameterError`` / ``ValueError``, one line
        naming the row).
        """
        from scorers.ts2.seg.build import build_seg_dir

        with self._lock:
            self.refresh()
            root = Path(out_root) if out_root is not None else Path(tempfile.mkdtemp(prefix="ts2-seg-build-"))
            out = root / "seg_data"
            result = build_seg_dir(self.path, images=self.images, out=out, overwrite=True)
            archive = shutil.make_archive(str(root / "seg_data"), "zip", root_dir=root, base_dir="seg_data")
            return Path(archive), result


def open_annotations(config) -> SegAnnotations | None:
    """The ANNOTATIONS file ``config`` names (``AppConfig.annotations``), or None when it names none."""
    if getattr(config, "annotations", None) is None:
        return None
    images = config.seg_images or Path(config.annotations).parent
    return SegAnnotations(config.annotations, images, plan=config.seg_plan, review=config.seg_review)
