"""The HTTP backend against a real OpenAI-compatible server on 127.0.0.1.

The server is llama-cpp-python's own (``python -m llama_cpp.server``, the ``server`` extra),
started once for this module on the bundled model with an API key, and stopped at the end.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.generation import plan as plan_module
from curator.core.generation import prompts
from curator.core.generation.backends import HttpBackend, Request
from curator.core.errors import CuratorError
from curator.core.store import open_project

pytestmark = pytest.mark.slow
API_KEY = "curator-test-key"
KEY_ENV = "CURATOR_TEST_KEY"

# The server loads the model through llama-cpp-python like Curator does, so it needs the same
# guard against llama.cpp's AMX kernels on CPUs that only advertise AMX (backends/llama_cpp.py says why).
LAUNCH = """
import runpy, sys
from curator.core.generation.backends.llama_cpp import _extra_buffer_types, _use_extra_buffer_types
with _extra_buffer_types(_use_extra_buffer_types()):
    sys.argv = ["llama_cpp.server"] + sys.argv[1:]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until_up(url: str, process: subprocess.Popen, log, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    request = urllib.request.Request(url + "/v1/models", headers={"Authorization": f"Bearer {API_KEY}"})
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError("llama_cpp.server did not answer /v1/models in time")


@pytest.fixture(scope="module")
def server(bundled_model, tmp_path_factory):
    pytest.importorskip("uvicorn", reason="needs llama-cpp-python[server] (pip install -e '.[dev]')")
    port = _free_port()
    args = [sys.executable, "-c", LAUNCH, "--model", str(bundled_model), "--host", "127.0.0.1", "--port", str(port),
            "--n_ctx", "2048", "--n_threads", "2", "--api_key", API_KEY]
    # A file, not a pipe: the server logs ~200 KB while loading and would block on a full pipe.
    log = tmp_path_factory.mktemp("server") / "server.log"
    with open(log, "w") as sink:
        process = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_generate_through_the_endpoint_stores_rows(server, sample_project_path, monkeypatch):
    monkeypatch.setenv("CURATOR_API_KEY", API_KEY)
    # Four candidates at most (no retries), two in flight: the test stays bounded in time. The model
    # writes question and answer (--answers free): through the endpoint, 16 answer-first candidates
    # of the 135M model all missed their answer sentence (the answer-first path has its own real test).
    monkeypatch.setattr(plan_module, "ATTEMPTS_PER_ROW", 4)
    res = CliRunner().invoke(cli, ["generate", str(sample_project_path), "--endpoint", server, "--count", "1",
                                   "--mix", "factoid=1", "--answers", "free", "--parallel", "2", "--retries", "0", "--json"])
    summary = json.loads(res.stdout)
    assert summary["status"] in {"complete", "exhausted"}
    # Which of two requests in flight the server answers first (and so which prompt prefix it reuses) depends
    # on timing, and so can the 135M model's four replies: a run that kept none exits 1 by design, and what
    # it stored is checked below all the same.
    assert res.exit_code == (0 if summary["accepted"] else 1), res.output
    db = open_project(sample_project_path)
    try:
        run = db.execute("SELECT backend, params FROM generation_runs WHERE id = ?", [summary["run_id"]]).fetchone()
        raws = [r[0] for r in db.execute("SELECT raw_output FROM queries WHERE run_id = ? UNION ALL "
                                         "SELECT raw_output FROM rejected_candidates WHERE run_id = ?",
                                         [summary["run_id"]] * 2)]
        gold = [json.loads(r[0]) for r in db.execute("SELECT gold_chunk_ids FROM queries WHERE run_id = ?",
                                                     [summary["run_id"]])]
        chunk_ids = {r[0] for r in db.execute("SELECT id FROM chunks")}
    finally:
        db.close()
    assert run[0] == "http" and json.loads(run[1])["parallel"] == 2
    assert raws and len(raws) == summary["accepted"] + summary["rejected"]
    # The server honoured the grammar: every reply is a question and an answer line, as the prompt asks.
    assert json.loads(run[1])["answers"] == "free"
    assert all(prompts.parse_output(raw) and raw.endswith("\n") for raw in raws)
    assert all(ids and set(ids) <= chunk_ids for ids in gold)


class _Counting(HttpBackend):
    """Records how many requests were in flight at once."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.active = self.peak = 0
        self.lock = threading.Lock()

    def complete(self, messages, **params):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            return super().complete(messages, **params)
        finally:
            with self.lock:
                self.active -= 1


def test_several_requests_in_flight(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, API_KEY)
    backend = _Counting(server, api_key_env=KEY_ENV, parallel=3)
    requests = [Request([{"role": "user", "content": f"Name a colour number {i}."}], max_tokens=6, temperature=0.0)
                for i in range(3)]
    texts = backend.complete_many(requests)
    assert len(texts) == 3 and all(isinstance(t, str) and t for t in texts)
    assert backend.peak == 3


def test_api_key_comes_from_the_environment(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(CuratorError, match=f"\\${KEY_ENV} is not set"):
        HttpBackend(server, api_key_env=KEY_ENV, retries=0).complete([{"role": "user", "content": "hi"}], max_tokens=2)
    monkeypatch.setenv(KEY_ENV, "wrong-key")
    with pytest.raises(CuratorError, match="was refused"):
        HttpBackend(server, api_key_env=KEY_ENV, retries=0).complete([{"role": "user", "content": "hi"}], max_tokens=2)
    monkeypatch.setenv(KEY_ENV, API_KEY)
    assert HttpBackend(server, api_key_env=KEY_ENV).complete([{"role": "user", "content": "hi"}], max_tokens=2)
    assert os.environ[KEY_ENV] == API_KEY


def test_a_server_that_is_down_gives_a_clear_error():
    backend = HttpBackend(f"http://127.0.0.1:{_free_port()}", retries=1, timeout=2)
    with pytest.raises(CuratorError, match="did not answer after 2 tries"):
        backend.complete([{"role": "user", "content": "hi"}], max_tokens=2)
