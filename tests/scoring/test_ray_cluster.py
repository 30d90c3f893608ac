"""``ts2 score --engine ray --ray-address 127.0.0.1:PORT`` on a real two-node Ray cluster of this machine
(tests/helpers/ray_cluster.py: Ray's ``ray.cluster_utils.Cluster``, two raylets, one CPU and a custom resource each,
every process on 127.0.0.1): the CSV equals the default engine's exactly, the scorer actors ran on both nodes (Ray's
state API), nothing of the cluster or the driver listens beyond loopback (``ss``), and a ``kill -9`` of the worker
node's raylet mid-run loses nothing: the rerun scores exactly the rows the cache lacks, and the output equals an
uninterrupted run's, each row once. Bounded: each run must end within ``RUN_S`` (a safety bound: on an idle 2-CPU
machine a test takes well under 90 s); the cluster is shut down at the end and no process of it is left (checked)."""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.environment import skip_module_without

skip_module_without("ray")

from tests.helpers.listeners import beyond_loopback, have_ss, listeners, process_tree  # noqa: E402
from tests.helpers.ray_cluster import ROOT, LoopbackCluster  # noqa: E402
from tests.helpers.ts2_fixture_data import synthetic_data_dir  # noqa: E402

pytestmark = pytest.mark.skipif(not (Path("/proc").is_dir() and have_ss()), reason="reads /proc and runs ss (Linux)")

DEAD_S = 120  # Ray's health checks mark a node whose raylet died dead within seconds to a minute
RUN_S = 240  # one `ts2 score` run, at most (a safety bound, not a speed check: Ray workers import torch)
N_IMAGES = 45  # 3 synthetic SEGs of 15 images (no release file needed)
BATCH = 5  # 45 = 9 x 5: both engines score the same 9 batches, so the scores are bit-equal


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    return env


class Run:
    """``python -m scorers.cli score ARGS`` (what ``ts2 score`` runs), output piped, in a session of its own; the
    listening sockets of it and of ``cluster`` sampled while it runs."""

    def __init__(self, args, cluster: LoopbackCluster | None = None):
        self.cluster = cluster
        self.process = subprocess.Popen([sys.executable, "-m", "scorers.cli", "score", *args], cwd=ROOT, env=_env(),
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
        self.output: list[str] = []
        threading.Thread(target=lambda: self.output.extend(iter(self.process.stdout.readline, "")),
                         daemon=True).start()
        self.heard = []
        self.seen: set[int] = set()

    def text(self) -> str:
        return "".join(self.output)[-4000:]

    def sample_listeners(self) -> None:
        pids = process_tree(self.process.pid) | (self.cluster.pids() if self.cluster else set())
        self.seen |= pids
        self.heard += listeners(pids)

    def wait(self, limit: float = RUN_S, until=None) -> int | None:
        """Wait for the run to end (its exit code) or ``until()`` to hold (None), at most ``limit`` s."""
        deadline = time.monotonic() + limit
        while self.process.poll() is None:
            if until is not None and until():
                return None
            assert time.monotonic() < deadline, f"ts2 score still running after {limit} s:\n{self.text()}"
            self.sample_listeners()
            time.sleep(0.5)
        return self.process.wait()

    def kill(self) -> None:
        for pid in self.seen - (self.cluster.seen if self.cluster else set()) | {self.process.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.process.wait(timeout=30)


def _score_args(data_dir: Path, out: Path, *extra: str) -> list[str]:
    return ["--data-dir", str(data_dir), "--out", str(out), "--batch-size", str(BATCH), "--no-progress", *extra]


def _recipe(address: str, data_dir: Path, out: Path) -> list[str]:
    """The arguments of docs/scorers/scale.md's loopback recipe (``ts2 score clip_score --data-dir ts2_data --out
    clip.csv --engine ray --ray-address 127.0.0.1:PORT``) with this cluster's address, data and output filled in."""
    from tests.helpers.doc_commands import readme_commands

    page = (ROOT / "docs" / "scorers" / "scale.md").read_text(encoding="utf-8")
    (command,) = [c for _, c in readme_commands(page) if c.endswith("--ray-address 127.0.0.1:PORT")]
    fill = {"127.0.0.1:PORT": address, "ts2_data": str(data_dir), "clip.csv": str(out)}
    words = [fill.get(word, word) for word in shlex.split(command)]
    assert words[:2] == ["ts2", "score"] and "--engine" in words, command
    return words[2:]


def _finished_keys(cache_dir: Path) -> list[str]:
    """The keys the score cache holds, one per line written (a key twice = scored twice)."""
    return [json.loads(line)["key"] for shard in sorted(Path(cache_dir).glob("**/*.jsonl"))
            if "requests" not in shard.parts for line in shard.read_text().splitlines() if line.strip()]


def _assert_nothing_left(cluster: LoopbackCluster) -> None:
    cluster.stop()
    assert not cluster.alive(), f"Ray processes left after the cluster stopped: {cluster.alive()}"


@pytest.fixture(scope="module")
def cluster_data(tmp_path_factory) -> Path:
    return synthetic_data_dir(tmp_path_factory.mktemp("cluster_data"), n_segs=3, images_per_seg=15)


def test_score_on_a_two_node_cluster_equals_the_default_engine_and_uses_both_nodes(cluster_data, clip_path,
                                                                                    tmp_path):
    from scorers.ts2.scoring import score_data_dir

    model = ["clip_score", "--model", clip_path, "--option", "form=cosine"]
    # the default engine in this process: what `ts2 score clip_score --num-workers 0` writes
    score_data_dir("clip_score", cluster_data, tmp_path / "default.csv", model=clip_path,
                   scorer_options={"form": "cosine"}, batch_size=BATCH, num_workers=0, progress=False)
    with LoopbackCluster() as cluster:
        assert {cluster.head_id, cluster.worker_id} == cluster.alive_nodes()
        run = Run(_recipe(cluster.address, cluster_data, tmp_path / "ray.csv") + model[1:] + _score_args(
            cluster_data, tmp_path / "ray.csv")[4:], cluster)
        try:
            assert run.wait() == 0, run.text()
        finally:
            run.kill()
        # the scorer actors: one on each node (one CPU each), and each scored batches there
        actors = cluster.actor_nodes("_ScoreActor")
        assert set(actors) == {cluster.head_id, cluster.worker_id}, actors
        deadline = time.monotonic() + 20  # task events reach the state API within a second or two
        while set(cluster.task_nodes("_ScoreActor")) != set(actors) and time.monotonic() < deadline:
            time.sleep(0.5)
        tasks = cluster.task_nodes("_ScoreActor")
        assert set(tasks) == {cluster.head_id, cluster.worker_id} and sum(tasks.values()) >= 2, tasks
        run.sample_listeners()  # the cluster's processes after the job (its workers idle)
        names = {listener.process for listener in run.heard}
        assert {"gcs_server", "raylet"} <= names, names
        outside = beyond_loopback(run.heard)
        assert not outside, f"listening beyond loopback: {outside}"
    _assert_nothing_left(cluster)
    by_default, by_ray = pd.read_csv(tmp_path / "default.csv"), pd.read_csv(tmp_path / "ray.csv")
    assert len(by_ray) == N_IMAGES
    pd.testing.assert_frame_equal(by_ray, by_default, check_exact=True)  # same batches, same CPU: bit-equal


def test_a_killed_worker_node_loses_no_row_and_scores_none_twice(tmp_path):
    """A served judge (``vqa_score --model openai:tiny`` on a loopback chat server that takes ``LATENCY_S`` per
    request, so the run lasts long enough to be cut) scores on the two nodes; once the cache holds a batch, the
    worker node's raylet gets SIGKILL. The run either re-scores the lost rows or stops (one line, no traceback) and a
    rerun on what is left of the cluster resumes: over the runs each item is scored once, and the CSV equals the
    default engine's."""
    import math

    from tests.helpers.loopback_chat_server import ChatServer, body_hash, chat_reply

    data_dir = synthetic_data_dir(tmp_path / "data", n_segs=3, images_per_seg=15)

    def yes_from_image(body):  # P(yes) scripted from the image bytes: the same request gets the same answer
        url = body["messages"][-1]["content"][0]["image_url"]["url"]
        p = 0.05 + 0.9 * (int(body_hash({"u": url})[:6], 16) / 0xFFFFFF)
        return chat_reply("Yes", top_logprobs=[{"token": "Yes", "logprob": math.log(p)},
                                               {"token": "No", "logprob": math.log(1 - p)}])

    cache_dir = tmp_path / "cache"
    with ChatServer(yes_from_image, latency=LATENCY_S) as server:
        model = ["vqa_score", "--model", "openai:tiny", "--api-base", server.url, "--max-concurrency", "1"]
        with LoopbackCluster() as cluster:
            ray_args = [*model, *_score_args(data_dir, tmp_path / "ray.csv", "--engine", "ray", "--ray-address",
                                             cluster.address, "--cache-dir", str(cache_dir))]
            first = Run(ray_args, cluster)
            try:
                assert first.wait(until=lambda: len(_finished_keys(cache_dir)) >= BATCH) is None, first.text()
                os.kill(cluster.worker_raylet_pid, signal.SIGKILL)
                code = first.wait()
            finally:
                first.kill()
            done_first = len(_finished_keys(cache_dir))
            assert BATCH <= done_first, first.text()
            if code != 0:  # the run stopped: one line, and the rerun resumes on the head node
                whole = "".join(first.output)
                assert "Traceback" not in whole, whole[-4000:]
                said = [line for line in whole.splitlines() if line.startswith("ts2 score: error: ")]
                assert len(said) == 1 and re.fullmatch(
                    rf"ts2 score: error: the Ray cluster lost a worker or a node mid-run \(\w+\); {done_first} of the "
                    rf"{N_IMAGES} items to score are in the cache: run the same command again to score the rest",
                    said[0]), whole[-4000:]
                assert code == 2 and done_first < N_IMAGES
                deadline = time.monotonic() + DEAD_S  # the rerun, once Ray has marked the node dead
                while cluster.worker_id in cluster.alive_nodes():
                    assert time.monotonic() < deadline, f"the killed node still alive after {DEAD_S} s"
                    time.sleep(1)
                second = Run(ray_args, cluster)
                try:
                    assert second.wait() == 0, second.text()
                finally:
                    second.kill()
                assert f"{N_IMAGES - done_first} scored now, {done_first} from cache" in second.text(), second.text()
        _assert_nothing_left(cluster)
        default = Run([*model, *_score_args(data_dir, tmp_path / "default.csv", "--num-workers", "0")])
        assert default.wait() == 0, default.text()
    keys = _finished_keys(cache_dir)
    assert len(keys) == N_IMAGES and len(set(keys)) == N_IMAGES  # each item scored exactly once over the runs
    by_default, by_ray = pd.read_csv(tmp_path / "default.csv"), pd.read_csv(tmp_path / "ray.csv")
    assert len(by_ray) == N_IMAGES
    pd.testing.assert_frame_equal(by_ray, by_default, check_exact=True)  # the same requests, the same answers


LATENCY_S = 0.15  # per chat request: 45 requests take about 7 s on one actor, long enough to kill a node mid-run
