"""``ts2 serve`` on loopback: concurrent clients get their own rewards in order (equal to the in-process reward),
concurrent requests are merged into fewer forwards, oversize/garbage payloads get 4xx and the service stays up, and the
bearer-token check."""
from __future__ import annotations

import base64
import io
import json
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest

from tests.helpers.environment import skip_module_without

skip_module_without("ray")

from scorers.rewards.api import load  # noqa: E402
from scorers.rewards.remote import RemoteReward  # noqa: E402
from scorers.rewards.serve import build_app  # noqa: E402
from scorers.rewards.serve_checks import Limits, ServiceOptions  # noqa: E402

from tests.helpers.tiny_embed_models import tiny_models  # noqa: E402

TOKEN_ENV = "TS2_TEST_SERVE_TOKEN"


def _images(n: int, seed: int):
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)) for _ in range(n)]


def _png(image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _post(url: str, body: bytes, headers: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json", **(headers or {})},
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.fixture(scope="module")
def clip_path():
    return tiny_models()["clip"]


@pytest.fixture(scope="module")
def service(serve_port, clip_path, monkeypatch_module):
    """One Serve instance on loopback: app ``open`` at / (batching: up to 8 requests, 2 s wait) and app ``locked``
    at /locked (bearer token)."""
    from ray import serve

    port = serve_port
    limits = Limits(max_request_bytes=200_000, max_images=6, max_pixels=64 * 64)
    serve.run(build_app("clip_score", model=clip_path, max_batch_size=8, batch_wait_ms=2000, limits=limits),
              name="open", route_prefix="/", blocking=False)
    monkeypatch_module.setenv(TOKEN_ENV, "s3cret-token")
    serve.run(build_app("clip_score", model=clip_path, token_env=TOKEN_ENV, limits=limits), name="locked",
              route_prefix="/locked", blocking=False)
    yield f"http://127.0.0.1:{port}"
    serve.delete("open")
    serve.delete("locked")


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _stats(base: str) -> dict:
    with urllib.request.urlopen(f"{base}/stats", timeout=30) as response:
        return json.loads(response.read())


def test_concurrent_clients_get_their_rewards_in_order_and_requests_are_batched(service, clip_path):
    local = load("clip_score", model=clip_path, device="cpu")
    n_clients = 8
    jobs = [(_images(1 + i % 3, seed=i), [f"prompt {i} number {j}" for j in range(1 + i % 3)])
            for i in range(n_clients)]
    jobs[3] = (jobs[3][0], ["the same prompt"] * len(jobs[3][1]))  # repeated prompts within one request
    expected = [local(images, prompts).numpy() for images, prompts in jobs]
    before = _stats(service)
    results: list = [None] * n_clients
    barrier = threading.Barrier(n_clients)

    def client(i):
        reward = RemoteReward(service)
        barrier.wait()
        results[i] = (reward(*jobs[i]).numpy(), reward.last_info)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n_clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    after = _stats(service)
    for i, (got, info) in enumerate(results):
        # PNG is lossless: the service sees the same pixels; float32 forwards in other batch shapes (ulps)
        np.testing.assert_allclose(got, expected[i], atol=1e-5, rtol=0)
        assert list(info.components) == ["clip_score"] and len(info.components["clip_score"]) == len(jobs[i][1])
    assert after["requests"] - before["requests"] == n_clients
    forwards = after["forward_calls"] - before["forward_calls"]
    assert forwards < n_clients  # merged: 8 simultaneous requests, 2 s batch wait once busy, max 8 per batch
    # (no bound on the largest batch: a lone request is answered without waiting, so how many of the 8 share one
    # forward depends on how fast the proxy hands them over: 7 on an idle machine, 4 under a full suite's load)


def test_a_batch_is_not_capped_by_serves_default_of_5_ongoing_requests():
    """Serve lets a replica hold only ``max_ongoing_requests`` requests (default 5), so a batch of up to 8 needs room
    for at least 8, and for a full batch queueing behind the one in the forward: 16. Slow clients must not take every
    slot either (issue 33 item 2): the replica holds ``max_connections`` (256 by default) and Serve queues as many.
    Read from the deployment the app binds (Ray has no public getter for an Application's deployment; an
    AttributeError here means Ray moved it). The concurrent-clients test above cannot bound the largest batch without
    depending on the machine's load."""
    deployment = build_app("clip_score", max_batch_size=8)._bound_deployment
    assert deployment.max_ongoing_requests == 256 >= 2 * 8
    assert deployment.max_queued_requests == 256
    assert build_app("clip_score", max_batch_size=200, service=ServiceOptions(max_connections=100)) \
        ._bound_deployment.max_ongoing_requests == 400


def test_a_lone_request_does_not_wait_for_company(service):
    """Sequential requests (concurrency 1) skip the 2 s batch wait: only overlapping requests wait for each other.
    The first may still wait once (the previous forward merged several); the last two must not."""
    reward = RemoteReward(service)
    waits = []
    for i in range(3):
        reward(_images(1, seed=10 + i), ["a red square"])
        waits.append(reward.last_info.stats["timing"])
    assert all(t["batch_requests"] == 1 for t in waits)
    assert max(t["queue_s"] for t in waits[1:]) < 1.0, waits  # 2.0 s or more if it waited (margin: a loaded CPU)


def test_bad_payloads_get_4xx_and_the_service_stays_up(service):
    image = _png(_images(1, seed=0)[0])
    big = _png(_images(1, seed=1)[0].resize((100, 100)))  # 10,000 px > 64 * 64
    cases = {
        b"not json": 400,
        b"[1, 2]": 400,
        json.dumps({"prompts": ["a"], "images": ["@@@not base64"]}).encode(): 400,
        json.dumps({"prompts": ["a"], "images": [base64.b64encode(b"GIF89a garbage").decode()]}).encode(): 400,
        json.dumps({"prompts": ["a", "b"], "images": [image]}).encode(): 400,
        json.dumps({"prompts": [""], "images": [image]}).encode(): 400,
        json.dumps({"prompts": ["a"] * 7, "images": [image] * 7}).encode(): 413,
        json.dumps({"prompts": ["a"], "images": [big]}).encode(): 413,
        json.dumps({"prompts": ["a"], "images": ["A" * 300_000]}).encode(): 413,
    }
    for body, status in cases.items():
        code, reply = _post(f"{service}/score", body)
        assert code == status, (body[:60], code, reply)
        assert reply.get("error"), body[:60]
    code, reply = _post(f"{service}/score", json.dumps({"prompts": ["a red square"], "images": [image]}).encode())
    assert code == 200 and len(reply["rewards"]) == 1 and np.isfinite(reply["rewards"][0])


def test_token_check(service):
    body = json.dumps({"prompts": ["a red square"], "images": [_png(_images(1, seed=2)[0])]}).encode()
    assert _post(f"{service}/locked/score", body)[0] == 401
    assert _post(f"{service}/locked/score", body, {"Authorization": "Bearer wrong"})[0] == 401
    code, reply = _post(f"{service}/locked/score", body, {"Authorization": "Bearer s3cret-token"})
    assert code == 200 and len(reply["rewards"]) == 1
    assert RemoteReward(f"{service}/locked", token="s3cret-token")(_images(1, seed=2), ["a red square"]).shape == (1,)
    with pytest.raises(ValueError, match="HTTP 401"):
        RemoteReward(f"{service}/locked", token="nope")(_images(1, seed=2), ["a red square"])
