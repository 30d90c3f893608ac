"""TS2 question tables (TIFA, DSG): read and validate once, then look questions up by SEG id.

A row: ``id`` (SEG id), ``prompt``, ``question_id`` (0..n-1 per SEG), ``question``, ``choices`` (``|``-joined, at least
two; ``yes|no`` for binary questions), ``answer`` and, for DSG, ``parent_question_id`` (``-1`` for none, ``1-0`` for
parents 1 and 0). Every error names the file and the CSV line (data row k is line k + 2).

The release's TIFA table has four questions whose answer is not among their choices (e.g. ``answer='group'`` for
choices ``1|2|3|4``); they are kept as released and can never be answered correctly, as in the release's own scores.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import re

import pandas as pd

__all__ = ["YES_NO", "Question", "QuestionSet", "normalize_prompt", "read_questions", "questions_from_records"]

YES_NO = ("yes", "no")
_REQUIRED = ("id", "question_id", "question", "choices", "answer")


def normalize_prompt(prompt: str) -> str:
    """Lower-case words without punctuation: the release's question tables drop commas that ``metadata.csv`` keeps
    (e.g. SEG 8 ``One laptop, a mouse, ...`` vs ``One laptop a mouse ...``), so prompts are compared in this form."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", str(prompt).lower()).split())


@dataclass(frozen=True)
class Question:
    """One question about an image of a SEG. ``parents`` are DSG dependencies (question ids of the same SEG)."""

    seg_id: int
    question_id: int
    question: str
    choices: tuple[str, ...]
    answer: str
    parents: tuple[int, ...] = ()
    prompt: str = ""
    element: str = ""
    category: str = ""

    @property
    def is_yes_no(self) -> bool:
        return tuple(c.lower() for c in self.choices) == YES_NO


@dataclass
class QuestionSet:
    """Questions per SEG id, each list ordered by question id (``kind`` is ``"tifa"``, ``"dsg"`` or a free name)."""

    by_seg: dict[int, list[Question]]
    kind: str = "tifa"
    source: str = "<memory>"
    _by_prompt: dict[str, list[int]] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        for seg, questions in self.by_seg.items():
            for q in questions:
                if q.prompt:
                    seg_list = self._by_prompt.setdefault(normalize_prompt(q.prompt), [])
                    if seg not in seg_list:
                        seg_list.append(seg)

    def __len__(self) -> int:
        return sum(len(q) for q in self.by_seg.values())

    def __contains__(self, seg_id: int) -> bool:
        return int(seg_id) in self.by_seg

    @property
    def seg_ids(self) -> list[int]:
        return sorted(self.by_seg)

    def for_seg(self, seg_id: int) -> list[Question]:
        """The questions of one SEG (a clear error when the SEG has none)."""
        try:
            return self.by_seg[int(seg_id)]
        except KeyError:
            raise ValueError(f"{self.source}: no {self.kind} questions for SEG {seg_id}") from None

    def for_prompt(self, prompt: str) -> list[Question]:
        """The questions whose table prompt equals ``prompt`` (compared by :func:`normalize_prompt`); a prompt that
        no SEG or several SEGs of the table have is an error."""
        segs = self._by_prompt.get(normalize_prompt(prompt), [])
        if not segs:
            raise ValueError(f"{self.source}: no {self.kind} questions for prompt {prompt!r}; pass seg_ids")
        if len(segs) > 1:
            raise ValueError(f"{self.source}: prompt {prompt!r} belongs to SEGs {segs}; pass seg_ids to choose")
        return self.by_seg[segs[0]]

    def to_frame(self) -> pd.DataFrame:
        """The set as a question table (TS2 layout + ``element``/``category``), readable by :func:`read_questions`."""
        rows = [{"id": q.seg_id, "prompt": q.prompt, "question_id": q.question_id,
                 "parent_question_id": "-".join(map(str, q.parents)) if q.parents else "-1", "question": q.question,
                 "choices": "|".join(q.choices), "answer": q.answer, "element": q.element, "category": q.category}
                for seg in self.seg_ids for q in self.by_seg[seg]]
        frame = pd.DataFrame(rows)
        return frame if self.kind == "dsg" else frame.drop(columns="parent_question_id")

    def lookup(self, prompts: Sequence[str], seg_ids: Sequence[int] | None = None) -> list[list[Question]]:
        """Questions for each item: by SEG id when given, else by prompt."""
        if seg_ids is not None:
            if len(seg_ids) != len(prompts):
                raise ValueError(f"got {len(prompts)} prompts but {len(seg_ids)} seg_ids")
            return [self.for_seg(s) for s in seg_ids]
        return [self.for_prompt(p) for p in prompts]


def _parse_choices(text: str, where: str) -> tuple[str, ...]:
    parts = tuple(p.strip() for p in str(text).split("|"))
    if len(parts) < 2 or any(p == "" for p in parts):
        raise ValueError(f"{where}: choices {text!r} is not a '|'-joined list of at least two non-empty choices "
                         "(e.g. 'yes|no' or 'red|blue|green')")
    if len(set(parts)) != len(parts):
        raise ValueError(f"{where}: choices {text!r} repeat a choice")
    return parts


def _parse_parents(text: str, where: str) -> tuple[int, ...]:
    text = str(text).strip()
    if text in ("", "-1"):
        return ()
    try:
        parents = tuple(int(p) for p in text.split("-"))
    except ValueError:
        raise ValueError(f"{where}: parent_question_id {text!r} is not -1 or '-'-joined question ids (e.g. 1-0)") \
            from None
    return parents


def _to_int(value: str, name: str, where: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if number != number or number % 1 != 0:
        raise ValueError(f"{where}: {name} {value!r} is not an integer")
    return int(number)


def questions_from_records(
    rows: Iterable[Mapping[str, object]], *, kind: str = "tifa", source: str = "<memory>", line_offset: int = 2
) -> QuestionSet:
    """Validated :class:`QuestionSet` from dict rows with the table's columns (row k is reported as line k + offset)."""
    by_seg: dict[int, list[Question]] = {}
    has_parents = None
    for k, row in enumerate(rows):
        where = f"{source}: line {k + line_offset}"
        missing = [c for c in _REQUIRED if c not in row]
        if missing:
            raise ValueError(f"{where}: missing column(s) {missing}; expected {list(_REQUIRED)}")
        seg = _to_int(row["id"], "SEG id", where)
        qid = _to_int(row["question_id"], "question_id", where)
        question = str(row["question"]).strip()
        if not question:
            raise ValueError(f"{where}: empty question (SEG {seg}, question {qid})")
        choices = _parse_choices(row["choices"], where)
        answer = str(row["answer"]).strip()
        if not answer:
            raise ValueError(f"{where}: empty answer (SEG {seg}, question {qid})")
        if has_parents is None:
            has_parents = "parent_question_id" in row
        parents = _parse_parents(row.get("parent_question_id", "-1"), where)
        if qid in parents:
            raise ValueError(f"{where}: question {qid} of SEG {seg} lists itself as a parent")
        by_seg.setdefault(seg, []).append(Question(
            seg, qid, question, choices, answer, parents, str(row.get("prompt", "")).strip(),
            str(row.get("element", "")).strip(), str(row.get("category", "")).strip()))
    for seg, questions in by_seg.items():
        ids = [q.question_id for q in questions]
        if sorted(ids) != list(range(len(ids))):
            raise ValueError(f"{source}: SEG {seg} has question ids {sorted(ids)}; expected 0..{len(ids) - 1}, "
                             "each once")
        questions.sort(key=lambda q: q.question_id)
        for q in questions:
            unknown = [p for p in q.parents if not 0 <= p < len(ids)]
            if unknown:
                raise ValueError(f"{source}: SEG {seg} question {q.question_id}: parent(s) {unknown} do not exist")
        _check_acyclic(seg, questions, source)
    return QuestionSet(by_seg, kind=kind, source=source)


def _check_acyclic(seg: int, questions: list[Question], source: str) -> None:
    state: dict[int, int] = {}

    def visit(qid: int) -> None:
        if state.get(qid) == 2:
            return
        if state.get(qid) == 1:
            raise ValueError(f"{source}: SEG {seg}: parent links form a cycle through question {qid}")
        state[qid] = 1
        for parent in questions[qid].parents:
            visit(parent)
        state[qid] = 2

    for q in questions:
        visit(q.question_id)


def read_questions(path: str | Path, kind: str | None = None) -> QuestionSet:
    """Read a TS2 question CSV (``tifa_questions.csv`` / ``dsg_questions.csv`` layout) with validation.

    ``kind`` defaults to ``"dsg"`` when the table has ``parent_question_id``, else ``"tifa"``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"question table {path} does not exist")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in _REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; found {list(frame.columns)}")
    if kind is None:
        kind = "dsg" if "parent_question_id" in frame.columns else "tifa"
    return questions_from_records(frame.to_dict("records"), kind=kind, source=str(path))
