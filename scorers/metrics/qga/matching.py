"""Answer matching: a free-form VQA answer -> one of the question's choices, by a named ``yes_rule``.

The rules (``yes_rule=``; ``--yes-rule`` on ``ts2 answers-to-scores`` and ``ts2 score``):

* ``"word"`` (default): on a yes/no question the first standalone word ``yes`` or ``no`` of the answer decides
  ("No, the cat has yellow eyes." is no); an answer with neither word goes to SBERT over the two choices.
  Multiple choice: the nearest choice by SBERT.
* ``"release"``: the TS2 release's converter: on a yes/no question ``"yes"`` when the lower-cased answer contains the
  substring ``yes`` anywhere (so "the eyes are blue" counts as yes), else ``"no"``; multiple choice by SBERT. Use it
  to compare with the released per-question files (it reproduces their yes/no choices).
* ``"tifa"``: the official TIFA package (``tifascore``, ``VQAModel.multiple_choice_vqa``): the answer itself when it
  equals one of the choices exactly, else the nearest choice by SBERT, for every question; no yes/no rule.

A yes/no question is one whose choices are yes and no in either order (:func:`scorers.metrics.qga.questions.is_yes_no`).
A blank answer (empty after removing end tokens such as ``</s>``: :func:`is_blank`) matches no choice: ``""``, never
correct. SBERT is ``sentence-transformers/all-mpnet-base-v2`` by default (TIFA's and the release's), or any
sentence-transformers model or local path. Each distinct string is embedded once per matcher (a cache) and all new
strings go through one batched ``encode``. This module is the one implementation of answer matching.

Reference: Hu et al., "TIFA: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with Question
Answering", ICCV 2023, Sec. 3 (and its code, github.com/Yushi-Hu/tifa).
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from scorers.metrics.qga.questions import is_yes_no
from scorers.checks import check_choice

__all__ = ["DEFAULT_SBERT", "YES_RULES", "AnswerMatcher", "clean_answer", "is_blank", "yes_no_by_release",
           "yes_no_by_word"]

DEFAULT_SBERT = "sentence-transformers/all-mpnet-base-v2"
YES_RULES = ("word", "release", "tifa")
_END_TOKENS = re.compile(r"(\s*(</s>|<\|im_end\|>|<\|endoftext\|>|<end_of_utterance>|<eos>))+\s*$")
_YES_NO_WORD = re.compile(r"\b(yes|no)\b")


def clean_answer(text: object) -> str:
    """Strip whitespace and trailing end-of-sequence tokens (``</s>`` and friends) from a generated answer."""
    return _END_TOKENS.sub("", str(text)).strip()


def is_blank(text: object) -> bool:
    """A blank answer: empty, whitespace, or only end tokens (``</s>``): the model said nothing."""
    return clean_answer(text) == ""


def yes_no_by_word(answer: str) -> str | None:
    """The first standalone ``yes`` / ``no`` word of the answer (case ignored), or None when it has neither."""
    found = _YES_NO_WORD.search(str(answer).lower())
    return found.group(1) if found else None


def yes_no_by_release(answer: str) -> str:
    """The TS2 release's rule: ``"yes"`` if the substring ``yes`` occurs in the lower-cased answer, else ``"no"``."""
    return "yes" if "yes" in str(answer).lower() else "no"


def check_yes_rule(yes_rule: str) -> str:
    return check_choice("yes_rule", yes_rule, YES_RULES)


class AnswerMatcher:
    """Maps free-form answers onto choices; ``encoder`` may be a loaded ``SentenceTransformer`` (else loaded lazily).

    ``yes_rule``: ``"word"`` (default), ``"release"`` or ``"tifa"`` (see the module docstring)."""

    def __init__(self, model: str = DEFAULT_SBERT, *, encoder=None, device: str | None = None, batch_size: int = 256,
                 strip_end_tokens: bool = True, yes_rule: str = "word"):
        self.model_name = str(model)
        self.yes_rule = check_yes_rule(yes_rule)
        #: False embeds answers with their end tokens, as the TS2 release evidently did (its choices agree more often
        #: that way); the yes/no word rules, the exact-choice test and the blank check always use the cleaned answer.
        self.strip_end_tokens = strip_end_tokens
        self._encoder = encoder
        self.device = device
        self.batch_size = batch_size
        self._cache: dict[str, np.ndarray] = {}

    @property
    def encoder(self):
        """The SBERT encoder (loaded on first use by :func:`scorers.models.sbert.load_sbert`)."""
        if self._encoder is None:
            from scorers.models.sbert import load_sbert

            self._encoder = load_sbert(self.model_name, device=self.device)
        return self._encoder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm embeddings of ``texts`` (rows), encoding only strings not seen before."""
        new = sorted({t for t in texts if t not in self._cache})
        if new:
            vectors = self.encoder.encode(new, batch_size=self.batch_size, convert_to_numpy=True,
                                          normalize_embeddings=True, show_progress_bar=False)
            self._cache.update(zip(new, np.asarray(vectors, dtype=np.float32)))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def _rule_choice(self, answer: str, options: Sequence[str]) -> str | None:
        """The choice the rule makes without SBERT, or None when SBERT must decide."""
        if self.yes_rule == "tifa":
            return answer if answer in options else None
        if not is_yes_no(options):
            return None
        picked = yes_no_by_release(answer) if self.yes_rule == "release" else yes_no_by_word(answer)
        if picked is None:
            return None
        return options[[o.strip().lower() for o in options].index(picked)]

    def match(self, answers: Sequence[str], choices: Sequence[Sequence[str]]) -> list[str]:
        """The chosen choice for each (answer, choices) pair (answers are cleaned with :func:`clean_answer`)."""
        if len(answers) != len(choices):
            raise ValueError(f"got {len(answers)} answers but {len(choices)} choice lists")
        raw = [str(a).strip() for a in answers]
        answers = [clean_answer(a) for a in answers]
        embedded = answers if self.strip_end_tokens else raw
        chosen: list[str | None] = [None] * len(answers)
        by_sbert = []
        for i, (answer, options) in enumerate(zip(answers, choices)):
            if len(options) < 2:
                raise ValueError(f"item {i}: choices {list(options)!r} need at least two options")
            chosen[i] = "" if not answer else self._rule_choice(answer, options)
            if chosen[i] is None:
                by_sbert.append(i)
        if by_sbert:
            self.embed([embedded[i] for i in by_sbert] + [o for i in by_sbert for o in choices[i]])
            for i in by_sbert:
                sims = self.embed(list(choices[i])) @ self._cache[embedded[i]]
                chosen[i] = choices[i][int(np.argmax(sims))]
        return chosen  # type: ignore[return-value]
