"""Generation benchmark: raw llama.cpp decode vs the pipeline, prefix caching, peak memory.

Run: .venv/bin/python bench/generate.py [--rows 10]
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

from curator.core import prompts
from curator.core.backends import LlamaCppBackend
from curator.core.generate import GenerationConfig, generate
from curator.core.ingest import ingest
from curator.core.resources import bundled_model_path, sample_corpus_dir
from curator.core.store import open_project


def raw_decode(backend: LlamaCppBackend, tokens: int = 128) -> float:
    """Tokens/s of a plain completion (no grammar, no pipeline) with the same model and threads."""
    llm = backend.llm
    start = time.perf_counter()
    out = llm.create_completion("Write a long story about a lighthouse keeper.", max_tokens=tokens,
                                temperature=0.7, seed=1)
    return out["usage"]["completion_tokens"] / (time.perf_counter() - start)


def prompt_eval_seconds(backend: LlamaCppBackend, passage: str, reset: bool) -> float:
    llm = backend.llm
    if reset:
        llm.reset()
        llm._ctx.kv_cache_clear() if hasattr(llm._ctx, "kv_cache_clear") else None
    messages = prompts.build_messages("factoid", [passage])
    start = time.perf_counter()
    llm.create_chat_completion(messages, max_tokens=1, temperature=0.0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10)
    args = parser.parse_args()
    backend = LlamaCppBackend(bundled_model_path(), n_ctx=2048)
    print(f"model {backend.model_path.name}, threads {backend.n_threads}")
    raw = raw_decode(backend)
    print(f"raw decode: {raw:.1f} tokens/s")

    passage = (sample_corpus_dir() / "api" / "rate_limits.rst").read_text()[:1500]
    cold = prompt_eval_seconds(backend, passage, reset=True)
    warm = prompt_eval_seconds(backend, passage + " ", reset=False)
    print(f"prompt eval, empty cache: {cold * 1000:.0f} ms; shared prefix cached: {warm * 1000:.0f} ms "
          f"({cold / warm:.1f}x)")

    folder = Path(tempfile.mkdtemp())
    try:
        db = open_project(folder / "bench.curator", create=True)
        ingest(db, [sample_corpus_dir()])
        completion_tokens = {"n": 0}
        original = backend.complete

        def counting(messages, **params):
            text = original(messages, **params)
            completion_tokens["n"] += backend.count_tokens(text) if text else 0
            return text

        backend.complete = counting
        start = time.perf_counter()
        summary = generate(db, GenerationConfig(count=args.rows, seed=0), backend=backend)
        seconds = time.perf_counter() - start
        pipeline = completion_tokens["n"] / seconds
        print(f"pipeline: {summary['accepted']} accepted, {summary['rejected']} rejected in {seconds:.1f} s; "
              f"{pipeline:.1f} generated tokens/s ({pipeline / raw:.0%} of raw decode), "
              f"{60 * summary['accepted'] / seconds:.1f} accepted rows/min, "
              f"{60 * (summary['accepted'] + summary['rejected']) / seconds:.1f} candidates/min")
        db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
