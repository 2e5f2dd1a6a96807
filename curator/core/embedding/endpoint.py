"""An embedder served over HTTP: any OpenAI-compatible ``/v1/embeddings`` (llama.cpp's server with
``--embedding``, ``python -m llama_cpp.server``, vLLM, Text Embeddings Inference, Ollama).

Why: a 100k-query log is out of reach on a laptop's two cores; a GPU box or a bigger CPU server is
not. ``--embedder endpoint:URL`` (``URL#MODEL`` names the model; without it the first model the
server lists is used). Texts go in batches of ``batch_size``, ``parallel`` requests in flight.
Each request is bounded: its body by ``max_request_bytes`` (a batch over it is split), its reply by
``max_reply_bytes``, its time (retries included) by ``deadline`` seconds, a watchdog shutting the
socket of a server that trickles bytes. The key comes from ``$CURATOR_API_KEY`` (Bearer).

The id names the URL, the model, the vector size and a fingerprint of one probe text's vector
(its 8 largest components' positions), so vectors of another model served under the same name are
not taken from the project's cache. The bounds (deadline watchdog, reply cap, one-line errors) are
``curator.core.httpio``'s, shared with the generation backend.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import urllib.error
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional

import numpy as np

from curator.core.embedding.base import Embedder, l2_normalise
from curator.core.errors import CuratorError, InputError
from curator.core.httpio import RETRYABLE, env_number, fetch_capped, json_request, refusal, reply_json, short_error
from curator.core.progress import CancelToken

PROBE = "Curator embedding probe: how do I read a file?"
DEFAULT_DEADLINE_S = 120.0
DEFAULT_MAX_REQUEST_BYTES = 1_000_000
DEFAULT_MAX_REPLY_BYTES = 64_000_000  # 64 texts x 4096 dims as JSON numbers is ~6 MB
DEFAULT_MAX_TEXT_CHARS = 4000  # a chunk is far shorter; servers refuse texts over their context


def split_spec(spec: str) -> tuple[str, Optional[str]]:
    """``URL[#MODEL]`` -> (the /v1 base URL, model or None); refuses what is not an http(s) URL."""
    url, _, model = spec.partition("#")
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(f"endpoint:{spec}: give an http(s) URL, e.g. endpoint:http://127.0.0.1:8080/v1#MODEL")
    base = url.strip().rstrip("/")
    for tail in ("/embeddings", ""):
        if base.endswith("/v1" + tail):
            base = base[: len(base) - len(tail)]
            break
    else:
        base += "/v1"
    return base, (model.strip() or None)


class EndpointEmbedder(Embedder):
    """Vectors from an OpenAI-compatible ``/v1/embeddings`` server, L2-normalised here."""

    def __init__(self, spec: str, batch_size: int = 64, parallel: int = 4, retries: int = 2,
                 deadline: Optional[float] = None, max_request_bytes: Optional[int] = None,
                 max_reply_bytes: Optional[int] = None, api_key_env: str = "CURATOR_API_KEY") -> None:
        self.base, self.model = split_spec(spec)
        self.batch_size = max(1, batch_size)
        self.parallel = max(1, parallel)
        self.retries = retries
        self.deadline = deadline if deadline is not None else env_number("CURATOR_EMBED_DEADLINE_S", DEFAULT_DEADLINE_S)
        self.max_request_bytes = int(max_request_bytes or env_number("CURATOR_EMBED_MAX_REQUEST_BYTES",
                                                                      DEFAULT_MAX_REQUEST_BYTES))
        self.max_reply_bytes = int(max_reply_bytes or env_number("CURATOR_EMBED_MAX_REPLY_BYTES",
                                                                  DEFAULT_MAX_REPLY_BYTES))
        self.api_key_env = api_key_env
        self.api_key = os.environ.get(api_key_env)
        self._id: Optional[str] = None

    # ------------------------------------------------------------ identity

    @property
    def id(self) -> str:
        """Asks the server once (model name if none was given, one probe vector): the id must be
        known before the project's cache is read, and a dead server is said before a long job."""
        if self._id is None:
            if self.model is None:
                self.model = self._first_model()
            probe = self._embed_request([PROBE])[0]
            top = ",".join(str(i) for i in sorted(np.argsort(-np.abs(probe))[:8]))
            fingerprint = hashlib.sha1(top.encode()).hexdigest()[:8]
            self._id = f"endpoint:{self.base}#{self.model}:d{probe.shape[0]}:{fingerprint}"
        return self._id

    def _first_model(self) -> str:
        """The first model id of ``GET /v1/models``; "default" when the server lists none."""
        try:
            reply = reply_json(self._fetch(None, "/models", time.monotonic() + min(self.deadline, 30.0)))
            return str(reply["data"][0]["id"])
        except (*RETRYABLE, KeyError, IndexError, TypeError):
            return "default"

    # ------------------------------------------------------------ embedding

    def embed_batch(self, texts: list[str], on_progress: Optional[Callable[[int, int, str], None]] = None,
                    cancel: Optional[CancelToken] = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), np.float32)
        self.id  # noqa: B018  (model and size known, server checked, before the batches go out)
        limit = int(env_number("CURATOR_EMBED_MAX_CHARS", DEFAULT_MAX_TEXT_CHARS))
        clipped = [(t or " ")[:limit] for t in texts]
        batches = self._batches(clipped)
        out: list[Optional[np.ndarray]] = [None] * len(batches)
        pool = ThreadPoolExecutor(self.parallel, thread_name_prefix="curator-embed")
        try:
            futures = {pool.submit(self._embed_request, [clipped[i] for i in b]): n for n, b in enumerate(batches)}
            done_texts = 0
            for future in _as_done(futures, cancel):
                n = futures[future]
                out[n] = future.result()
                done_texts += len(batches[n])
                if on_progress:
                    on_progress(done_texts, len(texts), "embedding (endpoint)")
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # a cancelled run drops what is in flight
        return l2_normalise(np.vstack(out))

    def _batches(self, texts: list[str]) -> list[list[int]]:
        """Index groups of at most ``batch_size`` texts whose JSON stays under the request cap."""
        groups, current, size = [], [], 0
        for i, text in enumerate(texts):
            cost = len(json.dumps(text).encode()) + 2
            if cost + 200 > self.max_request_bytes:
                raise InputError(f"a text of {cost:,} bytes does not fit the endpoint's request cap of "
                                 f"{self.max_request_bytes:,} bytes; raise $CURATOR_EMBED_MAX_REQUEST_BYTES "
                                 "or lower $CURATOR_EMBED_MAX_CHARS.")
            if current and (len(current) >= self.batch_size or size + cost + 200 > self.max_request_bytes):
                groups.append(current)
                current, size = [], 0
            current.append(i)
            size += cost
        return groups + ([current] if current else [])

    def _embed_request(self, texts: list[str]) -> np.ndarray:
        """One POST with retries (5xx, resets, timeouts) under one deadline; rows in input order."""
        body = {"input": texts, "model": self.model or "default", "encoding_format": "float"}
        deadline_at = time.monotonic() + self.deadline
        last = None
        for attempt in range(self.retries + 1):
            try:
                return self._vectors(reply_json(self._fetch(body, "/embeddings", deadline_at)), len(texts))
            except urllib.error.HTTPError as exc:
                self._raise_if_refused(exc)
                last = exc
            except RETRYABLE as exc:
                last = exc
            if time.monotonic() >= deadline_at:
                raise CuratorError(f"{self.base}: no complete reply within {self.deadline:g} s ({short_error(last)}); "
                                   "set $CURATOR_EMBED_DEADLINE_S to allow longer. Vectors already made are kept.")
            if attempt < self.retries:
                time.sleep(min(4.0, 0.5 * 2 ** attempt, max(0.0, deadline_at - time.monotonic())))
        raise CuratorError(f"{self.base}: the embedding server did not answer after {self.retries + 1} tries "
                           f"({short_error(last)}); check that it is running (with embeddings on).")

    def _raise_if_refused(self, exc: urllib.error.HTTPError) -> None:
        refused = refusal(exc, self.base, self.api_key_env, bool(self.api_key),
                          "; is it serving an embedding model (llama.cpp: --embedding)?")
        if refused:
            raise refused from None

    def _vectors(self, reply, n: int) -> np.ndarray:
        """The reply's vectors in input order; any other shape is a clear error, not a retry."""
        try:
            items = sorted(reply["data"], key=lambda d: d.get("index", 0))
            rows = [np.asarray(d["embedding"], dtype=np.float32) for d in items]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise CuratorError(f"{self.base}: the reply is not an OpenAI embeddings list "
                               f"({short_error(json.dumps(reply)[:200])}); check the URL.") from None
        rows = [r.mean(axis=0) if r.ndim == 2 else r for r in rows]  # token vectors (no pooling): mean
        if len(rows) != n or len({r.shape for r in rows}) != 1 or rows[0].ndim != 1:
            raise CuratorError(f"{self.base}: asked for {n} vectors, the reply holds {len(rows)} of sizes "
                               f"{sorted({r.shape for r in rows})}.")
        return np.vstack(rows)

    # ------------------------------------------------------------ HTTP

    def _fetch(self, body: Optional[dict], path: str, deadline_at: float) -> bytes:
        """GET (no body) or POST JSON; the reply read under the size cap, the socket shut at the deadline."""
        return fetch_capped(json_request(self.base + path, body, self.api_key), deadline_at, self.deadline,
                            self.max_reply_bytes,
                            f"{self.base}: a reply is larger than {self.max_reply_bytes:,} bytes; check the "
                            "server (or raise $CURATOR_EMBED_MAX_REPLY_BYTES).")


def _as_done(futures, cancel: Optional[CancelToken]):
    """Futures as they finish, checking ``cancel`` twice a second while waiting."""
    from concurrent.futures import FIRST_COMPLETED, wait

    pending = set(futures)
    while pending:
        if cancel is not None:
            cancel.check()
        done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
        yield from done

