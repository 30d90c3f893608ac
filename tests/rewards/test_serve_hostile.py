"""Hostile clients against the real ``ts2 serve`` process on loopback (the tiny CLIP, a 1 MP budget, a 2 s
header deadline, a bearer token): the raw token reaches no Ray process; 64 clients sending their request head a
byte a second are closed at the deadline while good requests are served; a 0.95 MP request is served among 8 loops
of small ones; a prompt with a lone surrogate is a 400 before batching and splits no batch; four 31 MiB bodies of
``{}`` items are refused without the replica's memory growing by their parsed size; a 16-bit image counts what
decoding it holds. Bounded: the service must be up within ``READY_S``; every client has a deadline; every process
started is killed at the end."""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers.environment import skip_module_without

skip_module_without("ray")

from tests.helpers.serve_adversaries import (ServeProcess, body, memory_kib, png_b64, post,  # noqa: E402
                                             start_slow_header_clients)

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")

TOKEN = "tok-HOSTILE-MARKER-4242"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def service():
    serve = ServeProcess("--max-decoded-mp", "1", "--header-timeout-s", "2", "--token-env", "TS2_HOSTILE_TOKEN",
                         env={"TS2_HOSTILE_TOKEN": TOKEN})
    try:
        serve.wait_ready(AUTH)
        yield serve
    finally:
        serve.kill_all()


def _score(service, data: bytes, timeout: float = 120.0, headers: dict | None = AUTH) -> tuple:
    return post(f"{service.url}/score", data, timeout=timeout, headers=headers)


def test_the_raw_token_reaches_no_ray_process(service):
    """Only its SHA-256 goes to the replica (its init arguments); the variable is gone from the driver's environment
    before Ray starts, so no Ray process inherits it. The driver's own /proc/PID/environ keeps the environment it
    was started with (the kernel's copy), so it is not read."""
    assert _score(service, body([png_b64(24, 24, 0)]))[0] == 200
    assert _score(service, body([png_b64(24, 24, 0)]), headers={})[0] == 401
    replicas = service.replicas()
    assert replicas, "no Serve replica found below ts2 serve"
    holding = []
    for pid in service.processes() - {service.process.pid}:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                if TOKEN.encode() in handle.read():
                    holding.append(pid)
        except OSError:  # gone meanwhile
            pass
    assert holding == [], f"the raw token is in the environment of {holding}"


def test_slow_request_heads_are_closed_at_the_deadline_and_good_requests_go_on(service):
    stop = threading.Event()
    try:
        clients = start_slow_header_clients("127.0.0.1", service.port, 64, stop, interval=1.0)
        time.sleep(1.0)
        started = time.monotonic()
        assert _score(service, body([png_b64(24, 24, 1)]), timeout=30)[0] == 200
        assert time.monotonic() - started < 15  # a safety bound: it did not wait behind the slow heads
        deadline = time.monotonic() + 30
        for client in clients:
            client.join(timeout=max(0.0, deadline - time.monotonic()))
        # a 4 kB head at a byte a second would hold its connection for an hour; the deadline is 2 s
        assert [c.status for c in clients] == [408] * 64, [c.closed_after for c in clients]
        assert max(c.closed_after for c in clients) < 20
    finally:
        stop.set()


def test_a_large_request_that_fits_the_budget_is_served_among_small_ones(service):
    """With a 1 MP budget, 8 loops of 0.1 MP requests starved a 0.95 MP one (8 of 10 calls failed after
    their retries). Admission is first in, first out now: each of its calls is served, none told 503."""
    small, large = body([png_b64(316, 316)]), body([png_b64(974, 974)])
    stop, small_statuses = threading.Event(), []

    def loop():
        while not stop.is_set():
            small_statuses.append(_score(service, small, timeout=60)[0])

    threads = [threading.Thread(target=loop, daemon=True) for _ in range(8)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)
        large_statuses = [_score(service, large, timeout=90)[0] for _ in range(4)]
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
    assert large_statuses == [200] * 4
    assert set(small_statuses) == {200}
    stats = service.stats(AUTH)
    assert stats["decoded_pixels_peak"] <= 1_000_000 and stats["decoded_pixels_held"] == 0


def test_a_prompt_with_a_lone_surrogate_is_a_400_and_splits_no_batch(service):
    before = service.stats(AUTH)
    bad = json.dumps({"prompts": ["a cat \ud800"], "images": [png_b64(24, 24, 2)]}).encode()  # "\ud800": valid JSON
    good = [body([png_b64(24, 24, 10 + i)]) for i in range(6)]
    for _ in range(3):
        with ThreadPoolExecutor(7) as pool:
            replies = list(pool.map(lambda data: _score(service, data, timeout=60), [bad, *good]))
        assert replies[0][0] == 400 and replies[0][1]["error"].startswith("prompts[0] is not valid Unicode text")
        assert [status for status, _, _ in replies[1:]] == [200] * 6
    assert service.stats(AUTH)["split_batches"] == before["split_batches"]


def test_bodies_of_empty_items_do_not_cost_their_parsed_size(service):
    """Four 31 MiB bodies of ``{"prompts":[{},{},...]}`` at once: 1.9 GB of replica memory before (830 MiB each);
    refused before parsing now. The replica's peak resident memory (VmHWM, reset first) grows by well under that."""
    replica = service.replicas()[0]
    try:
        with open(f"/proc/{replica}/clear_refs", "w") as handle:  # VmHWM := VmRSS
            handle.write("5")
    except OSError:
        pass
    before = memory_kib(replica, "VmRSS")
    attack = b'{"prompts":[' + b",".join([b"{}"] * (31 * 2 ** 20 // 3)) + b"]}"
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda _: _score(service, attack, timeout=120), range(4)))
    assert [status for status, _, _ in replies] == [400] * 4, [r[1] for r in replies]
    assert "JSON structure outside its strings" in replies[0][1]["error"]
    grown_mib = (memory_kib(replica, "VmHWM") - before) / 1024
    assert grown_mib < 450, grown_mib  # 265 MiB measured (the bodies as Ray hands them over, and ours)
    print(f"replica peak memory growth for 4 x 31 MiB bodies: {grown_mib:.0f} MiB")


def test_a_16_bit_image_counts_what_decoding_it_holds(service):
    """An 800 x 800 16-bit grey PNG is 0.64 MP, but decoding it holds the 16-bit image, its 8-bit step and its RGB
    copy: 1.28 MP of RGB pixels, over the 1 MP budget (413); the same size in 8-bit RGB is served."""
    import base64
    import io

    import numpy as np
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.full((800, 800), 40000, dtype=np.uint16)).save(buffer, format="PNG")
    status, reply, _ = _score(service, body([base64.b64encode(buffer.getvalue()).decode()]))
    assert status == 413 and "needs 1,280,000 decoded pixels" in reply["error"], reply
    assert _score(service, body([png_b64(800, 800)]))[0] == 200
