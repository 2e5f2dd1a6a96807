"""``--embedder endpoint:URL``: the real llama-cpp-python server serving the MiniLM GGUF (vectors
checked against the local path), and a small scripted HTTP server for order, key, caps, deadline
and cancel (fast, deterministic failures a real server will not produce on demand)."""

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from curator.core.embedding.embed import embed_texts, get_embedder
from curator.core.embedding.endpoint import PROBE, EndpointEmbedder, split_spec
from curator.core.errors import CuratorError, InputError
from curator.core.progress import Cancelled, CancelToken

TEXTS = ["How do I read a file in Python?", "What is the capital of France?", "pip install fails",
         "Why is 0.1 + 0.2 not 0.3?", "sorting a list of dictionaries by a key", "threads and the GIL",
         "How can I open and read a text file line by line without loading all of it?", "x"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server():
    """python -m llama_cpp.server on 127.0.0.1 with the MiniLM GGUF and embeddings on."""
    pytest.importorskip("uvicorn")  # llama-cpp-python[server] (the dev extra)
    from curator.core.embedding.minilm_gguf import minilm_gguf_path

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(minilm_gguf_path()),
                             "--model_alias", "minilm", "--embedding", "true", "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "512", "--n_threads", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(url + "/v1/models", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"llama_cpp.server did not start: {proc.stderr.read()[-2000:]}")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_llama_server_vectors_match_the_local_minilm(llama_server, empty_db):
    remote = get_embedder(f"endpoint:{llama_server}/v1", empty_db)
    assert remote.id.startswith(f"endpoint:{llama_server}/v1#minilm:d384:")
    assert remote.model == "minilm"  # the first model the server lists
    local = get_embedder("minilm").embed_batch(TEXTS)
    got = embed_texts(empty_db, remote, TEXTS)
    cos = (got * local).sum(axis=1)
    assert cos.min() >= 0.99, cos
    stored = empty_db.execute("SELECT COUNT(*) FROM embeddings WHERE embedder = ?", [remote.id]).fetchone()[0]
    assert stored == len(TEXTS)


# ---------------------------------------------------------------- scripted server


class Script:
    """What the scripted server does; requests it saw are recorded."""

    def __init__(self):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.status = 200
        self.delay = 0.0
        self.trickle = False
        self.reverse = False
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0


def vector_of(text: str) -> list[float]:
    """A deterministic 6-dim vector per text (its length and a few character counts)."""
    return [len(text), text.count("a"), text.count("e"), text.count(" "), 1.0, float(sum(map(ord, text)) % 7)]


def make_handler(script: Script):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self._send(200, {"data": [{"id": "scripted-model"}]})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with script.lock:
                script.requests.append(body)
                script.headers.append(dict(self.headers))
                script.in_flight += 1
                script.max_in_flight = max(script.max_in_flight, script.in_flight)
            try:
                time.sleep(script.delay)
                if script.status != 200:
                    self._send(script.status, {"error": "no"})
                    return
                data = [{"index": i, "embedding": vector_of(t)} for i, t in enumerate(body["input"])]
                self._send(200, {"data": data[::-1] if script.reverse else data})
            finally:
                with script.lock:
                    script.in_flight -= 1

        def _send(self, status, payload):
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(raw) + (10_000 if script.trickle else 0)))
            self.end_headers()
            self.wfile.write(raw)
            while script.trickle:  # never finishes the promised body
                time.sleep(0.2)
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return

    return Handler


@pytest.fixture()
def scripted():
    script = Script()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(script))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", script
    script.trickle = False
    server.shutdown()
    server.server_close()


def expected(texts):
    v = np.array([vector_of(t) for t in texts], np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_split_spec_forms():
    assert split_spec("http://h:1") == ("http://h:1/v1", None)
    assert split_spec("http://h:1/v1/") == ("http://h:1/v1", None)
    assert split_spec("https://h/api/v1/embeddings#nomic-embed-text") == ("https://h/api/v1", "nomic-embed-text")
    with pytest.raises(InputError, match="http"):
        split_spec("localhost:8080")


def test_batches_in_flight_in_order_with_key_and_progress(scripted, monkeypatch):
    url, script = scripted
    monkeypatch.setenv("CURATOR_API_KEY", "sekret")
    script.delay, script.reverse = 0.2, True
    emb = EndpointEmbedder(url + "#m1", batch_size=5, parallel=3)
    texts = [f"text number {i} " + "a" * (i % 4) for i in range(23)]
    seen = []
    got = emb.embed_batch(texts, on_progress=lambda d, t, m: seen.append((d, t)))
    np.testing.assert_allclose(got, expected(texts), rtol=1e-6)
    posts = script.requests[1:]  # the first is the probe that names the vector space
    assert script.requests[0]["input"] == [PROBE]
    assert sorted(len(r["input"]) for r in posts) == [3, 5, 5, 5, 5] and {r["model"] for r in posts} == {"m1"}
    assert script.max_in_flight == 3
    assert {h["Authorization"] for h in script.headers} == {"Bearer sekret"}
    assert seen[-1] == (23, 23) and len(seen) == 5
    assert emb.id.startswith(f"endpoint:{url}/v1#m1:d6:")


def test_model_from_the_server_list_and_request_size_cap(scripted):
    url, script = scripted
    emb = EndpointEmbedder(url, batch_size=100, max_request_bytes=400)
    texts = ["w" * 50] * 12  # ~54 bytes each as JSON: a 400-byte body holds only a few
    emb.embed_batch(texts)
    assert emb.model == "scripted-model"
    assert all(len(json.dumps(r).encode()) <= 400 for r in script.requests[1:])
    assert sum(len(r["input"]) for r in script.requests[1:]) == 12 and len(script.requests) > 3
    with pytest.raises(InputError, match="request cap"):
        emb.embed_batch(["z" * 1000])


def test_refused_key_is_one_clear_error_without_retries(scripted, monkeypatch):
    url, script = scripted
    monkeypatch.delenv("CURATOR_API_KEY", raising=False)
    script.status = 401
    with pytest.raises(CuratorError, match=r"\(401\); \$CURATOR_API_KEY is not set"):
        EndpointEmbedder(url + "#m").embed_batch(["a"])
    assert len(script.requests) == 1


def test_deadline_stops_a_trickling_server(scripted):
    url, script = scripted
    emb = EndpointEmbedder(url + "#m", deadline=1.5, retries=5)
    script.trickle = True
    started = time.monotonic()
    with pytest.raises(CuratorError, match="within 1.5 s"):
        emb.id
    assert time.monotonic() - started < 6


def test_reply_size_cap(scripted):
    url, _ = scripted
    with pytest.raises(CuratorError, match="larger than 50 bytes"):
        EndpointEmbedder(url + "#m", max_reply_bytes=50).id


def test_cancel_stops_between_requests(scripted):
    url, script = scripted
    emb = EndpointEmbedder(url + "#m", batch_size=1, parallel=2)
    emb.id  # noqa: B018
    script.delay = 0.3
    token = CancelToken()
    threading.Timer(0.5, token.cancel).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        emb.embed_batch([f"t{i}" for i in range(40)], cancel=token)
    assert time.monotonic() - started < 3  # 40 requests would take 6 s
    assert len(script.requests) < 15
