"""Corrupt TS2 sources: each breakage gives its own clear error naming the file, line, SEG and image."""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pandas as pd
import pytest

from scorers.ts2.dataset import builder_module, load_ts2
from tests.helpers.ts2_fixture_data import make_data_dir

TS2DataError = None  # the builder's error (load_ts2 runs the builder): set by builder_error before the first test


@pytest.fixture(autouse=True, scope="module")
def builder_error():
    """Loads the builder (it imports datasets) when the first test runs, not when the module is collected."""
    global TS2DataError
    TS2DataError = builder_module().TS2DataError

SEGS = [0, 1, 2, 3]  # 56 images; SEG 0 has DSG questions with parents 0 and 1-0


@pytest.fixture
def source(tmp_path, shared_ts2) -> Path:
    return make_data_dir(tmp_path / "data", seg_ids=SEGS)


def _build(source: Path, config: str = "segs", **kwargs):
    return load_ts2(config, data_dir=source, cache_dir=source.parent / "cache", **kwargs)


def _build_error(source: Path, config: str = "segs") -> str:
    """The message of the TS2DataError that building ``config`` from ``source`` raises."""
    with pytest.raises(TS2DataError) as info:
        _build(source, config)
    return str(info.value)


def _edit_csv(path: Path, edit) -> None:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    edit(frame)
    frame.to_csv(path, index=False)


def test_clean_subset_builds(source):
    assert _build(source).num_rows == 56
    assert _build(source, "dsg_questions").num_rows > 0


def test_missing_image(source):
    (source / "images" / "001-03.jpg").unlink()
    message = _build_error(source)
    assert "line 17 (SEG 1, node 1a): image images/001-03.jpg does not exist" in message
    assert "skip_missing_images=True" in message


def test_truncated_jpeg(source):
    path = source / "images" / "002-04.jpg"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TS2DataError, match=r"SEG 2, node 0b\): image images/002-04.jpg does not decode"):
        _build(source)


def test_empty_image_file(source):
    (source / "images" / "000-00.jpg").write_bytes(b"")
    with pytest.raises(TS2DataError, match=r"line 2 \(SEG 0, node 0\): image images/000-00.jpg does not decode"):
        _build(source)


def test_unknown_node_label(source):
    _edit_csv(source / "metadata.csv", lambda f: f.__setitem__("rank", f["rank"].mask(f.index == 5, "x1")))
    message = _build_error(source)
    assert "metadata.csv line 7 (SEG 0, images/000-05.jpg)" in message
    assert "node label 'x1' is not a TS2 node label" in message


def test_seg_without_head(source):
    def drop_heads(frame):
        heads = (frame["id"] == "2") & frame["rank"].str.startswith("0")
        frame.loc[heads, "rank"] = "1z"

    _edit_csv(source / "metadata.csv", drop_heads)
    with pytest.raises(TS2DataError, match=r"SEG 2 has no error-0 \(head\) node \(nodes: 1a, 1b, 1z, 2; lines"):
        _build(source)


def test_non_integer_seg_id_and_duplicate_file(source):
    _edit_csv(source / "metadata.csv", lambda f: f.__setitem__("id", f["id"].mask(f.index == 3, "1_0")))
    with pytest.raises(TS2DataError, match=r"line 5: SEG id '1_0' is not an integer"):
        _build(source)
    source2 = make_data_dir(source.parent / "data2", seg_ids=SEGS)
    _edit_csv(source2 / "metadata.csv",
              lambda f: f.__setitem__("file_name", f["file_name"].mask(f.index == 4, "images/000-01.jpg")))
    with pytest.raises(TS2DataError, match=r"line 6 .*file_name 'images/000-01.jpg' already used on line 3"):
        _build(source2)


def test_dsg_parent_cycle(source):
    # SEG 0: q3's parent is q0; making q0's parent q3 closes a cycle
    _edit_csv(source / "dsg_questions.csv", lambda f: f.__setitem__(
        "parent_question_id", f["parent_question_id"].mask((f["id"] == "0") & (f["question_id"] == "0"), "3")))
    message = _build_error(source, "dsg_questions")
    assert "dsg_questions.csv line 2 (SEG 0)" in message
    assert "DSG parents form a cycle: q0 -> q3 -> q0" in message


def test_dsg_self_parent_and_missing_parent(source):
    path = source / "dsg_questions.csv"
    original = path.read_text()
    _edit_csv(path, lambda f: f.__setitem__(
        "parent_question_id", f["parent_question_id"].mask((f["id"] == "1") & (f["question_id"] == "2"), "2")))
    with pytest.raises(TS2DataError, match="cycle: q2 -> q2"):
        _build(source, "dsg_questions")
    path.write_text(original)
    _edit_csv(path, lambda f: f.__setitem__(
        "parent_question_id", f["parent_question_id"].mask((f["id"] == "1") & (f["question_id"] == "3"), "0-9")))
    with pytest.raises(TS2DataError, match=r"SEG 1 question 3\): parent question 9 does not exist"):
        _build(source, "dsg_questions")
    path.write_text(original)
    _edit_csv(path, lambda f: f.__setitem__(
        "parent_question_id", f["parent_question_id"].mask((f["id"] == "1") & (f["question_id"] == "3"), "0,1")))
    with pytest.raises(TS2DataError, match=r"parent_question_id '0,1' is not -1 or question ids joined by '-'"):
        _build(source, "dsg_questions")


def test_question_with_unknown_seg(source):
    def add_row(frame):
        frame.loc[len(frame)] = ["999", "a prompt", "0", "Is it?", "yes|no", "yes"]

    _edit_csv(source / "tifa_questions.csv", add_row)
    with pytest.raises(TS2DataError, match=r"\(SEG 999\): SEG 999 is not in metadata.csv"):
        _build(source, "tifa_questions")


def test_duplicate_question_id(source):
    def dup(frame):
        frame.loc[len(frame)] = frame.iloc[0].tolist()

    _edit_csv(source / "tifa_questions.csv", dup)
    with pytest.raises(TS2DataError, match=r"SEG 0\) question 0\): question_id 0 already used on line 2|"
                                           r"question 0: question_id 0 already used on line 2"):
        _build(source, "tifa_questions")


def test_missing_column_and_missing_question_file(source):
    original = (source / "metadata.csv").read_text()
    _edit_csv(source / "metadata.csv", lambda f: f.drop(columns="rank", inplace=True))
    with pytest.raises(TS2DataError, match=r"metadata.csv: missing column\(s\) rank \(or node\)"):
        _build(source)
    (source / "metadata.csv").write_text(original)
    (source / "dsg_questions.csv").unlink()
    with pytest.raises(FileNotFoundError, match="dsg_questions.csv does not exist"):
        _build(source, "dsg_questions")


def test_skip_missing_images_logs_each_and_summary(source, caplog):
    for name in ("001-03.jpg", "002-05.jpg"):
        (source / "images" / name).unlink()
    with caplog.at_level(logging.WARNING):
        segs = _build(source, skip_missing_images=True)
    assert segs.num_rows == 54
    assert "images/001-03.jpg" not in segs["file_name"]
    assert "image images/001-03.jpg is missing" in caplog.text
    assert "image images/002-05.jpg is missing" in caplog.text
    assert "skipped 2 of 56 images" in caplog.text


def test_skip_missing_images_never_skips_corrupt_or_the_last_head(source):
    (source / "images" / "001-00.jpg").unlink()  # SEG 1's only head image
    with pytest.raises(TS2DataError, match=r"after skipping missing images: SEG 1 has no error-0"):
        _build(source, skip_missing_images=True)
    source2 = make_data_dir(source.parent / "data2", seg_ids=SEGS)
    (source2 / "images" / "002-00.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(TS2DataError, match="002-00.jpg does not decode"):
        _build(source2, skip_missing_images=True)


def test_many_problems_are_counted_and_listed(source):
    for path in sorted((source / "images").glob("00[01]-*.jpg")):
        path.unlink()
    message = _build_error(source)
    assert message.startswith("23 image problem(s) under")
    assert "... and 13 more" in message


def test_check_image_ignores_global_truncated_flag(source, monkeypatch):
    from PIL import ImageFile

    path = source / "images" / "000-01.jpg"
    path.write_bytes(path.read_bytes()[:-40])
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    assert "does not decode" in builder_module().check_image(str(path))
    assert ImageFile.LOAD_TRUNCATED_IMAGES is True
    with pytest.raises(TS2DataError, match="000-01.jpg does not decode"):  # the threaded check too
        _build(source)
    assert ImageFile.LOAD_TRUNCATED_IMAGES is True


def test_no_images_at_all_says_so(source):
    shutil.rmtree(source / "images")
    with pytest.raises(TS2DataError, match=r"none of the 56 images listed in .*metadata.csv exist under .*"
                                           r"first: images/000-00.jpg\); is that the folder holding images/"):
        _build(source)


# --- the library's metadata reader and the builder's standalone copy agree (issue 12, item 4) -----------------------
_HEADER = "id,target_prompt,file_name,image_source,rank\n"
_GOOD = "0,a cat,a.jpg,x,0\n0,a cat,b.jpg,x,1a\n1,a dog,c.jpg,x,0\n"
BAD_METADATA = {
    "seg id 1.0": "0,a cat,a.jpg,x,0\n1.0,a dog,c.jpg,x,0\n",
    "seg id text": "0,a cat,a.jpg,x,0\nzero,a dog,c.jpg,x,0\n",
    "duplicate file_name": "0,a cat,a.jpg,x,0\n0,a cat,a.jpg,x,1\n",
    "empty file_name": "0,a cat,a.jpg,x,0\n0,a cat,,x,1\n",
    "empty prompt": "0,a cat,a.jpg,x,0\n0,,b.jpg,x,1\n",
    "bad node label": "0,a cat,a.jpg,x,0\n0,a cat,b.jpg,x,1?\n",
    "no head": "0,a cat,a.jpg,x,1a\n0,a cat,b.jpg,x,2\n",
    "no rows": "",
    # several bad rows: the first bad row decides, whichever rule it breaks (columns are checked whole, issue 25)
    "bad label, then duplicate": "0,a cat,a.jpg,x,0\n0,a cat,b.jpg,x,x1\n0,a cat,a.jpg,x,1\n",
    "duplicate, then bad id": "0,a cat,a.jpg,x,0\n0,a cat,a.jpg,x,1\nx,a cat,c.jpg,x,1\n",
    "bad id and empty prompt on one row": "0,a cat,a.jpg,x,0\n0,a cat,b.jpg,x,1\n1.5,,,x,?\n",
    "empty prompt and duplicate on one row": "0,a cat,a.jpg,x,0\n0, ,a.jpg,x,1\n",
    "padded duplicate": "0,a cat,a.jpg,x,0\n0,a cat, a.jpg ,x,1\n",
    "padded ids and labels pass, then no head": " 0 ,a cat,a.jpg,x, 0 \n1,a dog,c.jpg,x, 1a\n",
}
BAD_HEADERS = {
    "missing rank": "id,target_prompt,file_name,image_source\n0,a cat,a.jpg,x\n",
    "missing file_name": "id,target_prompt,image_source,rank\n0,a cat,x,0\n",
}


@pytest.mark.parametrize("case", sorted(BAD_METADATA) + sorted(BAD_HEADERS))
def test_library_and_builder_reject_the_same_metadata(tmp_path, case):
    from scorers.tables.pandas_tables import read_metadata

    text = BAD_HEADERS.get(case) or _HEADER + BAD_METADATA[case]
    path = tmp_path / "metadata.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as builder_error:
        builder_module().read_metadata(str(path))
    with pytest.raises(ValueError) as library_error:
        read_metadata(path)
    assert str(library_error.value) == str(builder_error.value)  # one rule, one message


def test_library_and_builder_read_good_metadata_alike(tmp_path, shared_ts2):
    from scorers.tables.pandas_tables import read_metadata

    for path in (tmp_path / "metadata.csv", shared_ts2 / "metadata.csv"):
        if path.parent == tmp_path:
            path.write_text(_HEADER + _GOOD)
        rows = builder_module().read_metadata(str(path), warn_quirks=False)
        frame = read_metadata(path)
        for column in ("seg_id", "prompt", "file_name", "node", "error_count", "partition"):
            assert frame[column].tolist() == [r[column] for r in rows], column


@pytest.mark.parametrize("seg_id, ok", [("3", True), (" 3 ", True), ("1.0", False), ("", False), ("x", False)])
def test_answers_files_use_the_same_integer_rule(tmp_path, seg_id, ok):
    from scorers.metrics.qga.answers import read_raw_answers

    (tmp_path / "a.csv").write_text(f"id,image,question_id,vqa_answer\n{seg_id},a.jpg,0,yes\n")
    if ok:
        assert read_raw_answers(tmp_path / "a.csv")["id"].tolist() == [3]
    else:
        with pytest.raises(ValueError, match=rf"a.csv: line 2: SEG id '{seg_id}' is not an integer"):
            read_raw_answers(tmp_path / "a.csv")


def test_question_readers_have_one_name_each(shared_ts2):
    """scorers.ts2.dataset.read_question_frame -> DataFrame, scorers.metrics.qga.questions.read_question_set -> QuestionSet;
    the library has no third ``read_questions`` with another return type."""
    import scorers.ts2.dataset as data
    from scorers.metrics.qga import questions

    frame = data.read_question_frame(shared_ts2 / "dsg_questions.csv", "dsg")
    qs = questions.read_question_set(shared_ts2 / "dsg_questions.csv")
    assert isinstance(frame, pd.DataFrame) and isinstance(qs, questions.QuestionSet)
    assert not hasattr(data, "read_questions") and "read_questions" not in data.__all__
    assert not hasattr(questions, "read_questions") and "read_questions" not in questions.__all__  # no alias
