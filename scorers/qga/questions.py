"""TS2 question tables (TIFA, DSG): read and validate once, then look questions up by SEG id.

A row: ``id`` (SEG id), ``prompt``, ``question_id`` (0..n-1 per SEG), ``question``, ``choices`` (``|``-joined, at least
two; ``yes|no`` for binary questions), ``answer`` and, for DSG, ``parent_question_id`` (``-1`` for none, ``1-0`` for
parents 1 and 0). Reading and the row checks are the dataset builder's (``dataset_script/ts2/ts2.py``:
``read_question_csv``, ``validate_question_rows``), the one implementation shared with the dataset build and
``scorers.data.read_question_frame``; this module adds only what scoring needs (question ids 0..n-1 per SEG, stripped text,
lookup by SEG or prompt). Every error names the file, the CSV line, the SEG and the question.

The release's TIFA table has four questions whose answer is not among their choices (e.g. ``answer='group'`` for
choices ``1|2|3|4``); they are kept as released and can never be answered correctly, as in the release's own scores.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import pandas as pd

__all__ = ["Question", "QuestionSet", "is_yes_no", "normalize_prompt", "questions_from_records", "read_question_set",
           "read_questions"]


def is_yes_no(choices: Sequence[str]) -> bool:
    """Whether a question's choices are exactly yes and no, in either order and any case (``yes|no``, ``No|Yes``).

    The one test of a binary question used by matching, question tables and question generation (the dataset builder,
    standalone on the Hub, keeps a copy: ``is_yes_no_choices``, checked to agree in the tests)."""
    return len(choices) == 2 and {str(c).strip().lower() for c in choices} == {"yes", "no"}


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
        return is_yes_no(self.choices)


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
        """The set as a question table (TS2 layout + ``element``/``category``), readable by :func:`read_question_set`."""
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


def _builder():
    """The dataset builder script (``scorers.data.builder_module``): it holds the one implementation of the
    question-table rules, shared with the dataset build and ``scorers.data.read_question_frame``."""
    from ..data import builder_module

    return builder_module()


def questions_from_records(
    rows: Iterable[Mapping[str, object]], *, kind: str = "tifa", source: str = "<memory>", line_offset: int = 2,
    line_of: Sequence[int] | Callable[[int], int] | None = None,
) -> QuestionSet:
    """Validated :class:`QuestionSet` from dict rows with the table's columns.

    The rows are checked by the dataset builder's ``validate_question_rows`` (integer ids, unique question ids per
    SEG, non-blank question/answer, two or more distinct choices, DSG parents that parse, exist and form no cycle;
    ``parent_question_id`` is required for ``kind="dsg"`` and checked for any kind when present), plus the one rule
    scoring adds: question ids are 0..n-1 per SEG. ``prompt``, ``element`` and ``category`` are optional. Errors
    (``scorers.data.TS2DataError``, a ``ValueError``) name ``source``, the line, the SEG and the question; row k is
    line ``line_of[k]`` (a sequence or function) or, by default, ``k + line_offset``.
    """
    rows = list(rows)
    if line_of is None:
        line_of = lambda k: k + line_offset  # noqa: E731
    builder = _builder()
    checked = builder.validate_question_rows(rows, kind, source=source, line_of=line_of)
    by_seg: dict[int, list[Question]] = {}
    for record, row in zip(rows, checked):
        by_seg.setdefault(row["seg_id"], []).append(Question(
            row["seg_id"], row["question_id"], row["question"].strip(), tuple(c.strip() for c in row["choices"]),
            row["answer"].strip(), tuple(row.get("parents", ())), row["prompt"].strip(),
            _text(record.get("element")).strip(), _text(record.get("category")).strip()))
    lines = {(row["seg_id"], row["question_id"]): row["line"] for row in checked}
    for seg, questions in by_seg.items():
        questions.sort(key=lambda q: q.question_id)
        # Scoring needs question ids 0..n-1 per SEG (the dataset itself only needs them unique): a raw answers CSV
        # names each image's questions by position, starting at 0 (scorers.qga.answers splits images at question 0
        # and expects question r - start on row r), and records/DSG parents index a SEG's questions by id.
        for position, q in enumerate(questions):
            if q.question_id != position:
                ids = [x.question_id for x in questions]
                raise builder.TS2DataError(
                    f"{source} line {lines[seg, q.question_id]} (SEG {seg}) question {q.question_id}: SEG {seg} has "
                    f"question ids {ids}; scoring needs 0..{len(ids) - 1}, each once")
    return QuestionSet(by_seg, kind=kind, source=source)


def _text(value: object) -> str:
    return "" if value is None else str(value)


def read_question_set(path: str | Path, kind: str | None = None) -> QuestionSet:
    """Read a TS2 question CSV (``tifa_questions.csv`` / ``dsg_questions.csv`` layout) with validation.

    ``kind`` defaults to ``"dsg"`` when the table has ``parent_question_id``, else ``"tifa"``. The file is read and
    checked by the dataset builder (``read_question_csv`` + ``validate_question_rows``), so a table is accepted or
    rejected, with the same message, here, by ``scorers.data.read_question_frame`` and by the dataset build; extra
    columns ``element``/``category`` (written by :meth:`QuestionSet.to_frame`) are kept.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"question table {path} does not exist")
    kind, lines, records = _builder().read_question_csv(str(path), kind)
    return questions_from_records(records, kind=kind, source=str(path), line_of=lines)


#: The former name of :func:`read_question_set`, kept so existing callers keep working.
read_questions = read_question_set
