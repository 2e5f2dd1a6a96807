"""The backend abstraction: one primitive, ``complete(messages, ...) -> str``.

The base class turns ``complete`` into ``iter_complete(requests)``: results in completion
order, pulling each request only when it can start, so the caller can decide what to ask
next from the results so far (generation stops asking for a type once it has enough).
``FakeBackend`` gives scripted replies for fast unit tests and records every prompt.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union

Messages = list[dict]


@dataclass
class FirstLineGate:
    """A decision at the end of a reply's first line, for a reply whose first line can be judged alone (a need-first
    reply's question, before the model quotes its answer): ``check(text so far)`` False stops the reply there, so no
    token is decoded for a reply the caller will reject; True lets the rest run for at most ``rest_tokens`` more.
    A backend that cannot stop mid-reply (an endpoint) ignores it: the caller's judge decides the same either way."""

    check: Callable[[str], bool]
    rest_tokens: int


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
    # Words the reply should not copy (generation.copybias.Avoid): a backend that can bias the logits of
    # its own tokens (a local GGUF) does; an endpoint cannot, and says so in describe().
    avoid: object = field(default=None, compare=False)
    gate: Optional[FirstLineGate] = field(default=None, compare=False)

    def params(self) -> dict:
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed,
                "grammar": self.grammar}


class RequestSource:
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


class Backend:
    """Base class: subclasses implement ``complete``; ``iter_complete`` runs one at a time."""

    id: str = "backend"
    parallel: int = 1
    # Whether Request.avoid is applied (a logit bias needs the model's own token ids; an endpoint's are unknown).
    biases_logits: bool = False

    def complete(self, messages: Messages, *, max_tokens: int = 128, temperature: float = 0.7,
                 seed: int = 0, grammar: Optional[str] = None) -> str:
        raise NotImplementedError

    def iter_complete(self, requests: Iterable[Optional[Request]]) -> Iterator[tuple[Request, str]]:
        """(request, text) pairs in completion order; each request is pulled when it can start."""
        source = RequestSource(requests)
        while (request := source.pull()) is not None:
            yield request, self._complete_request(request)

    def _complete_request(self, request: Request) -> str:
        """One request's text, for ``iter_complete``: a backend that passes more of the request to
        ``complete`` (a logit bias) overrides this, not the loop."""
        return self.complete(request.messages, **request.params())

    def complete_many(self, requests: Sequence[Request]) -> list[str]:
        """Texts in the order of ``requests`` (a convenience over ``iter_complete``)."""
        texts = {id(request): text for request, text in self.iter_complete(list(requests))}
        return [texts[id(request)] for request in requests]

    def describe(self) -> dict:
        return {"backend": self.id, "parallel": self.parallel}

    def warnings(self) -> list[str]:
        """What a user should know before trusting this backend's rows (said in the run summary)."""
        return []


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
        self.gate_stops = 0  # replies stopped at their first line by the request's gate, as the batch decoder stops them

    def complete(self, messages: Messages, **params) -> str:
        self.prompts.append(messages)
        if callable(self.responses):
            return self.responses(messages)
        return self.responses[(len(self.prompts) - 1) % len(self.responses)]

    def _complete_request(self, request: Request) -> str:
        reply = super()._complete_request(request)
        first, end, _rest = reply.partition("\n")
        if request.gate is not None and end and not request.gate.check(first + end):
            self.gate_stops += 1
            return first + end
        return reply

    def iter_complete(self, requests: Iterable[Optional[Request]]) -> Iterator[tuple[Request, str]]:
        if self.parallel <= 1:
            yield from super().iter_complete(requests)
            return
        source, held = RequestSource(requests), []
        while True:
            while len(held) < self.parallel and (request := source.pull()) is not None:
                held.append(request)
            self.peak_in_flight = max(self.peak_in_flight, len(held))
            if not held:
                return
            request = held.pop()
            yield request, "" if request.abandoned else self._complete_request(request)


@contextlib.contextmanager
def native_log_held() -> Iterator[list[str]]:
    """Hold what llama.cpp logs while a model or context loads. llama-cpp-python prints its log to
    sys.stderr and, with verbose=False, still lets warnings through ("n_ctx_seq (9984) > n_ctx_train
    (8192)" for a cell pool shared by sequences that each fit; "using full-size SWA cache" for Gemma),
    which users took for errors. The yielded list gets the held lines' last few, so a failed load can
    say llama.cpp's reason."""
    tail: list[str] = []
    held = io.StringIO()
    try:
        with contextlib.redirect_stderr(held):
            yield tail
    finally:
        tail.extend(held.getvalue().strip().splitlines()[-3:])
