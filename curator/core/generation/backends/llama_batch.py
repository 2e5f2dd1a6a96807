"""Continuous batching on llama.cpp's low-level API, for ``LlamaCppBackend`` with ``parallel > 1``.

Imported on first use only: it needs llama-cpp-python loaded.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Optional, Protocol, Sequence

from curator.core.generation.answers import token_logprobs
from curator.core.generation.backends.base import Messages, Request, RequestSource, native_log_held
from curator.core.errors import CuratorError

N_BATCH = 512  # tokens per llama_decode: one per generating sequence, prompt chunks fill the rest
# Cells kept apart for scoring passes (BatchDecoder.score): the likelihood answer check runs on the
# generator's own context, on a sequence id of its own, between decode steps.
SCORE_TOKENS = 512
# Prompt prefixes kept after their sequence moves on (BatchDecoder._keep): answer-first prompts of one
# type share ~220 of their ~250 tokens, but each type has its own instructions, so with one sequence
# every change of type evaluated the whole prompt again (a third of the requests on the Python FAQ,
# issue 33). Up to KEEP_PROMPTS prompts, KEEP_CELLS cells in all, least recently used dropped first.
KEEP_PROMPTS = 4
KEEP_CELLS = 1024
# A need-first run shows the same instructions and worked examples to every chunk of a type (about 390 of a 585-token
# prompt on the Debian FAQ), and five kinds of prompt take turns (factoid, keyword, vague, a rule-made multi-hop
# row's second part, a near miss): with four kept prompts in 1,024 cells one ~600-token prompt was kept and 165 of
# 2,399 prompt tokens were reused (bench/needfirst_prefix.py). Six prompts in 4,096 cells hold one of each kind; for
# the 1.5B bench model that is about 115 MB of KV cells more. Set per run (LlamaCppBackend.prompt_keep).
NEED_FIRST_KEEP = (6, 4096)
KEEP_MIN_GAIN = 32  # a prompt is kept only if no kept prompt already holds all but this many of its tokens


class BatchHost(Protocol):
    """What the decoder needs of its host (``LlamaCppBackend`` is one): the loaded model, the
    per-sequence context size and threads, the model's own chat prompt and compiled grammars."""

    n_ctx: int
    n_threads: int
    n_threads_batch: int

    @property
    def llm(self): ...

    def chat_prompt(self, messages: Messages) -> tuple[list[int], list[bytes]]: ...

    def grammar(self, text: Optional[str]): ...

    def token_bias(self, request: Request) -> dict[int, float]: ...


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
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
    prompt_len: int = 0  # tokens of ``cached`` that are the request's prompt (the rest: its reply)
    gated: bool = False  # the request's FirstLineGate has decided
    used: int = 0  # when its cells were last shared (kept prompts: the least recently used is dropped)


class BatchDecoder:
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

    def __init__(self, backend: BatchHost, parallel: int, keep: tuple[int, int] = (KEEP_PROMPTS, KEEP_CELLS)):
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
        # The scoring sequence's and the kept prompts' cells come on top, so neither competes with
        # admission (_fits).
        self.keep = keep  # (prompts, cells) kept for their prefix (_keep)
        params.n_ctx = self.n_cells + SCORE_TOKENS + keep[1]
        params.n_batch = params.n_ubatch = N_BATCH
        params.n_seq_max = parallel + 1 + keep[0]
        self.score_seq = parallel  # the sequence id scoring passes use (generation uses 0..parallel-1)
        self.kept = [_Slot(parallel + 1 + i) for i in range(keep[0])]  # prompts kept for their prefix
        self._clock = 0
        params.n_threads, params.n_threads_batch = backend.n_threads, backend.n_threads_batch
        params.kv_unified = True  # one cell pool, so sequences can share prefix cells
        with native_log_held():  # "n_ctx_seq > n_ctx_train": the pool is shared, no sequence exceeds it
            self.ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=False)
        self.batch = _internals.LlamaBatch(n_tokens=N_BATCH, embd=0, n_seq_max=1, verbose=False)
        self.vocab = llm._model.vocab
        self.slots = [_Slot(i) for i in range(parallel)]
        self._held: Optional[tuple] = None  # a pulled request waiting for cells: (request, prompt, stops)
        # prefix reuse and scoring passes, printed by bench/generate.py
        self.stats = {"prompt_tokens": 0, "reused_tokens": 0, "scored_passes": 0, "scored_tokens": 0,
                      "gate_stops": 0, "gate_bounded": 0, "generated_tokens": 0}
        self._sampler_type = _internals.LlamaSampler
        self._all = _internals.LlamaTokenDataArray(n_vocab=llm.n_vocab())
        self._one_data = (C.llama_token_data * 1)()
        self._one = C.llama_token_data_array(data=self._one_data, size=1, selected=-1, sorted=False)

    def run(self, requests: Iterable[Optional[Request]]) -> Iterator[tuple[Request, str]]:
        source = RequestSource(requests)
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

    def _admit(self, source: RequestSource) -> None:
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
        self._keep(slot, prompt)
        keep = self._reuse_prefix(slot, prompt)
        self.stats["prompt_tokens"] += len(prompt)
        self.stats["reused_tokens"] += keep
        slot.request, slot.stops, slot.done, slot.budget = request, stops, False, budget
        slot.cached, slot.pending, slot.out, slot.next_token = prompt[:keep], prompt[keep:], [], None
        slot.prompt_len, slot.gated = len(prompt), request.gate is None
        slot.sampler = self._chain(request)
        slot.grammar = self._grammar_sampler(request.grammar)

    def _keep(self, slot: _Slot, prompt: list[int]) -> None:
        """Before ``slot`` drops the prompt it holds for ``prompt``, keep that prompt's cells on a spare
        sequence id when no other sequence holds most of it (``llama_memory_seq_cp`` only tags the
        cells, nothing is recomputed), so a later request of the same shape starts from it."""
        old = slot.cached[:slot.prompt_len]
        if not self.kept or len(old) - common_prefix(old, prompt) < KEEP_MIN_GAIN:
            return  # the new prompt itself goes on from (nearly) all of it
        holders = self.kept + [s for s in self.slots if s is not slot]
        if any(len(old) - common_prefix(old, other.cached) < KEEP_MIN_GAIN for other in holders):
            return
        if len(old) > self.keep[1]:
            return
        memory = self.ctx.memory
        spare = min(self.kept, key=lambda k: (bool(k.cached), k.used))
        self.C.llama_memory_seq_rm(memory, spare.seq, 0, -1)
        spare.cached = []
        while sum(len(k.cached) for k in self.kept) + len(old) > self.keep[1]:
            oldest = min((k for k in self.kept if k.cached), key=lambda k: k.used)
            self.C.llama_memory_seq_rm(memory, oldest.seq, 0, -1)
            oldest.cached = []
        self.C.llama_memory_seq_cp(memory, slot.seq, spare.seq, 0, len(old))
        self._clock += 1
        spare.cached, spare.used = list(old), self._clock

    def _reuse_prefix(self, slot: _Slot, prompt: list[int]) -> int:
        """Point ``slot`` at the longest cached prefix of ``prompt`` (a sequence's or a kept prompt's);
        return its length."""
        best, keep = slot, common_prefix(slot.cached, prompt)
        for other in self.slots + self.kept:
            shared = common_prefix(other.cached, prompt)
            if shared > keep:
                best, keep = other, shared
        if best in self.kept:
            self._clock += 1
            best.used = self._clock
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
        """The sampler chain of ``Llama.create_chat_completion``'s defaults, without the grammar; first the
        request's logit bias against words it should not copy (generation.copybias), if any."""
        sampler = self._sampler_type()
        bias = self.backend.token_bias(request)
        if bias:
            sampler.add_logit_bias(self._all.n_vocab, bias)
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
        sampler.add_grammar(self.backend.llm._model, self.backend.grammar(text))
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
        self.stats["generated_tokens"] += 1
        if not slot.gated and b"\n" in self.backend.llm.detokenize([token]):
            self._pass_gate(slot)
        if slot.done or len(slot.out) >= slot.budget or (slot.stops and self._stop_at(slot) is not None):
            slot.done = True
        else:
            slot.next_token = token

    def _pass_gate(self, slot: _Slot) -> None:
        """The reply's first line is written: stop it here if the request's gate refuses that line (no token more
        for a reply its caller will reject), else bound the rest (a need-first quote that runs on copies its
        passage again and again: 750-1,550 characters a reply with the 1.5B model, where the reference keeps at
        most four sentences)."""
        slot.gated = True
        gate = slot.request.gate
        if not gate.check(self.backend.llm.detokenize(slot.out).decode("utf-8", errors="ignore")):
            slot.done = True
            self.stats["gate_stops"] += 1
        elif len(slot.out) + gate.rest_tokens < slot.budget:
            slot.budget = len(slot.out) + gate.rest_tokens
            self.stats["gate_bounded"] += 1

    def _stop_at(self, slot: _Slot) -> Optional[int]:
        """Where the first stop string (in list order, as llama-cpp-python checks) begins."""
        text = self.backend.llm.detokenize(slot.out)
        return next((text.index(stop) for stop in slot.stops if stop in text), None)

    def _finish(self, slot: _Slot) -> str:
        text = self.backend.llm.detokenize(slot.out)
        cut = self._stop_at(slot) if slot.stops else None
        slot.request = slot.sampler = slot.grammar = None  # cells stay: a later prompt may share them
        return (text if cut is None else text[:cut]).decode("utf-8", errors="ignore")

    def score(self, tokens: Sequence[int], first: int):
        """Log-probabilities of ``tokens[first:]``, each given the tokens before it: one forward pass
        on the scoring sequence, with logits kept only at the positions that predict those tokens.

        Called between decode steps (the run's generator is suspended while its caller judges a
        reply): every logit of the last step has been sampled by then, and the generating sequences'
        cells and samplers are untouched, so rows are the same whether or not a pass ran between.
        """
        np, C = self.np, self.C
        tokens = list(tokens)[:min(SCORE_TOKENS, N_BATCH)]
        if not 0 < first < len(tokens):
            raise CuratorError(f"nothing to score: {len(tokens)} tokens from position {first}")
        memory = self.ctx.memory
        C.llama_memory_seq_rm(memory, self.score_seq, 0, -1)
        self.batch.reset()
        batch = self.batch.batch
        for j, token in enumerate(tokens):
            batch.token[j], batch.pos[j], batch.n_seq_id[j] = token, j, 1
            batch.seq_id[j][0], batch.logits[j] = self.score_seq, first - 1 <= j < len(tokens) - 1
        batch.n_tokens = len(tokens)
        try:
            self.ctx.decode(self.batch)
            rows = len(tokens) - first
            logits = np.ctypeslib.as_array(C.llama_get_logits(self.ctx.ctx), shape=(rows, self._all.n_vocab))
            logits = logits.astype(np.float64)  # row i predicts tokens[first + i]
        finally:
            C.llama_memory_seq_rm(memory, self.score_seq, 0, -1)
        self.stats["scored_passes"] += 1
        self.stats["scored_tokens"] += len(tokens)
        return token_logprobs(logits, tokens[first:])

    def _clear(self) -> None:
        """Forget every sequence (a run ended, was cancelled or failed)."""
        self.ctx.kv_cache_clear()
        self._held = None
        for slot in self.slots:
            slot.request = slot.sampler = slot.grammar = None
            slot.cached, slot.pending, slot.out, slot.next_token = [], [], [], None
        for kept in self.kept:
            kept.cached = []
