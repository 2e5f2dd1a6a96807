"""Text-generation backends: one abstract primitive, ``complete(messages, ...) -> str``.

- ``LlamaCppBackend``: a local GGUF file through llama-cpp-python, loaded lazily on first use,
  with the chat template stored in the file. With ``parallel > 1`` it decodes several
  requests at once (one llama.cpp sequence id each, see ``_BatchDecoder``).
- ``HttpBackend``: any OpenAI-compatible ``/v1/chat/completions`` server (llama-server, vLLM,
  Ollama, ``python -m llama_cpp.server``), with ``parallel`` requests in flight.
- ``FakeBackend``: scripted replies for fast unit tests; records every prompt.

The base class turns ``complete`` into ``iter_complete(requests)``: results in completion
order, pulling each request only when it can start, so the caller can decide what to ask
next from the results so far (generation stops asking for a type once it has enough).
"""

from __future__ import annotations

import contextlib
import ctypes
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


N_BATCH = 512  # tokens per llama_decode: one per generating sequence, prompt chunks fill the rest
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
            self._decoder = _BatchDecoder(self, self.parallel)
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


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass
class _Slot:
    """One llama.cpp sequence id: the request it serves and the tokens whose KV cells it holds."""

    seq: int
    request: Optional[Request] = None
    cached: list = field(default_factory=list)  # tokens with KV cells in this sequence, by position
    pending: list = field(default_factory=list)  # prompt tokens still to decode
    out: list = field(default_factory=list)  # generated tokens
    next_token: Optional[int] = None  # sampled, to be decoded in the next step
    budget: int = 0
    stops: list = field(default_factory=list)
    sampler: object = None
    grammar: object = None
    done: bool = False


class _BatchDecoder:
    """Continuous batching: up to ``parallel`` requests decode together, one sequence id each.

    llama-cpp-python's high-level API runs one sequence at a time (abetlen/llama-cpp-python#771),
    so this drives the low-level API: its own context with ``n_seq_max = parallel`` and a
    unified KV cache, one ``llama_batch`` per step holding each generating sequence's last
    token plus chunks of newly admitted prompts. A new prompt starts from the longest prefix
    any sequence already holds (``llama_memory_seq_cp`` shares those cells, no recompute),
    so the fixed instructions are evaluated once, not once per row. A finished sequence keeps
    its cells until its slot is reused, for the same reason.

    Grammar: we sample first and check only the chosen token against the grammar, and scan
    the whole vocabulary only when it is refused (llama.cpp's own order; llama-cpp-python
    puts the grammar first and pays the full scan on every token). Greedy picks the same
    token either way.
    """

    def __init__(self, backend: LlamaCppBackend, parallel: int):
        import numpy as np
        from llama_cpp import _internals
        from llama_cpp import llama_cpp as C

        self.C, self.np, self.backend = C, np, backend
        llm = backend.llm
        self.n_ctx_seq = backend.n_ctx
        # The sequential context's settings (flash attention, KV types, RoPE), so both paths
        # compute the same logits; only the sizes and the sequence layout differ.
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        # One cell pool for all sequences, as big as the model was trained for (or one full
        # sequence); admission keeps the reserved cells within it (_fits).
        self.n_cells = min(parallel * self.n_ctx_seq, max(self.n_ctx_seq, llm._model.n_ctx_train()))
        params.n_ctx = self.n_cells
        params.n_batch = params.n_ubatch = N_BATCH
        params.n_seq_max = parallel
        params.n_threads = params.n_threads_batch = backend.n_threads
        params.kv_unified = True  # one cell pool, so sequences can share prefix cells
        self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.batch = _internals.LlamaBatch(n_tokens=N_BATCH, embd=0, n_seq_max=1, verbose=False)
        self.vocab = llm._model.vocab
        self.slots = [_Slot(i) for i in range(parallel)]
        self._held: Optional[tuple] = None  # a pulled request waiting for cells: (request, prompt, stops)
        self.stats = {"prompt_tokens": 0, "reused_tokens": 0}  # prefix reuse, printed by bench/generate.py
        self._sampler_type = _internals.LlamaSampler
        self._all = _internals.LlamaTokenDataArray(n_vocab=llm.n_vocab())
        self._one_data = (C.llama_token_data * 1)()
        self._one = C.llama_token_data_array(data=self._one_data, size=1, selected=-1, sorted=False)

    def run(self, requests: Iterable[Optional[Request]]) -> Iterator[tuple[Request, str]]:
        source = _Source(requests)
        try:
            while True:
                self._admit(source)
                live = [slot for slot in self.slots if slot.request is not None]
                if not live:
                    return
                for slot in live:
                    if slot.request.abandoned and not slot.done:
                        slot.out, slot.next_token, slot.pending, slot.done = [], None, [], True
                running = [slot for slot in live if not slot.done]
                if running:
                    self._step(running)
                for slot in live:
                    if slot.done:
                        request = slot.request
                        yield request, self._finish(slot)
        finally:
            self._clear()

    def _admit(self, source: _Source) -> None:
        for slot in self.slots:
            if slot.request is not None:
                continue
            if self._held is None:
                request = source.pull()
                if request is None:
                    return
                self._held = (request, *self._prompt(request))
            request, prompt, stops, budget = self._held
            if not self._fits(len(prompt) + budget):
                return  # wait until a running sequence finishes
            self._held = None
            self._start(slot, request, prompt, stops, budget)

    def _prompt(self, request: Request) -> tuple[list[int], list[bytes], int]:
        """Prompt tokens, stop strings and the token budget (as the sequential path clamps it)."""
        prompt, stops = self.backend.chat_prompt(request.messages)
        room = self.n_ctx_seq - len(prompt)
        if room < 1:
            raise CuratorError(f"a prompt of {len(prompt)} tokens does not fit the context of {self.n_ctx_seq}; "
                               "shorten the passages or raise n_ctx.")
        return prompt, stops, min(request.max_tokens, room) if request.max_tokens > 0 else room

    def _fits(self, need: int) -> bool:
        """Room for ``need`` more cells, counting running sequences at their full reservation
        (shared prefix cells counted once per sequence, so this errs on the safe side)."""
        reserved = sum(len(s.cached) + len(s.pending) + s.budget - len(s.out) for s in self.slots if s.request)
        idle = [s for s in self.slots if s.request is None and s.cached]
        if reserved + sum(len(s.cached) for s in idle) + need <= self.n_cells:
            return True
        for slot in idle:  # finished sequences only kept cells for prefix reuse: drop them
            self.C.llama_memory_seq_rm(self.ctx.memory, slot.seq, 0, -1)
            slot.cached = []
        return reserved + need <= self.n_cells

    def _start(self, slot: _Slot, request: Request, prompt: list[int], stops: list[bytes], budget: int) -> None:
        keep = self._reuse_prefix(slot, prompt)
        self.stats["prompt_tokens"] += len(prompt)
        self.stats["reused_tokens"] += keep
        slot.request, slot.stops, slot.done, slot.budget = request, stops, False, budget
        slot.cached, slot.pending, slot.out, slot.next_token = prompt[:keep], prompt[keep:], [], None
        slot.sampler = self._chain(request)
        slot.grammar = self._grammar_sampler(request.grammar)

    def _reuse_prefix(self, slot: _Slot, prompt: list[int]) -> int:
        """Point ``slot`` at the longest cached prefix of ``prompt``; return its length."""
        best, keep = slot, _common_prefix(slot.cached, prompt)
        for other in self.slots:
            shared = _common_prefix(other.cached, prompt)
            if shared > keep:
                best, keep = other, shared
        keep = min(keep, len(prompt) - 1)  # the last prompt token is decoded again: its logits start the reply
        memory = self.ctx.memory
        if best is slot:
            self.C.llama_memory_seq_rm(memory, slot.seq, keep, -1)
        else:
            self.C.llama_memory_seq_rm(memory, slot.seq, 0, -1)
            if keep:
                self.C.llama_memory_seq_cp(memory, best.seq, slot.seq, 0, keep)
        return keep

    def _chain(self, request: Request):
        """The sampler chain of ``Llama.create_chat_completion``'s defaults, without the grammar."""
        sampler = self._sampler_type()
        if request.temperature <= 0:
            sampler.add_greedy()
        else:
            sampler.add_top_k(40)
            sampler.add_typical(1.0, 1)
            sampler.add_top_p(0.95, 1)
            sampler.add_min_p(0.05, 1)
            sampler.add_temp(request.temperature)
            sampler.add_dist(request.seed)
        return sampler

    def _grammar_sampler(self, text: Optional[str]):
        if text is None:
            return None
        sampler = self._sampler_type()
        sampler.add_grammar(self.backend.llm._model, self.backend._grammar(text))
        return sampler

    def _add(self, slot: _Slot, tokens: list[int], want_logits: bool) -> int:
        """Append ``tokens`` of ``slot`` to the batch; return the batch index of the last one."""
        batch = self.batch.batch
        for token in tokens:
            j = batch.n_tokens
            batch.token[j], batch.pos[j], batch.n_seq_id[j] = token, len(slot.cached), 1
            batch.seq_id[j][0], batch.logits[j] = slot.seq, False
            slot.cached.append(token)
            batch.n_tokens += 1
        batch.logits[batch.n_tokens - 1] = want_logits
        return batch.n_tokens - 1

    def _step(self, live: list[_Slot]) -> None:
        """One llama_decode: a token for every generating sequence, then prompt chunks."""
        self.batch.reset()
        sampling = []
        for slot in live:
            if slot.next_token is not None:
                sampling.append((slot, self._add(slot, [slot.next_token], True)))
                slot.next_token = None
        for slot in live:
            room = N_BATCH - self.batch.batch.n_tokens
            if slot.pending and room > 0:
                chunk, slot.pending = slot.pending[:room], slot.pending[room:]
                index = self._add(slot, chunk, not slot.pending)
                if not slot.pending:
                    sampling.append((slot, index))
        self.ctx.decode(self.batch)
        for slot, index in sampling:
            self._advance(slot, self._sample(slot, index))

    def _sample(self, slot: _Slot, index: int) -> int:
        token = self.C.llama_sampler_sample(slot.sampler.sampler, self.ctx.ctx, index)
        if slot.grammar is not None:
            if not self._grammar_allows(slot.grammar, token):
                token = self._resample(slot, index)
            slot.grammar.accept(token)
        return token

    def _grammar_allows(self, grammar, token: int) -> bool:
        entry = self._one_data[0]
        entry.id, entry.logit, entry.p = token, 0.0, 0.0
        self._one.size, self._one.selected, self._one.sorted = 1, -1, False
        self.C.llama_sampler_apply(grammar.sampler, ctypes.byref(self._one))
        return entry.logit != float("-inf")

    def _resample(self, slot: _Slot, index: int) -> int:
        """The chain's choice among the tokens the grammar allows (a full-vocabulary scan)."""
        logits = self.np.ctypeslib.as_array(self.C.llama_get_logits_ith(self.ctx.ctx, index),
                                            shape=(self._all.n_vocab,))
        self._all.copy_logits(logits)
        candidates = ctypes.byref(self._all.candidates)
        self.C.llama_sampler_apply(slot.grammar.sampler, candidates)
        self.C.llama_sampler_apply(slot.sampler.sampler, candidates)
        token = int(self._all.candidates_data.id[self._all.candidates.selected])
        slot.sampler.accept(token)
        return token

    def _advance(self, slot: _Slot, token: int) -> None:
        if self.C.llama_vocab_is_eog(self.vocab, token):
            slot.done = True
            return
        slot.out.append(token)
        if len(slot.out) >= slot.budget or (slot.stops and self._stop_at(slot) is not None):
            slot.done = True
        else:
            slot.next_token = token

    def _stop_at(self, slot: _Slot) -> Optional[int]:
        """Where the first stop string (in list order, as llama-cpp-python checks) begins."""
        text = self.backend.llm.detokenize(slot.out)
        return next((text.index(stop) for stop in slot.stops if stop in text), None)

    def _finish(self, slot: _Slot) -> str:
        text = self.backend.llm.detokenize(slot.out)
        cut = self._stop_at(slot) if slot.stops else None
        slot.request = slot.sampler = slot.grammar = None  # cells stay: a later prompt may share them
        return (text if cut is None else text[:cut]).decode("utf-8", errors="ignore")

    def _clear(self) -> None:
        """Forget every sequence (a run ended, was cancelled or failed)."""
        self.ctx.kv_cache_clear()
        self._held = None
        for slot in self.slots:
            slot.request = slot.sampler = slot.grammar = None
            slot.cached, slot.pending, slot.out, slot.next_token = [], [], [], None


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
