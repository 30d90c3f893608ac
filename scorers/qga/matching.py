"""Answer matching as TIFA describes it: a free-form VQA answer -> one of the question's choices.

* yes/no questions: ``"yes"`` when the (lower-cased) answer contains ``yes``, else ``"no"``;
* an empty answer (after removing end tokens) matches no choice: ``""``, never correct;
* multiple choice: the choice whose SBERT embedding has the highest cosine similarity to the answer's
  (default ``sentence-transformers/all-mpnet-base-v2``, as in TIFA; any sentence-transformers model or local path).

Each distinct string is embedded once per matcher (a cache) and all new strings go through one batched ``encode``,
so tens of thousands of answers match in seconds. This module is the one implementation of answer matching.

Reference: Hu et al., "TIFA: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with Question
Answering", ICCV 2023, Sec. 3.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from .questions import YES_NO

__all__ = ["DEFAULT_SBERT", "AnswerMatcher", "clean_answer", "yes_no_choice"]

DEFAULT_SBERT = "sentence-transformers/all-mpnet-base-v2"
_END_TOKENS = re.compile(r"(\s*(</s>|<\|im_end\|>|<\|endoftext\|>|<end_of_utterance>|<eos>))+\s*$")


def clean_answer(text: object) -> str:
    """Strip whitespace and trailing end-of-sequence tokens (``</s>`` and friends) from a generated answer."""
    return _END_TOKENS.sub("", str(text)).strip()


def yes_no_choice(answer: str) -> str:
    """TIFA's binary rule: ``"yes"`` if ``yes`` occurs in the lower-cased answer, else ``"no"``."""
    return "yes" if "yes" in str(answer).lower() else "no"


class AnswerMatcher:
    """Maps free-form answers onto choices; ``encoder`` may be a loaded ``SentenceTransformer`` (else loaded lazily)."""

    def __init__(self, model: str = DEFAULT_SBERT, *, encoder=None, device: str | None = None, batch_size: int = 256,
                 strip_end_tokens: bool = True):
        self.model_name = str(model)
        #: False embeds multiple-choice answers with their end tokens, as the TS2 release evidently did (its choices
        #: agree more often that way); the yes/no rule and the empty check always use the cleaned answer.
        self.strip_end_tokens = strip_end_tokens
        self._encoder = encoder
        self.device = device
        self.batch_size = batch_size
        self._cache: dict[str, np.ndarray] = {}

    @property
    def encoder(self):
        if self._encoder is None:
            from sentence_transformers import SentenceTransformer

            from ..models.loading import model_source

            with model_source(self.model_name, option="--sbert", files=("modules.json", "config.json")) as source:
                self._encoder = SentenceTransformer(source, device=self.device)
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

    def match(self, answers: Sequence[str], choices: Sequence[Sequence[str]]) -> list[str]:
        """The chosen choice for each (answer, choices) pair (answers are cleaned with :func:`clean_answer`)."""
        if len(answers) != len(choices):
            raise ValueError(f"got {len(answers)} answers but {len(choices)} choice lists")
        raw = [str(a).strip() for a in answers]
        answers = [clean_answer(a) for a in answers]
        embedded = answers if self.strip_end_tokens else raw
        chosen: list[str | None] = [None] * len(answers)
        multiple = []
        for i, (answer, options) in enumerate(zip(answers, choices)):
            if len(options) < 2:
                raise ValueError(f"item {i}: choices {list(options)!r} need at least two options")
            if not answer:
                chosen[i] = ""
            elif tuple(o.lower() for o in options) == YES_NO:
                picked = yes_no_choice(answer)
                chosen[i] = options[YES_NO.index(picked)]
            else:
                multiple.append(i)
        if multiple:
            self.embed([embedded[i] for i in multiple] + [o for i in multiple for o in choices[i]])
            for i in multiple:
                sims = self.embed(list(choices[i])) @ self._cache[embedded[i]]
                chosen[i] = choices[i][int(np.argmax(sims))]
        return chosen  # type: ignore[return-value]
