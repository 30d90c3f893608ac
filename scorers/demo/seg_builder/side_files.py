"""The side files of the Build a SEG tab: a plan's elements (``ts2 seg plan``) and a review list (``ts2 seg check``).

Both are read leniently (an edited plan still reads; other fields are ignored) and refused in one line naming the
demo's setting (``seg_plan``, ``seg_review``; ``ts2 demo`` says ``--seg-plan`` / ``--seg-review``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from scorers.errors import ParameterError, mention
from scorers.stats.error_sets import ERROR_TYPE_OF_ELEMENT, split_error_labels

__all__ = ["REVIEW_NOTE_COLUMNS", "PlanElements", "read_plan_elements", "read_review"]

#: the review list's columns that may hold what the judge saw, first found is shown under the image (``ts2 seg
#: check`` writes ``details``)
REVIEW_NOTE_COLUMNS = ("details", "disagreement", "reason", "note", "detail", "answers")


def _element_name(item) -> tuple[str | None, str | None]:
    """``(name, error type or None)`` of one plan element: a string, or an object naming it (``label`` first: the
    name ``ts2 seg plan`` uses in error sets) with perhaps a ``type``."""
    if isinstance(item, str):
        return item.strip() or None, None
    if isinstance(item, dict):
        for key in ("label", "name", "element", "id", "text"):
            if isinstance(item.get(key), str) and item[key].strip():
                kind = item.get("type") or item.get("error_type") or item.get("kind")
                return item[key].strip(), ERROR_TYPE_OF_ELEMENT.get(kind) if isinstance(kind, str) else None
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
                elements.extend(_element_name(item) for item in (split_error_labels(errors) if isinstance(errors, str)
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
