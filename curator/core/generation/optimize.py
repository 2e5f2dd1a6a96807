"""``curator model optimize``: a user's GGUF rewritten in a type llama.cpp's CPU kernels repack,
with the speed of both files measured on this machine, so the user sees what changed and decides.

Never done silently: generation only ever runs a user's file as given; this writes a second file
(beside the original, or in the cache) and reports its type, size and tokens/s against the original.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from curator.core import cachefiles
from curator.core.errors import InputError
from curator.core.generation import repack
from curator.core.generation.backends.llama_cpp import LlamaCppBackend, check_gguf

# A fixed English text to time prompt evaluation and decode on (the same tokens for both files).
_SAMPLE = ("Audit log entries are kept for ninety days. Administrators can export them as CSV files from the "
           "audit page, filter them by user, action and date, and forward them to a syslog server. ") * 12


def beside_path(source: Path, type_name: str) -> Path:
    """``model.Q4_1.gguf`` -> ``model.Q4_1.q8_0.gguf`` in the same folder."""
    return source.with_name(f"{source.name.removesuffix('.gguf')}.{type_name}.gguf")


def measure_speed(path: Union[str, Path], threads: Optional[int] = None, prompt_tokens: int = 256,
                  decode_tokens: int = 48) -> dict:
    """Prompt-evaluation and one-sequence decode tokens/s of a model file on this machine.

    Prompt: ``prompt_tokens`` tokens in one batch from an empty cache. Decode: ``decode_tokens``
    forward passes of one token each after it (the same tokens for every file, no sampling), so
    only the weights' kernels differ between two files.
    """
    backend = LlamaCppBackend(path, n_ctx=prompt_tokens + decode_tokens + 16, n_threads=threads)
    llm = backend.llm
    tokens = llm.tokenize(_SAMPLE.encode(), add_bos=True)[: prompt_tokens + decode_tokens]
    llm.eval(tokens[:16])  # warm-up: first-call allocations and weight repacking
    llm.reset()
    llm._ctx.kv_cache_clear()
    start = time.perf_counter()
    llm.eval(tokens[:prompt_tokens])
    prompt_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for token in tokens[prompt_tokens:]:
        llm.eval([token])
    decode_seconds = time.perf_counter() - start
    del backend, llm  # free the weights before the next file is loaded
    return {"prompt_tokens_per_s": round(prompt_tokens / prompt_seconds, 1),
            "decode_tokens_per_s": round((len(tokens) - prompt_tokens) / decode_seconds, 1)}


def _describe(path: Path) -> dict:
    return {"path": str(path), "type": repack.gguf_file_type(path), "bytes": path.stat().st_size}


def optimize_model(source: Union[str, Path], type_name: str = repack.DEFAULT_TYPE, into_cache: bool = False,
                   threads: Optional[int] = None) -> dict:
    """Write the ``type_name`` copy of ``source`` (beside it, or in the cache) and measure both files.

    An existing copy is reused only when its sidecar says it was made from this very ``source`` (by
    hash) and its bytes still match: a copy beside a model that changed since (same name, other
    weights) or a damaged one is written again, and ``replaced`` says why.
    """
    source = check_gguf(source)
    before = _describe(source)
    if (before["type"] or "").lower() == type_name:
        raise InputError(f"{source}: already {before['type']}; nothing to optimize.")
    out = repack.cached_copy_path(source, type_name) if into_cache else beside_path(source, type_name)
    why = cachefiles.problem(out, repack.file_sha256(source))
    reused = why is None
    if not reused:
        if why != "missing":
            cachefiles.discard(out)
        repack.quantize_copy(source, out, type_name)
    after = _describe(out)
    before.update(measure_speed(source, threads))
    after.update(measure_speed(out, threads))
    return {"source": before, "copy": after, "reused_existing_copy": reused,
            "replaced": None if why == "missing" else why, "where": "cache" if into_cache else "beside",
            "prompt_speedup": round(after["prompt_tokens_per_s"] / before["prompt_tokens_per_s"], 2),
            "decode_speedup": round(after["decode_tokens_per_s"] / before["decode_tokens_per_s"], 2)}


# ---------------------------------------------------------------- the engine settings generation runs with

# Which file (the bundled model's Q4_1 file or its Q8_0 copy) and how many sequences decode together
# is chosen per model file and per generation mode by timing the candidates on a short probe of
# the requests that mode makes, once per file, mode and thread count (cached): the fastest for
# one mode was not the fastest for the other (issue 33: the Q8_0 copy batched x8, right for rows
# where the model writes question and answer, ran answer-first rows at 0.8x of Q4_1 one at a time).
# bump when the probe or the engine changes: cached choices of older probes are measured again
# (4: answer-first probes include the likelihood check's passes; the decoder keeps prompts per type)
ENGINE_PROBE_FORMAT = 4
PARALLEL_CHOICES = (1, 4, 8)
PROBE_REQUESTS = 8  # as many as the widest batch, so a batched candidate is timed full
PROBE_ROUNDS = 1  # more rounds alternate candidates so load hits them alike; one keeps first use short
# Fixed statements from made-up manuals (no user corpus): answer-first probes ask a query about each,
# question-and-answer probes read six of them as a passage (two passages for a multi_hop one).
_PROBE_SENTENCES = [
    "The backup job runs every night at two o'clock and keeps the last fourteen copies on the shared drive.",
    "Invoices above five thousand euros need a second approval from the finance team before payment.",
    "The thermostat switches to eco mode after thirty minutes without movement in the room.",
    "Guest accounts expire after seven days unless an administrator extends them from the users page.",
    "Firmware updates are downloaded in the background and installed at the next restart of the printer.",
    "Each project folder can hold up to two hundred gigabytes before the storage warning appears.",
    "Support tickets marked urgent are answered within four working hours by the on-call engineer.",
    "The mobile app stores offline maps for thirty days and deletes them when the phone runs low on space.",
]


@dataclass(frozen=True)
class EngineCandidate:
    """One engine setting: a model file (with the file it was made from, for a repacked copy) and
    the number of sequences decoded together."""

    path: Path
    parallel: int
    source: Optional[Path] = None  # the original of a repacked copy

    @property
    def label(self) -> str:
        kind = repack.gguf_file_type(self.path) or self.path.name
        return f"{kind} x{self.parallel}"


def probe_requests(mode: str) -> list:
    """The requests a probe times: the shapes of the mode's default rows. Answer-first ("extractive")
    runs ask every row about sentences of the corpus: one-line queries about a sentence (factoid,
    keyword and vague rows, and near-miss unanswerable rows, which are asked as factoid questions)
    and a two-question prompt over two facts for a multi_hop row, about one request in eight as the
    default mix makes; "free" asks every row as question and answer about passages."""
    from curator.core.generation import prompts
    from curator.core.generation.backends import Request

    requests = []
    for i in range(PROBE_REQUESTS):
        query_type = ("factoid", "keyword", "vague")[i % 3]
        if mode == "extractive" and i == PROBE_REQUESTS - 1:
            messages = prompts.build_multi_hop_messages(_PROBE_SENTENCES[i], _PROBE_SENTENCES[(i + 1) % len(_PROBE_SENTENCES)])
            grammar, max_tokens = prompts.MULTI_HOP_GRAMMAR, prompts.MULTI_HOP_MAX_TOKENS
        elif mode == "extractive":
            messages = prompts.build_answer_first_messages(query_type, "Product manual", _PROBE_SENTENCES[i])
            grammar, max_tokens = prompts.asked_grammar(query_type), prompts.ASKED_MAX_TOKENS
        else:  # passages of six sentences (~130 tokens); every other one a two-passage multi_hop prompt
            passages = [_probe_passage(i + 4 * k, 6) for k in range(1 + (i // 4 + i) % 2)]
            messages = prompts.build_messages("multi_hop" if len(passages) == 2 else query_type, passages)
            grammar, max_tokens = prompts.grammar_for(query_type), prompts.MAX_REPLY_TOKENS
        # Greedy: the same replies, so the same tokens, for every candidate of one file.
        # tag: the sentence an answer-first reply is checked against (_time_requests)
        requests.append(Request(messages, max_tokens=max_tokens, temperature=0.0, seed=i, grammar=grammar,
                                tag=_PROBE_SENTENCES[i]))
    return requests


def _probe_passage(start: int, sentences: int) -> str:
    return " ".join(_PROBE_SENTENCES[(start + k) % len(_PROBE_SENTENCES)] for k in range(sentences))


def _time_requests(backend, parallel: int, requests: list, mode: str) -> float:
    """Seconds to answer ``requests`` with ``parallel`` sequences, after an untimed warm-up that
    loads the model, compiles the grammars and caches the shared prompt prefix (as a run's first
    rows do once). Answer-first replies are checked as a run checks them (the likelihood passes on
    the engine's context, between results), since the check's cost differs between files too."""
    from curator.core.generation.answers import AnswerLikelihood
    from curator.core.generation.backends import Request

    backend.parallel = parallel
    warm = [Request(r.messages, max_tokens=2, temperature=0.0, grammar=r.grammar) for r in requests[:parallel]]
    backend.complete_many(warm)
    check = AnswerLikelihood(backend=backend) if mode == "extractive" else None
    start = time.perf_counter()
    for request, text in backend.iter_complete(list(requests)):
        if check is not None:
            check.gain(text.strip() or "What?", request.tag)
    return time.perf_counter() - start


def measure_engines(candidates: list[EngineCandidate], mode: str, threads: Optional[int] = None,
                    n_ctx: int = 2048, chat_format: Optional[str] = None, cancel=None) -> dict[EngineCandidate, float]:
    """Probe requests per minute of each candidate, alternating them round by round; ``cancel``
    (a CancelToken) is checked before each candidate, so Stop ends a probe within one timing."""
    requests = probe_requests(mode)
    backends = {}
    for candidate in candidates:
        if candidate.path not in backends:
            backends[candidate.path] = LlamaCppBackend(candidate.path, n_ctx=n_ctx, n_threads=threads,
                                                       chat_format=chat_format)
            backends[candidate.path].decoder_for_one = True  # as generation runs it (engine.open_engine)
    seconds = {candidate: 0.0 for candidate in candidates}
    try:
        for _ in range(PROBE_ROUNDS):
            for candidate in candidates:
                if cancel is not None:
                    cancel.check()
                seconds[candidate] += _time_requests(backends[candidate.path], candidate.parallel, requests, mode)
    finally:
        _free(backends.values())
    return {c: round(60 * PROBE_ROUNDS * len(requests) / s, 1) for c, s in seconds.items()}


def _free(backends) -> None:
    """Release the probe's models before the run loads its own: a backend and its batch decoder
    point at each other, so without this only the cyclic collector frees them, and a user's big
    GGUF would be held two or three times over while the run starts."""
    import gc

    for backend in backends:
        backend._decoder = None
        backend._llm = None
    gc.collect()


def _choices_file() -> Path:
    return cachefiles.usable_dir("engine") / "choices.json"


def _read_choices() -> dict:
    import json

    try:
        return json.loads(_choices_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # none yet, or a damaged file: measured again, and written whole


def _write_choice(key: str, record: dict) -> None:
    import json

    from curator.core.files import atomic_file

    choices = _read_choices()
    choices[key] = record
    path = _choices_file()
    with atomic_file(path) as tmp:
        tmp.write_text(json.dumps(choices, indent=1, sort_keys=True), encoding="utf-8")


def _choice_key(candidates: list[EngineCandidate], mode: str, threads: int) -> str:
    """The cache key: what the candidates' files hold (hashes), the mode, threads and llama.cpp build."""
    import llama_cpp

    files = sorted({f"{path.name}={repack.file_sha256(path)[:16]}" for path in {c.path for c in candidates}})
    parallels = sorted({c.parallel for c in candidates})
    return (f"v{ENGINE_PROBE_FORMAT} {mode} threads={threads} llama_cpp={llama_cpp.__version__} "
            f"parallel={parallels} files={','.join(files)}")


def choose_engine(candidates: list[EngineCandidate], mode: str, threads: int, n_ctx: int = 2048,
                  chat_format: Optional[str] = None, on_probe=None, cancel=None) -> tuple[EngineCandidate, dict]:
    """The fastest candidate for ``mode`` on this machine, and why it was chosen (for the run record).

    One candidate is taken as it is. Otherwise the probe's result cached for these files (by hash),
    mode, thread count and llama.cpp build is used; missing, the candidates are measured (about
    half a minute on a 2-core machine for the bundled model) and the result cached."""
    if len(candidates) == 1:
        return candidates[0], {"chosen_by": "the only setting allowed (--parallel, --no-repack or --model)"}
    key = _choice_key(candidates, mode, threads)
    cached = _read_choices().get(key)
    by_label = {c.label: c for c in candidates}
    if cached and cached.get("chosen") in by_label:
        return by_label[cached["chosen"]], {**cached, "chosen_by": "probe (cached)"}
    if on_probe is not None:  # the user sees why the first rows wait
        on_probe(f"first use of this model for {mode} rows: timing {len(candidates)} engine settings "
                 f"({', '.join(c.label for c in candidates)}); the fastest is kept for next time")
    rates = measure_engines(candidates, mode, threads, n_ctx, chat_format, cancel)
    best = max(candidates, key=rates.get)
    record = {"chosen": best.label, "probe_rows_per_min": {c.label: rates[c] for c in candidates}, "mode": mode,
              "threads": threads, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "load_average": [round(x, 2) for x in os.getloadavg()]}
    _write_choice(key, record)
    return best, {**record, "chosen_by": "probe"}
