"""``ts2 serve`` end to end: the real command (``python -m scorers.cli serve clip_score=1 --model TINY --port P``)
starts its own local Ray and Serve, answers :class:`scorers.rewards.remote.RemoteReward` with the rewards the in-process
:func:`scorers.rewards.api.load` gives, and stops cleanly on Ctrl-C (SIGINT): exit 0, port released. Bounded: the
service must be up within ``READY_S`` and gone within ``STOP_S``, else the test fails (and kills what it started)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.environment import skip_module_without

skip_module_without("ray")

from scorers.rewards.api import load  # noqa: E402
from scorers.rewards.remote import RemoteReward  # noqa: E402
from tests.helpers.tiny_embed_models import tiny_models  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
READY_S = 150  # Ray start-up + Serve + one replica loading the tiny CLIP, on a loaded 2-CPU machine
STOP_S = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _images(n: int, seed: int):
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)) for _ in range(n)]


def _wait_ready(process: subprocess.Popen, port: int, output: list[str]) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"ts2 serve exited with {process.returncode} before it was ready:\n"
                                 + "".join(output)[-3000:])
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as response:
                # up, and the command said where (it prints once serve.run returned)
                if response.status == 200 and any(f"POST http://127.0.0.1:{port}/score" in line for line in output):
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"ts2 serve was not ready within {READY_S} s:\n" + "".join(output)[-3000:])


def test_ts2_serve_command_end_to_end():
    clip = tiny_models()["clip"]
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ADDRESS")}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    command = [sys.executable, "-m", "scorers.cli", "serve", "clip_score=1", "--model", clip, "--port", str(port),
               "--batch-wait-ms", "2"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(iter(process.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        images, prompts = _images(3, seed=7), ["a red square", "a red square", "two dogs in the snow"]
        expected = load("clip_score", model=clip, device="cpu")(images, prompts).numpy()  # while the service starts
        _wait_ready(process, port, output)
        got = RemoteReward(f"http://127.0.0.1:{port}")(images, prompts).numpy()
        # PNG is lossless, so the replica sees the same pixels and runs the same float32 model on CPU; what may differ
        # is the batch composition (ulps of float32 matmuls), far below 1e-5 on CLIPScore's 0..2.5 scale
        assert got.shape == (3,)
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)  # Ctrl-C: serve.shutdown(), then Ray's own shutdown at exit
            try:
                process.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # the group this test started (its Ray processes included)
                process.wait(timeout=30)
                raise AssertionError(f"ts2 serve did not stop within {STOP_S} s of SIGINT:\n" + "".join(output)[-3000:])
    reader.join(timeout=10)
    assert process.returncode == 0, "".join(output)[-3000:]
    assert not _port_open(port), f"port {port} still answers after ts2 serve stopped"
