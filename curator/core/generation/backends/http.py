"""Any OpenAI-compatible ``/v1/chat/completions`` server (llama-server, vLLM, Ollama,
``python -m llama_cpp.server``), with ``parallel`` requests in flight."""

from __future__ import annotations

import json
import os
import time
import urllib.error
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Iterable, Iterator, Optional

from curator.core.errors import CuratorError
from curator.core.httpio import RETRYABLE, env_number, fetch_capped, json_request, refusal, reply_json, short_error
from curator.core.generation.backends.base import Backend, Messages, Request, RequestSource


# A reply is one short row: 1 MB is far above any real one, and a server sending 30 MB a reply
# had filled a project with 598 MB of raw output. A request, retries included, gets 600 s in all:
# a server trickling one byte every 5 s never tripped the per-read timeout.
DEFAULT_DEADLINE_S = 600.0
DEFAULT_MAX_REPLY_BYTES = 1_000_000


class HttpBackend(Backend):
    """An OpenAI-compatible chat-completions server; retries with backoff when it is down.

    ``parallel`` requests are kept in flight from a thread pool: a server that batches
    (llama-server with ``--parallel``, vLLM) answers them together. ``deadline`` (seconds, for
    one request and its retries; $CURATOR_HTTP_DEADLINE_S, default 600) and ``max_reply_bytes``
    ($CURATOR_HTTP_MAX_REPLY_BYTES, default 1,000,000) bound what a server can cost.
    """

    id = "http"

    def __init__(self, endpoint: str, api_key_env: str = "CURATOR_API_KEY", model: str = "default",
                 timeout: float = 120.0, retries: int = 3, parallel: int = 4, deadline: Optional[float] = None,
                 max_reply_bytes: Optional[int] = None):
        self.endpoint = endpoint.rstrip("/")
        self.api_key_env = api_key_env
        self.api_key = os.environ.get(api_key_env)
        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.parallel = max(1, parallel)
        self.deadline = deadline if deadline is not None else env_number("CURATOR_HTTP_DEADLINE_S", DEFAULT_DEADLINE_S)
        self.max_reply_bytes = int(max_reply_bytes if max_reply_bytes is not None
                                   else env_number("CURATOR_HTTP_MAX_REPLY_BYTES", DEFAULT_MAX_REPLY_BYTES))

    def _url(self) -> str:
        base = self.endpoint if self.endpoint.endswith("/v1") else self.endpoint + "/v1"
        return base + "/chat/completions"

    def _refused(self, exc: urllib.error.HTTPError) -> Optional[CuratorError]:
        return refusal(exc, self.endpoint, self.api_key_env, bool(self.api_key))

    def complete(self, messages: Messages, *, max_tokens: int = 128, temperature: float = 0.7,
                 seed: int = 0, grammar: Optional[str] = None) -> str:
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                "temperature": temperature, "seed": seed}
        if grammar:
            body["grammar"] = grammar  # llama.cpp servers honour it; others ignore it
        last_error = None
        deadline_at = time.monotonic() + self.deadline
        for attempt in range(self.retries + 1):
            try:
                return self._reply_text(reply_json(self._fetch(body, deadline_at)))
            except urllib.error.HTTPError as exc:
                refused = self._refused(exc)
                if refused:
                    raise refused from None
                last_error = exc
            except RETRYABLE as exc:
                last_error = exc
            self._check_deadline(deadline_at, last_error)
            if attempt < self.retries:
                time.sleep(min(8.0, 0.5 * 2 ** attempt, max(0.0, deadline_at - time.monotonic())))
        raise CuratorError(f"{self.endpoint}: the model server did not answer after {self.retries + 1} tries "
                           f"({short_error(last_error)}); check that it is running. Rows already made are kept.")

    def _check_deadline(self, deadline_at: float, last_error) -> None:
        if time.monotonic() >= deadline_at:
            raise CuratorError(f"{self.endpoint}: no complete reply within {self.deadline:g} s ({short_error(last_error)}); "
                               "the server is too slow or stalled. Set $CURATOR_HTTP_DEADLINE_S to allow longer. "
                               "Rows already made are kept.")

    def _fetch(self, body: dict, deadline_at: float) -> bytes:
        """The reply body, read under the size cap; the socket is shut at the deadline."""
        return fetch_capped(json_request(self._url(), body, self.api_key), deadline_at, self.timeout,
                            self.max_reply_bytes,
                            f"{self.endpoint}: the reply is larger than {self.max_reply_bytes:,} bytes; a row is a few "
                            "hundred. Check the server (or raise $CURATOR_HTTP_MAX_REPLY_BYTES). Rows already made are kept.")

    def _reply_text(self, reply) -> str:
        """The message text of a chat completion; any other shape is a clear error, not a retry."""
        try:
            content = reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise CuratorError(f"{self.endpoint}: the reply is not an OpenAI chat completion "
                               f"({json.dumps(reply)[:200]}); check the URL (it should end in /v1).") from None
        if content is not None and not isinstance(content, str):
            raise CuratorError(f"{self.endpoint}: the reply's message content is {type(content).__name__}, not text.")
        return content or ""

    def iter_complete(self, requests: Iterable[Optional[Request]]) -> Iterator[tuple[Request, str]]:
        if self.parallel <= 1:
            yield from super().iter_complete(requests)
            return
        source, running = RequestSource(requests), {}
        pool = ThreadPoolExecutor(self.parallel, thread_name_prefix="curator-http")
        try:
            while True:
                while len(running) < self.parallel and (request := source.pull()) is not None:
                    running[pool.submit(self.complete, request.messages, **request.params())] = request
                if not running:
                    return
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    request = running.pop(future)
                    yield request, future.result()
        finally:
            # A cancelled run drops the answers still in flight; rows already stored stay.
            pool.shutdown(wait=False, cancel_futures=True)

    def describe(self) -> dict:
        return {"backend": self.id, "endpoint": self.endpoint, "model": self.model, "parallel": self.parallel}

