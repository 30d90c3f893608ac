"""VIEScore and LLMScore: parsers on messy replies, scoring rules with scripted backends, stage caching, and
`ts2 score viescore|llmscore` end to end with tiny local models and against a loopback chat-completions server."""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from scorers.scoring.cache import RequestCache
from scorers.metrics.judges.llmscore import LLMScorer, parse_llmscore
from scorers.metrics.judges.viescore import VIEScorer, parse_viescore, viescore_prompt
from tests.helpers.loopback_chat_server import ChatServer, chat_reply, request_text

ROOT = Path(__file__).resolve().parents[2]

# (reply, expected SC) -- the numbers are read by eye from each reply
VIESCORE_REPLIES = [
    ('{"score": [7], "reasoning": "The tree is there but the bear is missing."}', 7.0),
    ('```json\n{\n  "score": [8],\n  "reasoning": "Close match."\n}\n```', 8.0),
    ("Sure! Here is my evaluation:\n{'score': [6], 'reasoning': 'It's missing the teddy bear'}", 6.0),
    ('{"score": [7], "reasoning": "ok",}', 7.0),
    ("Score: 7/10\nThe image mostly follows the prompt.", 7.0),
    ("**Score**: 9 - everything is there.", 9.0),
    ("I would rate this image 4/10 because the colours are wrong.", 4.0),
    ('{"score": "8/10", "reasoning": "good"}', 8.0),
    ('{"score": [7, 5], "reasoning": "two sub-scores"}', 5.0),
    ('{"Score": 3.5, "Reasoning": "capitalised keys"}', 3.5),
    ("The rating is 2.", 2.0),
    ("7", 7.0),
    ("[10]", 10.0),
    ("output score = [0]", 0.0),
]
VIESCORE_UNREADABLE = [
    '{"reasoning": "The image shows a cat but I cannot rate it."}',
    "The image shows a cat on a table.",
    "",
    '{"score": [12], "reasoning": "too high"}',
    "Score: -3",
]


@pytest.mark.parametrize("reply,expected", VIESCORE_REPLIES)
def test_viescore_parser_reads_messy_replies(reply, expected):
    rating = parse_viescore(reply)
    assert rating.value == expected and rating.error is None


@pytest.mark.parametrize("reply", VIESCORE_UNREADABLE)
def test_viescore_parser_unreadable_is_nan_never_zero(reply):
    rating = parse_viescore(reply)
    assert math.isnan(rating.value) and rating.error


def test_viescore_parser_keeps_the_rationale():
    assert parse_viescore('```json\n{"score": [8], "reasoning": "Close match."}\n```').rationale == "Close match."
    assert parse_viescore("Score: 7/10").rationale == "Score: 7/10"  # no separate rationale: the whole reply


# (reply, expected error count, expected overall)
LLMSCORE_REPLIES = [
    ('{"overall": 85, "error_count": 1, "overall_rationale": "good", "error_rationale": "one colour"}', 1, 85),
    ('Here you go:\n```json\n{"overall": 40, "error_count": 4, "error_rationale": "the bear is missing"}\n```', 4, 40),
    ("85\n2\nThe description matches well.\nTwo attributes are wrong.", 2, 85),  # the paper's X1/X2/Z1/Z2 lines
    ("Overall rating: 80/100\nError count: 3\nThe dog is brown, not black.", 3, 80),
    ("Overall score: 8/10. Number of composition errors: 0.", 0, 80),  # a /10 rating rescaled to 1-100
    ("{'overall': 60, 'errors': 2,}", 2, 60),
]


@pytest.mark.parametrize("reply,errors,overall", LLMSCORE_REPLIES)
def test_llmscore_parser_reads_messy_replies(reply, errors, overall):
    judgement = parse_llmscore(reply)
    assert (judgement.error_count, judgement.overall, judgement.errors) == (errors, overall, [])


def test_llmscore_parser_missing_fields_are_nan_with_reasons():
    only_overall = parse_llmscore('{"overall": 70, "overall_rationale": "fine"}')
    assert math.isnan(only_overall.error_count) and only_overall.overall == 70
    assert only_overall.errors == ["no error count found"]
    nothing = parse_llmscore("I cannot evaluate this image.")
    assert math.isnan(nothing.error_count) and math.isnan(nothing.overall) and len(nothing.errors) == 2
    bad = parse_llmscore('{"overall": 250, "error_count": 1.5}')
    assert math.isnan(bad.error_count) and math.isnan(bad.overall)
    assert bad.errors == ["error count 1.5 is not a whole number >= 0", "overall rating 250 is outside 1-100"]


class ScriptedVLM:
    """A backend answering from a table keyed by (image colour, instruction start); counts calls."""

    def __init__(self, reply):
        self.reply, self.calls, self.name = reply, [], "scripted-vlm"

    def answer(self, images, questions):
        self.calls.append(len(questions))
        return [self.reply(image, question) for image, question in zip(images, questions)]


class ScriptedLM:
    def __init__(self, reply):
        self.reply, self.calls, self.name = reply, [], "scripted-lm"

    def generate(self, prompts, max_new_tokens=None):
        self.calls.append(len(prompts))
        return [self.reply(p) for p in prompts]


def colours(n):
    return [Image.new("RGB", (8, 8), (i * 40, 0, 0)) for i in range(n)]


def test_viescore_scores_sc_over_10_and_records_unreadable_as_nan():
    replies = ['{"score": [8], "reasoning": "good"}', "Score: 3/10", "no idea"]
    vlm = ScriptedVLM(lambda image, question: replies[image.getpixel((0, 0))[0] // 40])
    scorer = VIEScorer(backend=vlm)
    scores, records = scorer.score_with_records(colours(3), ["a cat", "a dog", "a tree"])
    np.testing.assert_array_equal(scores[:2], [0.8, 0.3])  # SC / 10
    assert math.isnan(scores[2])
    assert records[2]["judge"]["sc"] is None and records[2]["judge"]["error"] == "no 0-10 rating found in the reply"
    assert records[0]["judge"] == {"sc": 8.0, "rationale": "good", "reply": replies[0], "error": None}


def test_viescore_prompt_has_the_papers_output_format():
    text = viescore_prompt("A  red\ncat")
    assert "Text prompt: A red cat" in text and '{"score": [' in text and '"reasoning"' in text


def llm_reply_from_prompt(prompt):
    """Errors = number of words of the description that are 'wrong', overall from the prompt length."""
    description = re.search(r"\(global\): (.*)", prompt).group(1)
    return f'{{"overall": {100 - 10 * description.count("wrong")}, "error_count": {description.count("wrong")}}}'


def test_llmscore_two_stages_and_orientation():
    vlm = ScriptedVLM(lambda image, q: ("wrong " * (image.getpixel((0, 0))[0] // 40)) + "scene"
                      if q.startswith("Describe") else "cat: 1, red")
    lm = ScriptedLM(llm_reply_from_prompt)
    scorer = LLMScorer(backend=vlm, llm=lm)
    scores, records = scorer.score_with_records(colours(3), ["a cat"] * 3)
    np.testing.assert_array_equal(scores, [0, 1, 2])  # error counts: 0, 1, 2 "wrong" words
    assert [r["llmscore_overall"] for r in records] == [100, 90, 80]
    assert records[1]["judge"]["global_description"] == "wrong scene"
    assert records[1]["judge"]["local_description"] == "cat: 1, red"
    assert scorer.higher_is_better == {"llmscore_ec": False} and scorer.name == "llmscore_ec"
    assert vlm.calls == [6] and lm.calls == [3]  # global + local captions in one batched call


def test_llmscore_crash_in_llm_stage_does_not_redo_captions(tmp_path):
    vlm = ScriptedVLM(lambda image, q: "a red scene")
    crashing = ScriptedLM(lambda prompt: (_ for _ in ()).throw(RuntimeError("judge crashed")))
    scorer = LLMScorer(backend=vlm, llm=crashing)
    scorer.use_request_cache(RequestCache(tmp_path / "requests"))
    with pytest.raises(RuntimeError, match="judge crashed"):
        scorer.score_with_records(colours(2), ["a cat", "a dog"])
    assert vlm.calls == [4]
    rerun = LLMScorer(backend=vlm, llm=ScriptedLM(lambda prompt: '{"overall": 50, "error_count": 1}'))
    rerun.use_request_cache(RequestCache(tmp_path / "requests"))
    scores, _ = rerun.score_with_records(colours(2), ["a cat", "a dog"])
    assert vlm.calls == [4]  # captions came from the stage cache
    np.testing.assert_array_equal(scores, [1, 1])


def test_llmscore_batched_equals_one_at_a_time():
    vlm = ScriptedVLM(lambda image, q: ("wrong " * (image.getpixel((0, 0))[0] // 40)) + "scene")
    scorer = LLMScorer(backend=vlm, llm=ScriptedLM(llm_reply_from_prompt))
    pictures, prompts = colours(5), ["a cat", "a dog", "a tree", "a cup", "a car"]
    batched = scorer.score_with_records(pictures, prompts)
    single = [scorer.score_with_records([p], [q]) for p, q in zip(pictures, prompts)]
    np.testing.assert_array_equal(batched[0], np.concatenate([s for s, _ in single]))
    assert batched[1] == [r[0] for _, r in single]


# ----------------------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    from tests.helpers.ts2_fixture_data import make_data_dir

    return make_data_dir(tmp_path_factory.mktemp("judge-data"), seg_ids=[0, 1, 2])


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    from tests.helpers.tiny_vqa_models import make_causal_lm, make_chat_vlm

    root = tmp_path_factory.mktemp("judge-models")
    return make_chat_vlm(root), make_causal_lm(root)


def env():
    out = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    out.pop("OPENAI_API_KEY", None)
    return out


def ts2_score(*args):
    return subprocess.run([sys.executable, "-m", "scorers.cli", "score", *map(str, args), "--num-workers", "0",
                           "--no-progress", "--meta"], env=env(), capture_output=True, text=True, timeout=600)


def check_meta_table(stdout, columns):
    assert re.search(r"^metric +meta +avg", stdout, re.M)  # one row per metric and meta-metric
    assert all(re.search(rf"^.* {m} +-?\d", stdout, re.M) for m in ("rank", "sep", "delta"))
    for column in columns:
        assert column in stdout


def test_viescore_and_llmscore_end_to_end_with_tiny_local_models(data_dir, tiny_models, tmp_path):
    vlm, lm = tiny_models
    done = ts2_score("viescore", "--data-dir", data_dir, "--out", tmp_path / "vie.csv", "--model", vlm,
                     "--option", "max_new_tokens=8", "--batch-size", 16)
    # a random tiny model writes no readable rating, so every score is NaN: the CSV is written, and --meta then refuses
    # a metric with no valid score (issue 12: all-NaN is an error, never a row of 0.0); the loopback-server test below
    # covers --meta with readable ratings
    assert done.returncode == 2, done.stderr[-2000:]
    assert "has no valid score (all 45 values are NaN or empty)" in done.stderr
    frame = pd.read_csv(tmp_path / "vie.csv")
    assert list(frame.columns[:4]) == ["seg_id", "file_name", "node", "viescore"]
    # a random tiny model writes no rating: NaN (never 0) with the reason in the records
    assert frame["viescore"].isna().all()
    done = ts2_score("llmscore", "--data-dir", data_dir, "--out", tmp_path / "llm.csv", "--model", vlm,
                     "--option", f"llm={lm}", "--option", "caption_max_new_tokens=6",
                     "--option", "judge_max_new_tokens=6", "--batch-size", 16)
    assert done.returncode == 2, done.stderr[-2000:]  # all NaN again (random tiny judge): --meta refuses, CSV written
    assert "has no valid score" in done.stderr
    assert {"llmscore_ec", "llmscore_overall"} <= set(pd.read_csv(tmp_path / "llm.csv").columns)
    assert (tmp_path / "llm.csv.cache" / "requests" / "rank0.jsonl").stat().st_size > 0  # the stage cache of the local backends


def judge_server():
    """Scripted served judge: VIEScore ratings and LLMScore error counts that follow the image's node colour."""
    def respond(body):
        text = request_text(body)
        content = body["messages"][-1]["content"]
        if isinstance(content, list):  # a VLM request: read the image's red channel as a stand-in for its errors
            import base64
            import io

            url = content[0]["image_url"]["url"]
            image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
            level = image.convert("RGB").getpixel((0, 0))[1] // 60  # make_data_dir: green encodes the node
            if "Rate, on a scale from 0 to 10" in text:
                return chat_reply(f'```json\n{{"score": [{10 - 2 * level}], "reasoning": "level {level}"}}\n```')
            return chat_reply(f"errors {level}" if text.startswith("Describe") else "objects")
        errors = int(re.search(r"errors (\d+)", text).group(1))
        return chat_reply(f"Overall rating: {90 - 10 * errors}/100\nError count: {errors}\n")

    return ChatServer(respond, model="judge")


def test_viescore_and_llmscore_end_to_end_against_the_loopback_server(data_dir, tmp_path):
    with judge_server() as server:
        vie = ts2_score("viescore", "--data-dir", data_dir, "--out", tmp_path / "vie.csv", "--model",
                        "openai:judge", "--api-base", server.url, "--max-concurrency", 4)
        llm = ts2_score("llmscore", "--data-dir", data_dir, "--out", tmp_path / "llm.csv", "--model",
                        "openai:judge", "--option", "llm=openai:judge", "--api-base", server.url)
    assert vie.returncode == 0, vie.stderr[-2000:]
    assert llm.returncode == 0, llm.stderr[-2000:]
    check_meta_table(vie.stdout, ["viescore"])
    check_meta_table(llm.stdout, ["llmscore_ec (lower is better)", "llmscore_overall"])
    metadata = pd.read_csv(data_dir / "metadata.csv")
    level = metadata["rank"].map(lambda node: (int(node[0]) * 60 + ord(node[-1])) % 256 // 60)  # the server's rule
    vie_frame, llm_frame = pd.read_csv(tmp_path / "vie.csv"), pd.read_csv(tmp_path / "llm.csv")
    np.testing.assert_allclose(vie_frame["viescore"], (10 - 2 * level) / 10)
    np.testing.assert_array_equal(llm_frame["llmscore_ec"], level)
    np.testing.assert_array_equal(llm_frame["llmscore_overall"], 90 - 10 * level)
    assert "served requests: " in vie.stderr and "served requests: " in llm.stderr


def test_evaluate_modules_equal_the_library(tmp_path, monkeypatch):
    import evaluate

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    pictures = [Image.new("RGB", (16, 16), (0, g, 0)) for g in (0, 60, 120)]
    prompts = ["a cat", "a dog", "a tree"]
    with judge_server() as server:
        vie = evaluate.load(str(ROOT / "evaluate_modules" / "viescore"), config_name="openai:judge",
                            api_base=server.url)
        out = vie.compute(images=pictures, prompts=prompts)
        llm = evaluate.load(str(ROOT / "evaluate_modules" / "llmscore"), config_name="openai:judge",
                            llm="openai:judge", api_base=server.url)
        llm_out = llm.compute(images=pictures, prompts=prompts)
    np.testing.assert_allclose(out["scores"], [1.0, 0.8, 0.6])  # the server's rule: 10 - 2 * (green // 60)
    assert llm_out["scores"] == [0, 1, 2] and llm_out["llmscore_overall"] == [90, 80, 70]


def test_readme_parser_example_runs_as_written(capsys):
    page = (ROOT / "docs" / "scorers" / "judges.md").read_text(encoding="utf-8")
    section = page.split("# Judge metrics and served models", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "docs/scorers/judges.md", "exec"), {})
    assert capsys.readouterr().out.splitlines() == ["7.0", "no 0-10 rating found in the reply", "3.0"]
