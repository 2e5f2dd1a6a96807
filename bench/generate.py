"""Generation benchmark: the engine settings generation chooses by default, against the simplest path
(the bundled Q4_1 file, one request at a time: `generate --parallel 1 --no-repack`), on a corpus.

Run from the repository root: PYTHONPATH=. .venv/bin/python bench/generate.py [--corpus DIR] [--rows 20]
[--rounds 2] [--first-seed 0] [--free] [--before] [--old-evidence] [--old-plan] [--old-asking] [--old-order] [--last-session]
[--against Q8_0x1 ...] [--threads N] [--engine-details] (without PYTHONPATH=. an installed curator is imported).
When the default engine is the reference's own setting (answer-first rows run the Q4_1 file, one
sequence), it is not run twice; --last-session, --old-plan and --old-asking run the reference with this
session's plan-time hand-over and sentence rules undone, and --against runs a forced engine setting.
Rounds alternate ABBA (every other round in reverse order), each round on its own seed.

Prints, in one run: the Q8_0 copy (made or reused); the engine setting generation chooses for each mode
(optimize.choose_engine: probed, or cached from an earlier probe) and why; raw prompt and decode tokens/s
of both files with 1 and N sequences; then pipeline rounds on the same chunks and seeds, the runners
alternating round by round so load from other processes hits them alike: accepted rows/min,
acceptance, generated tokens/s against the raw decode rate of the runner's own settings, prompt
tokens evaluated per request, and where the time went (llama_decode, sampling and grammar in Python,
prompt rendering, the likelihood answer check, SQLite writes, the rest of the pipeline).
--engine-details adds greedy replies of the copy against the source and thread-count choices.
The load average is printed with the figures. Asserts nothing.
"""

from __future__ import annotations

import argparse
import contextlib
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
    the backend waits on the pipeline to plan its next request: the rest is pipeline overhead.
    ``inside`` is true while the backend runs (Timers counts only those llama_decode calls as the
    engine's: the answer check and the near-miss embedder run llama.cpp too, between results)."""

    inside = False

    def __init__(self, backend: LlamaCppBackend, asked: list):
        self.seconds = 0.0
        self.asked = asked  # the messages of every request the backend pulled, in order
        self._original = backend.iter_complete
        backend.iter_complete = self._timed

    def _feed(self, requests):
        iterator = iter(requests)
        while True:
            start = time.perf_counter()
            ModelClock.inside = False
            try:
                request = next(iterator)
            except StopIteration:
                return
            finally:
                ModelClock.inside = True
                self.seconds -= time.perf_counter() - start
            if request is not None:
                self.asked.append(request.messages)
            yield request

    def _timed(self, requests):
        results = self._original(self._feed(requests))
        try:
            while True:
                start = time.perf_counter()
                ModelClock.inside = True
                try:
                    item = next(results)
                except StopIteration:
                    return
                finally:
                    ModelClock.inside = False
                    self.seconds += time.perf_counter() - start
                yield item
        finally:
            results.close()


class Timers:
    """Seconds spent in chosen functions during a run (each wrapped while the ``with`` lasts).

    llama_decode is the engine's llama.cpp forward passes (prompt and reply), counted only while the
    backend runs (ModelClock.inside); chat_prompt renders a prompt for the batch decoder; answer check
    is the likelihood check (its own forward passes included); evidence is a near miss's nearest chunks
    by the sentence embedder (MiniLM, on llama.cpp too); judge is every check of a reply (those two
    included); store is the SQLite write of a row."""

    def __init__(self):
        from llama_cpp import _internals

        from curator.core.generation import answers as answers_mod, checks, generate as generate_mod, near_miss_judge

        self.targets = {"llama_decode": (_internals.LlamaContext, "decode"),
                        "chat_prompt": (LlamaCppBackend, "chat_prompt"),
                        "answer check": (answers_mod.AnswerLikelihood, "gain"),
                        "evidence": (near_miss_judge, "evidence"),  # where judge() looks it up
                        "judge": (checks, "judge"), "store": (generate_mod, "_store")}
        self.seconds = {name: 0.0 for name in self.targets}
        self._originals = {}

    def _wrap(self, name, original):
        def timed(*args, **kwargs):
            if name == "llama_decode" and not ModelClock.inside:
                return original(*args, **kwargs)  # the answer check's or the embedder's: their own lines
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - start
        return timed

    def __enter__(self):
        for name, (owner, attr) in self.targets.items():
            self._originals[name] = getattr(owner, attr)
            setattr(owner, attr, self._wrap(name, self._originals[name]))
        return self

    def __exit__(self, *exc):
        for name, (owner, attr) in self.targets.items():
            setattr(owner, attr, self._originals[name])


def pipeline(template: Path, backend: LlamaCppBackend, parallel: int, rows: int, seed: int,
             answers: str = "extractive", answer_check=None) -> dict:
    """One generation run on a fresh copy of the ingested corpus."""
    folder = Path(tempfile.mkdtemp())
    try:
        shutil.copy(template, folder / "bench.curator")
        db = open_project(folder / "bench.curator")
        backend.parallel = parallel
        asked: list = []
        before = dict(backend._decoder.stats) if backend._decoder else {}
        clock = ModelClock(backend, asked)
        with Timers() as timers:
            start = time.perf_counter()
            summary = generate(db, GenerationConfig(count=rows, seed=seed, answers=answers), backend=backend,
                               answer_check=answer_check)
            seconds = time.perf_counter() - start
        del backend.iter_complete  # drop the clock's wrapper
        prompts_ = [backend.chat_prompt(messages)[0] for messages in asked]
        if backend._decoder is None:  # llama-cpp-python reuses the prefix the previous prompt left in its cache
            reused = sum(common_prefix(a, b) for a, b in zip([[]] + prompts_, prompts_))
        else:
            reused = backend._decoder.stats["reused_tokens"] - before.get("reused_tokens", 0)
        stats = backend._decoder.stats if backend._decoder else {}
        scored = {k: stats.get(k, 0) - before.get(k, 0) for k in ("scored_passes", "scored_tokens")}
        raws = [r[0] for r in db.execute("SELECT raw_output FROM queries UNION ALL SELECT raw_output FROM rejected_candidates")]
        asked_types = dict(db.execute("SELECT query_type, COUNT(*) FROM (SELECT query_type FROM queries UNION ALL "
                                      "SELECT query_type FROM rejected_candidates) GROUP BY 1"))
        db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    tokens = sum(backend.count_tokens(raw) for raw in raws if raw)
    prompt_tokens = sum(map(len, prompts_))
    return {"seconds": seconds, "model": clock.seconds, "tokens": tokens, "accepted": summary["accepted"],
            "rejected": summary["rejected"], "surplus": summary["surplus"], "requests": len(asked),
            "prompt_tokens": prompt_tokens, "new_prompt_tokens": prompt_tokens - reused, "timers": timers.seconds,
            "reasons": summary["rejected_by_reason"], "by_type": summary["by_type"], "asked_types": asked_types,
            "handed_over": summary.get("handed_over", {}), **scored}


def time_shares(run: dict) -> str:
    """Where a run's seconds went, as shares of the whole."""
    t, whole = run["timers"], run["seconds"]
    parts = {"engine llama_decode": t["llama_decode"],
             "sampling+grammar+python in the engine": run["model"] - t["llama_decode"] - t["chat_prompt"],
             "prompt rendering": t["chat_prompt"], "answer check": t["answer check"],
             "near-miss evidence (embedder)": t["evidence"],
             "other checks": t["judge"] - t["answer check"] - t["evidence"],
             "sqlite writes": t["store"], "rest of the pipeline": whole - run["model"] - t["judge"] - t["store"]}
    return ", ".join(f"{name} {seconds / whole:.0%}" for name, seconds in parts.items())


def _print_run(name: str, run: dict, raw: float) -> None:
    candidates = run["accepted"] + run["rejected"]
    print(f"  {name}: {run['accepted']} accepted, {run['rejected']} rejected, {run['surplus']} surplus in "
          f"{run['seconds']:.1f} s; {run['tokens'] / run['seconds']:.1f} generated tokens/s "
          f"({run['tokens'] / run['seconds'] / raw:.0%} of raw decode for this mode); "
          f"{60 * run['accepted'] / run['seconds']:.1f} accepted rows/min, {60 * candidates / run['seconds']:.1f} "
          f"candidates/min; pipeline overhead {(run['seconds'] - run['model']) / run['model']:.1%} of model time")
    print(f"    per request: {run['new_prompt_tokens'] / run['requests']:.0f} prompt tokens evaluated (of "
          f"{run['prompt_tokens'] / run['requests']:.0f}; the rest came from the cache), "
          f"{run['tokens'] / run['requests']:.0f} generated; answer check {run['scored_passes']} passes "
          f"on the engine's context, {run['scored_tokens'] / max(1, run['scored_passes']):.0f} tokens each")
    print(f"    time: {time_shares(run)}")
    print(f"    candidates by type {run['asked_types']}, kept {run['by_type']}; rejected: "
          + ", ".join(f"{r} x{n}" for r, n in sorted(run["reasons"].items(), key=lambda x: -x[1])))
    if run["handed_over"]:
        print(f"    handed over at plan time: {run['handed_over']}")


def _make_template(folder: Path, corpus: Path) -> Path:
    template = folder / "template.curator"
    db = open_project(template, create=True)
    ingest(db, [corpus])
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


def raw_decode_rate(backend: LlamaCppBackend, parallel: int) -> float:
    """Decode tokens/s of free-running replies (no grammar, no pipeline) with these settings: through the
    backend's own path (Curator's batch decoder for one sequence too, as generation runs it), ``parallel``
    replies of 128 tokens to a one-line prompt (its ~40 prompt tokens are inside the time)."""
    rate = (raw_decode(backend) if parallel == 1 and not backend.decoder_for_one
            else raw_batched_decode(backend, parallel, tokens=128))
    backend.parallel = parallel
    return rate


def _pipeline_rounds(template: Path, runners: dict, rows: int, rounds: int, answer_check, first_seed: int = 0) -> dict:
    """Alternate the runners round by round on the same seeds; sums per runner. Each runner's raw decode
    rate is measured right before its run, so it meets the same load as the run it is compared with."""
    keys = ("seconds", "model", "accepted", "new_prompt_tokens", "tokens", "requests", "scored_passes", "scored_tokens")
    totals = {name: {**{k: 0.0 for k in keys}, "candidates": 0, "raw": [], "timers": {}} for name in runners}
    for round_no in range(first_seed, first_seed + rounds):
        print(f"pipeline round {round_no + 1 - first_seed} ({rows} rows, seed {round_no}; {load_average()}):")
        # ABBA: every other round runs the runners in reverse order, so a load that rises or falls during a
        # round does not always favour the same runner
        order = list(runners.items())[:: -1 if (round_no - first_seed) % 2 else 1]
        for name, (backend, parallel, answers, *legacy) in order:
            raw = raw_decode_rate(backend, parallel)
            with as_before_issue_33(backend, "issue 33" in legacy) as check, \
                    evidence_on_every_core("evidence" in legacy), plan_as_before("plan" in legacy), \
                    asking_as_before("asking" in legacy), \
                    order_as_before("order" in legacy):
                run = pipeline(template, backend, parallel, rows, seed=round_no, answers=answers,
                               answer_check=check or answer_check)
            _print_run(name, run, raw)
            total = totals[name]
            for key in keys:
                total[key] += run[key]
            total["candidates"] += run["accepted"] + run["rejected"]
            total["raw"].append(raw)
            for key, seconds in run["timers"].items():
                total["timers"][key] = total["timers"].get(key, 0.0) + seconds
    return totals


@contextlib.contextmanager
def as_before_issue_33(backend: LlamaCppBackend, legacy: bool):
    """With ``legacy``: the engine as it ran before the issue-33 work, for an A/B in one run: no prompts
    kept per type, and the likelihood check on a second load of the model file (loaded lazily inside
    the run, as generate() did). Yields that check, or None."""
    from curator.core.generation.answers import AnswerLikelihood
    from curator.core.generation.backends import llama_batch

    if not legacy:
        yield None
        return
    kept, backend._decoder = llama_batch.KEEP_PROMPTS, None
    llama_batch.KEEP_PROMPTS = 0
    try:
        yield AnswerLikelihood(str(backend.model_path), n_threads=backend.n_threads)
    finally:
        llama_batch.KEEP_PROMPTS, backend._decoder = kept, None


def ceiling(reference: dict, candidate: dict) -> str:
    """What the engine alone can buy: the reference's share of time in the engine (``model``: its
    forward passes, sampling and grammar) and the rest (the likelihood check, near-miss evidence,
    other checks, SQLite), which the default pays alike per candidate. With the candidate's engine
    speedup s per candidate, accepted rows/min can reach at most 1 / (engine share / s + rest share)
    at the same acceptance, and 1 / rest share with an engine that took no time."""
    engine = reference["model"] / reference["seconds"]
    per_candidate = {name: t["model"] / max(1, t["candidates"]) for name, t in (("ref", reference), ("new", candidate))}
    speedup = per_candidate["ref"] / per_candidate["new"] if per_candidate["new"] else float("inf")
    return (f"  ceiling: the reference spent {engine:.0%} of its time in the engine, {1 - engine:.0%} outside it; "
            f"the default's engine is {speedup:.2f}x faster per candidate; at equal acceptance "
            f"that speedup buys {1 / (engine / speedup + 1 - engine):.2f}x accepted rows/min "
            f"({1 / max(1e-9, 1 - engine):.2f}x with an engine that took no time)")


@contextlib.contextmanager
def plan_as_before(legacy: bool):
    """With ``legacy``: no shares handed over at plan time (plan._hand_over), as before: a type that
    cannot build anything here (multi-hop rows without approved factoid rows, with the bundled model)
    is asked until its candidates fail, then the refill gives its share to the others."""
    from curator.core.generation import plan as plan_mod

    if not legacy:
        yield
        return
    current = plan_mod._hand_over
    plan_mod._hand_over = lambda db, plan, *args, **kwargs: (plan, {})
    try:
        yield
    finally:
        plan_mod._hand_over = current


@contextlib.contextmanager
def asking_as_before(legacy: bool):
    """With ``legacy``: answer sentences asked as before (no sentence skipped as seldom kept for its type,
    plan.SKIP_SELDOM_KEPT) and near misses written without their setting spelled by the grammar
    (asking.NEAR_MISS_NAMES_SETTING)."""
    from curator.core.generation import asking, plan as plan_mod

    if not legacy:
        yield
        return
    saved = plan_mod.SKIP_SELDOM_KEPT, asking.NEAR_MISS_NAMES_SETTING
    plan_mod.SKIP_SELDOM_KEPT = asking.NEAR_MISS_NAMES_SETTING = False
    try:
        yield
    finally:
        plan_mod.SKIP_SELDOM_KEPT, asking.NEAR_MISS_NAMES_SETTING = saved


@contextlib.contextmanager
def order_as_before(legacy: bool):
    """With ``legacy``: each document's chunks in their seeded order alone, as before (no chunks that open a
    section first, plan.SECTION_STARTS_FIRST)."""
    from curator.core.generation import plan as plan_mod

    if not legacy:
        yield
        return
    plan_mod.SECTION_STARTS_FIRST = False
    try:
        yield
    finally:
        plan_mod.SECTION_STARTS_FIRST = True


@contextlib.contextmanager
def evidence_on_every_core(legacy: bool):
    """With ``legacy``: near-miss evidence as it ran before, MiniLM on every core (its own default)
    and loaded again for each run; else as generate() runs it (the engine's threads, one per process)."""
    from curator.core.embedding.embed import get_embedder
    from curator.core.generation import unanswerable

    if not legacy:
        yield
        return
    current = unanswerable.evidence_embedder
    unanswerable.evidence_embedder = lambda n_threads=None: get_embedder("minilm")
    try:
        yield
    finally:
        unanswerable.evidence_embedder = current


def _print_totals(totals: dict) -> None:
    def per_min(t, key):
        return 60 * t[key] / t["seconds"]

    def per_min_without_check(t, key):  # the engine's own speed, without the answer check's passes
        return 60 * t[key] / (t["seconds"] - t["timers"]["answer check"])

    (ref_name, reference), *candidates = totals.items()
    for name, candidate in candidates:
        print(f"{name} vs {ref_name}: {per_min(candidate, 'accepted') / per_min(reference, 'accepted'):.2f}x accepted "
              f"rows/min ({per_min(candidate, 'accepted'):.1f} vs {per_min(reference, 'accepted'):.1f}), "
              f"{per_min(candidate, 'candidates') / per_min(reference, 'candidates'):.2f}x candidates/min; "
              f"without the answer check's time: {per_min_without_check(candidate, 'accepted'):.1f} vs "
              f"{per_min_without_check(reference, 'accepted'):.1f} accepted rows/min, "
              f"{per_min_without_check(candidate, 'candidates') / per_min_without_check(reference, 'candidates'):.2f}x "
              "candidates/min")
    for name, candidate in candidates:
        print(ceiling(reference, candidate))
    for name, t in totals.items():
        raw = sum(t["raw"]) / len(t["raw"])
        print(f"  {name}: acceptance {t['accepted'] / max(1, t['candidates']):.0%} ({t['accepted']:.0f} of "
              f"{t['candidates']}), {t['tokens'] / t['seconds']:.1f} generated tokens/s = "
              f"{t['tokens'] / t['seconds'] / raw:.0%} of its raw decode ({raw:.1f}), "
              f"{t['new_prompt_tokens'] / max(1, t['requests']):.0f} prompt tokens evaluated per request, "
              f"{t['tokens'] / max(1, t['requests']):.0f} generated")
        print(f"    time: {time_shares(t)}")


def _engine_runners(args, q4: LlamaCppBackend, engines: dict, against: dict) -> dict:
    """The reference (`--parallel 1 --no-repack`, opened as generate opens it) and generation's default
    for each mode benchmarked."""
    runners = {}
    for mode in (["extractive", "free"] if args.free else ["extractive"]):
        label = "answer-first" if mode == "extractive" else "model writes both"
        runners[f"Q4_1 x1 (--parallel 1 --no-repack), {label}"] = (q4, 1, mode)
        if args.before and mode == "extractive":
            runners[f"Q4_1 x1 as before issue 33 (check on a second load, no kept prompts), {label}"] = (q4, 1, mode, "issue 33")
        if args.old_evidence and mode == "extractive":
            runners[f"Q4_1 x1, near-miss evidence on every core as before, {label}"] = (q4, 1, mode, "evidence")
        if args.old_plan:
            runners[f"Q4_1 x1, no shares handed over at plan time (as before), {label}"] = (q4, 1, mode, "plan")
        if args.old_asking:
            runners[f"Q4_1 x1, sentences and near misses asked as before, {label}"] = (q4, 1, mode, "asking")
        if args.old_order:
            runners[f"Q4_1 x1, chunks in their seeded order alone (as before), {label}"] = (q4, 1, mode, "order")
        if args.last_session:
            runners[f"Q4_1 x1 as last session (plan, sentences, near misses, chunk order as before), {label}"] = (
                q4, 1, mode, "plan", "asking", "order")
        for setting in args.against:
            backend, parallel = against[setting]
            runners[f"{setting} (forced), {label}"] = (backend, parallel, mode)
        backend = engines[mode]
        if backend.model_path == q4.model_path and backend.parallel == 1:
            print(f"default engine for {label} rows is the reference's own setting (Q4_1 x1): not run twice")
            continue
        described = f"{backend.engine_choice.get('chosen', '')} by {backend.engine_choice['chosen_by'][:40]}"
        runners[f"default ({described}), {label}"] = (backend, backend.parallel, mode)
    return runners


def _forced_engine(setting: str, q4: LlamaCppBackend, q8: LlamaCppBackend) -> tuple:
    """'Q8_0x1' -> (the Q8_0 copy's backend, 1): a setting run as given, beside the default."""
    name, _, parallel = setting.lower().partition("x")
    if name not in ("q4_1", "q8_0"):
        raise SystemExit(f"--against {setting}: name Q4_1xN or Q8_0xN")
    # its own backend: the setting's decoder and cached prompts are not shared with another runner
    backend = LlamaCppBackend((q4 if name == "q4_1" else q8).model_path, n_ctx=q4.n_ctx, n_threads=q4.n_threads)
    backend.decoder_for_one = True  # as generation runs it
    return backend, int(parallel)


def _default_engines(args) -> dict:
    """The backend generation opens by default for each mode, with why its settings were chosen."""
    from curator.core.generation.engine import open_engine

    engines = {}
    for mode in (["extractive", "free"] if args.free else ["extractive"]):
        backend = open_engine(GenerationConfig(answers=mode, threads=args.threads), None)
        print(f"default engine, {mode}: {backend.model_path.name} x{backend.parallel}, threads {backend.n_threads}; "
              f"{backend.engine_choice}")
        engines[mode] = backend
    return engines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, help="folder to ingest (default: the sample corpus)")
    parser.add_argument("--rows", type=int, default=20, help="accepted rows per pipeline run")
    parser.add_argument("--parallel", type=int, default=8, help="sequences decoded together in the raw rates")
    parser.add_argument("--rounds", type=int, default=2, help="alternating reference/default pipeline rounds")
    parser.add_argument("--free", action="store_true", help="also compare the mode where the model writes both")
    parser.add_argument("--before", action="store_true",
                        help="also run the reference as the engine ran before issue 33's changes (A/B of them)")
    parser.add_argument("--old-evidence", action="store_true",
                        help="also run the reference with near-miss evidence as before (MiniLM on every core)")
    parser.add_argument("--first-seed", type=int, default=0, help="seed of the first round (then +1 a round)")
    parser.add_argument("--old-plan", action="store_true",
                        help="also run the reference without plan-time hand-over of unbuildable types (as before)")
    parser.add_argument("--old-asking", action="store_true",
                        help="also run the reference asking every answer sentence and near misses as before")
    parser.add_argument("--last-session", action="store_true",
                        help="also run the reference as the pipeline ran before (plan, sentences, near misses, chunk order)")
    parser.add_argument("--old-order", action="store_true",
                        help="also run the reference with chunks in their seeded order alone (as before)")
    parser.add_argument("--against", action="append", default=[], metavar="TYPExN",
                        help="also run this engine setting as given, e.g. Q8_0x1 or Q8_0x4 (repeatable)")
    parser.add_argument("--threads", type=int, default=None,
                        help="engine threads for every runner (default: generation's, the cores free at start); on a "
                             "busy 2-core machine 1 thread keeps ggml's threads from spinning while one waits for a core")
    parser.add_argument("--engine-details", action="store_true",
                        help="also greedy replies of the copy against the source, and thread counts")
    args = parser.parse_args()
    print(load_average())
    start = time.perf_counter()
    files = bundled_model_files()
    print(f"Q8_0 copy {files.path} ({time.perf_counter() - start:.1f} s to make or find; source {files.source.name})")
    engines = _default_engines(args)
    from curator.core.generation.engine import open_engine

    # `generate --parallel 1 --no-repack [--threads N]`
    q4 = open_engine(GenerationConfig(parallel=1, repack=False, threads=args.threads), None)
    q8 = LlamaCppBackend(files.path, n_ctx=2048, n_threads=q4.n_threads)
    chosen_by = "--threads" if args.threads else "the free cores, generation's default"
    print(f"threads {q4.n_threads} (prompt {q4.n_threads_batch}; {chosen_by}), n_ctx {q4.n_ctx}")
    passage = (sample_corpus_dir() / "api" / "rate_limits.rst").read_text()[:1500]
    for name, backend in (("Q4_1", q4), ("Q8_0", q8)):
        raw = raw_rates(backend, args.parallel, passage)
        print(f"raw {name}: prompt {raw['prompt']:.0f} tokens/s; decode {raw[1]:.1f} tokens/s one sequence, "
              f"{raw[args.parallel]:.1f} aggregate over {args.parallel} ({load_average()})")

    folder = Path(tempfile.mkdtemp())
    try:
        template = _make_template(folder, args.corpus or sample_corpus_dir())
        if args.engine_details:
            db = open_project(template)
            fixed = [r[0][:1200] for r in db.execute("SELECT text FROM chunks WHERE tokens >= 60 ORDER BY id LIMIT 16")]
            db.close()
            _print_match(greedy_replies(q4, fixed, args.parallel), greedy_replies(q8, fixed, args.parallel))
            _print_threads(files.path)
        answer_check = None  # each run checks as generate() does by default: on its own engine's context
        against = {setting: _forced_engine(setting, q4, q8) for setting in args.against}
        totals = _pipeline_rounds(template, _engine_runners(args, q4, engines, against), args.rows, args.rounds,
                                  answer_check, args.first_seed)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    _print_totals(totals)
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB (all models loaded); "
          f"{load_average()}")


if __name__ == "__main__":
    main()
