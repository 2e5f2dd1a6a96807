"""Generation benchmark: the one-at-a-time Q4_1 path of the model writing question and answer, against
the repacked Q8_0 copy batched, with the model writing both and with answer-first rows (the default).

Run: .venv/bin/python bench/generate.py [--rows 6] [--parallel 8] [--rounds 1]

Prints, in one run: the Q8_0 copy (made or reused); raw prompt and decode tokens/s of both files
with 1 and N sequences; greedy replies of the copy against the source on a fixed prompt set;
n_threads / n_threads_batch choices per phase; then pipeline rounds on the same chunks and seeds,
the reference (bundled Q4_1, one request at a time, llama-cpp-python's high-level API) and the
candidate (Q8_0 copy, N llama.cpp sequences per decode) alternating, so load from other processes
hits both alike: accepted rows/min, acceptance, prompt tokens evaluated per accepted row,
pipeline overhead, peak memory. The load average is printed with the figures. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from curator.core.generation import prompts
from curator.core.generation.backends import LlamaCppBackend, Request
from curator.core.generation.backends.llama_batch import common_prefix
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.generation.optimize import measure_speed
from curator.core.generation.repack import bundled_model_files
from curator.core.corpus.ingest import ingest
from curator.core.resources import sample_corpus_dir
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


def pipeline(template: Path, backend: LlamaCppBackend, parallel: int, rows: int, seed: int,
             answers: str = "extractive") -> dict:
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
        summary = generate(db, GenerationConfig(count=rows, seed=seed, answers=answers), backend=backend)
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


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} / {fifteen:.1f} (1/5/15 min) on {os.cpu_count()} CPUs"


def raw_rates(backend: LlamaCppBackend, parallel: int, passage: str) -> dict:
    """Prompt tokens/s (one batch, empty cache) and decode tokens/s with 1 and ``parallel`` sequences."""
    prompt_eval_seconds(backend, passage, reset=True)  # warm-up
    cold, tokens = prompt_eval_seconds(backend, passage, reset=True)
    rates = {"prompt": tokens / cold, 1: raw_decode(backend), parallel: raw_batched_decode(backend, parallel)}
    backend.parallel = 1
    return rates


def greedy_replies(backend: LlamaCppBackend, passages: list[str], parallel: int) -> list[str]:
    """Greedy factoid replies on fixed passages, through the batch decoder (same layout for any file)."""
    backend.parallel = parallel
    requests = [Request(prompts.build_messages("factoid", [p]), max_tokens=prompts.MAX_REPLY_TOKENS,
                        temperature=0.0, grammar=prompts.QUESTION_GRAMMAR) for p in passages]
    texts = backend.complete_many(requests)
    backend.parallel = 1
    return texts


def first_divergence(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _print_match(source: list[str], copy: list[str]) -> None:
    same = sum(a == b for a, b in zip(source, copy))
    print(f"greedy replies, Q8_0 copy vs Q4_1 source, {len(source)} fixed prompts: {same} identical "
          f"({same / len(source):.0%})")
    for i, (a, b) in enumerate(zip(source, copy)):
        if a != b:
            at = first_divergence(a, b)
            print(f"  first divergence: prompt {i}, character {at}: Q4_1 {a[max(0, at - 30):at + 30]!r} / "
                  f"Q8_0 {b[max(0, at - 30):at + 30]!r}")
            break


def _print_threads(path: Path) -> None:
    """n_threads (decode, a token per pass) and n_threads_batch (prompt) choices, interleaved twice."""
    cores = len(os.sched_getaffinity(0))
    print(f"threads ({cores} CPUs here; 4 threads cannot be measured on this machine):")
    for threads in sorted({1, 2, cores}) * 2:
        speed = measure_speed(path, threads)
        print(f"  {threads} thread(s): prompt {speed['prompt_tokens_per_s']:.0f} tokens/s, "
              f"one-sequence decode {speed['decode_tokens_per_s']:.0f} tokens/s ({load_average()})")


def _pipeline_rounds(template: Path, runners: dict, rows: int, rounds: int) -> dict:
    """Alternate the runners round by round on the same seeds; sums per runner."""
    totals = {name: {"seconds": 0.0, "model": 0.0, "accepted": 0, "candidates": 0, "new_prompt_tokens": 0}
              for name in runners}
    for round_no in range(rounds):
        print(f"pipeline round {round_no + 1} ({rows} rows, seed {round_no}; {load_average()}):")
        for name, (backend, parallel, raw_decode_rate, answers) in runners.items():
            run = pipeline(template, backend, parallel, rows, seed=round_no, answers=answers)
            _print_run(name, run, raw_decode_rate)
            for key in ("seconds", "model", "accepted", "new_prompt_tokens"):
                totals[name][key] += run[key]
            totals[name]["candidates"] += run["accepted"] + run["rejected"]
    return totals


def _print_totals(totals: dict) -> None:
    def per_min(t, key):
        return 60 * t[key] / t["seconds"]

    (ref_name, reference), *candidates = totals.items()
    for name, candidate in candidates:
        print(f"{name} vs {ref_name}: {per_min(candidate, 'accepted') / per_min(reference, 'accepted'):.2f}x accepted "
              f"rows/min ({per_min(candidate, 'accepted'):.1f} vs {per_min(reference, 'accepted'):.1f}), "
              f"{per_min(candidate, 'candidates') / per_min(reference, 'candidates'):.2f}x candidates/min")
    for name, t in totals.items():
        print(f"  {name}: acceptance {t['accepted'] / max(1, t['candidates']):.0%} ({t['accepted']} of "
              f"{t['candidates']}), {t['new_prompt_tokens'] / max(1, t['accepted']):.0f} prompt tokens evaluated per "
              f"accepted row, pipeline overhead {(t['seconds'] - t['model']) / t['model']:.1%} of model time")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=6, help="accepted rows per pipeline run")
    parser.add_argument("--parallel", type=int, default=8, help="sequences decoded together on the batched path")
    parser.add_argument("--rounds", type=int, default=1, help="alternating reference/candidate pipeline rounds")
    args = parser.parse_args()
    print(load_average())
    start = time.perf_counter()
    files = bundled_model_files()
    print(f"Q8_0 copy {files.path} ({time.perf_counter() - start:.1f} s to make or find; source {files.source.name})")
    q4 = LlamaCppBackend(files.source, n_ctx=2048)
    q8 = LlamaCppBackend(files.path, n_ctx=2048)
    print(f"threads {q4.n_threads} (prompt {q4.n_threads_batch}; the free cores, generation's default), n_ctx {q4.n_ctx}")
    passage = (sample_corpus_dir() / "api" / "rate_limits.rst").read_text()[:1500]
    raws = {}
    for name, backend in (("Q4_1", q4), ("Q8_0", q8)):
        raw = raws[name] = raw_rates(backend, args.parallel, passage)
        print(f"raw {name}: prompt {raw['prompt']:.0f} tokens/s; decode {raw[1]:.1f} tokens/s one sequence, "
              f"{raw[args.parallel]:.1f} aggregate over {args.parallel} ({load_average()})")

    folder = Path(tempfile.mkdtemp())
    try:
        template = _make_template(folder)
        db = open_project(template)
        fixed = [r[0][:1200] for r in db.execute("SELECT text FROM chunks WHERE tokens >= 60 ORDER BY id LIMIT 16")]
        db.close()
        _print_match(greedy_replies(q4, fixed, args.parallel), greedy_replies(q8, fixed, args.parallel))
        _print_threads(files.path)
        runners = {"reference Q4_1 one at a time, model writes both": (q4, 1, raws["Q4_1"][1], "free"),
                   f"Q8_0 batched x{args.parallel}, model writes both": (q8, args.parallel, raws["Q8_0"][args.parallel],
                                                                         "free"),
                   f"Q8_0 batched x{args.parallel}, answer-first (default)": (q8, args.parallel,
                                                                              raws["Q8_0"][args.parallel], "extractive")}
        totals = _pipeline_rounds(template, runners, args.rows, args.rounds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    _print_totals(totals)
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (both models loaded); "
          f"{load_average()}")


if __name__ == "__main__":
    main()
