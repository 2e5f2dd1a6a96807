"""HTTP under bounds, shared by the two clients of OpenAI-compatible servers: the generation backend
(``/v1/chat/completions``) and the endpoint embedder (``/v1/embeddings``).

A hostile or broken server must not cost more than the user allowed: one request and its retries
get a deadline (a watchdog shuts the socket, since a server trickling one byte every few seconds
never trips a per-read timeout), a reply is read in pieces under a size cap, and its error text
reaches the terminal as one line of printable ASCII.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Optional

from curator.core.errors import CuratorError

# What a request may fail with and still be retried: URLError, timeouts and resets are OSErrors;
# random bytes are an HTTPException (bad status line) or a ValueError (not JSON, not UTF-8).
RETRYABLE = (OSError, http.client.HTTPException, ValueError)


def env_number(name: str, default: float) -> float:
    """A positive number from the environment (a limit the user may raise), or a clear error: nan
    turned the deadline off, and nan or inf as a reply cap was a traceback."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        value = math.nan
    if not (0 < value < math.inf):
        raise CuratorError(f"${name} must be a positive number (got {os.environ[name]!r}); "
                           "unset it to use the default.")
    return value


def short_error(exc) -> str:
    """An error (or text) in one line of printable ASCII: a hostile server's bytes must not reach
    the terminal raw."""
    text = " ".join((exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}").split())
    return text.encode("ascii", "backslashreplace").decode("ascii")[:200]


def json_request(url: str, body: Optional[dict], api_key: Optional[str]) -> urllib.request.Request:
    """GET (no body) or POST of JSON, with the Bearer key when there is one."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return urllib.request.Request(url, json.dumps(body).encode() if body is not None else None, headers)


def reply_json(raw: bytes):
    """The reply parsed as JSON; every way it can be bad is a ValueError, so it is retried and then
    said in one line (a reply nested 300,000 deep raised RecursionError: a traceback)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("the reply's JSON is nested too deeply") from None


def refusal(exc: urllib.error.HTTPError, where: str, key_env: str, has_key: bool, hint: str = "") -> Optional[CuratorError]:
    """A 4xx answer will not change on retry: the error that says what to do instead (None: retry)."""
    if exc.code in (401, 403):
        why = f"${key_env} is not set" if not has_key else f"the key in ${key_env} was refused"
        return CuratorError(f"{where}: the server refused the request ({exc.code}); {why}.")
    if 400 <= exc.code < 500 and exc.code not in (408, 429):
        detail = exc.read(300).decode("utf-8", errors="replace")
        return CuratorError(f"{where}: the server rejected the request ({exc.code}: {short_error(detail)}){hint}.")
    return None


def fetch_capped(request: urllib.request.Request, deadline_at: float, timeout: float, max_reply_bytes: int,
                 too_big: str) -> bytes:
    """The reply body, read in pieces under ``max_reply_bytes`` (``too_big`` is the error's text);
    the socket is shut at ``deadline_at`` (time.monotonic), and a reply cut there is an error, not a
    fragment that happens to parse."""
    sockets: list[socket.socket] = []
    wait = min(threading.TIMEOUT_MAX, max(0.0, deadline_at - time.monotonic()))  # a 1e300 s deadline: no overflow
    watchdog = threading.Timer(wait, _shut, [sockets])
    watchdog.daemon = True
    watchdog.start()
    try:
        opener = urllib.request.build_opener(_WatchedHttp(sockets), _WatchedHttps(sockets), _NoRedirects())
        with opener.open(request, timeout=max(0.1, min(timeout, deadline_at - time.monotonic()))) as response:
            raw = _read_capped(response, max_reply_bytes, too_big)
    finally:
        watchdog.cancel()
    if time.monotonic() >= deadline_at:
        raise TimeoutError(f"reply cut at the deadline after {len(raw):,} bytes")
    return raw


def _read_capped(response, max_reply_bytes: int, too_big: str) -> bytes:
    parts, size = [], 0
    while piece := response.read1(1 << 16):
        size += len(piece)
        if size > max_reply_bytes:
            raise CuratorError(too_big)
        parts.append(piece)
    return b"".join(parts)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is refused, not followed: urllib followed one to any origin with the Authorization
    header (the API key), turning the POST into a GET. The user names the final URL instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        fp.close()
        raise CuratorError(f"{req.full_url}: the server answered with a redirect ({code}) to {short_error(newurl)}; "
                           "Curator does not follow redirects (they could carry the API key elsewhere): give the "
                           "final URL as the endpoint.")


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
