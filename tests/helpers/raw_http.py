"""A TCP server on 127.0.0.1 that answers every HTTP request with raw bytes: the replies no HTTP library writes (a bad
status line, a body cut short, a reply trickled one byte at a time). Used by ``tests/rewards/test_remote.py``."""
from __future__ import annotations

import socket
import threading
from typing import Sequence


class RawReplyServer:
    """Reads each request's head and ``Content-Length`` body, then writes ``chunks`` as they are, ``pause`` seconds
    apart, and closes the connection. Counts the requests in ``requests``. A client that goes away ends its
    connection; leaving the ``with`` block stops the server and every pause at once."""

    def __init__(self, chunks: Sequence[bytes], pause: float = 0.0):
        self.chunks, self.pause, self.requests = list(chunks), pause, 0
        self.stopping = threading.Event()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:  # the 0.1 s poll, or the listener closed
                continue
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.settimeout(5)
                data = b""
                while b"\r\n\r\n" not in data:
                    piece = connection.recv(65536)
                    if not piece:
                        return
                    data += piece
                head, _, body = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                               if line.lower().startswith(b"content-length:")), 0)
                while len(body) < length:
                    piece = connection.recv(65536)
                    if not piece:
                        return
                    body += piece
                self.requests += 1
                for i, chunk in enumerate(self.chunks):
                    if i and self.pause and self.stopping.wait(self.pause):
                        return
                    connection.sendall(chunk)
            except OSError:  # the client gave up
                return

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        self.listener.close()
        self.thread.join(timeout=5)
