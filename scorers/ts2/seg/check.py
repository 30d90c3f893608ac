"""Synth step 3 (``ts2 seg check``): does each image show its designed errors? A VQA judge's review list.

For each ANNOTATIONS row whose SEG the plan describes, the judge (any VQA backend: ``answer(images, questions)``
plus ``yes_probability`` or, served, ``first_token_logprobs``) is asked the yes/no question of every element: those
the node keeps should be answered yes, those in its error set no. Elements that left with a removed entity (its
attributes, relations, actions) are not asked. An image is listed when an answer disagrees with its designed set
("the teddy bear was removed, but the judge sees one"), with the judge's answers; the list is sorted by confidence,
the largest ``|2 P(yes) - 1|`` among the disagreeing answers. Labels are never changed: this is a list for a person.

Without probabilities (``probabilities=False``, or a backend that has none) the text answer is read: ``yes`` / ``no``
as its first word counts with confidence 1, anything else is "unclear" (NaN) and never a disagreement.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from scorers.errors import ParameterError
from scorers.ts2.seg.plan import removed_with, yes_no_of
from scorers.stats.error_sets import ERROR_SEPARATOR, ERROR_TYPE_OF_ELEMENT, split_error_labels

__all__ = ["REVIEW_COLUMNS", "check_images", "judge_yes", "load_judge", "read_annotation_table", "split_labels"]

REVIEW_COLUMNS = ("seg_id", "file_name", "errors", "disagreements", "confidence", "details", "answers")


def split_labels(values) -> list[list[str]]:
    """``;``-joined label cells -> lists (empty / NaN cells -> ``[]``), vectorised over a pandas Series."""
    import pandas as pd

    series = pd.Series(values, dtype="object").fillna("").astype(str)
    return [split_error_labels(cell) for cell in series]


def read_annotation_table(path: str | Path):
    """ANNOTATIONS as a frame (``seg_id, prompt, file_name, errors`` at least); one line naming what is wrong.

    Raises
    ------
    ValueError
        unreadable file, a missing column, or a ``seg_id`` that is not an integer (naming the first bad row).
    """
    import pandas as pd

    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype={"errors": "string", "file_name": "string", "prompt": "string"},
                            keep_default_na=False)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise ValueError(f"{path}: not a readable ANNOTATIONS CSV ({error})") from None
    missing = [c for c in ("seg_id", "prompt", "file_name", "errors") if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; ANNOTATIONS has seg_id, prompt, file_name, errors")
    ids = pd.to_numeric(frame["seg_id"], errors="coerce")
    bad = np.flatnonzero(ids.isna().to_numpy() | (ids % 1 != 0).to_numpy())
    if bad.size:
        raise ValueError(f"{path}: row {bad[0] + 2}: seg_id {frame['seg_id'].iloc[bad[0]]!r} is not an integer")
    frame["seg_id"] = ids.astype(int)
    return frame


def judge_yes(judge: Any, images: Sequence, questions: Sequence[str], *, probabilities: bool = True) -> np.ndarray:
    """P(yes) per (image, question) pair: from the backend's probabilities when it has them (and ``probabilities``),
    else 1 / 0 from a text answer starting with yes / no, NaN for any other answer."""
    if probabilities and (hasattr(judge, "first_token_logprobs") or hasattr(judge, "yes_probability")):
        from scorers.metrics.qga.vqascore import backend_yes_probability

        return backend_yes_probability(judge, images, questions)
    answers = judge.answer(list(images), list(questions))
    words = [str(a).strip().lower().lstrip("\"'").split(maxsplit=1) for a in answers]
    first = [w[0].strip(".,!:;\"'") if w else "" for w in words]
    return np.array([1.0 if w == "yes" else 0.0 if w == "no" else math.nan for w in first], dtype=np.float64)


def check_images(annotations, images_dir: str | Path, plan: dict, judge: Any, *, batch_size: int = 8,
                 probabilities: bool = True, include_all: bool = False, progress: bool = False):
    """The review list (a DataFrame with :data:`REVIEW_COLUMNS`), most confident disagreement first.

    ``annotations`` is a frame (:func:`read_annotation_table`) or its path. ``include_all`` keeps the images whose
    answers all agree (``disagreements`` 0, ``confidence`` 0). Rows whose SEG has no elements in the plan are left
    out (nothing to ask); an error label that is no element of the plan is named in ``details``.

    Raises
    ------
    ParameterError
        ``batch_size`` < 1.
    ValueError
        an image file that is missing or unreadable (naming the row).
    """
    import pandas as pd
    from tqdm.auto import tqdm

    from scorers.models.images import open_rgb

    if int(batch_size) < 1:
        raise ParameterError("{batch_size} must be >= 1, got {n}", n=batch_size)
    frame = annotations if isinstance(annotations, pd.DataFrame) else read_annotation_table(annotations)
    images_dir = Path(images_dir)
    segs = {int(seg["seg_id"]): seg for seg in plan["segs"] if seg.get("elements")}
    frame = frame.assign(_line=np.arange(len(frame)) + 2)
    frame = frame[frame["seg_id"].isin(list(segs))].reset_index(drop=True)
    errors_of = split_labels(frame["errors"])
    asks: list[list[tuple[str, str, bool, str]]] = []  # per row: (label, question, expected yes, error type)
    notes: list[list[str]] = []
    for seg_id, errors in zip(frame["seg_id"], errors_of):
        elements = segs[int(seg_id)]["elements"]
        labels = {e["label"] for e in elements}
        gone = set(removed_with(elements, [e for e in errors if e in labels]))
        asks.append([(e["label"], yes_no_of(e), e["label"] not in gone, ERROR_TYPE_OF_ELEMENT.get(e["type"], "missing"))
                     for e in elements if e["label"] not in gone or e["label"] in errors])
        notes.append([f"{e}: not an element of the plan" for e in errors if e not in labels])
    p_yes: list[np.ndarray] = []
    bar = tqdm(total=len(frame), unit="img", desc="check", disable=not progress)
    for start in range(0, len(frame), int(batch_size)):
        rows = range(start, min(start + int(batch_size), len(frame)))
        pictures = {}
        for r in rows:
            path = images_dir / str(frame["file_name"].iloc[r])
            try:
                pictures[r] = open_rgb(path)
            except (OSError, ValueError) as error:
                raise ValueError(f"ANNOTATIONS row {frame['_line'].iloc[r]}: file_name {path}: cannot read the "
                                 f"image ({error})") from None
        pairs = [(pictures[r], question) for r in rows for _, question, _, _ in asks[r]]
        flat = judge_yes(judge, [p for p, _ in pairs], [q for _, q in pairs], probabilities=probabilities) \
            if pairs else np.zeros(0)
        offset = 0
        for r in rows:
            p_yes.append(np.asarray(flat[offset:offset + len(asks[r])], dtype=np.float64))
            offset += len(asks[r])
        bar.update(len(rows))
    bar.close()
    out = []
    for r in range(len(frame)):
        details, answers, margins = list(notes[r]), {}, []
        for (label, question, expect_yes, error_type), p in zip(asks[r], p_yes[r]):
            answers[question] = None if math.isnan(p) else round(float(p), 4)
            if math.isnan(p):
                continue
            said_yes = p >= 0.5
            if said_yes != expect_yes:
                margins.append(abs(2 * p - 1))
                details.append(f"{label}: designed {'present' if expect_yes else error_type}, judge says "
                               f"{'yes' if said_yes else 'no'} to {question!r} (P(yes)={p:.2f})")
        if margins or include_all or notes[r]:
            out.append({"seg_id": int(frame["seg_id"].iloc[r]), "file_name": str(frame["file_name"].iloc[r]),
                        "errors": ERROR_SEPARATOR.join(errors_of[r]), "disagreements": len(margins),
                        "confidence": max(margins) if margins else 0.0, "details": "; ".join(details),
                        "answers": json.dumps(answers, ensure_ascii=False)})
    review = pd.DataFrame(out, columns=list(REVIEW_COLUMNS))
    return review.sort_values(["confidence", "disagreements", "seg_id", "file_name"],
                              ascending=[False, False, True, True], kind="stable").reset_index(drop=True)


def load_judge(model: str, *, backend: str = "auto", precision: str | None = None, served: dict | None = None):
    """A VQA judge: ``openai:MODEL`` (served, short answers + first-token logprobs) or a local checkpoint through
    ``scorers.models.vqa_base.load_vqa_backend``."""
    from scorers.models.openai_compat import is_served

    if is_served(model):
        from scorers.models.openai_compat import OpenAIChat

        return OpenAIChat(model, **(served or {}))
    if served:
        raise ValueError(f"the served-model options apply to served judges only (openai:MODEL), not {model!r}")
    from scorers.models.vqa_base import load_vqa_backend

    return load_vqa_backend(model, backend, **({"precision": precision} if precision else {}))
