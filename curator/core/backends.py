"""Text-generation backends: one abstract primitive, ``complete(messages, ...) -> str``.

- ``LlamaCppBackend``: a local GGUF file through llama-cpp-python, loaded lazily on first use,
  with the chat template stored in the file. With ``parallel > 1`` it decodes several
  requests at once (one llama.cpp sequence id each, see ``llama_batch.BatchDecoder``).
- ``HttpBackend``: any OpenAI-compatible ``/v1/chat/completions`` server (llama-server, vLLM,
  Ollama, ``python -m llama_cpp.server``), with ``parallel`` requests in flight.
- ``FakeBackend``: scripted replies for fast unit tests; records every prompt.

The base class turns ``complete`` into ``iter_complete(requests)``: results in completion
order, pulling each request only when it can start, so the caller can decide what to ask
next from the results so far (generation stops asking for a type once it has enough).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union

from curator.core.errors import CuratorError, ModelFileError

Messages = list[dict]
GGUF_MAGIC = b"GGUF"
MIN_GGUF_BYTES = 1024
_LOAD_LOCK = threading.Lock()  # model loads that patch llama-cpp-python defaults, one at a time


def physical_cores() -> int:
    """Physical cores (llama.cpp gains nothing from hyper-threads); else the logical count."""
    cores, package = set(), None
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("physical id"):
                    package = line.split(":", 1)[1].strip()
                elif line.startswith("core id"):
                    cores.add((package, line.split(":", 1)[1].strip()))
    except OSError:
        pass
    return len(cores) or os.cpu_count() or 1


def check_gguf(path: Union[str, Path]) -> Path:
    """Refuse a missing, truncated or non-GGUF model file before any work starts."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise ModelFileError(f"{path}: model file not found; pass --model PATH to a .gguf file.")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise ModelFileError(f"{path}: not a GGUF model file (it does not start with 'GGUF').")
    if size < MIN_GGUF_BYTES:
        raise ModelFileError(f"{path}: GGUF file is truncated ({size} bytes).")
    return path


@dataclass(eq=False)  # identity: two equal prompts are still two requests
class Request:
    """One completion wanted; ``tag`` is the caller's own (generation keeps its task there)."""

    messages: Messages
    max_tokens: int = 128
    temperature: float = 0.7
    seed: int = 0
    grammar: Optional[str] = None
    tag: object = field(default=None, compare=False)
    # Set by the caller once it no longer needs the answer: a batching backend may then stop
    # decoding it and yield it at once with "" (the caller drops it either way).
    abandoned: bool = field(default=False, compare=False)

    def params(self) -> dict:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed,
                "grammar": self.grammar}


class _Source:
    """Pulls requests lazily. A caller yields None for 'nothing to start now, ask me again
    after the next result'; None with nothing in flight ends the stream."""

    def __init__(self, requests: Iterable[Optional[Request]]):
        self._it = iter(requests)
        self.exhausted = False

    def pull(self) -> Optional[Request]:
        if self.exhausted:
            return None
        try:
            return next(self._it)
        except StopIteration:
            self.exhausted = True
            return None


def _use_extra_buffer_types() -> bool:
    """Whether llama.cpp may repack weights into its extra CPU buffer types (AMX among them).

    On a CPU that advertises AMX, llama.cpp routes Q4/Q8 matmuls to its AMX kernels, and in a
    VM that lists the AMX flags without enabling the tile state those kernels segfault
    (seen here: ggml_backend_amx_mul_mat, SIGSEGV on the first decode). So they are off on
    such CPUs unless CURATOR_LLAMA_EXTRA_BUFTS=1 says the host really runs AMX. The Makefile's
    build has no AMX kernels (GGML_NATIVE=OFF), and there the other extra types (AVX2 repacking
    of Q4 weights) stay on; this guard is for a user's own -march=native build.
    """
    forced = os.environ.get("CURATOR_LLAMA_EXTRA_BUFTS")
    if forced is not None:
        return forced == "1"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu_has_amx = "amx_tile" in fh.read()
    except OSError:
        return True
    return not (cpu_has_amx and _build_has_amx())


def _build_has_amx() -> bool:
    import llama_cpp

    return b"AMX_INT8 = 1" in llama_cpp.llama_print_system_info()


@contextlib.contextmanager
def _extra_buffer_types(enabled: bool):
    """``Llama()`` has no argument for ``use_extra_bufts``: patch its defaults while it loads."""
    import llama_cpp.llama as high_level

    if enabled:
        yield
        return
    with _LOAD_LOCK:
        original = high_level.llama_cpp.llama_model_default_params

        def defaults():
            params = original()
            params.use_extra_bufts = False
            return params

        high_level.llama_cpp.llama_model_default_params = defaults
        try:
            yield
        finally:
            high_level.llama_cpp.llama_model_default_params = original


class Backend:
    """Base class: subclasses implement ``complete``; ``iter_complete`` runs one at a time."""

    id: str = "backend"
    parallel: int = 1

    def complete(self, messages: Messages, *, max_tokens: int = 128, temperature: float = 0.7,
                 seed: int = 0, grammar: Optional[str] = None) -> str:
        raise NotImplementedError

    def iter_complete(self, requests: Iterable[Optional[Request]]) -> Iterator[tuple[Request, str]]:
        """(request, text) pairs in completion order; each request is pulled when it can start."""
        source = _Source(requests)
        while (request := source.pull()) is not None:
            yield request, self.complete(request.messages, **request.params())

    def complete_many(self, requests: Sequence[Request]) -> list[str]:
        """Texts in the order of ``requests`` (a convenience over ``iter_complete``)."""
        texts = {id(request): text for request, text in self.iter_complete(list(requests))}
        return [texts[id(request)] for request in requests]

    def describe(self) -> dict:
        return {"backend": self.id, "parallel": self.parallel}


class FakeBackend(Backend):
    """Replies from a list (cycled) or a function of the messages; keeps every prompt.

    With ``parallel > 1`` it holds up to that many requests and answers the newest first,
    so tests see replies out of request order, as from a batching backend.
    """

    id = "fake"

    def __init__(self, responses: Union[Sequence[str], Callable[[Messages], str]], parallel: int = 1):
        self.responses = responses
        self.prompts: list[Messages] = []
        self.parallel = max(1, parallel)
        self.peak_in_flight = 0

    def complete(self, messages: Messages, **params) -> str:
        self.prompts.append(messages)
        if callable(self.responses):
            return self.responses(messages)
        return self.responses[(len(self.prompts) - 1) % len(self.responses)]

    def iter_complete(self, requests: Iterable[Optional[Request]]) -> Iterator[tuple[Request, str]]:
        if self.parallel <= 1:
            yield from super().iter_complete(requests)
            return
        source, held = _Source(requests), []
        while True:
            while len(held) < self.parallel and (request := source.pull()) is not None:
                held.append(request)
            self.peak_in_flight = max(self.peak_in_flight, len(held))
            if not held:
                return
            request = held.pop()
            yield request, "" if request.abandoned else self.complete(request.messages, **request.params())


DEFAULT_PARALLEL = 8  # sequences decoded together by default (figures: bench/generate.py)


class LlamaCppBackend(Backend):
    """A GGUF model run in-process by llama-cpp-python."""

    id = "llama-cpp"

    def __init__(self, model_path: Union[str, Path], n_ctx: int = 2048, n_threads: Optional[int] = None,
                 seed: int = 0, parallel: int = 1):
        self.model_path = check_gguf(model_path)
        # llama-cpp-python's defaults (n_ctx=512, half the cores) are too small and too slow.
        self.n_ctx = n_ctx
        self.n_threads = n_threads or physical_cores()
        self.seed = seed
        self.parallel = max(1, parallel)
        self._llm = None
        self._decoder = None
        self._grammars: dict[str, object] = {}

    @property
    def llm(self):
        if self._llm is None:
            from llama_cpp import Llama  # heavy: imported on first use only

            try:
                with _extra_buffer_types(_use_extra_buffer_types()):
                    self._llm = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                      n_threads_batch=self.n_threads, seed=self.seed, verbose=False)
            except (ValueError, RuntimeError) as exc:
                raise ModelFileError(f"{self.model_path}: llama.cpp could not load this model ({exc}).") from None
        return self._llm

    def _grammar(self, text: Optional[str]):
        if text is None:
            return None
        if text not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False))

    def complete(self, messages: Messages, *, max_tokens: int = 128, temperature: float = 0.7,
                 seed: int = 0, grammar: Optional[str] = None) -> str:
        out = self.llm.create_chat_completion(messages, max_tokens=max_tokens, temperature=temperature,
                                              seed=seed, grammar=self._grammar(grammar))
        return out["choices"][0]["message"]["content"] or ""

    def iter_complete(self, requests: Iterable[Optional[Request]]) -> Iterator[tuple[Request, str]]:
        if self.parallel <= 1:
            yield from super().iter_complete(requests)
            return
        if self._decoder is None:
            from curator.core.llama_batch import BatchDecoder

            self._decoder = BatchDecoder(self, self.parallel)
        yield from self._decoder.run(requests)

    def chat_prompt(self, messages: Messages) -> tuple[list[int], list[bytes]]:
        """Prompt tokens and stop strings exactly as ``create_chat_completion`` builds them.

        llama-cpp-python has no 'format only' call, and chat handlers differ per model, so we
        run the model's own handler against a stand-in whose ``create_completion`` records its
        arguments instead of generating: the batched path then sees the very same prompt.
        """
        from llama_cpp import llama_chat_format

        llm, seen = self.llm, {}

        class StandIn:
            def __getattr__(self, name):
                return getattr(llm, name)

            def create_completion(self, prompt, stop=None, **_):
                seen.update(prompt=prompt, stop=stop)
                raise _Captured

        handler = (llm.chat_handler or llm._chat_handlers.get(llm.chat_format)
                   or llama_chat_format.get_chat_completion_handler(llm.chat_format))
        try:
            handler(llama=StandIn(), messages=messages)
        except _Captured:
            pass
        stops = [seen["stop"]] if isinstance(seen["stop"], str) else list(seen["stop"] or [])
        return list(seen["prompt"]), [s.encode("utf-8") for s in stops]

    def describe(self) -> dict:
        return {"backend": self.id, "model_path": str(self.model_path), "n_ctx": self.n_ctx,
                "n_threads": self.n_threads, "parallel": self.parallel}


class _Captured(Exception):
    """Raised by the stand-in of ``LlamaCppBackend.chat_prompt`` once it has the prompt."""


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
        source, running = _Source(requests), {}
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


def open_backend(model_path: Optional[str] = None, endpoint: Optional[str] = None, n_ctx: int = 2048,
                 n_threads: Optional[int] = None, seed: int = 0, parallel: Optional[int] = None) -> Backend:
    """The bundled model unless a GGUF path or an endpoint is given."""
    if endpoint:
        return HttpBackend(endpoint, parallel=parallel or 4)
    if model_path is None:
        from curator.core.resources import bundled_model_path

        model_path = bundled_model_path()
    return LlamaCppBackend(model_path, n_ctx=n_ctx, n_threads=n_threads, seed=seed,
                           parallel=parallel or DEFAULT_PARALLEL)
