"""Any OpenAI-compatible ``/v1/chat/completions`` server (llama-server, vLLM, Ollama,
``python -m llama_cpp.server``), with ``parallel`` requests in flight."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Iterable, Iterator, Optional

from curator.core.errors import CuratorError
from curator.core.generation.backends.base import Backend, Messages, Request, RequestSource


class HttpBackend(Backend):
    """An OpenAI-compatible chat-completions server; retries with backoff when it is down.

    ``parallel`` requests are kept in flight from a thread pool: a server that batches
    (llama-server with ``--parallel``, vLLM) answers them together.
    """

    id = "http"

    def __init__(self, endpoint: str, api_key_env: str = "CURATOR_API_KEY", model: str = "default",
                 timeout: float = 120.0, retries: int = 3, parallel: int = 4):
        self.endpoint = endpoint.rstrip("/")
        self.api_key_env = api_key_env
        self.api_key = os.environ.get(api_key_env)
        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.parallel = max(1, parallel)

    def _url(self) -> str:
        base = self.endpoint if self.endpoint.endswith("/v1") else self.endpoint + "/v1"
        return base + "/chat/completions"

    def _request(self, body: dict) -> urllib.request.Request:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return urllib.request.Request(self._url(), json.dumps(body).encode(), headers)

    def _refused(self, exc: urllib.error.HTTPError) -> Optional[CuratorError]:
        """A 4xx answer will not change on retry: say what to do instead of retrying."""
        if exc.code in (401, 403):
            where = f"${self.api_key_env} is not set" if not self.api_key else f"the key in ${self.api_key_env} was refused"
            return CuratorError(f"{self.endpoint}: the server refused the request ({exc.code}); {where}.")
        if 400 <= exc.code < 500 and exc.code not in (408, 429):
            detail = exc.read()[:300].decode("utf-8", errors="replace")
            return CuratorError(f"{self.endpoint}: the server rejected the request ({exc.code}: {detail}).")
        return None

    def complete(self, messages: Messages, *, max_tokens: int = 128, temperature: float = 0.7,
                 seed: int = 0, grammar: Optional[str] = None) -> str:
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                "temperature": temperature, "seed": seed}
        if grammar:
            body["grammar"] = grammar  # llama.cpp servers honour it; others ignore it
        last_error = None
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(self._request(body), timeout=self.timeout) as response:
                    reply = json.loads(response.read())
                return self._reply_text(reply)
            except urllib.error.HTTPError as exc:
                refused = self._refused(exc)
                if refused:
                    raise refused from None
                last_error = exc
            except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError) as exc:
                last_error = exc
            if attempt < self.retries:
                time.sleep(min(8.0, 0.5 * 2 ** attempt))
        raise CuratorError(f"{self.endpoint}: the model server did not answer after {self.retries + 1} tries "
                           f"({last_error}); check that it is running. Rows already made are kept.")

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
