"""Per-question records (question, answer, chosen, correct) and per-image scores from them.

One table shape serves every path (a VLM run here, answers converted from elsewhere), so "which question failed"
reads the same everywhere: one row per (image, question) with columns ``item, seg_id, question_id, question, choices,
expected, parents, answer, chosen, correct, blank`` (+ ``passed`` for DSG, whether the question and its ancestors, or
its direct parents with ``dsg_gating="parents"``, passed; see :mod:`scorers.metrics.qga.dsg`).

Blank answers (empty, or only an end token such as ``</s>``: the model said nothing) follow one policy, ``on_blank``:
``"wrong"`` (default) keeps them as answers that match no choice and are never correct, flagged ``blank`` in the
records; ``"error"`` refuses them.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from scorers.metrics.qga.dsg import dsg_passed, dsg_score
from scorers.metrics.qga.matching import AnswerMatcher, clean_answer, is_blank
from scorers.metrics.qga.questions import Question
from scorers.metrics.qga.tifa import is_correct, tifa_score
from scorers.checks import check_choice
from scorers.errors import ParameterError

__all__ = ["ON_BLANK", "RULES", "build_records", "check_on_blank", "image_scores"]

RULES = ("tifa", "dsg")
ON_BLANK = ("wrong", "error")


def check_on_blank(on_blank: str) -> str:
    return check_choice("on_blank", on_blank, ON_BLANK)


def build_records(
    questions: Sequence[Sequence[Question]],
    answers: Sequence[Sequence[str]],
    matcher: AnswerMatcher,
    *,
    rule: str = "tifa",
    on_blank: str = "wrong",
    dsg_gating: str = "ancestors",
) -> pd.DataFrame:
    """Records for items ``0..n-1``: ``questions[i]`` asked of item i, ``answers[i]`` its free-form answers
    (``on_blank``: see the module docstring)."""
    check_choice("rule", rule, RULES)
    check_on_blank(on_blank)
    if len(questions) != len(answers):
        raise ValueError(f"got question lists for {len(questions)} items but answers for {len(answers)}")
    flat_q, flat_a, items = [], [], []
    for i, (qs, ans) in enumerate(zip(questions, answers)):
        if len(qs) != len(ans):
            raise ValueError(f"item {i}: {len(qs)} questions but {len(ans)} answers")
        flat_q.extend(qs)
        flat_a.extend(str(a) for a in ans)
        items.extend([i] * len(qs))
    blank = [is_blank(a) for a in flat_a]
    if on_blank == "error" and any(blank):
        k = blank.index(True)
        raise ParameterError("item {item}: blank answer {answer!r} to question {question} (SEG {seg}); "
                             "{on_blank='wrong'} counts it as a wrong answer", item=items[k], answer=flat_a[k],
                             question=flat_q[k].question_id, seg=flat_q[k].seg_id)
    chosen = matcher.match(flat_a, [q.choices for q in flat_q])
    records = pd.DataFrame({
        "item": np.asarray(items, dtype=np.int64),
        "seg_id": np.asarray([q.seg_id for q in flat_q], dtype=np.int64),
        "question_id": np.asarray([q.question_id for q in flat_q], dtype=np.int64),
        "question": [q.question for q in flat_q],
        "choices": ["|".join(q.choices) for q in flat_q],
        "expected": [q.answer for q in flat_q],
        "parents": ["-".join(map(str, q.parents)) if q.parents else "-1" for q in flat_q],
        "answer": [clean_answer(a) for a in flat_a],
        "chosen": chosen,
        "correct": np.asarray([not b and is_correct(c, q.answer) for b, c, q in zip(blank, chosen, flat_q)],
                              dtype=bool),
        "blank": np.asarray(blank, dtype=bool),
    })
    if rule == "dsg":
        passed = np.zeros(len(records), dtype=bool)
        for item, index in records.groupby("item", sort=False).indices.items():
            passed[index] = dsg_passed(records["correct"].to_numpy()[index], _local_parents(records, item, index),
                                       dsg_gating)
        records["passed"] = passed
    return records


def _local_parents(records: pd.DataFrame, item, index: np.ndarray) -> list[list[int]]:
    """Parent question ids of one item's records -> positions within that item's records."""
    qids = records["question_id"].to_numpy()[index]
    local = {int(q): k for k, q in enumerate(qids)}
    out = []
    for qid, text in zip(qids, records["parents"].to_numpy()[index]):
        text = str(text).strip()
        parents = () if text in ("", "-1") else tuple(int(p) for p in text.split("-"))
        missing = [p for p in parents if p not in local]
        if missing:
            raise ValueError(f"item {item}: question {qid} depends on question(s) {missing}, which were not asked")
        out.append([local[p] for p in parents])
    return out


def image_scores(records: pd.DataFrame, n_items: int, *, rule: str = "tifa", accumulate: str = "dsg",
                 dsg_gating: str = "ancestors") -> np.ndarray:
    """Per-item scores (NaN for an item without records): TIFA's fraction correct or DSG's dependency-aware score
    (``dsg_gating``: see :mod:`scorers.metrics.qga.dsg`)."""
    check_choice("rule", rule, RULES)
    scores = np.full(n_items, np.nan)
    correct = records["correct"].to_numpy(dtype=bool)
    for item, index in records.groupby("item", sort=False).indices.items():
        if rule == "tifa":
            scores[int(item)] = tifa_score(correct[index])
        else:
            scores[int(item)] = dsg_score(correct[index], _local_parents(records, item, index), accumulate,
                                             dsg_gating)
    return scores
