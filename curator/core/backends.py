"""Text-generation backends: one abstract primitive, ``complete(messages, ...) -> str``.

- ``LlamaCppBackend``: a local GGUF file through llama-cpp-python, loaded lazily on first use,
  with the chat template stored in the file.
- ``HttpBackend``: any OpenAI-compatible ``/v1/chat/completions`` server (llama-server, vLLM,
  Ollama, ``python -m llama_cpp.server``).
- ``FakeBackend``: scripted replies for fast unit tests; records every prompt.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from curator.core.errors import CuratorError, ModelFileError

Messages = list[dict]
GGUF_MAGIC = b"GGUF"
MIN_GGUF_BYTES = 1024


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


class Backend:
    """Base class: subclasses implement ``complete``."""

    id: str = "backend"

    def complete(self, messages: Messages, *, max_tokens: int = 128, temperature: float = 0.7,
                 seed: int = 0, grammar: Optional[str] = None) -> str:
        raise NotImplementedError

    def describe(self) -> dict:
        return {"backend": self.id}


class FakeBackend(Backend):
    """Replies from a list (cycled) or a function of the messages; keeps every prompt."""

    id = "fake"

    def __init__(self, responses: Union[Sequence[str], Callable[[Messages], str]]):
        self.responses = responses
        self.prompts: list[Messages] = []

    def complete(self, messages: Messages, **params) -> str:
        self.prompts.append(messages)
        if callable(self.responses):
            return self.responses(messages)
        return self.responses[(len(self.prompts) - 1) % len(self.responses)]


class LlamaCppBackend(Backend):
    """A GGUF model run in-process by llama-cpp-python."""

    id = "llama-cpp"

    def __init__(self, model_path: Union[str, Path], n_ctx: int = 2048, n_threads: Optional[int] = None,
                 seed: int = 0):
        self.model_path = check_gguf(model_path)
        # llama-cpp-python's defaults (n_ctx=512, half the cores) are too small and too slow.
        self.n_ctx = n_ctx
        self.n_threads = n_threads or physical_cores()
        self.seed = seed
        self._llm = None
        self._grammars: dict[str, object] = {}

    @property
    def llm(self):
        if self._llm is None:
            from llama_cpp import Llama  # heavy: imported on first use only

            try:
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

    def describe(self) -> dict:
        return {"backend": self.id, "model_path": str(self.model_path), "n_ctx": self.n_ctx,
                "n_threads": self.n_threads}


class HttpBackend(Backend):
    """An OpenAI-compatible chat-completions server; retries with backoff when it is down."""

    id = "http"

    def __init__(self, endpoint: str, api_key_env: str = "CURATOR_API_KEY", model: str = "default",
                 timeout: float = 120.0, retries: int = 3):
        self.endpoint = endpoint.rstrip("/")
        self.api_key = os.environ.get(api_key_env)
        self.model = model
        self.timeout = timeout
        self.retries = retries

    def _url(self) -> str:
        base = self.endpoint if self.endpoint.endswith("/v1") else self.endpoint + "/v1"
        return base + "/chat/completions"

    def complete(self, messages: Messages, *, max_tokens: int = 128, temperature: float = 0.7,
                 seed: int = 0, grammar: Optional[str] = None) -> str:
        body = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                "temperature": temperature, "seed": seed}
        if grammar:
            body["grammar"] = grammar  # llama.cpp servers honour it; others ignore it
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self._url(), json.dumps(body).encode(), headers)
        last_error = None
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    reply = json.loads(response.read())
                return reply["choices"][0]["message"]["content"] or ""
            except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError, KeyError) as exc:
                last_error = exc
                time.sleep(min(8.0, 0.5 * 2 ** attempt))
        raise CuratorError(f"{self.endpoint}: the model server did not answer after {self.retries + 1} tries "
                           f"({last_error}); check that it is running. Rows already made are kept.")

    def describe(self) -> dict:
        return {"backend": self.id, "endpoint": self.endpoint, "model": self.model}


def open_backend(model_path: Optional[str] = None, endpoint: Optional[str] = None, n_ctx: int = 2048,
                 n_threads: Optional[int] = None, seed: int = 0) -> Backend:
    """The bundled model unless a GGUF path or an endpoint is given."""
    if endpoint:
        return HttpBackend(endpoint)
    if model_path is None:
        from curator.core.resources import bundled_model_path

        model_path = bundled_model_path()
    return LlamaCppBackend(model_path, n_ctx=n_ctx, n_threads=n_threads, seed=seed)
