"""``ts2 serve``'s front (:mod:`scorers.rewards.serve_front`), without Ray, before a loopback HTTP server: a request
is relayed both ways with ``Connection: close``; 64 clients sending their request head one byte a second are each
answered 408 and closed at the header deadline (Ray Serve's proxy, uvicorn, kept them open past 40 s),
and a good request is served meanwhile; a head over 16 KiB is a 431. Bounded: every client stops by itself."""
from __future__ import annotations

import gc
import json
import socket
import threading
import time

import pytest

from scorers.rewards.serve_front import closing_head, start_front
from tests.helpers.loopback_http import LoopbackServer
from tests.helpers.serve_adversaries import post, start_slow_header_clients


class Echo(LoopbackServer):
    def respond(self, method, path, headers, body):
        seen = {"path": path, "bytes": len(body), "connection": headers.get("Connection")}
        return 200, {"Content-Type": "application/json"}, json.dumps(seen).encode()


@pytest.fixture
def front():
    with Echo() as backend:
        relay = start_front("127.0.0.1", 0, int(backend.base.rsplit(":", 1)[1]), header_timeout_s=1.0)
        try:
            yield relay
        finally:
            relay.close()


def test_a_request_is_relayed_with_connection_close(front):
    status, reply, _ = post(f"http://127.0.0.1:{front.port}/score", b"x" * 300_000, timeout=30)
    assert status == 200 and reply == {"path": "/score", "bytes": 300_000, "connection": "close"}


def test_hop_by_hop_headers_are_replaced():
    head = b"POST / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nKeep-Alive: 5\r\nContent-Length: 2\r\n\r\n"
    assert closing_head(head) == b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"


def test_slow_headers_are_closed_at_the_deadline_and_good_requests_go_on(front):
    stop = threading.Event()
    try:
        clients = start_slow_header_clients("127.0.0.1", front.port, 64, stop, interval=0.25)
        time.sleep(0.3)
        status, reply, _ = post(f"http://127.0.0.1:{front.port}/score", b"{}", timeout=30)
        assert status == 200 and reply["bytes"] == 2
        for client in clients:
            client.join(timeout=20)
        assert [c.status for c in clients] == [408] * 64
        # the deadline is 1 s; 64 connections on a loaded machine: well inside 10 s (they would never end by
        # themselves: a 4 kB head at 4 bytes a second takes 1000 s)
        assert max(c.closed_after for c in clients) < 10, sorted(c.closed_after for c in clients)[-5:]
        assert front.stats["head_timeouts"] == 64
    finally:
        stop.set()


def test_a_head_over_16_kib_is_a_431(front):
    import socket

    with socket.create_connection(("127.0.0.1", front.port), timeout=10) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n")
        reply = conn.recv(4096)
    assert reply.startswith(b"HTTP/1.1 431 ")


class SlowEcho(Echo):
    def respond(self, method, path, headers, body):
        time.sleep(1.5)  # the service's forward: the front's handler waits on the backend meanwhile
        return super().respond(method, path, headers, body)


def test_a_request_waiting_on_the_backend_survives_garbage_collection():
    # Python 3.11's start_server keeps no reference to a connection's task, and the backend's stream reader is held
    # only weakly by its protocol: once the client has sent all it will (here it shuts its sending side, so the
    # upstream relay ends), the handler waiting for the backend's reply is an unreachable cycle, destroyed by the next
    # collection ("Task was destroyed but it is pending!"), and the client got no reply. The front holds its tasks.
    with SlowEcho() as backend:
        relay = start_front("127.0.0.1", 0, int(backend.base.rsplit(":", 1)[1]), header_timeout_s=5.0)
        try:
            with socket.create_connection(("127.0.0.1", relay.port), timeout=10) as client:
                client.sendall(b"POST /score HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}")
                client.shutdown(socket.SHUT_WR)
                time.sleep(0.7)  # the request is at the backend, which answers after 1.5 s
                gc.collect()
                reply = b""
                while chunk := client.recv(65536):
                    reply += chunk
            assert reply.startswith(b"HTTP/1.0 200") and json.loads(reply.split(b"\r\n\r\n", 1)[1])["bytes"] == 2
        finally:
            relay.close()
