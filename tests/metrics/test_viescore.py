"""VIEScore's overall score (Ku et al. 2024: sqrt(SC x PQ), PQ = min(naturalness, artifacts)) against a loopback
chat-completions server that answers the SC and PQ prompts; the SC-only default (TS2's column) and the named SC
wordings."""
from __future__ import annotations

import base64
import io
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from scorers.metrics.judges.viescore import (PQ_PROMPT, PROMPTS, VIESCORE_PROMPT, VIESCORE_PROMPT_DETAILED, VIEScorer,
                                     parse_viescore_pq, viescore_prompt)
from tests.helpers.loopback_chat_server import ChatServer, chat_reply, request_text

# per image (by its red channel / 40): the SC reply and the PQ reply the server sends
SC_REPLIES = ['{"score": [8], "reasoning": "the bear is small"}',
              '{"score": [4], "reasoning": "no lights"}',
              '{"score": [7], "reasoning": "fine"}',
              "I cannot judge this image."]
PQ_REPLIES = ['{"score": [9, 6], "reasoning": "a slightly warped hand"}',
              '```json\n{"score": [9, 9], "reasoning": "clean"}\n```',
              "The picture looks nice.",  # no rating: PQ, hence the overall score, is NaN
              '{"score": [5, 7], "reasoning": "soft"}']
# by hand: overall = sqrt(SC * min(naturalness, artifacts)) / 10
EXPECTED_OVERALL = [math.sqrt(8 * 6) / 10, math.sqrt(4 * 9) / 10, math.nan, math.nan]
EXPECTED_SC = [0.8, 0.4, 0.7, None]
EXPECTED_PQ = [0.6, 0.9, None, 0.5]


def _image_index(body) -> int:
    url = body["messages"][-1]["content"][0]["image_url"]["url"]
    image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")
    return image.getpixel((0, 0))[0] // 40


def judge_server():
    def respond(body):
        text, k = request_text(body), _image_index(body)
        if "Rate the visual quality" in text:
            return chat_reply(PQ_REPLIES[k])
        assert "how well the image follows the text prompt" in text
        return chat_reply(SC_REPLIES[k])

    return ChatServer(respond, model="judge")


def pictures(n=4):
    return [Image.new("RGB", (8, 8), (40 * i, 0, 0)) for i in range(n)]


def test_overall_from_sc_and_pq_replies_by_hand():
    with judge_server() as server:
        scorer = VIEScorer(model="openai:judge", api_base=server.url, output="overall")
        scores, records = scorer.score_with_records(pictures(), ["a cat", "a dog", "a tree", "a car"])
        bodies = list(server.bodies)
    assert scorer.name == "viescore_overall"
    np.testing.assert_allclose(scores, EXPECTED_OVERALL, rtol=0, atol=1e-15)  # NaN where expected (equal_nan)
    assert [r["viescore_sc"] for r in records] == EXPECTED_SC
    assert [r["viescore_pq"] for r in records] == EXPECTED_PQ
    assert records[2]["judge"]["pq_error"] == "no 0-10 rating found in the reply" and records[2]["judge"]["sc"] == 7
    assert records[3]["judge"]["error"] == "no 0-10 rating found in the reply" and records[3]["judge"]["pq"] == 5
    assert records[0]["judge"]["pq_rationale"] == "a slightly warped hand"
    # one SC and one PQ request per image; the PQ request is the PQ rule alone (no text prompt), with no system message
    texts = [request_text(b) for b in bodies]
    assert len(bodies) == 8 and texts.count(PQ_PROMPT) == 4
    assert sorted(t for t in texts if t != PQ_PROMPT) == sorted(
        viescore_prompt(p) for p in ["a cat", "a dog", "a tree", "a car"])
    assert all(m["role"] != "system" for b in bodies for m in b["messages"])


def test_sc_default_is_the_ts2_column_and_sends_no_pq_prompt():
    with judge_server() as server:
        scorer = VIEScorer(model="openai:judge", api_base=server.url)
        scores, records = scorer.score_with_records(pictures(), ["a cat", "a dog", "a tree", "a car"])
        texts = [request_text(b) for b in server.bodies]
    assert scorer.name == "viescore" and scorer.output == "sc"
    np.testing.assert_allclose(scores, [0.8, 0.4, 0.7, math.nan], rtol=0, atol=1e-15)
    assert "viescore_sc" not in records[0] and PQ_PROMPT not in texts and len(texts) == 4


def test_ts2_score_overall_writes_three_columns(tmp_path):
    """`ts2 score viescore --option output=overall`: viescore_overall (the score), viescore_sc and viescore_pq."""
    from tests.helpers.ts2_fixture_data import make_data_dir

    data_dir = make_data_dir(tmp_path / "data", seg_ids=[0])
    with ChatServer(lambda body: chat_reply('{"score": [8, 2], "reasoning": "x"}' if "visual quality" in
                                            request_text(body) else '{"score": [8], "reasoning": "y"}'),
                    model="judge") as server:
        done = subprocess.run([sys.executable, "-m", "scorers.cli", "score", "viescore", "--data-dir", str(data_dir),
                               "--out", str(tmp_path / "vie.csv"), "--model", "openai:judge", "--api-base",
                               server.url, "--option", "output=overall", "--num-workers", "0", "--no-progress"],
                              capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    frame = pd.read_csv(tmp_path / "vie.csv")
    assert list(frame.columns[3:6]) == ["viescore_overall", "viescore_sc", "viescore_pq"]
    np.testing.assert_allclose(frame["viescore_overall"], math.sqrt(8 * 2) / 10, rtol=0, atol=1e-15)  # 0.4
    np.testing.assert_allclose(frame["viescore_sc"], 0.8, rtol=0, atol=0)
    np.testing.assert_allclose(frame["viescore_pq"], 0.2, rtol=0, atol=0)


@pytest.mark.parametrize("reply, value", [
    ('{"score": [6, 4], "reasoning": "x"}', 4.0),
    ('{"naturalness": 8, "artifacts": 3, "reasoning": "x"}', 3.0),
    ("```json\n{\"score\": [9, 7]}\n```", 7.0),
    ('{"score": [7]}', 7.0),
])
def test_pq_parser_takes_the_minimum(reply, value):
    assert parse_viescore_pq(reply).value == value


@pytest.mark.parametrize("reply", ["", "looks fine", '{"naturalness": 8, "artifacts": 12}'])
def test_pq_parser_unreadable_is_nan(reply):
    rating = parse_viescore_pq(reply)
    assert math.isnan(rating.value) and rating.error


def test_named_sc_wordings():
    """'paper' (default) states the paper's rule only; 'detailed' adds the stricter reading of a 10."""
    extra = "(every object, count, attribute and relation is right)"
    assert PROMPTS == {"paper": VIESCORE_PROMPT, "detailed": VIESCORE_PROMPT_DETAILED}
    assert extra not in VIESCORE_PROMPT and extra in VIESCORE_PROMPT_DETAILED
    assert VIESCORE_PROMPT_DETAILED.replace(" " + extra, "") == VIESCORE_PROMPT
    with judge_server() as server:
        detailed = VIEScorer(model="openai:judge", api_base=server.url, prompt="detailed")
        detailed.score(pictures(1), ["a cat"])
        assert extra in request_text(server.bodies[0])
    assert detailed.config["template"] == VIESCORE_PROMPT_DETAILED
    with pytest.raises(ValueError, match="prompt must be one of"):
        VIEScorer(backend=object(), prompt="strict")
    with pytest.raises(ValueError, match="output must be one of"):
        VIEScorer(backend=object(), output="pq")


def test_evaluate_module_overall_returns_the_three_columns(tmp_path, monkeypatch):
    import evaluate


    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with judge_server() as server:
        vie = evaluate.load(str(Path(__file__).resolve().parents[2] / "evaluate_modules" / "viescore"), config_name="openai:judge",
                            api_base=server.url, output="overall")
        out = vie.compute(images=pictures(), prompts=["a cat", "a dog", "a tree", "a car"])
    np.testing.assert_allclose(out["scores"], EXPECTED_OVERALL, rtol=0, atol=1e-15)
    assert out["viescore_sc"] == EXPECTED_SC and out["viescore_pq"] == EXPECTED_PQ
