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
                _read_request(conn)  # its content does not matter, but a reply over an unread body is reset
                self.serve(conn)
            except OSError:
                pass  # the client gave up: that is what these tests want

    def close(self) -> None:
        self.stop_at = 0
        self.thread.join(2)
        self.sock.close()


def _read_request(conn) -> None:
    """The whole request, headers and body: under load a POST arrives in several segments, and closing the
    socket with some of it unread makes the kernel reset the connection before the client reads the reply."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


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


# ---------------------------------------------------------------- issue 43: 5, 6, 10

def redirect_to(target_url: str, code: int):
    def serve(conn) -> None:
        conn.sendall(b"HTTP/1.1 %d Moved\r\nLocation: %s/v1/chat/completions\r\nContent-Length: 0\r\n\r\n"
                     % (code, target_url.encode()))
    return serve


def recording(requests: list):
    """A second server that would answer well; it records every request that reaches it."""
    def serve(conn) -> None:
        requests.append(True)
        body = json.dumps({"choices": [{"message": {"content": "Question: a?\nAnswer: b"}}]}).encode()
        conn.sendall(HEADERS % len(body) + body)
    return serve


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_key_never_leaves(serve, monkeypatch, code):
    """A 301/302/303 to another port was followed as a GET carrying the Authorization header."""
    from curator.core.embedding.endpoint import EndpointEmbedder

    monkeypatch.setenv("CURATOR_API_KEY", "secret-key")
    reached: list = []
    elsewhere = serve(recording(reached))
    start = serve(redirect_to(elsewhere.url, code))
    backend = HttpBackend(start.url, retries=2, parallel=1, deadline=10)
    with pytest.raises(CuratorError) as caught:
        backend.complete([{"role": "user", "content": "hi"}])
    message = str(caught.value)
    assert f"redirect ({code}) to {elsewhere.url}/v1/chat/completions" in message and "does not follow" in message
    assert "\n" not in message
    with pytest.raises(CuratorError, match=rf"redirect \({code}\)"):
        EndpointEmbedder(f"endpoint:{start.url}#m".removeprefix("endpoint:")).embed_batch(["a text"])
    assert reached == []


def nested(conn) -> None:
    body = b"[" * 300_000 + b"]" * 300_000  # 600 kB, under the reply cap
    conn.sendall(HEADERS % len(body) + body)


def test_a_reply_nested_300000_deep_is_one_line(serve):
    """json.loads raised RecursionError: a traceback from generate --endpoint and the endpoint embedder."""
    from curator.core.embedding.endpoint import EndpointEmbedder

    url = serve(nested).url
    with pytest.raises(CuratorError, match="nested too deeply"):
        HttpBackend(url, retries=1, parallel=1, deadline=10).complete([{"role": "user", "content": "hi"}])
    with pytest.raises(CuratorError, match="nested too deeply"):
        EndpointEmbedder(url, retries=1, deadline=10).embed_batch(["a text"])


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-5", "0", "lots"])
@pytest.mark.parametrize("name", ["CURATOR_HTTP_DEADLINE_S", "CURATOR_HTTP_MAX_REPLY_BYTES"])
def test_a_limit_that_is_not_a_positive_number_is_refused(monkeypatch, name, value):
    """nan turned the deadline off; nan or inf as the reply cap raised ValueError or OverflowError."""
    monkeypatch.setenv(name, value)
    with pytest.raises(CuratorError, match=rf"^\${name} must be a positive number \(got '{value}'\)"):
        HttpBackend("http://127.0.0.1:9")


def test_the_refusal_is_one_line_from_the_command_line(monkeypatch, sample_project_path):
    from click.testing import CliRunner

    from curator.cli.main import cli

    monkeypatch.setenv("CURATOR_HTTP_DEADLINE_S", "nan")
    result = CliRunner().invoke(cli, ["generate", str(sample_project_path), "--endpoint", "http://127.0.0.1:9"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert result.output.strip().splitlines()[-1].startswith("Error: $CURATOR_HTTP_DEADLINE_S must be a positive")
