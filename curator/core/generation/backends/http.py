"""Any OpenAI-compatible ``/v1/chat/completions`` server (llama-server, vLLM, Ollama,
``python -m llama_cpp.server``), with ``parallel`` requests in flight."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Iterable, Iterator, Optional

from curator.core.errors import CuratorError
from curator.core.generation.backends.base import Backend, Messages, Request, RequestSource


# A reply is one short row: 1 MB is far above any real one, and a server sending 30 MB a reply
# had filled a project with 598 MB of raw output. A request, retries included, gets 600 s in all:
# a server trickling one byte every 5 s never tripped the per-read timeout.
DEFAULT_DEADLINE_S = 600.0
DEFAULT_MAX_REPLY_BYTES = 1_000_000


def _env_number(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        raise CuratorError(f"${name} must be a number (got {os.environ[name]!r}).") from None


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
        self.deadline = deadline if deadline is not None else _env_number("CURATOR_HTTP_DEADLINE_S", DEFAULT_DEADLINE_S)
        self.max_reply_bytes = int(max_reply_bytes if max_reply_bytes is not None
                                   else _env_number("CURATOR_HTTP_MAX_REPLY_BYTES", DEFAULT_MAX_REPLY_BYTES))

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
        deadline_at = time.monotonic() + self.deadline
        for attempt in range(self.retries + 1):
            try:
                return self._reply_text(json.loads(self._fetch(body, deadline_at)))
            except urllib.error.HTTPError as exc:
                refused = self._refused(exc)
                if refused:
                    raise refused from None
                last_error = exc
            except (OSError, http.client.HTTPException, ValueError) as exc:
                # URLError, timeouts and resets are OSErrors; random bytes are an HTTPException
                # (bad status line) or a ValueError (not JSON, not UTF-8)
                last_error = exc
            self._check_deadline(deadline_at, last_error)
            if attempt < self.retries:
                time.sleep(min(8.0, 0.5 * 2 ** attempt, max(0.0, deadline_at - time.monotonic())))
        raise CuratorError(f"{self.endpoint}: the model server did not answer after {self.retries + 1} tries "
                           f"({_short(last_error)}); check that it is running. Rows already made are kept.")

    def _check_deadline(self, deadline_at: float, last_error) -> None:
        if time.monotonic() >= deadline_at:
            raise CuratorError(f"{self.endpoint}: no complete reply within {self.deadline:g} s ({_short(last_error)}); "
                               "the server is too slow or stalled. Set $CURATOR_HTTP_DEADLINE_S to allow longer. "
                               "Rows already made are kept.")

    def _fetch(self, body: dict, deadline_at: float) -> bytes:
        """The reply body, read in pieces under the size cap; the socket is shut at the deadline."""
        sockets: list[socket.socket] = []
        watchdog = threading.Timer(max(0.0, deadline_at - time.monotonic()), _shut, [sockets])
        watchdog.daemon = True
        watchdog.start()
        try:
            opener = urllib.request.build_opener(_WatchedHttp(sockets), _WatchedHttps(sockets))
            with opener.open(self._request(body), timeout=min(self.timeout, self.deadline)) as response:
                return self._read_capped(response)
        finally:
            watchdog.cancel()

    def _read_capped(self, response) -> bytes:
        parts, size = [], 0
        while piece := response.read1(65536):
            size += len(piece)
            if size > self.max_reply_bytes:
                raise CuratorError(f"{self.endpoint}: the reply is larger than {self.max_reply_bytes:,} bytes; "
                                   "a row is a few hundred. Check the server (or raise "
                                   "$CURATOR_HTTP_MAX_REPLY_BYTES). Rows already made are kept.")
            parts.append(piece)
        return b"".join(parts)

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


def _short(exc) -> str:
    """The error in one line of printable ASCII: a hostile server's bytes must not reach the terminal raw."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text.encode("ascii", "backslashreplace").decode("ascii")[:200]


def _shut(sockets: list[socket.socket]) -> None:
    """Called at the deadline from the watchdog thread: a blocked read returns at once."""
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _watched(base: type, sockets: list) -> type:
    class Watched(base):
        def connect(self) -> None:
            super().connect()
            sockets.append(self.sock)
    return Watched


class _WatchedHttp(urllib.request.HTTPHandler):
    """Opens connections whose sockets the deadline watchdog can shut."""

    def __init__(self, sockets: list):
        super().__init__()
        self._connection = _watched(http.client.HTTPConnection, sockets)

    def http_open(self, req):
        return self.do_open(self._connection, req)


class _WatchedHttps(urllib.request.HTTPSHandler):
    def __init__(self, sockets: list):
        super().__init__()
        self._connection = _watched(http.client.HTTPSConnection, sockets)

    def https_open(self, req):
        return self.do_open(self._connection, req, context=self._context)
