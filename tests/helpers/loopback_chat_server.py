"""A real OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks (standard library only).

``ChatServer(responder)`` serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on a free loopback port in a
daemon thread; ``responder(body) -> dict`` builds the reply (see :func:`chat_reply`). It counts requests (``posts``,
``bodies``), checks the ``Authorization`` header when ``api_key`` is set, and injects faults: ``faults`` is a list of
``(predicate(body, attempt) -> bool, action)`` with actions ``("status", code, headers)``, ``("sleep", seconds)`` (then
answer) and ``"drop"`` (close the connection without a reply); ``latency`` delays every reply; ``hold`` (a
``threading.Event``) parks requests after ``answer_limit`` answered ones until it is set. It stops itself after
``lifetime`` seconds or ``max_requests`` POSTs, and on :meth:`close`.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def chat_reply(text: str, *, prompt_tokens: int = 10, completion_tokens: int = 2, top_logprobs=None,
               model: str = "tiny") -> dict:
    """A chat-completions response body with ``text`` (and ``top_logprobs`` for the first token when given)."""
    choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if top_logprobs is not None:
        first = top_logprobs[0] if top_logprobs else {"token": text, "logprob": 0.0}
        choice["logprobs"] = {"content": [{"token": first["token"], "logprob": first["logprob"],
                                           "top_logprobs": list(top_logprobs)}]}
    return {"id": "cmpl-test", "object": "chat.completion", "model": model, "choices": [choice],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def request_text(body: dict) -> str:
    """The text parts of the last user message of a request body."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if part.get("type") == "text")


def body_hash(body: dict) -> str:
    """A stable hash of a request body (to tell requests apart across runs)."""
    import hashlib

    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


class ThreadedLoopback:
    """What the loopback test servers share: an HTTP server on a free 127.0.0.1 port in a daemon thread (``url`` ends
    in ``/v1``) that closes itself after ``lifetime`` seconds, on :meth:`close`, or on leaving a ``with`` block."""

    def _start(self, handler: type[BaseHTTPRequestHandler], lifetime: float) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, address: None  # injected drops/timeouts break pipes on purpose
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.timer = threading.Timer(lifetime, self.close)
        self.timer.daemon = True
        self.timer.start()

    def close(self) -> None:
        self.timer.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ChatServer(ThreadedLoopback):
    def __init__(self, responder, *, model: str = "tiny", api_key: str | None = None, latency: float = 0.0,
                 faults=(), lifetime: float = 300.0, max_requests: int = 100_000, answer_limit: int | None = None,
                 hold: threading.Event | None = None):
        self.responder, self.model, self.api_key, self.latency = responder, model, api_key, latency
        self.faults = list(faults)
        self.max_requests, self.answer_limit, self.hold = max_requests, answer_limit, hold
        self.lock = threading.Lock()
        self.posts = 0  #: POSTs received (retries included)
        self.answered = 0  #: 200 replies written
        self.held = 0  #: requests currently parked by ``hold``
        self.bodies: list[dict] = []  #: every POST body, in arrival order
        self.answered_hashes: list[str] = []  #: body_hash of every request answered with 200
        self.attempts: dict[str, int] = {}  #: request text -> POSTs seen
        self.bad_auth = 0
        self.inflight = 0
        self.max_inflight = 0  #: most POSTs being handled at once
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms delayed-ACK stall)

            def log_message(self, *args):
                pass

            def _send(self, code: int, payload: dict, headers: dict | None = None):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, str(v))
                self.end_headers()
                self.wfile.write(data)

            def _authorised(self) -> bool:
                if server.api_key is None:
                    return True
                if self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return True
                with server.lock:
                    server.bad_auth += 1
                self._send(401, {"error": {"message": "invalid api key"}})
                return False

            def do_GET(self):
                if not self._authorised():
                    return
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                with server.lock:
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                try:
                    self._post()
                finally:
                    with server.lock:
                        server.inflight -= 1

            def _post(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if not self._authorised():
                    return
                key = request_text(body)
                with server.lock:
                    server.posts += 1
                    server.bodies.append(body)
                    attempt = server.attempts.get(key, 0)
                    server.attempts[key] = attempt + 1
                    over = server.posts > server.max_requests
                    park = server.hold is not None and server.answer_limit is not None and \
                        server.answered >= server.answer_limit
                    if park:
                        server.held += 1
                if over:
                    self._send(503, {"error": {"message": "test server request budget exhausted"}})
                    return
                if park:
                    server.hold.wait(60)
                    with server.lock:
                        server.held -= 1
                    self.close_connection = True
                    return
                for predicate, action in server.faults:
                    if predicate(body, attempt):
                        if action == "drop":
                            self.close_connection = True
                            self.connection.shutdown(2)
                            return
                        if action[0] == "status":
                            self._send(action[1], {"error": {"message": "injected"}}, action[2] if len(action) > 2
                                       else None)
                            return
                        if action[0] == "sleep":
                            time.sleep(action[1])
                if server.latency:
                    time.sleep(server.latency)
                reply = server.responder(body)
                with server.lock:
                    server.answered += 1
                    server.answered_hashes.append(body_hash(body))
                self._send(200, reply)

        self._start(Handler, lifetime)

    def close(self) -> None:
        if self.hold is not None:
            self.hold.set()
        super().close()
