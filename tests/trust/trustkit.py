"""Helpers of the trust tests: a fake OpenAI-compatible model server and child processes.

The fake server answers ``/v1/chat/completions`` the way ``HttpBackend`` expects, with a row
built deterministically from the passage in the prompt, so every reply passes generation's
filters (long enough, grounded answer, not a near duplicate: a tag made from the prompt is
in every question). A small delay per reply lets a test kill the generator mid-run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Optional

from curator.core.generation.filters import STOPWORDS

REPO = Path(__file__).resolve().parents[2]
_PASSAGE = re.compile(r"Passage(?: 1)?:\n(.*?)(?:\nPassage 2:|\Z)", re.S)
_WORD = re.compile(r"[A-Za-z]{4,}")


def canned_reply(messages: list[dict]) -> str:
    """A valid two-line row for the prompt: words of the passage plus a tag unique to the prompt."""
    user = messages[-1]["content"]
    match = _PASSAGE.search(user)
    passage = match.group(1) if match else user
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(passage) if w.lower() not in STOPWORDS))
    words += ["setting", "option", "value"]
    tag = "zq" + hashlib.sha1(user.encode()).hexdigest()[:8]
    answer = " ".join(passage.split()[:12])
    if "Query: ..." in user:
        return f"Query: {words[0]} {words[1]} {words[2]} {tag}\nAnswer: {answer}\n"
    return f"Question: How do {words[0]} and {words[1]} relate to {words[2]} in {tag}?\nAnswer: {answer}\n"


class FakeModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, delay: float = 0.05, reply: Callable[[list[dict]], str] = canned_reply,
                 raw: Optional[bytes] = None):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay, self.reply, self.answered = delay, reply, 0
        self.raw = raw  # a whole response body to send instead of a well-formed reply
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeModelServer

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(self.server.delay)
        data = self.server.raw
        if data is None:
            content = self.server.reply(body["messages"])
            data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        with self.server._lock:
            self.server.answered += 1

    def log_message(self, *args) -> None:  # keep test output quiet
        pass


def curator_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "curator", *args]


CHILDREN: list[subprocess.Popen] = []  # every child of the running test; conftest kills leftovers


def spawn(argv: list[str], **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kwargs)
    CHILDREN.append(proc)
    return proc


def refused_input(*args: str, what: str, timeout: float = 120) -> tuple[int, str]:
    """Run ``curator ARGS`` on an input that must be refused, not read (a device, a pipe with no
    writer): its exit code and output; a child that does not return in time fails the test."""
    import pytest

    proc = spawn(curator_cmd(*args))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{what} did not return")
    return proc.returncode, out + err


def python_child(code: str, *args: str) -> subprocess.Popen:
    return spawn([sys.executable, "-c", code, *args])


def kill9(proc: subprocess.Popen) -> tuple[str, str]:
    """SIGKILL the child (no cleanup handlers run) and collect what it printed before dying."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=20)
    return out, err


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0, proc: Optional[subprocess.Popen] = None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"child exited early ({proc.returncode}): {out[-2000:]} {err[-2000:]}")
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the child")
        time.sleep(0.02)
