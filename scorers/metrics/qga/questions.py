"""TS2 question tables (TIFA, DSG): read and validate once, then look questions up by SEG id.

A row: ``id`` (SEG id), ``prompt``, ``question_id`` (0..n-1 per SEG), ``question``, ``choices`` (``|``-joined, at least
two; ``yes|no`` for binary questions), ``answer`` and, for DSG, ``parent_question_id`` (``-1`` for none, ``1-0`` for
parents 1 and 0). This module is the library's one question-table reader and validator (:func:`read_question_csv`,
:func:`validate_question_rows`), used by scoring and by ``scorers.ts2.dataset.read_question_frame``; the dataset builder
(``dataset_script/ts2/ts2.py``), which runs standalone on the Hub, keeps its own copy of the same rules and messages,
and ``tests/dataset_script/test_question_table_parity.py`` checks the two agree on a corpus of bad tables. Scoring adds question ids
0..n-1 per SEG, stripped text and lookup by SEG or prompt. Every error (:class:`QuestionTableError`, a
``ValueError``) names the file, the CSV line, the SEG and the question. Standard library only: no pandas until a
set is turned into a frame (:meth:`QuestionSet.to_frame`).

The release's TIFA table has four questions whose answer is not among their choices (e.g. ``answer='group'`` for
choices ``1|2|3|4``); they are kept as released and can never be answered correctly, as in the release's own scores.
"""
from __future__ import annotations

import csv
import graphlib
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from scorers.checks import parse_int

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["QUESTION_COLUMNS", "Question", "QuestionSet", "QuestionTableError", "check_dsg_graph", "check_question",
           "is_yes_no", "normalize_prompt", "parse_parents", "questions_from_records", "read_question_csv",
           "read_question_set", "validate_question_rows"]

logger = logging.getLogger(__name__)

#: Columns every question table has (DSG tables add ``parent_question_id``).
QUESTION_COLUMNS = ("id", "prompt", "question_id", "question", "choices", "answer")
_PARENTS = re.compile(r"^(?:-1|\d+(?:-\d+)*)$")


class QuestionTableError(ValueError):
    """A question table (or in-memory question rows) breaks TS2's layout; the message names the source, the line,
    the SEG and the question."""


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
        import pandas as pd

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


# --- reading and validating question tables (dataset_script/ts2/ts2.py keeps a standalone copy of these rules) ------
def _read_csv(path: str) -> tuple[list[str], list[tuple[int, dict]]]:
    """Header and ``(line number, row)`` pairs of a CSV (line numbers as an editor shows them); values verbatim."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} does not exist")
    rows = []
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        for row in reader:
            if None in row:
                raise QuestionTableError(f"{path} line {reader.line_num}: {len(header) + len(row[None])} fields, "
                                         f"header has {len(header)}")
            rows.append((reader.line_num, {k: v or "" for k, v in row.items()}))
    return header, rows


def _as_int(text: str, what: str, where: str) -> int:
    value = parse_int(text)  # the tables' integer rule (scorers.checks.INTEGER, SEG ids)
    if value is None:
        raise QuestionTableError(f"{where}: {what} {text!r} is not an integer")
    return value


def _text(value: object) -> str:
    return "" if value is None else str(value)


def read_question_csv(path: str | os.PathLike, kind: str | None = None) -> tuple[str, list[int], list[dict]]:
    """``(kind, lines, records)`` of a TIFA/DSG question CSV, header checked, rows not yet validated.

    ``kind`` ``None`` means ``"dsg"`` when the header has ``parent_question_id``, else ``"tifa"``. ``records`` are the
    CSV's rows as dicts of verbatim strings (extra columns kept); ``lines[k]`` is record k's CSV line (a quoted cell
    may span lines). Pass them to :func:`validate_question_rows`.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        QuestionTableError: a row has more fields than the header, or a needed column is missing.
        ValueError: ``kind`` is not ``"tifa"``, ``"dsg"`` or None.
    """
    if kind not in (None, "tifa", "dsg"):
        raise ValueError(f"kind must be 'tifa', 'dsg' or None (from the header), got {kind!r}")
    path = os.fspath(path)
    header, raw = _read_csv(path)
    if kind is None:
        kind = "dsg" if "parent_question_id" in header else "tifa"
    needed = list(QUESTION_COLUMNS) + (["parent_question_id"] if kind == "dsg" else [])
    missing = [c for c in needed if c not in header]
    if missing:
        raise QuestionTableError(f"{path}: missing column(s) {missing}; expected {needed}")
    return kind, [line for line, _ in raw], [record for _, record in raw]


def parse_parents(text: str, *, where: str = "parent_question_id") -> list[int]:
    """DSG ``parent_question_id`` -> question ids: ``"-1"`` -> ``[]``, ``"0"`` -> ``[0]``, ``"1-0"`` -> ``[1, 0]``."""
    text = str(text).strip()
    if not _PARENTS.match(text):
        raise QuestionTableError(f"{where}: parent_question_id {text!r} is not -1 or question ids joined by '-' "
                                 "(e.g. 1-0)")
    return [] if text == "-1" else [int(part) for part in text.split("-")]


def check_question(question: str, choices: str, answer: str, *, where: str) -> tuple[list[str], bool]:
    """The content rules of one question, shared by TS2's tables and TIFA v1.0 (which labels its own rows):
    ``question`` and ``answer`` not blank; ``choices`` ``|``-joined, at least two, none blank, none repeated
    (compared without surrounding spaces). Returns ``(choices stripped, answer among them)``; an answer outside its
    choices is the caller's to log (TS2's release keeps four such questions).

    Raises:
        QuestionTableError: ``"{where}: empty question"`` and the like, one rule per message.
    """
    if not question.strip():
        raise QuestionTableError(f"{where}: empty question")
    stripped = [c.strip() for c in choices.split("|")]
    if len(stripped) < 2 or not all(stripped):
        raise QuestionTableError(f"{where}: choices {choices!r} is not a '|'-joined list of at least two non-empty "
                                 "choices (e.g. 'yes|no' or 'red|blue|green')")
    repeated = sorted({c for c in stripped if stripped.count(c) > 1})
    if repeated:
        raise QuestionTableError(f"{where}: choices {choices!r} repeat {', '.join(map(repr, repeated))}")
    if not answer.strip():
        raise QuestionTableError(f"{where}: empty answer")
    return stripped, answer.strip() in stripped


def validate_question_rows(records: Iterable[Mapping[str, object]], kind: str, *, source: str,
                           line_of: Sequence[int] | Callable[[int], int] | None = None,
                           seg_ids: set | None = None) -> list[dict]:
    """Check question rows (dicts with the table's columns, from a file or built in memory) and return them parsed.

    TS2's question-table rules (the dataset builder applies the same ones, with the same messages):

    * ``id`` (SEG) and ``question_id`` are integers, ``question_id >= 0`` and unique within its SEG; with ``seg_ids``,
      every SEG id must be one of them;
    * the content rules of :func:`check_question` (non-blank question and answer, two or more distinct choices); an
      answer that is not among its choices is kept and logged once per call;
    * ``parent_question_id`` (required for ``kind="dsg"``, parsed for any kind when present): ``-1`` or question ids
      joined by ``-``; parents exist in the same SEG and form no cycle (:func:`check_dsg_graph`).

    ``line_of``: the line of each record, a sequence or a function of its index (default: index + 2, the line of
    data row k below a header). Rows are ``seg_id, prompt, question_id, question, choices`` (list), ``answer,
    is_yes_no, line`` [+ ``parents``], text verbatim.

    Raises:
        QuestionTableError: naming ``source``, the line, the SEG and the question.
    """
    if line_of is None:
        line_at = lambda k: k + 2  # noqa: E731
    elif callable(line_of):
        line_at = line_of
    else:
        line_at = list(line_of).__getitem__
    required = ["id", "question_id", "question", "choices", "answer"] + (
        ["parent_question_id"] if kind == "dsg" else [])
    rows, first_line, off_choice, has_parents = [], {}, [], False
    for k, record in enumerate(records):
        line = line_at(k)
        where = f"{source} line {line}"
        missing = [c for c in required if c not in record]
        if missing:
            raise QuestionTableError(f"{where}: missing column(s) {missing}; expected {required}")
        seg_id = _as_int(_text(record["id"]), "SEG id", where)
        where = f"{where} (SEG {seg_id})"
        if seg_ids is not None and seg_id not in seg_ids:
            raise QuestionTableError(f"{where}: SEG {seg_id} is not in metadata.csv (known SEG ids: "
                                     f"{min(seg_ids)}-{max(seg_ids)}, {len(seg_ids)} SEGs)")
        question_id = _as_int(_text(record["question_id"]), "question_id", where)
        where = f"{where} question {question_id}"
        if question_id < 0:
            raise QuestionTableError(f"{where}: question_id must be >= 0")
        if (seg_id, question_id) in first_line:
            raise QuestionTableError(f"{where}: question_id {question_id} already used on line "
                                     f"{first_line[seg_id, question_id]}")
        first_line[seg_id, question_id] = line
        question, text, answer = _text(record["question"]), _text(record["choices"]), _text(record["answer"])
        stripped, among = check_question(question, text, answer, where=where)
        if not among:
            off_choice.append(f"line {line} (SEG {seg_id} q{question_id}: {answer!r})")
        row = {
            "seg_id": seg_id, "prompt": _text(record.get("prompt")), "question_id": question_id, "question": question,
            "choices": text.split("|"), "answer": answer, "is_yes_no": is_yes_no(stripped), "line": line,
        }
        if "parent_question_id" in record:
            row["parents"] = parse_parents(_text(record["parent_question_id"]), where=where)
            has_parents = True
        rows.append(row)
    if off_choice:
        logger.warning("%s: %d answer(s) are not among their choices (kept as released): %s", source,
                       len(off_choice), "; ".join(off_choice))
    if has_parents:
        check_dsg_graph(rows, source=source)
    return rows


def check_dsg_graph(rows: list[dict], *, source: str) -> None:
    """DSG parents must name existing questions of the same SEG and form no cycle (a question is never its own
    ancestor).

    Raises:
        QuestionTableError: naming the SEG, the question and its line.
    """
    by_seg: dict[int, dict[int, dict]] = {}
    for row in rows:
        by_seg.setdefault(row["seg_id"], {})[row["question_id"]] = row
    for seg_id, questions in by_seg.items():
        for qid, row in questions.items():
            for parent in row.get("parents", ()):
                if parent not in questions:
                    raise QuestionTableError(f"{source} line {row['line']} (SEG {seg_id} question {qid}): parent "
                                             f"question {parent} does not exist (SEG {seg_id} has questions "
                                             f"{sorted(questions)})")
        sorter = graphlib.TopologicalSorter({q: row.get("parents", ()) for q, row in questions.items()})
        try:
            sorter.prepare()
        except graphlib.CycleError as error:
            # graphlib lists the cycle parent -> child; print it child -> parent, from its smallest question id
            ring = list(reversed(error.args[1]))[:-1]
            start = ring.index(min(ring))
            cycle = ring[start:] + ring[:start] + [ring[start]]
            row = questions[cycle[0]]
            raise QuestionTableError(f"{source} line {row['line']} (SEG {seg_id}): DSG parents form a cycle: "
                                     f"{' -> '.join(f'q{q}' for q in cycle)} (each arrow points to a parent)") from None


def questions_from_records(
    rows: Iterable[Mapping[str, object]], *, kind: str = "tifa", source: str = "<memory>", line_offset: int = 2,
    line_of: Sequence[int] | Callable[[int], int] | None = None,
) -> QuestionSet:
    """Validated :class:`QuestionSet` from dict rows with the table's columns.

    The rows are checked by :func:`validate_question_rows` (integer ids, unique question ids per
    SEG, non-blank question/answer, two or more distinct choices, DSG parents that parse, exist and form no cycle;
    ``parent_question_id`` is required for ``kind="dsg"`` and checked for any kind when present), plus the one rule
    scoring adds: question ids are 0..n-1 per SEG. ``prompt``, ``element`` and ``category`` are optional. Errors
    (:class:`QuestionTableError`, a ``ValueError``) name ``source``, the line, the SEG and the question; row k is
    line ``line_of[k]`` (a sequence or function) or, by default, ``k + line_offset``.
    """
    rows = list(rows)
    if line_of is None:
        line_of = lambda k: k + line_offset  # noqa: E731
    checked = validate_question_rows(rows, kind, source=source, line_of=line_of)
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
        # names each image's questions by position, starting at 0 (scorers.metrics.qga.answers splits images at question 0
        # and expects question r - start on row r), and records/DSG parents index a SEG's questions by id.
        for position, q in enumerate(questions):
            if q.question_id != position:
                ids = [x.question_id for x in questions]
                raise QuestionTableError(
                    f"{source} line {lines[seg, q.question_id]} (SEG {seg}) question {q.question_id}: SEG {seg} has "
                    f"question ids {ids}; scoring needs 0..{len(ids) - 1}, each once")
    return QuestionSet(by_seg, kind=kind, source=source)


def read_question_set(path: str | Path, kind: str | None = None) -> QuestionSet:
    """Read a TS2 question CSV (``tifa_questions.csv`` / ``dsg_questions.csv`` layout) with validation.

    ``kind`` defaults to ``"dsg"`` when the table has ``parent_question_id``, else ``"tifa"``. The file is read and
    checked by :func:`read_question_csv` + :func:`validate_question_rows`, so a table is accepted or rejected, with
    the same message, here, by ``scorers.ts2.dataset.read_question_frame`` and by the dataset build (the builder's copy);
    extra columns ``element``/``category`` (written by :meth:`QuestionSet.to_frame`) are kept.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"question table {path} does not exist")
    kind, lines, records = read_question_csv(str(path), kind)
    return questions_from_records(records, kind=kind, source=str(path), line_of=lines)

