"""The SEG explorer draws a built dir's own edges (its segs.json), and TS2's level pairs without one."""
import shutil

import pytest

from tests.helpers.seg_files import build_walks_dir


def _explorer(metadata_path, data_dir):
    from scorers.demo.config import AppConfig
    from scorers.demo.explorer import SegExplorer
    from scorers.demo.sources import ImageSource, Tables
    from scorers.tables.pandas_tables import read_metadata

    config = AppConfig(metadata=metadata_path, data_dir=data_dir)
    tables = Tables(metadata=read_metadata(metadata_path), paths={"metadata": metadata_path})
    return SegExplorer(tables, None, ImageSource(config))


def _drawn(figure) -> int:
    return len(figure.axes[0].lines)  # one line per edge drawn


def test_explorer_draws_the_built_edges(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out, _ = build_walks_dir(tmp_path, capsys)
    explorer = _explorer(out / "metadata.csv", out)
    assert _drawn(explorer.figure(0)) == 4  # 0-1a, 0-1b, 1a-2a, 1b-2b
    assert explorer.segs[0].walks() == [("0", "1a", "2a"), ("0", "1b", "2b")]
    assert "2 walk(s) along its edges" in explorer.summary_markdown(0, None)

    bare = tmp_path / "bare"
    shutil.copytree(out, bare)
    (bare / "segs.json").unlink()
    assert _drawn(_explorer(bare / "metadata.csv", bare).figure(0)) == 6  # every pair of adjacent levels


# --- which error did the metric see: one image's questions, marked against the truth -----------------------------

def test_answer_mark_against_the_truth():
    from scorers.demo.explorer import answer_mark

    assert [answer_mark(s, t) for s, t in [(False, False), (True, False), (True, True), (False, True)]] == [
        "right", "wrong: false alarm", "right: error found", "wrong: error missed"]
    assert answer_mark(True, None) == "truth unknown: says wrong"
    assert answer_mark(False, float("nan")) == "truth unknown: says right"


def test_release_head_image_marks_every_wrong_answer_a_false_alarm(shared_ts2):
    import pandas as pd

    from scorers.demo.config import AppConfig
    from scorers.demo.explorer import SegExplorer
    from scorers.demo.sources import ImageSource, Tables
    from scorers.tables.pandas_tables import read_metadata

    metadata = shared_ts2 / "metadata.csv"
    tables = Tables(metadata=read_metadata(metadata), paths={"metadata": metadata})
    explorer = SegExplorer(tables, None, ImageSource(AppConfig(metadata=metadata)), data_dir=shared_ts2)
    assert list(explorer.answers) == ["mplug_tifa", "llava_tifa", "blip1_tifa", "mplug_dsg", "llava_dsg", "blip1_dsg"]
    assert explorer.image_choices(0)[:2] == [("node 0 · images/000-00.jpg", "images/000-00.jpg"),
                                             ("node 1a · images/000-01.jpg", "images/000-01.jpg")]
    # by hand from the files: the release's first two runs of rows (question 0, 1, ...) are SEG 0's first two images
    rows = pd.read_csv(shared_ts2 / "per_question" / "mplug_tifa.csv", dtype=str, keep_default_na=False)
    starts = [k for k, q in enumerate(rows["question_id"]) if q == "0"]
    head, second = rows.iloc[starts[0]:starts[1]], rows.iloc[starts[1]:starts[2]]
    questions = pd.read_csv(shared_ts2 / "tifa_questions.csv", dtype=str, keep_default_na=False)
    seg0 = questions[questions["id"] == "0"].set_index("question_id")

    table = explorer.question_table("images/000-00.jpg", "mplug_tifa")
    assert table["question"].tolist() == [seg0.loc[q, "question"] for q in head["question_id"]]
    assert table["expected"].tolist() == [seg0.loc[q, "answer"] for q in head["question_id"]]
    assert table["answer"].tolist() == head["mc_answer"].tolist()
    assert table["mark"].tolist() == ["right" if c == "1" else "wrong: false alarm" for c in head["correct"]]
    summary = explorer.question_summary("images/000-00.jpg", "mplug_tifa", table)
    assert f"{len(head)} question(s), {(head['correct'] == '1').sum()} right" in summary

    table = explorer.question_table("images/000-01.jpg", "mplug_tifa")  # node 1a: the release has no error set
    assert table["mark"].tolist() == [f"truth unknown: says {'right' if c == '1' else 'wrong'}"
                                      for c in second["correct"]]
    assert "truth unknown" in explorer.question_summary("images/000-01.jpg", "mplug_tifa", table)
    with pytest.raises(ValueError, match="unknown answers 'nope'"):
        explorer.question_table("images/000-00.jpg", "nope")


def _built_with_types(tmp_path, capsys):
    """``ts2 seg build`` of one SEG whose errors carry types: head, a, b, a;c (8 px PNGs)."""
    import pandas as pd

    from tests.helpers.cli import run_cli
    from tests.helpers.seg_files import write_images

    rows = pd.DataFrame({"seg_id": 0, "prompt": "prompt 0", "errors": ["", "a", "b", "a;c"],
                         "error_types": ["", "attribute", "missing", "attribute;relation"],
                         "file_name": ["h.png", "a.png", "b.png", "ac.png"]})
    write_images(tmp_path / "imgs", rows["file_name"].tolist())
    rows.to_csv(tmp_path / "annotations.csv", index=False)
    code, _, err = run_cli(capsys, "seg", "build", tmp_path / "annotations.csv", "--images", tmp_path / "imgs",
                           "--out", tmp_path / "built")
    assert code == 0, err
    return tmp_path / "built"


def test_built_image_marks_each_answer_against_its_elements_truth(tmp_path, capsys):
    import pandas as pd

    from scorers.demo.explorer import SegExplorer

    out = _built_with_types(tmp_path, capsys)
    metadata = pd.read_csv(out / "metadata.csv", dtype=str, keep_default_na=False)
    head = metadata[metadata["rank"] == "0"]["file_name"].iloc[0]
    two = metadata[metadata["errors"].isin(["a;c", "c;a"])]["file_name"].iloc[0]  # the image whose errors are a, c
    questions = pd.DataFrame({"id": 0, "prompt": "prompt 0", "question_id": [0, 1, 2, 3],
                              "question": ["a?", "b?", "c?", "anything?"], "choices": "yes|no", "answer": "yes",
                              "element": ["a", "b", "c", ""]})
    questions.to_csv(tmp_path / "questions.csv", index=False)
    said_right = {two: [0, 0, 1, 0], head: [1, 1, 1, 1]}  # correct = 1: the answer is the expected one
    pd.DataFrame([{"seg_id": 0, "file_name": image, "question_id": q, "question": questions["question"][q],
                   "expected": "yes", "answer": "yes" if ok else "no", "correct": ok}
                  for image, flags in said_right.items() for q, ok in enumerate(flags)]).to_csv(
        tmp_path / "my_vqa.records.csv", index=False)
    explorer = SegExplorer(explorer_tables(out / "metadata.csv"), None, _explorer(out / "metadata.csv", out).images,
                           answers={"my_vqa": tmp_path / "my_vqa.records.csv"}, questions=tmp_path / "questions.csv")
    table = explorer.question_table(two, "my_vqa")
    # a: wrong and said wrong; b: not in {a, c} but said wrong; c: wrong but said right; no element: unknown
    assert table["mark"].tolist() == ["right: error found", "wrong: false alarm", "wrong: error missed",
                                      "truth unknown: says wrong"]
    assert table["element"].tolist()[:3] == ["a", "b", "c"] and table["answer"].tolist() == ["no", "no", "yes", "no"]
    assert explorer.question_table(head, "my_vqa")["mark"].tolist()[:3] == ["right"] * 3
    assert "has no answers" in explorer.question_summary(
        "elsewhere.png", "my_vqa", explorer.question_table(head, "my_vqa").iloc[:0])


def explorer_tables(metadata_path):
    from scorers.demo.sources import Tables
    from scorers.tables.pandas_tables import read_metadata

    return Tables(metadata=read_metadata(metadata_path), paths={"metadata": metadata_path})


def test_explorer_tab_has_the_question_widgets(config, monkeypatch, shared_ts2):
    from scorers.demo import build_app

    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    components = build_app(config).get_config_file()["components"]
    by_id = {c.get("props", {}).get("elem_id"): c["props"] for c in components}
    assert {"question-image", "question-note", "question-table"} <= set(by_id)
    assert by_id["question-image"]["value"] == "images/000-00.jpg"
    assert [label for label, _value in by_id["question-image"]["choices"]][:2] == ["node 0 · images/000-00.jpg",
                                                                                  "node 1a · images/000-01.jpg"]
