"""``ts2 score --engine ray``: a local Ray (2 CPUs, one instance for the whole session) on a tiny CLIP gives the
default engine's CSV within 1e-6, and a rerun after a partial run scores only the rest (counted in the cache)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers.environment import skip_module_without

skip_module_without("ray")

from scorers.scoring.registry import build_scorer  # noqa: E402
from scorers.tables.pandas_tables import read_metadata  # noqa: E402
from scorers.ts2.scoring import score_data_dir, score_table  # noqa: E402
from tests.helpers.ts2_fixture_data import make_data_dir  # noqa: E402


N_IMAGES = 45  # SEGs 0, 1, 2

OPTIONS = {"form": "cosine"}


def _cache_entries(cache_dir: Path) -> list[dict]:
    return [json.loads(line) for shard in sorted(Path(cache_dir).glob("**/*.jsonl")) if "requests" not in shard.parts
            for line in shard.read_text().splitlines() if line.strip()]


def test_ray_csv_equals_default_engine(local_ray, clip_path, data_dir, tmp_path):
    default_out, ray_out = tmp_path / "default.csv", tmp_path / "ray.csv"
    score_data_dir("clip_score", data_dir, default_out, model=clip_path, scorer_options=OPTIONS, batch_size=8,
                   num_workers=0, progress=False)
    frame, result = score_data_dir("clip_score", data_dir, ray_out, model=clip_path, scorer_options=OPTIONS,
                                   batch_size=8, progress=False, engine="ray", engine_options={"workers": 2})
    assert result.computed == N_IMAGES and result.extra["engine"] == "ray"
    default, by_ray = pd.read_csv(default_out), pd.read_csv(ray_out)
    assert list(by_ray.columns) == list(default.columns) == ["seg_id", "file_name", "node", "clip_score"]
    pd.testing.assert_frame_equal(by_ray.drop(columns="clip_score"), default.drop(columns="clip_score"))
    # float32 model on the same CPU; only the batch composition differs (ragged last batches)
    np.testing.assert_allclose(by_ray["clip_score"], default["clip_score"], atol=1e-6, rtol=0)
    assert np.isfinite(by_ray["clip_score"]).all()


def test_ray_rerun_after_a_crashed_driver_scores_only_the_rest(local_ray, clip_path, data_dir, tmp_path,
                                                               monkeypatch):
    """The driver dies (an exception out of its collect loop) after 2 of the ~6 batches reached the cache; the rerun
    scores exactly the others and the CSV equals an uninterrupted run's."""
    from scorers.scoring.cache import ShardWriter
    from scorers.scoring.engines.ray_data import RayScorer, run_ray

    metadata = read_metadata(data_dir / "metadata.csv")
    cache_dir = tmp_path / "cache"
    scorer = RayScorer({"name": "clip_score", "model": clip_path, "options": OPTIONS}, workers=1)  # 1 actor: start-up
    append, calls = ShardWriter.append, []

    def dying_append(self, entries):
        if len(calls) == 2:
            raise KeyboardInterrupt("driver killed")
        calls.append(len(entries))
        append(self, entries)

    monkeypatch.setattr(ShardWriter, "append", dying_append)
    with pytest.raises(KeyboardInterrupt):
        score_table(scorer, metadata, data_dir, engine=run_ray, cache_dir=cache_dir, batch_size=8, progress=False)
    monkeypatch.setattr(ShardWriter, "append", append)
    done = sum(calls)  # 2 batches of at most 8 (block sizes 7 or 8; arrival order is not fixed)
    assert len(calls) == 2 and 2 <= done <= 16
    finished = {e["key"] for e in _cache_entries(cache_dir)}
    assert len(finished) == done
    frame, again = score_table(scorer, metadata, data_dir, engine=run_ray, cache_dir=cache_dir, batch_size=8,
                               progress=False)
    assert again.computed == N_IMAGES - done
    assert sum(again.from_cache) == done
    assert {k for k, cached in zip(again.keys, again.from_cache) if cached} == finished
    keys = [e["key"] for e in _cache_entries(cache_dir)]
    assert len(keys) == N_IMAGES and len(set(keys)) == N_IMAGES  # each item scored exactly once over the two runs
    # the reference: the default engine, uninterrupted (float32, same CPU; batch composition differs: ulps)
    reference = build_scorer("clip_score", model=clip_path, device="cpu", **OPTIONS)
    _, fresh = score_table(reference, metadata, data_dir, batch_size=8, num_workers=0, progress=False)
    np.testing.assert_allclose(frame["clip_score"], fresh.scores, atol=1e-6, rtol=0)


def test_missing_ray_is_one_line(monkeypatch, data_dir, tmp_path, capsys):
    """``ts2 score --engine ray`` without Ray installed: exit 2 and one line naming the extra, no traceback."""
    import builtins

    from scorers.cli import main

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ModuleNotFoundError("No module named 'ray'", name="ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    code = main(["score", "clip_score", "--engine", "ray", "--data-dir", str(data_dir), "--out",
                 str(tmp_path / "s.csv"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "Traceback" not in err
    assert "No module named 'ray'" in err and "install the ray extra" in err and "'.[ray]'" in err


def test_served_vlm_judge_on_ray_equals_the_default_engine(local_ray, tmp_path):
    """``vqa_score --model openai:NAME --api-base URL --engine ray``: each actor holds the served-model client
    (:class:`scorers.models.openai_compat.OpenAIChat`), and the images go through the CPU decode stage as PIL pixels
    (this scorer has no transform). The loopback server scripts P(yes) from each request's image bytes, so equal
    scores mean the actors sent the very requests the default engine sends."""
    import math

    from PIL import Image

    from tests.helpers.loopback_chat_server import ChatServer, body_hash, chat_reply

    root = make_data_dir(tmp_path / "served", seg_ids=[0], image_size=16, with_questions=False)
    for i, name in enumerate(pd.read_csv(root / "metadata.csv")["file_name"]):  # one distinct image per row
        Image.new("RGB", (16, 16), ((i * 11) % 256, (i * 29) % 256, 200)).save(root / name)

    def yes_from_image(body):
        url = body["messages"][-1]["content"][0]["image_url"]["url"]
        p = 0.05 + 0.9 * (int(body_hash({"u": url})[:6], 16) / 0xFFFFFF)
        return chat_reply("Yes", top_logprobs=[{"token": "Yes", "logprob": math.log(p)},
                                               {"token": "No", "logprob": math.log(1 - p)}])

    with ChatServer(yes_from_image) as server:
        options = {"api_base": server.url}
        score_data_dir("vqa_score", root, tmp_path / "default.csv", model="openai:tiny", scorer_options=options,
                       batch_size=8, num_workers=0, progress=False)
        sent_by_default = server.posts
        _, result = score_data_dir("vqa_score", root, tmp_path / "ray.csv", model="openai:tiny",
                                   scorer_options=options, batch_size=8, progress=False, engine="ray",
                                   engine_options={"workers": 1})
    default, by_ray = pd.read_csv(tmp_path / "default.csv"), pd.read_csv(tmp_path / "ray.csv")
    assert result.extra["engine"] == "ray" and result.computed == len(default)
    assert server.posts - sent_by_default == len(default)  # one request per item, as the default engine
    pd.testing.assert_frame_equal(by_ray, default)  # the same requests, the same scripted answers: exactly equal


def test_decode_stage_then_actor_in_process_keeps_order_and_reports_bad_images(clip_path, data_dir, tmp_path):
    """The two stages' functions without Ray: a batch with an unreadable file and a missing one is decoded (errors
    per row, the rest as arrays) and scored by the actor's code in order; the good rows equal the default engine's."""
    from scorers.scoring.engines.ray_data import _Decoder, _ScoreActor
    from scorers.scoring.runner import run

    spec = {"name": "clip_score", "model": clip_path, "options": OPTIONS}
    scorer = build_scorer("clip_score", model=clip_path, device="cpu", **OPTIONS)
    metadata = read_metadata(data_dir / "metadata.csv").head(4)
    paths = [str(data_dir / name) for name in metadata["file_name"]]
    (tmp_path / "bad.png").write_bytes(b"not an image")
    refs = [paths[0], str(tmp_path / "bad.png"), paths[1], str(tmp_path / "missing.png"), paths[2]]
    prompts = [metadata["prompt"][0], "x", metadata["prompt"][1], "y", metadata["prompt"][2]]
    batch = {"key": np.array(list("abcde"), dtype=object), "image": np.array(refs, dtype=object),
             "prompt": np.array(prompts, dtype=object)}
    decoded = _Decoder(scorer.image_transform)(batch)
    assert list(decoded["kind"]) == ["tensor", "", "tensor", "", "tensor"]
    assert "bad.png" in decoded["error"][1] and "missing.png" in decoded["error"][3]
    import torch

    threads = torch.get_num_threads()
    try:
        out = _ScoreActor(spec)(decoded)
    finally:  # the actor takes one thread (its Ray CPU); this test process must keep its own for later tests
        torch.set_num_threads(threads)
    assert list(out["key"]) == list("abcde") and np.isnan(out["score"][[1, 3]]).all()
    reference = run(scorer, paths[:3], prompts[0:1] + prompts[2:3] + prompts[4:5], batch_size=8, num_workers=0,
                    progress=False)
    np.testing.assert_allclose(out["score"][[0, 2, 4]], reference.scores, atol=1e-6, rtol=0)


@pytest.mark.parametrize("kind", ["ActorUnavailableError", "NodeDiedError", "WorkerCrashedError"])
def test_a_worker_lost_mid_run_is_one_line_saying_the_rerun_resumes(kind):
    """What a killed node's raylet raises out of Ray Data's iterator becomes one line (a ``ValueError``, which the
    CLI prints without a traceback) with the number of items kept in the cache; the batches before it still arrive.
    The real kill: tests/scoring/test_ray_cluster.py."""
    import ray

    from scorers.scoring.engines.ray_data import _batches_or_lost, _lost_worker_errors

    error = getattr(ray.exceptions, kind).__new__(getattr(ray.exceptions, kind))

    class Dataset:
        def iter_batches(self, **kwargs):
            yield {"key": ["a"]}
            raise error

    got, new = [], [{"key": k} for k in "abcde"]
    with pytest.raises(ValueError) as raised:
        for batch in _batches_or_lost(Dataset(), _lost_worker_errors(ray), new, 45, True):
            got.append(batch)
    assert got == [{"key": ["a"]}] and raised.value.__cause__ is error
    assert str(raised.value) == (f"the Ray cluster lost a worker or a node mid-run ({kind}); 5 of the 45 items to "
                                 f"score are in the cache: run the same command again to score the rest")
    with pytest.raises(ValueError, match=rf"\({kind}\); no cache: a rerun scores every item$"):
        list(_batches_or_lost(Dataset(), _lost_worker_errors(ray), [], 45, False))


def test_a_scorer_pool_that_cannot_start_is_one_line_naming_the_workers_option():
    """The pool waits for all its actors (so every node gets work); when the cluster cannot start them in time, Ray
    Data's ``GetTimeoutError`` becomes one line naming the parameter that asks for fewer (the CLI: --ray-workers)."""
    import ray

    from scorers.errors import wording_of
    from scorers.scoring.engines.ray_data import ACTORS_START_S, _batches_or_lost, _lost_worker_errors

    class Dataset:
        def iter_batches(self, **kwargs):
            raise ray.exceptions.GetTimeoutError("Timed out while starting actors.")
            yield

    with pytest.raises(ValueError) as raised:
        list(_batches_or_lost(Dataset(), _lost_worker_errors(ray), [], 45, True))
    assert str(raised.value) == (f"the Ray cluster did not start the scorer actors within {ACTORS_START_S} s: too few "
                                 f"free CPUs/GPUs for them? (ask for fewer: workers)")
    assert wording_of(raised.value) is not None and raised.value.__cause__ is None
