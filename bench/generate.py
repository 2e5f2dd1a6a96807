"""Generation benchmark: raw llama.cpp decode vs the pipeline, one at a time vs batched.

Run: .venv/bin/python bench/generate.py [--rows 6] [--parallel 8] [--rounds 1]

Everything is measured in one process with one loaded model and the same threads; the
reference (one request at a time, llama-cpp-python's high-level API) and the batched path
(several llama.cpp sequences per decode) alternate round by round, so load from other
processes hits both alike. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

from curator.core.generation import prompts
from curator.core.generation.backends import LlamaCppBackend, Request
from curator.core.generation.backends.llama_batch import common_prefix
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.corpus.ingest import ingest
from curator.core.resources import bundled_model_path, sample_corpus_dir
from curator.core.store import open_project

STORY = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]


def raw_decode(backend: LlamaCppBackend, tokens: int = 128) -> float:
    """Tokens/s of a plain completion (no grammar, no pipeline) with the same model and threads."""
    llm = backend.llm
    start = time.perf_counter()
    out = llm.create_completion("Write a long story about a lighthouse keeper.", max_tokens=tokens,
                                temperature=0.7, seed=1)
    return out["usage"]["completion_tokens"] / (time.perf_counter() - start)


def raw_batched_decode(backend: LlamaCppBackend, parallel: int, tokens: int = 64) -> float:
    """Aggregate tokens/s of ``parallel`` free-running sequences (no grammar) decoded together."""
    backend.parallel = parallel
    backend.complete_many([Request(STORY, max_tokens=2, seed=i) for i in range(parallel)])  # context set-up, untimed
    requests = [Request(STORY, max_tokens=tokens, temperature=0.7, seed=i) for i in range(parallel)]
    start = time.perf_counter()
    texts = backend.complete_many(requests)
    seconds = time.perf_counter() - start
    return sum(backend.count_tokens(t) for t in texts) / seconds


def prompt_eval_seconds(backend: LlamaCppBackend, passage: str, reset: bool) -> tuple[float, int]:
    """Seconds to evaluate a factoid prompt on this passage, and its length in tokens."""
    llm = backend.llm
    if reset:
        llm.reset()
        llm._ctx.kv_cache_clear()
    messages = prompts.build_messages("factoid", [passage])
    start = time.perf_counter()
    out = llm.create_chat_completion(messages, max_tokens=1, temperature=0.0)
    return time.perf_counter() - start, out["usage"]["prompt_tokens"]


class ModelClock:
    """Time spent inside the backend (decoding, sampling, prompt rendering), minus the time
    the backend waits on the pipeline to plan its next request: the rest is pipeline overhead."""

    def __init__(self, backend: LlamaCppBackend, asked: list):
        self.seconds = 0.0
        self.asked = asked  # the messages of every request the backend pulled, in order
        self._original = backend.iter_complete
        backend.iter_complete = self._timed

    def _feed(self, requests):
        iterator = iter(requests)
        while True:
            start = time.perf_counter()
            try:
                request = next(iterator)
            except StopIteration:
                return
            finally:
                self.seconds -= time.perf_counter() - start
            if request is not None:
                self.asked.append(request.messages)
            yield request

    def _timed(self, requests):
        results = self._original(self._feed(requests))
        try:
            while True:
                start = time.perf_counter()
                try:
                    item = next(results)
                except StopIteration:
                    return
                finally:
                    self.seconds += time.perf_counter() - start
                yield item
        finally:
            results.close()


def pipeline(template: Path, backend: LlamaCppBackend, parallel: int, rows: int, seed: int) -> dict:
    """One generation run on a fresh copy of the ingested sample corpus."""
    folder = Path(tempfile.mkdtemp())
    try:
        shutil.copy(template, folder / "bench.curator")
        db = open_project(folder / "bench.curator")
        backend.parallel = parallel
        asked: list = []
        reused_before = backend._decoder.stats["reused_tokens"] if backend._decoder else 0
        clock = ModelClock(backend, asked)
        start = time.perf_counter()
        summary = generate(db, GenerationConfig(count=rows, seed=seed), backend=backend)
        seconds = time.perf_counter() - start
        del backend.iter_complete  # drop the clock's wrapper
        prompts_ = [backend.chat_prompt(messages)[0] for messages in asked]
        if parallel == 1:  # llama-cpp-python reuses the prefix the previous prompt left in its cache
            reused = sum(common_prefix(a, b) for a, b in zip([[]] + prompts_, prompts_))
        else:
            reused = backend._decoder.stats["reused_tokens"] - reused_before
        raws = [r[0] for r in db.execute("SELECT raw_output FROM queries UNION ALL SELECT raw_output FROM rejected_candidates")]
        db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    tokens = sum(backend.count_tokens(raw) for raw in raws if raw)
    prompt_tokens = sum(map(len, prompts_))
    return {"seconds": seconds, "model": clock.seconds, "tokens": tokens, "accepted": summary["accepted"],
            "rejected": summary["rejected"], "surplus": summary["surplus"], "requests": len(asked),
            "prompt_tokens": prompt_tokens, "new_prompt_tokens": prompt_tokens - reused}


def batching_bound(run: dict, ceiling: float, one_sequence: float) -> float:
    """How much faster per request perfect batching could make this run's work: the prompt
    tokens it evaluated already run at the batch ceiling, only the generated ones can gain."""
    prompt, generated = run["new_prompt_tokens"], run["tokens"]
    return (prompt / ceiling + generated / one_sequence) / ((prompt + generated) / ceiling)


def _print_run(name: str, run: dict, raw: float) -> None:
    candidates = run["accepted"] + run["rejected"]
    print(f"  {name}: {run['accepted']} accepted, {run['rejected']} rejected, {run['surplus']} surplus in "
          f"{run['seconds']:.1f} s; {run['tokens'] / run['seconds']:.1f} generated tokens/s "
          f"({run['tokens'] / run['seconds'] / raw:.0%} of raw decode for this mode); "
          f"{60 * run['accepted'] / run['seconds']:.1f} accepted rows/min, {60 * candidates / run['seconds']:.1f} "
          f"candidates/min; pipeline overhead {(run['seconds'] - run['model']) / run['model']:.1%} of model time")
    print(f"    per request: {run['new_prompt_tokens'] / run['requests']:.0f} prompt tokens evaluated (of "
          f"{run['prompt_tokens'] / run['requests']:.0f}; the rest came from the cache), "
          f"{run['tokens'] / run['requests']:.0f} generated")


def _make_template(folder: Path) -> Path:
    template = folder / "template.curator"
    db = open_project(template, create=True)
    ingest(db, [sample_corpus_dir()])
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return template


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=6, help="accepted rows per pipeline run")
    parser.add_argument("--parallel", type=int, default=8, help="sequences decoded together on the batched path")
    parser.add_argument("--rounds", type=int, default=1, help="alternating reference/batched pipeline rounds")
    args = parser.parse_args()
    backend = LlamaCppBackend(bundled_model_path(), n_ctx=2048)
    print(f"model {backend.model_path.name}, threads {backend.n_threads}, n_ctx {backend.n_ctx}")
    raw = {1: raw_decode(backend), args.parallel: raw_batched_decode(backend, args.parallel)}
    print(f"raw decode: {raw[1]:.1f} tokens/s one sequence; {raw[args.parallel]:.1f} tokens/s aggregate over "
          f"{args.parallel} sequences ({raw[args.parallel] / raw[1]:.2f}x)")

    passage = (sample_corpus_dir() / "api" / "rate_limits.rst").read_text()[:1500]
    prompt_eval_seconds(backend, passage, reset=True)  # warm-up
    cold, prompt_tokens = prompt_eval_seconds(backend, passage, reset=True)
    warm, _ = prompt_eval_seconds(backend, passage + " ", reset=False)
    print(f"prompt eval, empty cache: {cold * 1000:.0f} ms for {prompt_tokens} tokens; shared prefix cached: "
          f"{warm * 1000:.0f} ms ({cold / warm:.1f}x)")
    # A prompt is one big batch, so its rate is what this CPU does with this model when batching
    # is perfect: no number of parallel sequences can decode faster than that.
    ceiling = prompt_tokens / cold
    print(f"batch ceiling: prompt eval runs at {ceiling:.0f} tokens/s, {ceiling / raw[1]:.2f}x the one-sequence "
          f"decode rate; batched decode reached {raw[args.parallel] / ceiling:.0%} of that ceiling")

    folder = Path(tempfile.mkdtemp())
    totals = {1: {"seconds": 0.0, "accepted": 0, "candidates": 0}, args.parallel: {"seconds": 0.0, "accepted": 0, "candidates": 0}}
    try:
        template = _make_template(folder)
        for round_no in range(args.rounds):
            print(f"pipeline round {round_no + 1} ({args.rows} rows, seed {round_no}):")
            for parallel in (1, args.parallel):
                run = pipeline(template, backend, parallel, args.rows, seed=round_no)
                _print_run("one at a time" if parallel == 1 else f"batched x{parallel}", run, raw[parallel])
                if parallel == 1:
                    print(f"    bound: decoding at the batch ceiling, this work would run at most "
                          f"{batching_bound(run, ceiling, raw[1]):.2f}x faster than one at a time")
                totals[parallel]["seconds"] += run["seconds"]
                totals[parallel]["accepted"] += run["accepted"]
                totals[parallel]["candidates"] += run["accepted"] + run["rejected"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    one, many = totals[1], totals[args.parallel]
    print(f"batched x{args.parallel} vs one at a time: {(many['accepted'] / many['seconds']) / (one['accepted'] / one['seconds']):.2f}x "
          f"accepted rows/min, {(many['candidates'] / many['seconds']) / (one['candidates'] / one['seconds']):.2f}x candidates/min")
    stats = backend._decoder.stats if backend._decoder else None
    if stats and stats["prompt_tokens"]:
        print(f"batched prompt tokens taken from cached prefixes: {stats['reused_tokens']} of {stats['prompt_tokens']} "
              f"({stats['reused_tokens'] / stats['prompt_tokens']:.0%})")
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
