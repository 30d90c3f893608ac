"""Question generation for new prompts, in the format the TIFA paper describes, plus an optional QA filter.

An LM (anything with ``generate(prompts) -> list[str]``, e.g. ``scorers.models.text_lm.TextLM`` over any transformers
causal LM such as ``tifa-benchmark/llama2_tifa_question_generation``) continues our few-shot prompt
(:data:`FEW_SHOT`): for a description it lists the elements, each with one of the 12 TIFA categories, and for each
element a yes/no question and a multiple-choice question with the expected answer. :func:`parse_generation` reads
that text robustly (numbering, case, spacing, missing lines; malformed items are dropped with a reason).

The filter (TIFA Sec. 3.2) asks a text QA model each question with the prompt as context and keeps the question only
if its answer, matched to the choices by :class:`scorers.metrics.qga.matching.AnswerMatcher`, equals the expected answer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from scorers.metrics.qga.matching import AnswerMatcher
from scorers.metrics.qga.questions import QuestionSet, is_yes_no, questions_from_records

__all__ = ["CATEGORIES", "FEW_SHOT", "GeneratedQuestions", "OnDemandQuestions", "QuestionGenerator",
           "generation_prompt", "parse_generation", "qa_filter", "qa_prompt"]

#: TIFA's 12 element categories.
CATEGORIES = ("object", "animal/human", "food", "activity", "attribute", "counting", "color", "material", "spatial",
              "location", "shape", "other")

FEW_SHOT = """You check whether an image matches its description. Break the description into visual elements, give \
each element one category from: object, animal/human, food, activity, attribute, counting, color, material, \
spatial, location, shape, other. For every element write a yes/no question and a multiple-choice question \
(four choices) that an image faithful to the description answers with the given answer.

Description: Three yellow ducks swim across a small pond.
Element: ducks | animal/human
Q: are there ducks? | Choices: yes, no | A: yes
Q: which animals are in the picture? | Choices: ducks, geese, swans, frogs | A: ducks
Element: three | counting
Q: are there three ducks? | Choices: yes, no | A: yes
Q: how many ducks are there? | Choices: 1, 2, 3, 4 | A: 3
Element: yellow | color
Q: are the ducks yellow? | Choices: yes, no | A: yes
Q: what color are the ducks? | Choices: yellow, white, brown, black | A: yellow
Element: swim | activity
Q: are the ducks swimming? | Choices: yes, no | A: yes
Q: what are the ducks doing? | Choices: swimming, flying, sleeping, eating | A: swimming
Element: pond | location
Q: is there a pond? | Choices: yes, no | A: yes
Q: where are the ducks? | Choices: pond, road, forest, beach | A: pond
End

Description: A wooden table with a round loaf of bread on top of it.
Element: table | object
Q: is there a table? | Choices: yes, no | A: yes
Q: what piece of furniture is shown? | Choices: table, chair, bed, shelf | A: table
Element: wooden | material
Q: is the table made of wood? | Choices: yes, no | A: yes
Q: what is the table made of? | Choices: wood, glass, metal, plastic | A: wood
Element: bread | food
Q: is there bread? | Choices: yes, no | A: yes
Q: what food is on the table? | Choices: bread, cake, pizza, apple | A: bread
Element: round | shape
Q: is the bread round? | Choices: yes, no | A: yes
Q: what shape is the bread? | Choices: round, square, triangular, long | A: round
Element: on top of | spatial
Q: is the bread on top of the table? | Choices: yes, no | A: yes
Q: where is the bread relative to the table? | Choices: on top of it, under it, next to it, behind it | A: on top of it
End

"""


def generation_prompt(prompt: str) -> str:
    """The few-shot prompt that asks the LM for ``prompt``'s elements and questions."""
    return f"{FEW_SHOT}Description: {' '.join(str(prompt).split())}\n"


@dataclass
class GeneratedQuestions:
    """Parsed questions of one prompt (dict rows in the question-table layout) and what was dropped, with reasons."""

    prompt: str
    rows: list[dict] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


_ELEMENT = re.compile(r"^\s*(?:\d+[.)]\s*)?element\s*:\s*(?P<element>[^|]+?)\s*(?:\|\s*(?P<category>.+?))?\s*$", re.I)
_QUESTION = re.compile(r"^\s*(?:\d+[.)]\s*)?q\s*:\s*(?P<question>.+?)\s*\|\s*choices\s*:\s*(?P<choices>.+?)\s*\|\s*"
                       r"a\s*:\s*(?P<answer>.+?)\s*$", re.I)


def parse_generation(text: str, prompt: str = "") -> GeneratedQuestions:
    """Questions from LM output in :data:`FEW_SHOT`'s format; stops at ``End`` or the next ``Description:``."""
    out = GeneratedQuestions(prompt)
    element, category = "", "other"
    seen = set()
    for number, line in enumerate(str(text).splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if re.match(r"^(end|description\s*:)", stripped, re.I):
            if out.rows or out.dropped:
                break
            continue
        match = _ELEMENT.match(stripped)
        if match:
            element = match.group("element").strip()
            raw_category = (match.group("category") or "other").strip().lower()
            category = raw_category if raw_category in CATEGORIES else _closest_category(raw_category)
            continue
        match = _QUESTION.match(stripped)
        if not match:
            out.dropped.append(f"line {number}: not an element or question line: {stripped[:80]!r}")
            continue
        question = match.group("question").strip()
        choices = [c.strip() for c in re.split(r"\s*[,|;]\s*", match.group("choices")) if c.strip()]
        answer = match.group("answer").strip().rstrip(".")
        if len(choices) < 2 or len(set(c.lower() for c in choices)) != len(choices):
            out.dropped.append(f"line {number}: choices {choices!r} are not two or more distinct options")
            continue
        lowered = [c.lower() for c in choices]
        if answer.lower() not in lowered:
            out.dropped.append(f"line {number}: answer {answer!r} is not among the choices {choices!r}")
            continue
        answer = choices[lowered.index(answer.lower())]
        if is_yes_no(choices):
            choices, answer = ["yes", "no"], answer.lower()
        if question.lower() in seen:
            out.dropped.append(f"line {number}: repeats question {question!r}")
            continue
        seen.add(question.lower())
        out.rows.append({"prompt": prompt, "question": question, "choices": "|".join(choices), "answer": answer,
                         "element": element, "category": category})
    return out


def _closest_category(name: str) -> str:
    for category in CATEGORIES:
        if name in category.split("/") or category in name:
            return category
    return "other"


def qa_prompt(prompt: str, question: str, choices: Sequence[str]) -> str:
    """The text-QA filter's input: the description as context, the question and its choices."""
    return f"Context: {prompt}\nQuestion: {question}\nChoices: {', '.join(choices)}\nAnswer:"


def qa_filter(generated: Sequence[GeneratedQuestions], qa_model: Any,
              matcher: AnswerMatcher) -> list[GeneratedQuestions]:
    """Keep a question only if the text QA model, reading the prompt, picks the expected answer (others -> dropped)."""
    flat = [(g, row) for g in generated for row in g.rows]
    answers = qa_model.generate([qa_prompt(g.prompt, row["question"], row["choices"].split("|")) for g, row in flat])
    chosen = matcher.match(answers, [row["choices"].split("|") for _, row in flat])
    kept = [GeneratedQuestions(g.prompt, [], list(g.dropped)) for g in generated]
    index = {id(g): k for k, g in enumerate(generated)}
    for (g, row), answer, pick in zip(flat, answers, chosen):
        target = kept[index[id(g)]]
        if pick.lower() == row["answer"].lower():
            target.rows.append(row)
        else:
            target.dropped.append(f"QA filter: {row['question']!r} answered {answer.strip()!r} -> {pick!r}, "
                                  f"expected {row['answer']!r}")
    return kept


class QuestionGenerator:
    """``QuestionGenerator(lm).questions(prompts)`` -> a :class:`QuestionSet` (one pseudo-SEG id per prompt).

    ``lm`` and ``qa_model`` are anything with ``generate(prompts) -> list[str]`` (e.g. ``TextLM``); without a
    ``qa_model`` no filtering happens.
    """

    def __init__(self, lm: Any, *, qa_model: Any = None, matcher: AnswerMatcher | None = None):
        self.lm = lm
        self.qa_model = qa_model
        self.matcher = matcher

    def generate(self, prompts: Sequence[str]) -> list[GeneratedQuestions]:
        texts = self.lm.generate([generation_prompt(p) for p in prompts])
        generated = [parse_generation(t, p) for t, p in zip(texts, prompts)]
        if self.qa_model is not None:
            generated = qa_filter(generated, self.qa_model, self.matcher or AnswerMatcher())
        return generated

    def questions(self, prompts: Sequence[str], seg_ids: Sequence[int] | None = None) -> QuestionSet:
        """Generated (and filtered) questions as a validated set; a prompt left without questions is an error."""
        seg_ids = list(range(len(prompts))) if seg_ids is None else list(seg_ids)
        records = []
        for seg, g in zip(seg_ids, self.generate(prompts)):
            if not g.rows:
                reasons = "; ".join(g.dropped[:3]) or "the LM produced no question lines"
                raise ValueError(f"no usable questions generated for prompt {g.prompt!r} ({reasons})")
            records += [{"id": int(seg), "question_id": k, **r} for k, r in enumerate(g.rows)]
        # the same validation as question tables read from disk (one implementation, in the dataset builder)
        return questions_from_records(records, kind="tifa", source="generated")


class OnDemandQuestions:
    """Questions for prompts nobody wrote questions for: generated on first use, then kept per prompt.

    A drop-in for a :class:`QuestionSet` in the TIFA/DSG scorers (they only call ``lookup``, ``len`` and ``source``),
    so "score this image against this new prompt" works with the same scorers as TS2's tables. Prompts found in
    ``known`` (e.g. TS2's question table) use those questions. ``kind="dsg"`` keeps only the generated yes/no
    questions, without dependencies: the generator writes no DSG graph, so every question is a root.
    """

    def __init__(self, generator: "QuestionGenerator", *, kind: str = "tifa", known: QuestionSet | None = None):
        if kind not in ("tifa", "dsg"):
            raise ValueError(f"kind must be 'tifa' or 'dsg', got {kind!r}")
        self.generator, self.kind, self.known = generator, kind, known
        self._cache: dict[str, list] = {}

    @property
    def source(self) -> str:
        return f"generated {self.kind} questions" + (f" + {self.known.source}" if self.known is not None else "")

    def __len__(self) -> int:
        return sum(len(q) for q in self._cache.values()) + (len(self.known) if self.known is not None else 0)

    def _known(self, prompt: str):
        if self.known is None:
            return None
        try:
            return self.known.for_prompt(prompt)
        except ValueError:
            return None

    def lookup(self, prompts: Sequence[str], seg_ids: Sequence[int] | None = None) -> list[list]:
        """Questions for each prompt (``seg_ids`` go to ``known``); missing prompts are generated in one batch."""
        from dataclasses import replace

        from scorers.metrics.qga.questions import normalize_prompt

        if seg_ids is not None:
            if self.known is None:
                raise ValueError("seg_ids given but no known question table to look them up in")
            return self.known.lookup(prompts, seg_ids)
        missing = list({normalize_prompt(p): p for p in reversed(prompts)
                        if normalize_prompt(p) not in self._cache and self._known(p) is None}.values())[::-1]
        if missing:
            generated = self.generator.questions(missing)
            for k, prompt in enumerate(missing):
                questions = generated.for_seg(k)
                if self.kind == "dsg":
                    questions = [q for q in questions if q.is_yes_no]
                    if not questions:
                        raise ValueError(f"no yes/no questions generated for prompt {prompt!r}")
                self._cache[normalize_prompt(prompt)] = [replace(q, question_id=i, parents=())
                                                         for i, q in enumerate(questions)]
        return [self._known(p) or self._cache[normalize_prompt(p)] for p in prompts]
