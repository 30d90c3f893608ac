"""Build a SEG tab logic: annotate each image's error set in an ANNOTATIONS file, see its node and the SEG's graph.

The Real and Nat procedures (and the review of Synth) end with one fact per image: which of the prompt's elements it
gets wrong. This tab shows a SEG's images with the prompt's elements as checkboxes; a tick is saved at once into the
ANNOTATIONS CSV (``ts2 seg build``'s input: ``seg_id, prompt, file_name, errors``, ``;``-joined; optional
``image_source``, ``partition``, ``error_types``) by an atomic write, so closing the page loses nothing. Node labels,
edges and unreachable sets come from :mod:`scorers.stats.error_sets`; the data dir offered for download is what
:func:`scorers.ts2.seg_build.build_segs` writes. The file is the one the demo was started with
(``AppConfig.annotations``, ``ts2 demo --annotations``) or one uploaded in the tab (:func:`open_upload`: a working
copy on the server, kept per browser). Nothing here imports gradio except :func:`build_seg_builder_tab`.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd
from matplotlib.figure import Figure

from scorers.atomic import atomic_path
from scorers.errors import ParameterError, mention
from scorers.stats.error_sets import error_set_edges, node_labels, unreachable

__all__ = [
    "ANNOTATION_COLUMNS",
    "ERROR_TYPES",
    "REVIEWED",
    "SLOTS",
    "OpenBooks",
    "PlanElements",
    "SegAnnotations",
    "build_seg_builder_tab",
    "missing_images",
    "open_annotations",
    "open_upload",
    "read_plan_elements",
    "read_review",
]


#: the columns every ANNOTATIONS file has (``ts2 seg build``'s input)
ANNOTATION_COLUMNS = ("seg_id", "prompt", "file_name", "errors")
#: the error types of the ``error_types`` column (issue 35; the paper's four kinds of edge)
ERROR_TYPES = ("missing", "attribute", "relation", "action")
#: the column the tab adds to mark the images a person has ticked or confirmed (``yes``; ``ts2 seg build`` ignores it)
REVIEWED = "reviewed"
#: images shown per page of a SEG (each with its checkboxes); a SEG with more gets pages
SLOTS = 12
#: slots per row of the page
COLUMNS = 4
#: longest side of an image as shown (pixels): the tab shows thumbnails, the file is never changed
THUMBNAIL_PX = 256
#: the review list's columns that may hold what the judge saw, first found is shown under the image (``ts2 seg
#: check`` writes ``details``)
REVIEW_NOTE_COLUMNS = ("details", "disagreement", "reason", "note", "detail", "answers")

INTRO = """\
**Build a SEG** (the Real and Nat procedures, and the review of Synth): each image gets the set of the prompt's
elements it gets **wrong**. Tick them under each image; images with the same set share a node (`0` = no error, `1a`,
`1b`... = one error), and the graph below updates as you tick. Every tick is saved at once to the ANNOTATIONS file,
so closing the page loses nothing. **Build data dir** runs `ts2 seg build` on it and offers the result as a zip.
"""

NOT_CONFIGURED = """\
*No ANNOTATIONS file is open.* Upload one and its images below, or start the demo with one, e.g. after
`ts2 seg generate PROMPTS --pipeline P --real 20 --out DIR`:
`ts2 demo --annotations DIR/real_annotations.csv --images DIR` (on a Space: the `TS2_ANNOTATIONS` and
`TS2_SEG_IMAGES` variables). The file is a CSV with one row per image: `seg_id, prompt, file_name, errors` (errors
`;`-joined, empty for an error-free image), as `ts2 seg build` reads it.
"""


# ----------------------------------------------------------------------------------------------------------------------
# Reading the side files: a plan (elements per prompt) and a review list (the judge's disagreements)
# ----------------------------------------------------------------------------------------------------------------------


def _split(cell: str) -> list[str]:
    return [part.strip() for part in str(cell).split(";") if part.strip()]


#: a plan element's type -> the error its ablation makes (``ts2 seg plan`` types elements; an error type is kept)
TYPE_OF_ELEMENT = {"entity": "missing", "object": "missing", **{t: t for t in ERROR_TYPES}}


def _element_name(item) -> tuple[str | None, str | None]:
    """``(name, error type or None)`` of one plan element: a string, or an object naming it (``label`` first: the
    name ``ts2 seg plan`` uses in error sets) with perhaps a ``type``."""
    if isinstance(item, str):
        return item.strip() or None, None
    if isinstance(item, dict):
        for key in ("label", "name", "element", "id", "text"):
            if isinstance(item.get(key), str) and item[key].strip():
                kind = item.get("type") or item.get("error_type") or item.get("kind")
                return item[key].strip(), TYPE_OF_ELEMENT.get(kind) if isinstance(kind, str) else None
    return None, None


@dataclass
class PlanElements:
    """The elements a plan lists, ``[(element, error type or None), ...]`` by SEG id (text) and by prompt."""

    by_seg: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)
    by_prompt: dict[str, list[tuple[str, str | None]]] = field(default_factory=dict)

    def of(self, seg_id, prompt: str) -> list[tuple[str, str | None]]:
        """A SEG's elements: by its id when the plan has it, else by its prompt, else none."""
        found = self.by_seg.get(str(seg_id))
        return found if found is not None else self.by_prompt.get(str(prompt).strip(), [])

    def types(self) -> dict[str, str]:
        return {name: kind for elements in (*self.by_seg.values(), *self.by_prompt.values())
                for name, kind in elements if kind}


def read_plan_elements(path: str | Path) -> PlanElements:
    """The elements a plan file (``ts2 seg plan``) lists per SEG.

    The plan is JSON: ``{"segs": [{"seg_id": 0, "prompt": ..., "elements": [...], "nodes": [...]}]}`` as
    ``ts2 seg plan`` writes it, or one such SEG object, or a list of them (``plans`` / ``prompts`` are read like
    ``segs``). An element is a string or an object naming it (``label``, ``name`` or ``element``) with an optional
    ``type`` (``entity`` counts as a ``missing`` error; ``attribute``, ``relation``, ``action`` as themselves). The
    labels of the nodes' designed ``errors`` are elements too. Other fields are ignored, so an edited plan still reads.

    Raises
    ------
    ParameterError
        ``plan``: the file cannot be read, is not JSON, or lists no prompt with elements.
    """
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ParameterError("{given}: not a plan file (JSON) that can be read: {why}",
                             given=mention("seg_plan", str(path)), why=str(error).splitlines()[0]) from None
    if isinstance(payload, dict):
        for key in ("segs", "plans", "prompts"):
            if isinstance(payload.get(key), list):
                payload = payload[key]
                break
    plans = payload if isinstance(payload, list) else [payload]
    out = PlanElements()
    for plan in plans:
        if not isinstance(plan, dict) or not isinstance(plan.get("prompt"), str):
            continue
        elements = [_element_name(item) for item in plan.get("elements") or []]
        for node in plan.get("nodes") or []:  # the designed error sets name elements too
            if isinstance(node, dict):
                errors = node.get("errors") or []
                elements.extend(_element_name(item) for item in (_split(errors) if isinstance(errors, str)
                                                                 else errors))
        named: list[tuple[str, str | None]] = []
        for name, kind in elements:
            if name and name not in {n for n, _ in named}:
                named.append((name, kind))
        out.by_prompt.setdefault(plan["prompt"].strip(), named)
        if plan.get("seg_id") is not None:
            out.by_seg[str(plan["seg_id"])] = named
    if not any(out.by_prompt.values()):
        raise ParameterError("{given}: the plan lists no prompt with elements (expected ts2 seg plan's JSON: "
                             "'segs' with 'prompt' and 'elements')", given=mention("seg_plan", str(path)))
    return out


def read_review(path: str | Path) -> pd.DataFrame:
    """The review list of ``ts2 seg check``: the images whose judge answers disagree with their designed error set,
    in its order (most confident first). Returns a frame with ``file_name``, ``seg_id`` (``""`` when the list has
    none), ``order`` and ``note`` (what the judge saw, from the first of :data:`REVIEW_NOTE_COLUMNS` it has).

    A CSV (or a JSON list of objects) with a ``file_name`` column (``ts2 seg check``'s: ``seg_id, file_name, errors,
    disagreements, confidence, details, answers``); rows with ``disagreements`` 0 and no ``details`` are left out,
    and rows of one image after its first are ignored.

    Raises
    ------
    ParameterError
        ``review``: the file cannot be read or has no ``file_name`` column.
    """
    path = Path(path)
    try:
        if path.suffix.lower() == ".json":
            payload = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(payload, dict):
                payload = next((v for v in payload.values() if isinstance(v, list)), [])
            frame = pd.DataFrame(payload).astype(str)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, UnicodeDecodeError, ValueError, pd.errors.ParserError) as error:
        raise ParameterError("{given}: not a review list that can be read: {why}",
                             given=mention("seg_review", str(path)), why=str(error).splitlines()[0]) from None
    if "file_name" not in frame.columns:
        raise ParameterError("{given}: no file_name column (columns: {columns}); expected the review list of "
                             "ts2 seg check", given=mention("seg_review", str(path)),
                             columns=", ".join(map(str, frame.columns)))
    if "disagreements" in frame.columns:  # `ts2 seg check --all` lists agreeing images too: not those
        count = pd.to_numeric(frame["disagreements"], errors="coerce").fillna(0)
        details = frame["details"] if "details" in frame.columns else pd.Series("", index=frame.index)
        frame = frame[(count > 0) | (details.str.strip() != "")]
    note_column = next((c for c in REVIEW_NOTE_COLUMNS if c in frame.columns), None)
    out = pd.DataFrame({
        "file_name": frame["file_name"].astype(str),
        "seg_id": frame["seg_id"].astype(str) if "seg_id" in frame.columns else "",
        "note": frame[note_column].astype(str) if note_column else "",
    })
    out = out.drop_duplicates(["seg_id", "file_name"]).reset_index(drop=True)
    out["order"] = range(len(out))
    return out


# ----------------------------------------------------------------------------------------------------------------------
# The annotations being edited
# ----------------------------------------------------------------------------------------------------------------------


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
        twice = frame.duplicated(["seg_id", "file_name"], keep="first")
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
            labels, kinds = self.frame["errors"].str.split(";"), self.frame["error_types"].str.split(";")
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
        used = rows["errors"].str.split(";").explode().str.strip()
        names = [name for name, _ in self.plan.of(seg_id, self.prompt(seg_id))]
        names += [e for e in pd.unique(used) if isinstance(e, str) and e]
        names += self.added.get(str(seg_id), [])
        return list(dict.fromkeys(names))

    def error_sets(self, seg_id) -> list[list[str]]:
        """Each image's error labels, in :meth:`rows` order."""
        return [_split(cell) for cell in self.rows(seg_id)["errors"]]

    def nodes(self, seg_id) -> pd.DataFrame:
        """One row per image (display order): ``file_name``, ``errors``, ``node`` (:func:`node_labels`), ``reviewed``
        (``yes`` once a person ticked or confirmed it), ``judge`` (the review list's note)."""
        rows = self.rows(seg_id)
        sets = [_split(cell) for cell in rows["errors"]]
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
        levels = sorted(set(size.values()))
        column = {n: sorted(label for label in counts.index if size[label] == n) for n in levels}
        position = {}
        for x, n in enumerate(levels):
            for j, label in enumerate(column[n]):
                position[label] = (x, (len(column[n]) - 1) / 2.0 - j)
        tallest = max(len(v) for v in column.values())
        fig = Figure(figsize=(max(4.0, 1.9 * len(levels)), max(2.2, 1.1 * tallest)), dpi=100)
        ax = fig.add_subplot()
        for start, end, error in error_set_edges(sets):
            (x0, y0), (x1, y1) = position[start], position[end]
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0), zorder=1,
                        arrowprops={"arrowstyle": "-|>", "color": "#9aa3b2", "lw": 1.2, "shrinkA": 22, "shrinkB": 22})
            ax.text((x0 + x1) / 2, (y0 + y1) / 2, error, fontsize=7, color="#555", ha="center", va="bottom", zorder=4)
        far = set(unreachable(sets))
        for label, (x, y) in position.items():
            colour = "#4c72b0" if size[label] == 0 else "#dd8452"
            ax.scatter([x], [y], s=1500, color=colour, zorder=2, edgecolors="#c0392b" if label in far else colour,
                       linewidths=3 if label in far else 1)
            ax.text(x, y, f"{label}\n{counts[label]} img", ha="center", va="center", color="white", fontsize=9,
                    zorder=3)
        ax.set_xticks(range(len(levels)), [f"{n} error{'s' if n != 1 else ''}" for n in levels])
        ax.set_yticks([])
        ax.set_xlim(-0.6, len(levels) - 0.4)
        ax.set_ylim(-tallest / 2.0 - 0.2, tallest / 2.0 + 0.2)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
        ax.set_title(f"SEG {seg_id}: error graph (red ring: not reachable one error at a time)", fontsize=9)
        fig.tight_layout()
        return fig

    def image(self, file_name: str):
        """The image as a thumbnail (PIL), or None when the file is missing or unreadable."""
        from PIL import Image

        candidate = (self.images / file_name).resolve()
        if self.images.resolve() not in candidate.parents or not candidate.is_file():
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
            frame.loc[hit, "errors"] = ";".join(ordered)
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
        labels = frame["errors"].str.split(";").explode().str.strip()
        labels = labels[labels.notna() & (labels != "")]
        untyped = sorted(set(labels) - set(known))
        if untyped:
            if has_column and frame["error_types"].str.strip().ne("").any():
                raise ValueError(f"element {untyped[0]!r} has no error type, and the file's errors are typed: "
                                 "add it again with a type")
            return frame.drop(columns=["error_types"]) if has_column else frame
        if not has_column and not known:
            return frame
        kinds = labels.map(known).groupby(level=0).agg(";".join)
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
            An empty name, one with ``;`` (the separator of the errors column), one already there, an unknown type,
            or no type where the file has an ``error_types`` column.
        """
        with self._lock:
            self.refresh()
            seg_id = self._check_seg(seg_id)
            name = (name or "").strip()
            if not name:
                raise ValueError("type the new element's name first (e.g. 'red', 'dog', 'on the table')")
            if ";" in name:
                raise ValueError(f"element {name!r}: ';' separates errors in the ANNOTATIONS file, use another name")
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
        from scorers.ts2.seg_build import build_segs

        with self._lock:
            self.refresh()
            root = Path(out_root) if out_root is not None else Path(tempfile.mkdtemp(prefix="ts2-seg-build-"))
            out = root / "seg_data"
            result = build_segs(self.path, images=self.images, out=out, overwrite=True)
            archive = shutil.make_archive(str(root / "seg_data"), "zip", root_dir=root, base_dir="seg_data")
            return Path(archive), result


def open_annotations(config) -> SegAnnotations | None:
    """The ANNOTATIONS file ``config`` names (``AppConfig.annotations``), or None when it names none."""
    if getattr(config, "annotations", None) is None:
        return None
    images = config.seg_images or Path(config.annotations).parent
    return SegAnnotations(config.annotations, images, plan=config.seg_plan, review=config.seg_review)


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
            root = into.resolve()
            out = []
            for member in members:
                target = (into / member.filename).resolve()
                if root not in target.parents:
                    raise ValueError(f"{archive.name}: member {member.filename!r} would land outside the folder")
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
    frame = SegAnnotations(target, work).frame  # the file's own checks, before any image is copied
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
        wanted = (work / file_name).resolve()
        if work.resolve() not in wanted.parents or wanted.exists():
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
    return [str(n) for n in names if not (book.images / str(n)).is_file()]


class OpenBooks:
    """The ANNOTATIONS files the tab has open: the configured one (key ``""``) and one per upload, under a random
    key that the browser keeps (``gr.BrowserState``), so a reloaded page finds its upload again."""

    def __init__(self, configured: SegAnnotations | None):
        self._books: dict[str, SegAnnotations] = {"": configured} if configured is not None else {}
        self._lock = threading.Lock()

    def get(self, key) -> SegAnnotations | None:
        """The book of ``key``; the configured one for an unknown key (a server restarted since); None if none."""
        return self._books.get(key or "") or self._books.get("")

    def has_upload(self, key) -> bool:
        return bool(key) and key in self._books

    def add(self, book: SegAnnotations) -> str:
        import uuid

        key = uuid.uuid4().hex
        with self._lock:
            self._books[key] = book
        return key


# ----------------------------------------------------------------------------------------------------------------------
# The tab
# ----------------------------------------------------------------------------------------------------------------------


def _pages(n_images: int) -> list[tuple[str, int]]:
    n = max(1, -(-n_images // SLOTS))
    return [(f"images {k * SLOTS + 1}-{min(n_images, (k + 1) * SLOTS)}", k) for k in range(n)]


def build_seg_builder_tab(config, *, demo, error: Callable[[str], str],
                          unexpected: Callable[[Exception], str]) -> None:
    """The Build a SEG tab's widgets (inside ``gr.Tab``); ``demo``: the Blocks, whose page load re-reads the file so a
    reloaded page shows what was saved. The file is the one ``config`` names, or one uploaded in the tab (a working
    copy, kept for the browser that uploaded it). Handlers never raise into gradio: an error is one line in the tab's
    status."""
    import gradio as gr

    gr.Markdown(INTRO, elem_id="segb-intro")
    configured, problem = None, None
    try:
        configured = open_annotations(config)
    except (ValueError, OSError) as failure:
        problem = error(str(failure))
    books = OpenBooks(configured)
    if configured is None:
        gr.Markdown(problem or NOT_CONFIGURED, elem_id="segb-problem")
    # the upload this browser opened (its key), kept across reloads
    book_key = gr.BrowserState("", storage_key="ts2-seg-builder-upload")
    with gr.Accordion("Open an uploaded ANNOTATIONS file", open=configured is None, elem_id="segb-upload"):
        gr.Markdown("Upload the CSV and its images (image files or a zip that keeps the folders `file_name` names). "
                    "The tab then works on a copy on this server, saved at each tick: download it below when done.")
        with gr.Row():
            upload_csv = gr.File(label="ANNOTATIONS CSV", file_types=[".csv"], type="filepath",
                                 elem_id="segb-upload-csv")
            upload_images = gr.File(label="Images (files or a .zip)", file_count="multiple", type="filepath",
                                    elem_id="segb-upload-images")
        open_button = gr.Button("Open the uploaded files", elem_id="segb-open")
    status = gr.Markdown("", elem_id="segb-status")

    first = configured.seg_ids()[0] if configured is not None else None
    with gr.Column(visible=configured is not None, elem_id="segb-editor") as editor:
        file_line = gr.Markdown("", elem_id="segb-file")
        with gr.Row():
            seg_pick = gr.Dropdown(configured.choices() if configured is not None else [], value=first, label="SEG",
                                   elem_id="segb-pick", scale=3)
            page_pick = gr.Dropdown(_pages(len(configured.rows(first))) if configured is not None else [],
                                    value=0 if configured is not None else None, label="Page", elem_id="segb-page",
                                    scale=1)
        summary = gr.Markdown("", elem_id="segb-summary")
        with gr.Row():
            new_name = gr.Textbox(label="New element (what an image can get wrong)", elem_id="segb-new-element",
                                  scale=3, max_length=200)
            new_type = gr.Dropdown([("(no type)", "")] + [(t, t) for t in ERROR_TYPES], value="", label="Type",
                                   elem_id="segb-new-type", scale=1)
            add_button = gr.Button("Add element", elem_id="segb-add", scale=1)
        groups, images, notes, boxes = [], [], [], []
        for start in range(0, SLOTS, COLUMNS):
            with gr.Row(equal_height=False):
                for k in range(start, start + COLUMNS):
                    with gr.Column(visible=False, min_width=200) as group:
                        images.append(gr.Image(None, type="pil", interactive=False, show_label=False, height=200,
                                               elem_id=f"segb-image-{k}"))
                        notes.append(gr.Markdown("", elem_id=f"segb-note-{k}"))
                        boxes.append(gr.CheckboxGroup([], value=[], label="", elem_id=f"segb-errors-{k}"))
                    groups.append(group)
        confirm_button = gr.Button("Confirm the sets shown (mark this page's images reviewed)", size="sm",
                                   elem_id="segb-confirm")
        with gr.Row():
            with gr.Column(scale=1):
                nodes = gr.Dataframe(pd.DataFrame(columns=["file_name", "errors", "node", "reviewed", "judge"]),
                                     interactive=False, label="Node of each image", elem_id="segb-nodes")
            with gr.Column(scale=1):
                graph = gr.Plot(label="Error graph", elem_id="segb-graph")
        with gr.Row():
            build_button = gr.Button("Build data dir (ts2 seg build)", variant="primary", elem_id="segb-build")
            download = gr.File(label="Built data dir (zip)", interactive=False, elem_id="segb-download")
        annotations_file = gr.File(label="The ANNOTATIONS file being edited (the uploaded copy)", interactive=False,
                                   visible=False, elem_id="segb-annotations-file")

    def book_of(key) -> SegAnnotations:
        book = books.get(key)
        if book is None:
            raise ValueError("no ANNOTATIONS file is open: upload one above, or start the demo with "
                             "`ts2 demo --annotations FILE --images DIR`")
        return book

    def page_rows(book, seg_id, page) -> pd.DataFrame:
        rows = book.rows(seg_id)
        page = int(page or 0)
        return rows.iloc[page * SLOTS:(page + 1) * SLOTS]

    def slot_label(file_name: str, node: str, reviewed: str) -> str:
        return f"{file_name} · node {node}{' · ✓ reviewed' if reviewed == 'yes' else ''} · wrong:"

    def graph_outputs(book, seg_id):
        return book.summary(seg_id), book.nodes(seg_id), book.figure(seg_id)

    def working_copy(book):
        """The uploaded file's working copy as it is now (gradio serves a snapshot of a file: renewed at each save)."""
        return gr.update(value=str(book.path), visible=True) if book.uploaded else gr.update(visible=False)

    def labels_only(book, seg_id, page):
        """Each slot's checkbox label (its node), as the node labels of every image may change with one tick."""
        shown = page_rows(book, seg_id, page)
        table = book.nodes(seg_id).set_index("file_name")
        out = [gr.update(label=slot_label(f, table.at[f, "node"], table.at[f, "reviewed"])) for f in shown["file_name"]]
        return out + [gr.update()] * (SLOTS - len(out))

    def render(book, seg_id, page):
        """Every output of a SEG page: the editor, the SEG picker, slots (group, image, note, checkboxes), summary,
        nodes, graph, pages, the working copy's download."""
        book.refresh()
        seg_id = str(seg_id) if seg_id is not None and str(seg_id) in book.seg_ids() else book.seg_ids()[0]
        pages = _pages(len(book.rows(seg_id)))
        page = int(page) if page is not None and 0 <= int(page) < len(pages) else 0
        shown = page_rows(book, seg_id, page)
        elements = book.elements(seg_id)
        table = book.nodes(seg_id).set_index("file_name")
        slot_groups, slot_images, slot_notes, slot_boxes = [], [], [], []
        for k in range(SLOTS):
            if k < len(shown):
                row = shown.iloc[k]
                name = row["file_name"]
                slot_groups.append(gr.update(visible=True))
                slot_images.append(book.image(name))
                slot_notes.append(f"**Judge:** {row['note']}" if row["note"] else "")
                slot_boxes.append(gr.update(choices=elements, value=_split(row["errors"]),
                                            label=slot_label(name, table.at[name, "node"], table.at[name, "reviewed"])))
            else:
                slot_groups.append(gr.update(visible=False))
                slot_images.append(None)
                slot_notes.append("")
                slot_boxes.append(gr.update(choices=[], value=[]))
        where = "a working copy of your upload" if book.uploaded else f"`{book.path}`"
        line = f"Saving to {where} (images from `{book.images}`)"
        missing = missing_images(book)
        if missing:
            line += f"; *{len(missing)} image file(s) not found, e.g. `{missing[0]}`*"
        return (gr.update(visible=True), line, gr.update(choices=book.choices(), value=seg_id), *slot_groups,
                *slot_images, *slot_notes, *slot_boxes, *graph_outputs(book, seg_id),
                gr.update(choices=pages, value=page), working_copy(book))

    view_outputs = [editor, file_line, seg_pick, *groups, *images, *notes, *boxes, summary, nodes, graph, page_pick,
                    annotations_file]

    def on_view(key, seg_id, page):
        try:
            book = books.get(key)
            if book is None:  # nothing open yet: the upload box says what to do
                return (*([gr.update()] * len(view_outputs)), "")
            return (*render(book, seg_id, page), "")
        except ValueError as problem:
            return (*([gr.update()] * len(view_outputs)), error(str(problem)))
        except Exception as problem:
            return (*([gr.update()] * len(view_outputs)), unexpected(problem))

    def on_seg(key, seg_id):
        return on_view(key, seg_id, 0)

    def on_key(key):
        """The browser's stored upload key arrived (or an upload was opened): that file's first SEG. No upload of
        this server under it (none yet, or the server restarted): the page load's view stays."""
        if not books.has_upload(key):
            return (*([gr.update()] * len(view_outputs)), gr.update())
        return on_view(key, None, 0)

    def on_open(key, csv_path, image_paths):
        try:
            if not csv_path:
                raise ValueError("upload the ANNOTATIONS CSV first")
            book = open_upload(csv_path, image_paths or [], max_bytes=config.max_upload_bytes)
            key = books.add(book)
            n_missing = len(missing_images(book))
            note = (f"Opened `{book.path.name}`: {len(book.seg_ids())} SEG(s), {len(book.frame)} images"
                    + (f"; {n_missing} image file(s) not found among the uploads" if n_missing else ""))
            return (key, *render(book, None, 0), note)
        except ValueError as problem:
            return (key, *([gr.update()] * len(view_outputs)), error(str(problem)))
        except Exception as problem:
            return (key, *([gr.update()] * len(view_outputs)), unexpected(problem))

    def on_tick(k):
        def handler(key, seg_id, page, ticked):
            try:
                book = book_of(key)
                shown = page_rows(book, seg_id, page)
                if k >= len(shown):
                    raise ValueError("this image slot is empty: pick the SEG again")
                file_name = shown["file_name"].iloc[k]
                saved = book.set_errors(seg_id, file_name, ticked)
                note = f"Saved `{file_name}`: " + ("; ".join(saved) if saved else "no error")
                return (*labels_only(book, seg_id, page), *graph_outputs(book, seg_id), working_copy(book), note)
            except ValueError as problem:
                return (*([gr.update()] * (SLOTS + 4)), error(str(problem)))
            except Exception as problem:
                return (*([gr.update()] * (SLOTS + 4)), unexpected(problem))
        return handler

    def on_confirm(key, seg_id, page):
        try:
            book = book_of(key)
            n = book.confirm(seg_id, page_rows(book, seg_id, page)["file_name"])
            return (*labels_only(book, seg_id, page), *graph_outputs(book, seg_id), working_copy(book),
                    f"Confirmed {n} image(s) of SEG {seg_id} as they are (marked reviewed)")
        except ValueError as problem:
            return (*([gr.update()] * (SLOTS + 4)), error(str(problem)))
        except Exception as problem:
            return (*([gr.update()] * (SLOTS + 4)), unexpected(problem))

    def on_add(key, seg_id, page, name, kind):
        try:
            book = book_of(key)
            elements = book.add_element(seg_id, name, kind or None)
            updates = [gr.update(choices=elements) for _ in range(len(page_rows(book, seg_id, page)))]
            updates += [gr.update()] * (SLOTS - len(updates))
            return (*updates, "", f"Added the element `{name.strip()}` to SEG {seg_id}: tick it where an image gets "
                                  "it wrong")
        except ValueError as problem:
            return (*([gr.update()] * SLOTS), gr.update(), error(str(problem)))
        except Exception as problem:
            return (*([gr.update()] * SLOTS), gr.update(), unexpected(problem))

    def on_build(key):
        try:
            archive, result = book_of(key).build()
            warnings = list(getattr(result, "warnings", []) or [])
            line = (f"**Built** {result.n_segs} SEG(s), {result.n_images} images: `{archive.name}` below "
                    f"(a data dir for `ts2 score/meta/report --data-dir`).")
            if warnings:
                line += f" {len(warnings)} warning(s): " + "; ".join(warnings[:5]) + ("..." if len(warnings) > 5
                                                                                       else "")
            return str(archive), line
        except (ValueError, OSError) as problem:
            return None, error(str(problem).strip().splitlines()[0] if str(problem).strip() else repr(problem))
        except Exception as problem:
            return None, unexpected(problem)

    seg_pick.select(on_seg, [book_key, seg_pick], [*view_outputs, status])
    page_pick.select(on_view, [book_key, seg_pick, page_pick], [*view_outputs, status])
    for k, box in enumerate(boxes):
        # .input: the person's ticks only (not the values a view sets)
        box.input(on_tick(k), [book_key, seg_pick, page_pick, box],
                  [*boxes, summary, nodes, graph, annotations_file, status])
    confirm_button.click(on_confirm, [book_key, seg_pick, page_pick],
                         [*boxes, summary, nodes, graph, annotations_file, status])
    add_button.click(on_add, [book_key, seg_pick, page_pick, new_name, new_type], [*boxes, new_name, status])
    build_button.click(on_build, [book_key], [download, status])
    open_button.click(on_open, [book_key, upload_csv, upload_images], [book_key, *view_outputs, status])
    # a (re)loaded page shows what the file holds now, not what it held when the app started
    demo.load(on_view, [book_key, seg_pick, page_pick], [*view_outputs, status])
    # the browser's stored upload key arrives after the page load event: show that upload when it does
    book_key.change(on_key, [book_key], [*view_outputs, status])
