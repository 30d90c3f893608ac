"""TIFA and DSG scorers for the runner: ask a VQA backend each question of an item's SEG, match, score, keep records.

They follow the runner's scorer contract (``scorers.scoring.runner``): ``name``, ``score(images, prompts)``,
``score_with_records(images, prompts)`` (one dict per image with its per-question answers) and ``config``.
Questions come from ``questions`` (a table path or a :class:`QuestionSet`), else from ``<data_dir>/tifa_questions.csv``
(``dsg_questions.csv``) when the runner scores a data dir. They are looked up by SEG id when ``seg_ids`` is given, else
by prompt (a prompt shared by SEGs with
different questions is an error that names them). The backend is anything with ``answer(images, questions)``
(``scorers.models.vqa_base``): pass one, or a checkpoint name and it is loaded with ``load_vqa_backend``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from scorers.checks import check_pairs
from scorers.metrics.qga.dsg import ACCUMULATE, check_gating
from scorers.metrics.qga.matching import DEFAULT_SBERT, AnswerMatcher, check_yes_rule
from scorers.metrics.qga.questions import QuestionSet, read_question_set
from scorers.metrics.qga.records import build_records, image_scores
from scorers.checks import check_choice

__all__ = ["DEFAULT_VQA_MODEL", "DSGScorer", "QuestionScorer", "TIFAScorer"]

DEFAULT_VQA_MODEL = "Salesforce/blip-vqa-base"


def resolve_backend(backend: Any, model: str | None, device: Any, precision: str | None, batch_size: int | None,
                    kind: str = "auto"):
    """A ready backend object, or one loaded from ``model`` (``kind``: auto/blip_vqa/instructblip/llava/chat_vlm)."""
    if backend is not None and not isinstance(backend, str):
        return backend
    from scorers.models.vqa_base import load_vqa_backend

    options = {"device": None if device is None else str(device), "precision": precision}
    if batch_size:
        options["batch_size"] = batch_size
    return load_vqa_backend(model or DEFAULT_VQA_MODEL, backend or kind, **options)


class QuestionScorer:
    """Shared body of TIFA and DSG: questions -> answers (one batched backend call) -> records -> scores."""

    rule = "tifa"
    default_questions = "tifa_questions.csv"

    def __init__(self, questions: str | Path | QuestionSet | None = None, *, backend: Any = None,
                 model: str | None = None, vqa_backend: str = "auto", device: Any = None, precision: str | None = None,
                 batch_size: int | None = None, sbert: str = DEFAULT_SBERT, matcher: AnswerMatcher | None = None,
                 accumulate: str = "dsg", yes_rule: str | None = None, name: str | None = None,
                 data_dir: str | Path | None = None, dsg_gating: str | None = None):
        if questions is None and data_dir is not None:
            questions = Path(data_dir) / self.default_questions
        if questions is None:
            raise ValueError(f"{type(self).__name__} needs questions: a {self.default_questions} path or a "
                             "QuestionSet (see scorers.metrics.qga.questions / scorers.metrics.qga.generation)")
        # a QuestionSet, or any source with the same lookup (e.g. generation.OnDemandQuestions for new prompts)
        self.questions = questions if hasattr(questions, "lookup") else read_question_set(questions, self.rule)
        check_choice("accumulate", accumulate, ACCUMULATE)
        self.accumulate = accumulate
        # dsg_gating (DSG only): "ancestors" (default, TS2) or "parents" (official DSG code); see scorers.metrics.qga.dsg
        if dsg_gating is not None and self.rule != "dsg":
            raise ValueError(f"dsg_gating={dsg_gating!r}: only the DSG scorer has parent questions")
        self.dsg_gating = check_gating(dsg_gating or "ancestors") if self.rule == "dsg" else None
        # yes_rule (default "word"; see scorers.metrics.qga.matching) goes to the matcher; a given matcher keeps its own
        if matcher is not None and yes_rule is not None and matcher.yes_rule != check_yes_rule(yes_rule):
            raise ValueError(f"yes_rule={yes_rule!r} but the given matcher uses yes_rule={matcher.yes_rule!r}")
        self.matcher = matcher or AnswerMatcher(sbert, device=None if device is None else str(device),
                                                yes_rule=yes_rule or "word")
        self.backend = resolve_backend(backend, model, device, precision, batch_size, vqa_backend)
        if matcher is None and hasattr(self.backend, "record"):
            # a served backend bills each request: load the local SBERT now, so a missing or broken matching model
            # stops the run before the first paid request instead of after the first batch
            self.matcher.encoder  # noqa: B018
        self.name = name or self.rule
        self.config = {"scorer": self.name, "backend": type(self.backend).__name__,
                       "model": getattr(self.backend, "name", model), "questions": self.questions.source,
                       "n_questions": len(self.questions), "sbert": self.matcher.model_name,
                       "yes_rule": self.matcher.yes_rule,
                       "accumulate": accumulate if self.rule == "dsg" else None}
        if self.rule == "dsg" and self.dsg_gating != "ancestors":  # the default keeps earlier caches' fingerprint
            self.config["dsg_gating"] = self.dsg_gating

    def score_with_records(self, images: Sequence, prompts: Sequence[str],
                           seg_ids: Sequence[int] | None = None) -> tuple[np.ndarray, list[dict]]:
        check_pairs(images, prompts)
        question_lists = self.questions.lookup(list(prompts), seg_ids)
        flat_images = [images[i] for i, qs in enumerate(question_lists) for _ in qs]
        flat_questions = [q.question for qs in question_lists for q in qs]
        flat_answers = self.backend.answer(flat_images, flat_questions) if flat_questions else []
        answers, start = [], 0
        for qs in question_lists:
            answers.append(flat_answers[start:start + len(qs)])
            start += len(qs)
        gating = self.dsg_gating or "ancestors"
        records = build_records(question_lists, answers, self.matcher, rule=self.rule, dsg_gating=gating)
        scores = image_scores(records, len(prompts), rule=self.rule, accumulate=self.accumulate, dsg_gating=gating)
        return scores, self.item_records(records, len(prompts))

    def score(self, images: Sequence, prompts: Sequence[str], seg_ids: Sequence[int] | None = None) -> np.ndarray:
        return self.score_with_records(images, prompts, seg_ids)[0]

    def item_records(self, records, n_items: int) -> list[dict]:
        """Per image: ``failed_questions`` (``|``-joined ids; a CSV column) and ``questions`` (question, answer, chosen,
        correct... per question; the runner writes them to ``<out>.records.jsonl``). No numeric fields, so the runner
        does not mistake counts for score columns."""
        out = []
        columns = ["question_id", "question", "expected", "answer", "chosen", "correct", "blank"]
        if "passed" in records.columns:
            columns += ["parents", "passed"]
        groups = records.groupby("item", sort=False).indices
        for item in range(n_items):
            rows = records.iloc[groups.get(item, [])]
            questions = [{k: (v.item() if hasattr(v, "item") else v) for k, v in zip(columns, values)}
                         for values in rows[columns].itertuples(index=False)]
            failed = [str(q["question_id"]) for q in questions if not q.get("passed", q["correct"])]
            out.append({"failed_questions": "|".join(failed), "questions": questions})
        return out


class TIFAScorer(QuestionScorer):
    """TIFA (Hu et al., ICCV 2023): fraction of TIFA questions answered correctly."""

    rule = "tifa"
    default_questions = "tifa_questions.csv"


class DSGScorer(QuestionScorer):
    """DSG (Cho et al., ICLR 2024): fraction of questions answered yes whose parents all pass (``accumulate``;
    ``dsg_gating``: all ancestors, TS2's rule and the default, or direct parents, the official DSG code's)."""

    rule = "dsg"
    default_questions = "dsg_questions.csv"
