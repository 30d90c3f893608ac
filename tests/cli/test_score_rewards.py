"""Every reward scorer end to end: ``ts2 score pickscore|hpsv2|imagereward|hpsv3|unifiedreward --data-dir D --out O --model
TINY_LOCAL_DIR`` each writes one finite score per image of a generated TS2-format data dir (2 SEGs, 23 images of
16 px), and ``unifiedreward`` also with ``--model openai:NAME --api-base URL`` against a loopback server.

The command runs in this process through ``scorers.cli.main`` (the parser and handler of ``ts2``; a subprocess would
only add a second torch import). Models are tiny and built from configs: random weights for the four reward models;
for ``unifiedreward`` a tiny Qwen3-VL whose greedy reply is the published pointwise format by construction
(``tests/helpers/tiny_judge_models.py``: ``Alignment Score (1-5): 4`` / ``Coherence ... 3`` / ``Style ... 5``), so its
expected scores are known without running our parser.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

NAMES = ["pickscore", "hpsv2", "imagereward", "hpsv3", "unifiedreward"]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    from tests.helpers.ts2_fixture_data import make_data_dir

    return make_data_dir(tmp_path_factory.mktemp("acceptance-data"), seg_ids=[0, 1], with_questions=False)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from tests.helpers.tiny_judge_models import make_fixed_reply_qwen3_vl
    from tests.helpers.tiny_reward_models import tiny_reward_models

    root = tmp_path_factory.mktemp("acceptance-models")
    out = tiny_reward_models(root, hpsv3=True)
    out["unifiedreward"] = str(make_fixed_reply_qwen3_vl(root / "ur"))
    return out


def ts2_score(*args) -> int:
    from scorers.cli import main

    return main(["score", *map(str, args), "--num-workers", "0", "--no-progress"])


def read_scores(out: Path, data_dir: Path, name: str) -> pd.DataFrame:
    frame = pd.read_csv(out)
    metadata = pd.read_csv(data_dir / "metadata.csv", dtype=str)
    assert len(metadata) == 23  # SEGs 0 and 1 of the release
    assert len(frame) == len(metadata), f"{name}: {len(frame)} rows for {len(metadata)} images"
    assert sorted(frame["file_name"]) == sorted(metadata["file_name"]), name
    assert np.isfinite(frame[name].to_numpy(dtype=float)).all(), f"{name}: non-finite scores"
    return frame


@pytest.mark.parametrize("name", NAMES)
def test_ts2_score_with_a_tiny_local_model_writes_one_finite_score_per_image(name, models, data_dir, tmp_path,
                                                                            monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / f"{name}.csv"
    options = ["--option", "max_new_tokens=8"] if name == "unifiedreward" else []
    code = ts2_score(name, "--data-dir", data_dir, "--out", out, "--model", models[name], "--batch-size", 8, *options)
    assert code == 0, capsys.readouterr().err[-2000:]
    frame = read_scores(out, data_dir, name)
    if name == "unifiedreward":  # the tiny judge's reply, fixed by construction (see the module docstring)
        assert (frame["unifiedreward"] == 4).all()
        assert (frame["unifiedreward_coherence"] == 3).all() and (frame["unifiedreward_style"] == 5).all()
    else:  # random weights still tell the images apart
        assert frame[name].nunique() > 1, name


def test_ts2_score_unifiedreward_served_writes_one_finite_score_per_image(data_dir, tmp_path):
    from tests.helpers.loopback_chat_server import ChatServer, chat_reply

    def respond(body):
        caption = next(p["text"] for p in body["messages"][-1]["content"] if p.get("type") == "text")
        return chat_reply(f"Alignment Score (1-5): {1 + len(caption) % 5}\nCoherence Score (1-5): 3\n"
                          "Style Score (1-5): 2")

    out = tmp_path / "ur-served.csv"
    with ChatServer(respond, model="UnifiedReward", max_requests=200) as server:
        assert ts2_score("unifiedreward", "--data-dir", data_dir, "--out", out, "--model", "openai:UnifiedReward",
                         "--api-base", server.url) == 0
        assert 1 <= len(server.bodies) <= 23  # identical (image, prompt) requests are answered from the served cache
    read_scores(out, data_dir, "unifiedreward")
