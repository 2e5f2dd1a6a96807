"""The endpoint backend against hostile servers on 127.0.0.1: a total deadline, a reply size cap,
garbage instead of HTTP, and the run marked failed (issue 20: 7). Every server loop is bounded."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest

from curator.core.errors import CuratorError
from curator.core.generation.backends import HttpBackend
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.store import open_project

HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"


class RawServer:
    """Accepts connections and hands each to ``serve(conn)``; stops by itself after ``lifetime`` s."""

    def __init__(self, serve, lifetime: float = 20.0):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.serve, self.stop_at = serve, time.monotonic() + lifetime
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _loop(self) -> None:
        while time.monotonic() < self.stop_at:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn) -> None:
        with conn:
            conn.settimeout(2)
            try:
                conn.recv(65536)  # the request; its content does not matter here
                self.serve(conn)
            except OSError:
                pass  # the client gave up: that is what these tests want

    def close(self) -> None:
        self.stop_at = 0
        self.thread.join(2)
        self.sock.close()


def trickle(conn) -> None:
    body = json.dumps({"choices": [{"message": {"content": "Question: a?\nAnswer: b"}}]}).encode()
    conn.sendall(HEADERS % len(body))
    for byte in body[:60]:  # at most 60 bytes, one every 0.25 s: 15 s, far past the 1 s deadline
        conn.sendall(bytes([byte]))
        time.sleep(0.25)


def huge(conn) -> None:
    size = 5_000_000
    conn.sendall(HEADERS % size)
    piece = b" " * 65536
    for _ in range(size // len(piece)):
        conn.sendall(piece)


def garbage(conn) -> None:
    conn.sendall(os.urandom(2048))


@pytest.fixture
def serve():
    servers = []

    def start(handler):
        servers.append(RawServer(handler))
        return servers[-1]
    yield start
    for server in servers:
        server.close()


def test_a_trickling_server_hits_the_total_deadline(serve):
    backend = HttpBackend(serve(trickle).url, deadline=1.0, retries=3, parallel=1)
    started = time.monotonic()
    with pytest.raises(CuratorError, match=r"no complete reply within 1 s"):
        backend.complete([{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 5  # 1 s deadline, the retries included


def test_a_huge_reply_is_refused_at_the_cap(serve):
    backend = HttpBackend(serve(huge).url, max_reply_bytes=100_000, retries=0, parallel=1)
    with pytest.raises(CuratorError, match="larger than 100,000 bytes"):
        backend.complete([{"role": "user", "content": "hi"}])


def test_limits_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("CURATOR_HTTP_DEADLINE_S", "7")
    monkeypatch.setenv("CURATOR_HTTP_MAX_REPLY_BYTES", "1234")
    backend = HttpBackend("http://127.0.0.1:9")
    assert (backend.deadline, backend.max_reply_bytes) == (7.0, 1234)
    assert HttpBackend("http://127.0.0.1:9", deadline=2, max_reply_bytes=5).deadline == 2


def test_random_bytes_are_a_clear_error_not_a_traceback(serve):
    backend = HttpBackend(serve(garbage).url, retries=1, parallel=1, deadline=10)
    with pytest.raises(CuratorError, match="did not answer after 2 tries"):
        backend.complete([{"role": "user", "content": "hi"}])


def test_a_run_that_fails_is_marked_failed(serve, sample_project_path):
    db = open_project(sample_project_path)
    backend = HttpBackend(serve(trickle).url, deadline=1.0, retries=0, parallel=1)
    with pytest.raises(CuratorError):
        generate(db, GenerationConfig(count=2, seed=1), backend=backend)
    assert [r[0] for r in db.execute("SELECT status FROM generation_runs")] == ["failed"]
    db.close()
