"""The library's question-table validator (``scorers.metrics.qga.questions``) and the dataset builder's standalone copy
(``dataset_script/ts2/ts2.py``) accept and reject the same tables with the same messages.

The rules layer no longer runs the builder script to validate questions; the builder keeps its copy because it runs
on the Hub without the package. This corpus keeps the two in step: every bad table fails in both with one message;
every good table gives the same rows.
"""
from __future__ import annotations

import logging

import pytest

from scorers.ts2.dataset import builder_module, read_question_frame
from scorers.metrics.qga.questions import QuestionTableError, read_question_csv, read_question_set, validate_question_rows

TIFA = "id,prompt,question_id,question,choices,answer\n"
DSG = "id,prompt,question_id,question,choices,answer,parent_question_id\n"
GOOD_TIFA = TIFA + "0,a cat,0,is there a cat?,yes|no,yes\n0,a cat,1,what colour?,red|blue,red\n1,a dog,0,a dog?,no|yes,no\n"
GOOD_DSG = DSG + ("0,a cat,0,is there a cat?,yes|no,yes,-1\n0,a cat,1,is it red?,yes|no,yes,0\n"
                  "0,a cat,2,on a mat?,yes|no,no,1-0\n1,a dog,0,a dog?,yes|no,yes,-1\n")

#: name -> (kind, file text); every table breaks one rule (or the layout)
BAD = {
    "seg id 1.0": ("tifa", TIFA + "0,a,0,q?,yes|no,yes\n1.0,b,0,q?,yes|no,yes\n"),
    "seg id blank": ("tifa", TIFA + ",a,0,q?,yes|no,yes\n"),
    "question id word": ("tifa", TIFA + "0,a,zero,q?,yes|no,yes\n"),
    "question id negative": ("tifa", TIFA + "0,a,-1,q?,yes|no,yes\n"),
    "question id repeated": ("tifa", TIFA + "0,a,0,q?,yes|no,yes\n0,a,1,r?,yes|no,yes\n0,a,0,s?,yes|no,no\n"),
    "empty question": ("tifa", TIFA + "0,a,0,  ,yes|no,yes\n"),
    "one choice": ("tifa", TIFA + "0,a,0,q?,yes,yes\n"),
    "blank choice": ("tifa", TIFA + "0,a,0,q?,yes||no,yes\n"),
    "no choices": ("tifa", TIFA + "0,a,0,q?,,yes\n"),
    "repeated choice": ("tifa", TIFA + "0,a,0,q?,red|blue| red|blue,red\n"),
    "empty answer": ("tifa", TIFA + "0,a,0,q?,yes|no, \n"),
    "too many fields": ("tifa", TIFA + "0,a,0,q?,yes|no,yes,extra\n"),
    "missing column": ("tifa", "id,prompt,question_id,question,answer\n0,a,0,q?,yes\n"),
    "dsg without parent column": ("dsg", TIFA + "0,a,0,q?,yes|no,yes\n"),
    "parent not an id list": ("dsg", DSG + "0,a,0,q?,yes|no,yes,-1\n0,a,1,r?,yes|no,yes,0;1\n"),
    "parent missing": ("dsg", DSG + "0,a,0,q?,yes|no,yes,-1\n0,a,1,r?,yes|no,yes,0-4\n"),
    "self parent": ("dsg", DSG + "0,a,0,q?,yes|no,yes,0\n"),
    "parent cycle": ("dsg", DSG + "0,a,0,q?,yes|no,yes,2\n0,a,1,r?,yes|no,yes,0\n0,a,2,s?,yes|no,yes,1\n"),
    "parent in another SEG": ("dsg", DSG + "0,a,0,q?,yes|no,yes,-1\n1,b,0,q?,yes|no,yes,-1\n1,b,1,r?,yes|no,yes,2\n"),
    "bad row after a multi-line cell": ("tifa", TIFA + '0,a,0,"two\nlines?",yes|no,yes\n0,a,1,q?,yes|no,\n'),
    "bad row after a BOM and padded header": ("tifa", "\ufeff id , prompt,question_id,question,choices,answer\n"
                                                      "0,a,0,q?,maybe,maybe\n"),
}
#: the cases that fail on the layout (header, field count) before any row check
LAYOUT = ("too many fields", "missing column", "dsg without parent column")


def _write(tmp_path, text):
    path = tmp_path / "questions.csv"
    path.write_text(text, encoding="utf-8")
    return path


def _builder_error(path, kind, **kwargs) -> str:
    with pytest.raises(ValueError) as error:
        builder_module().read_questions(str(path), kind, **kwargs)
    assert type(error.value).__name__ == "TS2DataError"
    return str(error.value)


@pytest.mark.parametrize("case", sorted(BAD))
def test_library_and_builder_reject_the_same_tables_alike(tmp_path, case):
    kind, text = BAD[case]
    path = _write(tmp_path, text)
    expected = _builder_error(path, kind)
    assert expected.startswith(f"{path}")  # names the file (then the line, the SEG and the question)
    with pytest.raises(QuestionTableError) as from_frame:
        read_question_frame(path, kind)
    with pytest.raises(QuestionTableError) as from_set:
        read_question_set(path, kind)
    assert str(from_frame.value) == str(from_set.value) == expected


@pytest.mark.parametrize("case", sorted(set(BAD) - set(LAYOUT)))
def test_in_memory_rows_are_judged_alike(tmp_path, case):
    """The row checks alone (``validate_question_rows``) on the parsed records of each table that gets that far."""
    kind, text = BAD[case]
    path = _write(tmp_path, text)
    kind, lines, records = builder_module().read_question_csv(str(path), kind)
    with pytest.raises(ValueError) as builder:
        builder_module().validate_question_rows(records, kind, source="<memory>", line_of=lines)
    with pytest.raises(QuestionTableError) as library:
        validate_question_rows(records, kind, source="<memory>", line_of=lines)
    assert str(library.value) == str(builder.value)
    assert read_question_csv(path, kind) == (kind, lines, records)


def test_unknown_seg_ids_are_refused_alike(tmp_path):
    path = _write(tmp_path, GOOD_TIFA)
    expected = _builder_error(path, "tifa", seg_ids={0, 2})
    with pytest.raises(QuestionTableError) as library:
        read_question_frame(path, "tifa", seg_ids=[0, 2])
    assert str(library.value) == expected
    assert "(SEG 1): SEG 1 is not in metadata.csv (known SEG ids: 0-2, 2 SEGs)" in expected  # by hand


@pytest.mark.parametrize("kind, text", [("tifa", GOOD_TIFA), ("dsg", GOOD_DSG),
                                        ("tifa", TIFA + '0,a,0,"two\nlines?",yes|no,yes\n0,a,1,q?,1|2,group\n')])
def test_library_and_builder_read_good_tables_alike(tmp_path, kind, text, caplog):
    path = _write(tmp_path, text)
    with caplog.at_level(logging.WARNING):
        rows = builder_module().read_questions(str(path), kind)
        frame = read_question_frame(path, kind)
    assert frame.to_dict("records") == rows
    questions = read_question_set(path)
    assert questions.kind == kind and len(questions) == len(rows)


def test_the_release_tables_read_alike(shared_ts2):
    for name, kind in (("tifa_questions.csv", "tifa"), ("dsg_questions.csv", "dsg")):
        path = shared_ts2 / name
        assert read_question_frame(path, kind).to_dict("records") == builder_module().read_questions(str(path), kind)


def test_off_choice_answers_are_logged_by_both(tmp_path, caplog):
    """An answer outside its choices is kept, and both say so once, in the same words."""
    path = _write(tmp_path, TIFA + "0,a,0,how many?,1|2|3,group\n")
    with caplog.at_level(logging.WARNING):
        builder_module().read_questions(str(path), "tifa")
        read_question_set(path)
    said = [r.getMessage() for r in caplog.records if "not among their choices" in r.getMessage()]
    assert len(said) == 2 and said[0] == said[1]
    assert said[0] == f"{path}: 1 answer(s) are not among their choices (kept as released): line 2 (SEG 0 q0: 'group')"
