"""TIFA v1.0 benchmark: reading the release formats, stats, scoring through the runner, Table 4 numbers against a hand
computation, paired comparison, missing images listed, and the report files."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from scorers.tifa_bench.tifa_v1_files import load_tifa_v1, read_question_answers, read_text_inputs, source_of
from scorers.tifa_bench.results import compare_runs, read_results, summarize, text_scores
from scorers.tifa_bench.image_scoring import find_images, score_images
from tests.helpers.tifa_v1_files import (ANSWERS_A, ANSWERS_B, QUESTIONS, ScriptedVQA, matcher, write_images,
                                            write_tifa_files)


@pytest.fixture()
def files(tmp_path):
    return write_tifa_files(tmp_path / "tifa")


@pytest.fixture()
def bench(files):
    return load_tifa_v1(*files)


# ------------------------------------------------------------------------------------------------------------ data

def test_reads_release_formats(bench):
    assert bench.text_ids == ["coco_1", "coco_2", "drawbench_5", "paintskill_7", "partiprompt_3"]
    assert list(bench.texts["source"]) == ["coco", "coco", "drawbench", "paintskill", "partiprompt"]
    assert list(bench.texts["coco_val_id"]) == ["11", "22", "", "", ""]
    q = bench.questions
    assert len(q) == len(QUESTIONS) == 10
    assert list(q.loc[q["text_id"] == "coco_1", "question_id"]) == [0, 1, 2]
    row = q.iloc[1]
    assert (row["question"], row["choices"], row["answer"], row["category"], row["element"]) == (
        "what color is the car?", ["red", "blue", "green", "yellow"], "red", "color", "red")
    qs = bench.question_set()
    assert [x.question for x in qs.for_seg(1)] == ["how many dogs are there?", "are there dogs?"]
    assert qs.for_seg(0)[1].category == "color"


def test_source_of():
    assert source_of("coco_301091") == "coco" and source_of("partiprompt_0") == "partiprompt"
    assert source_of("plain") == "plain"


def test_stats_on_fixture(bench):
    stats = bench.stats()
    assert stats["prompts"] == 5
    assert stats["prompts_per_source"] == {"coco": 2, "drawbench": 1, "partiprompt": 1, "paintskill": 1}
    assert stats["questions"] == 10
    # counted by hand from QUESTIONS: object 3, animal/human 1, location 1, color 2, counting 2, shape 1
    assert stats["questions_per_category"] == {"object": 3, "animal/human": 1, "location": 1, "color": 2,
                                               "counting": 2, "shape": 1}
    # distinct (text, element) pairs: every question here has its own element
    assert stats["elements_per_category"] == stats["questions_per_category"]
    assert stats["texts_without_questions"] == []


@pytest.mark.parametrize("mutate, message", [
    (lambda t, q: q.__setitem__(0, {**q[0], "id": "coco_999"}), r"entry 0 \(id 'coco_999'\): id is not among"),
    (lambda t, q: q.__setitem__(2, {**q[2], "choices": "yes"}), r"entry 2 \(id 'coco_1'\): 'choices' must be a list"),
    (lambda t, q: q.__setitem__(3, {**q[3], "question": " "}), r"entry 3 \(id 'coco_2'\): field 'question'"),
    (lambda t, q: q.__setitem__(5, {**q[5], "choices": ["yes"]}), r"entry 5 \(id 'drawbench_5'\).*at least two"),
    (lambda t, q: t.append(dict(t[0])), r"entry 5 \(id 'coco_1'\): id already used by entry 0"),
])
def test_bad_entries_named(files, mutate, message):
    texts_path, qa_path = files
    texts, qas = json.loads(texts_path.read_text()), json.loads(qa_path.read_text())
    mutate(texts, qas)
    texts_path.write_text(json.dumps(texts))
    qa_path.write_text(json.dumps(qas))
    with pytest.raises(ValueError, match=message):
        read_question_answers(qa_path, read_text_inputs(texts_path))


def test_repeated_choice_deduplicated(files):
    texts_path, qa_path = files
    qas = json.loads(qa_path.read_text())
    qas[1]["choices"] = ["red", "blue", "red", "yellow"]
    qa_path.write_text(json.dumps(qas))
    q = read_question_answers(qa_path, read_text_inputs(texts_path))
    assert q.iloc[1]["choices"] == ["red", "blue", "yellow"]


def test_parquet_export_loads_with_datasets(bench, tmp_path):
    from datasets import load_dataset

    bench.export_parquet(tmp_path / "out")
    questions = load_dataset(str(tmp_path / "out"), "questions", split="train")
    texts = load_dataset(str(tmp_path / "out"), "texts", split="train")
    assert len(questions) == 10 and len(texts) == 5
    assert questions[1]["choices"] == ["red", "blue", "green", "yellow"] and questions[1]["category"] == "color"
    with pytest.raises(ValueError, match="not empty"):
        bench.export_parquet(tmp_path / "out")


# ------------------------------------------------------------------------------------------------------- scoring

def test_find_images_layouts_missing_and_unknown(bench, tmp_path):
    root = write_images(tmp_path / "imgs")
    (root / "coco_9.png").write_bytes(b"x")
    index = find_images(root, bench.text_ids)
    assert list(zip(index.items["text_id"], index.items["image"])) == [
        ("coco_1", "0"), ("coco_2", "0"), ("coco_2", "1"), ("drawbench_5", "0"), ("paintskill_7", "0")]
    assert index.missing == ["partiprompt_3"] and index.unknown == ["coco_9.png"]
    (root / "coco_2.png").write_bytes(b"x")
    with pytest.raises(ValueError, match="'coco_2' has both"):
        find_images(root, bench.text_ids)


def _score(bench, images, out, answers, **kw):
    backend = ScriptedVQA(answers)
    run = score_images(bench, images, out, name=out.name, backend=backend,
                       scorer_options={"matcher": matcher()}, batch_size=2, num_workers=0, progress=False, **kw)
    return run, backend


def test_accuracies_equal_hand_computation(bench, tmp_path):
    run, _ = _score(bench, write_images(tmp_path / "imgs"), tmp_path / "A", ANSWERS_A)
    # missing image listed, run marked incomplete
    assert list(run.missing["text_id"]) == ["partiprompt_3"] and run.info["complete"] is False
    assert run.info["texts_scored"] == 4 and run.info["images"] == 5
    # by hand (ANSWERS_A, white images; coco_2/1.png is black so its yes/no question fails):
    # coco_1 2/3; coco_2 images 2/2 and 1/2 -> 0.75; drawbench_5 1/2; paintskill_7 1/2
    result = read_results(tmp_path / "A")
    scores = text_scores(result.questions).set_index("text_id")["score"]
    np.testing.assert_allclose(scores[["coco_1", "coco_2", "drawbench_5", "paintskill_7"]],
                               [2 / 3, 0.75, 0.5, 0.5], atol=1e-12)
    table = summarize(result, n_bootstrap=200).set_index(["group", "key"])["value"]
    expected = {
        ("overall", "overall"): (2 / 3 + 0.75 + 0.5 + 0.5) / 4,
        ("source", "coco"): (2 / 3 + 0.75) / 2, ("source", "drawbench"): 0.5, ("source", "paintskill"): 0.5,
        ("category", "object"): 2 / 2,      # coco_1 car yes, paintskill bus yes
        ("category", "animal/human"): 1 / 2,  # dogs: white image yes, black image no
        ("category", "color"): 1 / 2,       # car 'blue' wrong, cube 'blue' right
        ("category", "counting"): 2 / 3,    # dogs '2' on both images right, buses '3' wrong
        ("category", "location"): 1 / 1, ("category", "shape"): 0 / 1,
    }
    assert set(table.index) == set(expected)
    for key, value in expected.items():
        assert table[key] == pytest.approx(value, abs=1e-12), key
    files = {p.name for p in (tmp_path / "A").iterdir()}
    assert {"questions.csv", "images.csv", "missing.csv", "run.json", "cache"} <= files
    assert pd.read_csv(tmp_path / "A" / "images.csv")["tifa"].round(6).tolist() == [0.666667, 1.0, 0.5, 0.5, 0.5]


def test_rerun_asks_nothing_and_changed_image_is_rescored(bench, tmp_path):
    images = write_images(tmp_path / "imgs")
    first, backend = _score(bench, images, tmp_path / "A", ANSWERS_A)
    again, backend = _score(bench, images, tmp_path / "A", ANSWERS_A)
    assert backend.asked == [] and again.info["computed_now"] == 0
    pd.testing.assert_frame_equal(first.questions, again.questions)
    from PIL import Image

    Image.new("RGB", (16, 16), "white").save(images / "coco_2" / "1.png")  # regenerated: now white
    third, backend = _score(bench, images, tmp_path / "A", ANSWERS_A)
    assert backend.asked == ["how many dogs are there?", "are there dogs?"]  # only the changed image
    assert third.images.set_index(["text_id", "image"]).loc[("coco_2", "1"), "tifa"] == 1.0


def test_ci_brackets_value_and_matches_plain_bootstrap(bench, tmp_path):
    _score(bench, write_images(tmp_path / "imgs"), tmp_path / "A", ANSWERS_A)
    result = read_results(tmp_path / "A")
    table = summarize(result, n_bootstrap=4000, seed=1).set_index(["group", "key"])
    overall = table.loc[("overall", "overall")]
    assert overall["ci_low"] <= overall["value"] <= overall["ci_high"]
    # a plain percentile bootstrap over the 4 text scores (independent loop, another RNG): the interval ends agree
    # to Monte Carlo error (0.05 is a loose bound for 4,000 resamples of 4 values in [0.5, 0.75])
    values = np.array([2 / 3, 0.75, 0.5, 0.5])
    rng = np.random.default_rng(123)
    boot = [values[rng.integers(0, 4, 4)].mean() for _ in range(4000)]
    assert overall["ci_low"] == pytest.approx(np.quantile(boot, 0.025), abs=0.05)
    assert overall["ci_high"] == pytest.approx(np.quantile(boot, 0.975), abs=0.05)
    single = table.loc[("source", "drawbench")]  # one text: no interval
    assert np.isnan(single["ci_low"]) and single["texts"] == 1


def test_two_models_compared_with_ci(bench, tmp_path):
    _score(bench, write_images(tmp_path / "imgs"), tmp_path / "A", ANSWERS_A)
    _score(bench, write_images(tmp_path / "imgsB", second_dark_image=False), tmp_path / "B", ANSWERS_B)
    a, b = read_results(tmp_path / "A"), read_results(tmp_path / "B")
    cmp = compare_runs(a, b, n_resamples=2000)
    # by hand: B is right everywhere (1.0 per text); A - B per text = -1/3, -1/4, -1/2, -1/2
    assert cmp.value_b == 1.0 and cmp.statistic == pytest.approx(-(1 / 3 + 1 / 4 + 1 / 2 + 1 / 2) / 4)
    assert -0.5 <= cmp.confidence_interval.low <= cmp.statistic <= cmp.confidence_interval.high <= -0.25  # every resample mean is in there
    # 4 paired texts, all differences negative: only 2 of the 16 sign patterns reach |mean| -> p about 1/8
    assert cmp.pvalue == pytest.approx(0.125, abs=0.03) and cmp.n_units == 4


def test_report_files(bench, tmp_path):
    from scorers.tifa_bench.model_leaderboard import build_leaderboard, write_leaderboard

    _score(bench, write_images(tmp_path / "imgs"), tmp_path / "A", ANSWERS_A)
    _score(bench, write_images(tmp_path / "imgsB", second_dark_image=False), tmp_path / "B", ANSWERS_B)
    board = build_leaderboard([read_results(tmp_path / "A"), read_results(tmp_path / "B")], n_bootstrap=200)
    paths = write_leaderboard(board, tmp_path / "report")
    markdown = paths["markdown"].read_text()
    header = markdown.splitlines()[0]
    assert header.startswith("| Model | object | animal/human | location | color | counting | shape | COCO | "
                             "DrawBench | PaintSkill | Overall |")
    assert "| A | 100.0" in markdown and "60.4" in markdown  # object 2/2; overall 0.6041667
    assert "A: incomplete, 4 of 5 text inputs scored" in markdown
    wide = pd.read_csv(paths["csv"]).set_index("model")
    assert wide.loc["A", "counting"] == pytest.approx(100 * 2 / 3) and wide.loc["B", "Overall".lower()] == 100
    assert r"\begin{tabular}" in paths["latex"].read_text()
    assert paths["chart"].stat().st_size > 1000


def test_pinned_files_go_through_release_fetch(files, tmp_path, monkeypatch):
    """Without paths the loader fetches both files with the real ``scorers.tables.release_download.fetch`` from their pinned commit
    (here a loopback server standing in for raw GitHub via TS2_GITHUB_URL): offline and not cached is a clear error
    with no request; one download each; the text inputs are checked against their pin (for the stand-in, its own
    digest: tests/helpers/pin_override.py), the question file's digest is recorded (sha256=None: trust on first use); then
    cache only. Under the real pin the stand-in text inputs are refused."""
    import hashlib

    from huggingface_hub import constants

    from scorers.tables.release import ChecksumMismatch, ReleaseFileUnavailable
    from scorers.tifa_bench import tifa_v1_files as data
    from tests.helpers.pin_override import pin_tifa_v1
    from tests.helpers.loopback_http import FolderServer

    assert data.FILES["text_inputs"] == ("tifa_v1.0_text_inputs.json",
                                         "650281d508b056ac9782bc84d5493626424ee851a8778af90b9db554cfbc1a0f")
    assert data.FILES["question_answers"][1] is None  # its digest could not be read: trust on first use

    root = tmp_path / "served"
    folder = root / "Yushi-Hu" / "tifa" / data.REVISION / "tifa_v1.0"  # the path of the real raw GitHub URLs
    folder.mkdir(parents=True)
    for file in files:
        (folder / file.name).write_bytes(file.read_bytes())
    home = tmp_path / "hf"
    monkeypatch.setattr(constants, "HF_HOME", str(home))
    server = FolderServer(root)
    monkeypatch.setenv("TS2_GITHUB_URL", server.base)
    try:
        offline_error = r"(?s)offline mode.*tifa_v1\.0_text_inputs\.json  <-  http://127"
        with pytest.raises(ReleaseFileUnavailable, match=offline_error):
            load_tifa_v1(offline=True)
        assert server.requests == 0
        texts, qas = files
        with pytest.raises(ChecksumMismatch, match=r"tifa_v1\.0_text_inputs\.json: sha256 .* pinned 650281d5"):
            load_tifa_v1(offline=False)  # the real pin: the stand-in is not TIFA's file
        assert server.requests == 1
        assert not [p for p in (home / "ts2-evaluate").rglob("*") if p.is_file()]  # the refused file is not kept
        texts_digest = hashlib.sha256(texts.read_bytes()).hexdigest()
        pin_tifa_v1(monkeypatch, "text_inputs", texts_digest)  # test-only: the stand-in's own digest
        bench = load_tifa_v1(offline=False)
        assert len(bench.texts) == 5 and len(bench.questions) == 10
        assert server.requests == 3
        pinned = home / "ts2-evaluate" / texts_digest / texts.name  # release_download.fetch's layout for pinned files
        assert pinned.read_bytes() == texts.read_bytes()
        assert not pinned.with_name(texts.name + ".sha256").exists()  # pinned: nothing recorded
        unpinned = home / "ts2-evaluate" / "unpinned" / data.REVISION
        assert (unpinned / qas.name).read_bytes() == qas.read_bytes()
        assert (unpinned / (qas.name + ".sha256")).read_text().strip() == hashlib.sha256(qas.read_bytes()).hexdigest()
        assert len(load_tifa_v1(offline=True).questions) == 10
        assert len(load_tifa_v1().questions) == 10  # offline=None: HF_HUB_OFFLINE=1 (conftest), the cache serves
        assert server.requests == 3
    finally:
        server.stop()
    with pytest.raises(ValueError, match="unknown TIFA v1.0 file"):
        data.pinned_path("images")


def test_subset_then_full_share_cache_and_edited_question_is_asked_again(files, tmp_path):
    images = write_images(tmp_path / "imgs")
    bench = load_tifa_v1(*files)
    _, backend = _score(bench.subset(["coco_1"]), images, tmp_path / "A", ANSWERS_A)
    assert backend.asked == [q[1] for q in QUESTIONS if q[0] == "coco_1"]
    _, backend = _score(bench, images, tmp_path / "A", ANSWERS_A)
    assert "is there a car?" not in backend.asked and len(backend.asked) == 2 * 2 + 2 + 2  # all but coco_1's
    texts_path, qa_path = files
    qas = json.loads(qa_path.read_text())
    qas[7]["answer"] = "3"  # paintskill_7's bus count
    qa_path.write_text(json.dumps(qas))
    run, backend = _score(load_tifa_v1(*files), images, tmp_path / "A", ANSWERS_A)
    assert backend.asked == ["how many buses are there?", "is there a bus?"]  # only paintskill_7 again
    assert run.images.set_index("text_id").loc["paintskill_7", "tifa"] == 1.0  # '3' is now right
