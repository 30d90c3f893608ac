"""UnifiedReward-2.0 pointwise judge: parser, scorer on scripted replies, tiny local chat VLM, loopback server."""
from __future__ import annotations

import base64
import io
import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from scorers.metrics.judges.unifiedreward import UNIFIEDREWARD_PROMPT, UnifiedRewardScorer, parse_unifiedreward
from tests.helpers.loopback_chat_server import ChatServer, chat_reply


# (reply, alignment, coherence, style) -- read by eye
@pytest.mark.parametrize("reply, expected", [
    ("Alignment Score (1-5): 4\nCoherence Score (1-5): 3.5\nStyle Score (1-5): 2", (4, 3.5, 2)),
    ("**Alignment Score (1-5):** 5\nCoherence Score: 4\nStyle: 1", (5, 4, 1)),
    ("alignment score (1 - 5) = 2.25", (2.25, math.nan, math.nan)),
])
def test_parser_reads_the_published_format_and_near_variants(reply, expected):
    parsed = parse_unifiedreward(reply)
    np.testing.assert_array_equal([parsed["alignment"], parsed["coherence"], parsed["style"]], expected)
    assert parsed["error"] is None


@pytest.mark.parametrize("reply, error", [
    ("The image is nice.", "no 'Alignment Score (1-5): X' line in the reply"),
    ("Alignment Score (1-5): 7", "alignment score 7 is outside 1-5"),
    ("", "no 'Alignment Score (1-5): X' line in the reply"),
])
def test_parser_unreadable_is_nan_with_a_reason(reply, error):
    parsed = parse_unifiedreward(reply)
    assert math.isnan(parsed["alignment"]) and parsed["error"] == error


class Scripted:
    name = "scripted"

    def __init__(self, replies):
        self.replies, self.calls = replies, []

    def answer(self, images, questions):
        self.calls.append(list(questions))
        return [self.replies[image.getpixel((0, 0))[0] // 40] for image in images]


def test_scorer_scores_alignment_and_records_the_other_axes():
    replies = ["Alignment Score (1-5): 4\nCoherence Score (1-5): 2\nStyle Score (1-5): 5", "no idea"]
    backend = Scripted(replies)
    scorer = UnifiedRewardScorer(backend=backend)
    images = [Image.new("RGB", (8, 8), (40 * i, 0, 0)) for i in range(2)]
    scores, records = scorer.score_with_records(images, ["a  red\ncube", "two dogs"])
    assert scores[0] == 4 and math.isnan(scores[1])
    assert records[0]["unifiedreward_coherence"] == 2 and records[0]["unifiedreward_style"] == 5
    assert records[1]["judge"]["error"] == "no 'Alignment Score (1-5): X' line in the reply"
    assert backend.calls[0][0].endswith("Text Caption: [a red cube]")
    assert "Alignment Score (1-5): X\nCoherence Score (1-5): Y\nStyle Score (1-5): Z" in UNIFIEDREWARD_PROMPT


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    from tests.helpers.ts2_fixture_data import make_data_dir

    return make_data_dir(tmp_path_factory.mktemp("ur-data"), seg_ids=[0, 1])


def ts2_score(*args):
    from scorers.cli import main

    return main(["score", *map(str, args), "--num-workers", "0", "--no-progress"])


def test_ts2_score_with_a_tiny_local_chat_vlm(data_dir, tmp_path, monkeypatch):
    """The local chat-VLM path end to end; a random tiny model writes no readable score: NaN, with the reason."""
    from tests.helpers.tiny_vqa_models import make_chat_vlm

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = make_chat_vlm(tmp_path / "models")
    out = tmp_path / "ur.csv"
    assert ts2_score("unifiedreward", "--data-dir", data_dir, "--out", out, "--model", model,
                     "--option", "max_new_tokens=6", "--batch-size", 16) == 0
    frame = pd.read_csv(out)
    assert len(frame) == len(pd.read_csv(data_dir / "metadata.csv")) and "unifiedreward" in frame.columns


def test_ts2_score_against_the_loopback_server(data_dir, tmp_path):
    """Served path (``--model openai:NAME --api-base URL``): a scripted server rates by the image's green channel."""
    def respond(body):
        content = body["messages"][-1]["content"]
        url = next(part["image_url"]["url"] for part in content if part.get("type") == "image_url")
        image = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")
        level = image.getpixel((0, 0))[1] // 60
        return chat_reply(f"Alignment Score (1-5): {5 - level}\nCoherence Score (1-5): 3\nStyle Score (1-5): 4")

    out = tmp_path / "ur.csv"
    with ChatServer(respond, model="UnifiedReward") as server:
        assert ts2_score("unifiedreward", "--data-dir", data_dir, "--out", out, "--model", "openai:UnifiedReward",
                         "--api-base", server.url) == 0
    frame = pd.read_csv(out)
    metadata = pd.read_csv(data_dir / "metadata.csv")
    assert len(frame) == len(metadata) and np.isfinite(frame["unifiedreward"]).all()
    level = metadata["rank"].map(lambda node: (int(node[0]) * 60 + ord(node[-1])) % 256 // 60)  # make_data_dir's rule
    np.testing.assert_array_equal(frame["unifiedreward"], 5 - level)
    assert (frame["unifiedreward_style"] == 4).all()


def test_evaluate_module_against_the_loopback_server(tmp_path, monkeypatch):
    import evaluate
    from pathlib import Path

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))

    def respond(body):
        text = body["messages"][-1]["content"]
        caption = next(part["text"] for part in text if part.get("type") == "text")
        return chat_reply(f"Alignment Score (1-5): {2 if 'dog' in caption else 5}\nCoherence Score (1-5): 3")

    root = Path(__file__).resolve().parents[2]
    pictures = [Image.new("RGB", (16, 16), (0, 0, 0))] * 2
    with ChatServer(respond, model="UnifiedReward") as server:
        module = evaluate.load(str(root / "evaluate_modules" / "unifiedreward"), config_name="openai:UnifiedReward",
                               api_base=server.url)
        out = module.compute(images=pictures, prompts=["a cat", "a dog"])
    assert out["scores"] == [5, 2]
