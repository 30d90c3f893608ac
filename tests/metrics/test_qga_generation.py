"""Question generation: our few-shot prompt, the robust parser, the QA filter, and a tiny causal LM's plumbing."""
from __future__ import annotations

import pytest

from scorers.metrics.qga.generation import (CATEGORIES, FEW_SHOT, QuestionGenerator, generation_prompt, parse_generation,
                                    qa_filter)
from scorers.metrics.qga.matching import AnswerMatcher
from scorers.metrics.qga.questions import read_question_set
from tests.helpers.qga_fakes import FakeEncoder

OUTPUT = """Element: cat | animal/human
Q: is there a cat? | Choices: yes, no | A: Yes
2. q: What animal is on the sofa?|choices: cat, dog, rabbit, bird|a: cat.
Element: red | Colour
Q: is the sofa red? | Choices: yes, no | A: yes
Q: what color is the sofa? | Choices: red, blue, green | A: purple
Q: is the cat red? | Choices: yes | A: yes
Q: is there a cat? | Choices: yes, no | A: yes
this line is noise
End
Description: something else
Element: x | object
Q: is there x? | Choices: yes, no | A: yes
"""


def test_prompt_has_twelve_categories_and_examples():
    assert len(CATEGORIES) == 12
    prompt = generation_prompt("A  red cat\non a sofa.")
    assert prompt.startswith(FEW_SHOT) and prompt.endswith("Description: A red cat on a sofa.\n")
    # our in-context examples parse to valid questions: a yes/no and a multiple-choice one per element
    examples = FEW_SHOT.split("Description:")[1:]
    for example in examples:
        parsed = parse_generation(example.split("\n", 1)[1])
        assert parsed.dropped == [] and len(parsed.rows) == 10
        assert all(r["category"] in CATEGORIES for r in parsed.rows)
        assert [r["choices"] == "yes|no" for r in parsed.rows] == [True, False] * 5


def test_parser_is_robust_and_says_what_it_dropped():
    parsed = parse_generation(OUTPUT, "A red cat on a sofa.")
    assert [(r["question"], r["choices"], r["answer"], r["element"], r["category"]) for r in parsed.rows] == [
        ("is there a cat?", "yes|no", "yes", "cat", "animal/human"),
        ("What animal is on the sofa?", "cat|dog|rabbit|bird", "cat", "cat", "animal/human"),
        ("is the sofa red?", "yes|no", "yes", "red", "other"),
    ]
    reasons = " / ".join(parsed.dropped)
    assert "answer 'purple' is not among the choices" in reasons
    assert "choices ['yes'] are not two or more distinct options" in reasons
    assert "repeats question 'is there a cat?'" in reasons
    assert "not an element or question line: 'this line is noise'" in reasons
    assert parse_generation("").rows == []


class ScriptedLM:
    def __init__(self, outputs):
        self.outputs, self.prompts = outputs, []

    def generate(self, prompts):
        self.prompts.extend(prompts)
        return [self.outputs[i % len(self.outputs)] for i in range(len(prompts))]


def test_generator_and_qa_filter(tmp_path):
    lm = ScriptedLM([OUTPUT])
    qa = ScriptedLM(["yes", "a dog", "no"])  # keeps q0, drops q1 (dog != cat) and q2 (no != yes)
    generator = QuestionGenerator(lm, qa_model=qa, matcher=AnswerMatcher(encoder=FakeEncoder()))
    generated = generator.generate(["A red cat on a sofa."])
    assert [r["question"] for r in generated[0].rows] == ["is there a cat?"]
    assert any("QA filter: 'What animal is on the sofa?' answered 'a dog' -> 'dog'" in d for d in generated[0].dropped)
    assert qa.prompts[1] == ("Context: A red cat on a sofa.\nQuestion: What animal is on the sofa?\n"
                             "Choices: cat, dog, rabbit, bird\nAnswer:")
    questions = QuestionGenerator(lm).questions(["A red cat on a sofa.", "A dog."], seg_ids=[5, 7])
    assert questions.seg_ids == [5, 7] and len(questions.for_seg(5)) == 3
    assert questions.for_prompt("a red cat on a sofa")[1].choices == ("cat", "dog", "rabbit", "bird")
    # round trip through the question-table CSV layout
    path = tmp_path / "generated.csv"
    questions.to_frame().to_csv(path, index=False)
    again = read_question_set(path)
    assert again.for_seg(7)[2].question == "is the sofa red?" and again.for_seg(7)[2].category == "other"
    with pytest.raises(ValueError, match="no usable questions generated for prompt 'x'"):
        QuestionGenerator(ScriptedLM(["nothing useful"])).questions(["x"])


def test_qa_filter_keeps_all_when_qa_agrees():
    parsed = [parse_generation(OUTPUT, "p")]
    kept = qa_filter(parsed, ScriptedLM(["Yes.", "a cat", "yes indeed"]), AnswerMatcher(encoder=FakeEncoder()))
    assert len(kept[0].rows) == 3


def test_text_lm_batched_equals_single(tmp_path):
    from scorers.models.text_lm import TextLM
    from tests.helpers.tiny_vqa_models import make_causal_lm

    lm = TextLM(str(make_causal_lm(tmp_path)), device="cpu", batch_size=4, max_new_tokens=6)
    prompts = [generation_prompt("A red cat."), "Context: a dog\nQuestion: is there a dog?\nAnswer:", "short"]
    batched = lm.generate(prompts)
    assert batched == [lm.generate([p])[0] for p in prompts]
    # the generator runs end to end on a real (tiny, untrained) LM. Expectation built from the raw text itself, not
    # from the parser: no line of it has the "question, choices, answer" shape, so no row comes out, and every
    # non-blank line that is not an element/question line is reported as dropped, with its line number
    raw = lm.generate([generation_prompt("A red cat.")])[0]
    generated = QuestionGenerator(lm).generate(["A red cat."])
    lines = [(k, line.strip()) for k, line in enumerate(raw.splitlines(), 1) if line.strip()]
    assert not any(line.count("|") >= 1 and line.lower().startswith(("q", "is ", "what")) for _, line in lines)
    assert generated[0].rows == []
    assert len(generated[0].dropped) == len(lines) and len(lines) > 0
    assert all(reason.startswith(f"line {k}: ") for (k, _), reason in zip(lines, generated[0].dropped))


def test_text_lm_seq2seq_batched_equals_single(tmp_path):
    """UnifiedQA-style seq2seq QA models go through the same TextLM (right padding, decoder output only)."""
    from scorers.models.text_lm import TextLM
    from tests.helpers.tiny_vqa_models import make_seq2seq_lm

    qa = TextLM(str(make_seq2seq_lm(tmp_path)), device="cpu", batch_size=4, max_new_tokens=5)
    assert qa.is_encoder_decoder and qa.tokenizer.padding_side == "right"
    prompts = ["Context: a red cat\nQuestion: is there a cat?\nChoices: yes, no\nAnswer:", "short one", "a b c d e f"]
    assert qa.generate(prompts) == [qa.generate([p])[0] for p in prompts]


class AnswerBook:
    """A scripted VQA backend: a fixed answer per question text."""

    name = "answer-book"

    def __init__(self, answers):
        self.answers, self.asked = answers, []

    def answer(self, images, questions):
        self.asked.extend(questions)
        return [self.answers[q] for q in questions]


def test_on_demand_questions_score_a_new_prompt_with_tifa_and_dsg(shared_ts2):
    from PIL import Image

    from scorers.metrics.qga.generation import OnDemandQuestions
    from scorers.metrics.qga.question_scorers import DSGScorer, TIFAScorer

    book = AnswerBook({"is there a cat?": "yes", "What animal is on the sofa?": "a dog", "is the sofa red?": "no",
                       "is there a Christmas tree?": "yes"})
    lm = ScriptedLM([OUTPUT])
    matcher = AnswerMatcher(encoder=FakeEncoder())
    image = Image.new("RGB", (8, 8))
    tifa = TIFAScorer(OnDemandQuestions(QuestionGenerator(lm)), backend=book, matcher=matcher)
    scores, records = tifa.score_with_records([image, image], ["A red cat on a sofa.", "a red cat on a sofa"])
    # q0 yes (right), q1 'a dog' -> 'dog' (expected cat: wrong), q2 'no' (expected yes: wrong)
    assert scores.tolist() == pytest.approx([1 / 3, 1 / 3])
    assert records[0]["failed_questions"] == "1|2"
    assert len(lm.prompts) == 1  # one generation for both spellings of the prompt, then kept
    tifa.score([image], ["A red cat on a sofa."])
    assert len(lm.prompts) == 1
    # DSG on generated questions: the yes/no ones only, all roots -> 1 of 2 answered yes
    dsg = DSGScorer(OnDemandQuestions(QuestionGenerator(lm), kind="dsg"), backend=book, matcher=matcher)
    assert dsg.score([image], ["A red cat on a sofa."]).tolist() == pytest.approx([0.5])
    # prompts of a known table keep their questions; only new ones are generated
    known = read_question_set(shared_ts2 / "tifa_questions.csv")
    mixed = OnDemandQuestions(QuestionGenerator(lm), known=known)
    lists = mixed.lookup(["A Christmas tree with lights and teddy bear", "A red cat on a sofa."])
    assert lists[0] == known.for_seg(0) and [q.question for q in lists[1]][0] == "is there a cat?"
    assert len(lm.prompts) == 3  # tifa's, dsg's and this source's single generation each
    with pytest.raises(ValueError, match="no yes/no questions generated for prompt 'x'"):
        OnDemandQuestions(QuestionGenerator(ScriptedLM(["Element: x | object\nQ: what is x? | Choices: a, b | A: a"])),
                          kind="dsg").lookup(["x"])
