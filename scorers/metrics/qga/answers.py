"""Free-form answers from any VLM run elsewhere -> per-question records -> per-image TIFA/DSG scores.

Input: a CSV with columns ``id`` (SEG id), ``image``, ``question_id``, ``vqa_answer`` (the TS2 release's
``raw_answers`` layout; a header row is optional, answers may end in ``</s>``). Rows of one image are consecutive and
start at question 0, images in ``metadata.csv`` order, so an image's identity is the position of its question-0 run
among the runs of its SEG, mapped onto that SEG's metadata rows in order.
A blank answer (an empty cell, or only an end token such as ``</s>``: the model said nothing; the release's Fuyu DSG
file has 403 empty cells) follows ``on_blank``: ``"wrong"`` (default) counts it as a wrong answer, flagged ``blank``
in the records; ``"error"`` stops at the first one. The ``image`` column is only a cross-check: when its base names
match the metadata's they must match the positional assignment. With metadata, every metadata image must have
answers: a file that stops early (truncated at an image boundary) is an error naming the first missing image, unless
``allow_partial=True``, which scores what is there and lists the missing images (``AnswerScores.missing``; their
score cells are left empty).

Every error names the file and the CSV line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from scorers.errors import ParameterError
from scorers.checks import integer_column
from scorers.tables.pandas_tables import read_csv
from scorers.metrics.qga.matching import AnswerMatcher
from scorers.metrics.qga.questions import QuestionSet
from scorers.metrics.qga.matching import is_blank
from scorers.metrics.qga.dsg import check_gating
from scorers.metrics.qga.records import build_records, check_on_blank, image_scores

__all__ = ["RAW_COLUMNS", "AnswerScores", "answers_to_scores", "assign_images", "read_raw_answers"]

RAW_COLUMNS = ["id", "image", "question_id", "vqa_answer"]


@dataclass
class AnswerScores:
    """``records``: one row per answer (see :mod:`scorers.metrics.qga.records`), with ``line`` (CSV line), ``image`` and, with
    metadata, ``file_name``/``node``; ``scores``: one row per image (``seg_id``, ``file_name``, ``node``, score; with
    metadata, one row per metadata image in metadata order); ``missing``: metadata file names with no answers (only
    non-empty with ``allow_partial=True``)."""

    records: pd.DataFrame
    scores: pd.DataFrame
    missing: list[str] = field(default_factory=list)

    @property
    def n_blank(self) -> int:
        """Blank answers (counted wrong)."""
        return int(self.records["blank"].sum())


def read_raw_answers(path: str | Path) -> pd.DataFrame:
    """The answers table as strings plus ``line`` (its CSV line number); header row optional."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"answers file {path} does not exist")
    with open(path, encoding="utf-8", errors="replace") as handle:  # a decoding error is named by read_csv
        first = handle.readline().strip().lstrip("\ufeff")
    has_header = first.split(",")[0].strip().lower() == "id"
    frame = read_csv(path, dtype=str, keep_default_na=False, header=0 if has_header else None)
    if has_header:
        missing = [c for c in RAW_COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing}; expected {RAW_COLUMNS}")
        frame = frame[RAW_COLUMNS]
    elif frame.shape[1] != len(RAW_COLUMNS):
        raise ValueError(f"{path}: line 1 has {frame.shape[1]} fields; a file without a header needs exactly "
                         f"{RAW_COLUMNS}")
    else:
        frame.columns = RAW_COLUMNS
    frame["line"] = np.arange(len(frame)) + (2 if has_header else 1)
    for column, name in (("id", "SEG id"), ("question_id", "question_id")):
        frame[column] = integer_column(frame[column], name, lambda row: f"{path}: line {frame['line'].iloc[row]}")
    frame["vqa_answer"] = frame["vqa_answer"].fillna("")  # a row that ends before its answer cell: blank
    return frame


def assign_images(raw: pd.DataFrame, questions: QuestionSet, metadata: pd.DataFrame | None = None,
                  source: str = "answers") -> pd.DataFrame:
    """Add ``item`` (image number in file order) and, with metadata, ``meta_row``/``file_name``/``node``.

    Checks that every run starts at question 0, counts up by one, stays in one SEG, and covers exactly that SEG's
    questions; with metadata, that no SEG has more runs than images.
    """
    seg = raw["id"].to_numpy()
    qid = raw["question_id"].to_numpy()
    lines = raw["line"].to_numpy()
    image = raw["image"].astype(str).str.strip().to_numpy()
    if len(raw) == 0:
        raise ValueError(f"{source}: no answers")
    starts = np.flatnonzero(qid == 0)
    if starts.size == 0 or starts[0] != 0:
        raise ValueError(f"{source}: line {lines[0]}: the first row must be question 0 of an image (got question "
                         f"{qid[0]})")
    bounds = np.append(starts, len(raw))
    item = np.repeat(np.arange(starts.size), np.diff(bounds))
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        expected = questions.for_seg(seg[a]) if seg[a] in questions else None
        if expected is None:
            raise ValueError(f"{source}: line {lines[a]}: no {questions.kind} questions for SEG {seg[a]} in "
                             f"{questions.source}")
        for r in range(a, b):
            if seg[r] != seg[a]:
                raise ValueError(f"{source}: line {lines[r]}: SEG {seg[r]} inside the answers of an image of SEG "
                                 f"{seg[a]} (each image's rows start at question 0)")
            if image[r] != image[a]:  # every row names its image, not only the first
                raise ValueError(f"{source}: line {lines[r]}: image {image[r]!r} inside the answers of image "
                                 f"{image[a]!r} (line {lines[a]}; each image's rows start at question 0)")
            if qid[r] != r - a:
                raise ValueError(f"{source}: line {lines[r]}: question_id {qid[r]} where {r - a} was expected "
                                 f"(rows of one image are consecutive, starting at question 0)")
            if qid[r] >= len(expected):
                raise ValueError(f"{source}: line {lines[r]}: question_id {qid[r]} does not exist for SEG {seg[r]} "
                                 f"({len(expected)} questions in {questions.source})")
        if b - a != len(expected):
            raise ValueError(f"{source}: line {lines[a]}: the image starting here answers {b - a} of SEG {seg[a]}'s "
                             f"{len(expected)} questions (question id {b - a} is missing)")
    out = raw.copy()
    out["item"] = item
    if metadata is None:
        return out
    rows_of: dict[int, list[int]] = {}
    for row, s in enumerate(metadata["seg_id"].to_numpy()):
        rows_of.setdefault(int(s), []).append(row)
    used: dict[int, int] = {}
    meta_row = np.empty(starts.size, dtype=np.int64)
    for k, a in enumerate(starts):
        s = int(seg[a])
        n = used.get(s, 0)
        if n >= len(rows_of.get(s, [])):
            raise ValueError(f"{source}: line {lines[a]}: image {n + 1} of SEG {s}, but metadata has "
                             f"{len(rows_of.get(s, []))} image(s) for it")
        meta_row[k] = rows_of[s][n]
        used[s] = n + 1
    files = metadata["file_name"].to_numpy()[meta_row]
    given = raw["image"].to_numpy()[starts]
    base = [os.path.basename(str(f)) for f in files]
    base_given = [os.path.basename(str(g)) for g in given]
    known = set(os.path.basename(str(f)) for f in metadata["file_name"])
    if any(g in known for g in base_given):
        for k, (g, f) in enumerate(zip(base_given, base)):
            if g != f:
                raise ValueError(f"{source}: line {lines[starts[k]]}: image {given[k]!r} but position says {f!r} "
                                 "(rows of images must follow metadata order)")
    out["meta_row"] = meta_row[item]
    out["file_name"] = files[item]
    out["node"] = metadata["node"].to_numpy()[meta_row][item]
    return out


def answers_to_scores(
    path: str | Path,
    questions: QuestionSet,
    *,
    metadata: pd.DataFrame | None = None,
    matcher: AnswerMatcher | None = None,
    accumulate: str = "dsg",
    score_name: str | None = None,
    on_blank: str = "wrong",
    allow_partial: bool = False,
    dsg_gating: str = "ancestors",
) -> AnswerScores:
    """Records and per-image scores for an answers CSV (rule: DSG for DSG questions, else TIFA).

    ``on_blank`` and ``allow_partial``: see the module docstring. The yes/no rule is the matcher's ``yes_rule``.
    ``dsg_gating`` (DSG questions): ``"ancestors"`` (TS2's rule) or ``"parents"`` (the official DSG code's), see
    :mod:`scorers.metrics.qga.dsg`."""
    check_on_blank(on_blank)
    check_gating(dsg_gating)
    raw = read_raw_answers(path)
    if on_blank == "error":
        blank = np.flatnonzero([is_blank(a) for a in raw["vqa_answer"]])
        if blank.size:
            row = raw.iloc[int(blank[0])]
            raise ParameterError("{path}: line {line}: blank answer {answer!r} (SEG {seg}, question {question}); {n} "
                                 "blank answer(s) in all ({on_blank='wrong'} counts them as wrong answers)", path=path,
                                 line=row["line"], answer=row["vqa_answer"], seg=row["id"],
                                 question=row["question_id"], n=blank.size)
    raw = assign_images(raw, questions, metadata, source=str(path))
    rule = "dsg" if questions.kind == "dsg" else "tifa"
    starts = np.flatnonzero(raw["question_id"].to_numpy() == 0)
    n_items = starts.size
    per_item_q, per_item_a = [], []
    bounds = np.append(starts, len(raw))
    answers = raw["vqa_answer"].to_numpy()
    for a, b in zip(bounds[:-1], bounds[1:]):
        per_item_q.append(questions.for_seg(int(raw["id"].iloc[a])))
        per_item_a.append(list(answers[a:b]))
    records = build_records(per_item_q, per_item_a, matcher or AnswerMatcher(), rule=rule, on_blank="wrong",
                            dsg_gating=dsg_gating)
    records.insert(1, "line", raw["line"].to_numpy())
    records.insert(3, "image", raw["image"].to_numpy())
    scores = image_scores(records, n_items, rule=rule, accumulate=accumulate, dsg_gating=dsg_gating)
    name = score_name or rule
    if metadata is None:
        table = pd.DataFrame({"seg_id": raw["id"].to_numpy()[starts], "image": raw["image"].to_numpy()[starts],
                              name: scores})
        return AnswerScores(records, table)
    records.insert(4, "file_name", raw["file_name"].to_numpy())
    records.insert(5, "node", raw["node"].to_numpy())
    per_row = np.full(len(metadata), np.nan)
    per_row[raw["meta_row"].to_numpy()[starts]] = scores
    answered = np.zeros(len(metadata), dtype=bool)
    answered[raw["meta_row"].to_numpy()[starts]] = True
    table = pd.DataFrame({"seg_id": metadata["seg_id"].to_numpy(), "file_name": metadata["file_name"].to_numpy(),
                          "node": metadata["node"].to_numpy(), name: per_row})
    missing = np.flatnonzero(~answered)
    if missing.size and not allow_partial:
        first = int(missing[0])
        raise ParameterError("{path}: no answers for {n} of the metadata's {total} images (is the file truncated?); "
                             "first missing: SEG {seg}, {file_name} (metadata row {row}); {allow_partial=True} scores "
                             "the rest", path=path, n=missing.size, total=len(metadata),
                             seg=table["seg_id"].iloc[first], file_name=table["file_name"].iloc[first], row=first + 2)
    return AnswerScores(records, table, [str(f) for f in table["file_name"].to_numpy()[missing]])
