"""Need-first generation, engine changes of issue 42 against the path before them: accepted rows/min, acceptance,
prompt tokens evaluated and tokens generated per request, generated tokens/s against the model's raw decode rate,
peak memory. Prints, asserts nothing.

Arms (--arms picks them; the first named is the reference the ratios are against):
  original  nearest worked examples, 4 kept prompts in 1,024 cells, whole replies (the path before issue 42's work);
  kept      a kept prompt per kind (llama_batch.NEED_FIRST_KEEP), whole replies (main before the screen);
  screened  a kept prompt per kind, the question screened before its quote and the quote bounded (generate.
            SCREEN_NEED_FIRST, backends.FirstLineGate): the default now;
  fixed     as screened, with the same worked examples for every chunk (asking.FIXED_NEED_FIRST_SHOTS, off by default);
  once      as screened, with the reply's shape spelled out in the last turn only, not in every worked example's
            (needfirst.FORMAT_IN_EXAMPLES = False; off by default: its rows labelled worse blind);
  checked   as screened, with the likelihood check of the quoted answer (checks.NEED_FIRST_ANSWER_CHECK).
An arm name may end in @N (screened@2): that arm decodes N requests together in the batch decoder, one by default.
Every arm runs generate() as `curator generate --parallel 1` does (no draft model: none is used by any arm), on
copies of one project (a realq corpus with its real questions approved as gold, as bench/validity.py builds it), on
one loaded model, alternating ABBA round by round (every other round in reverse order, each round on its own seed)
so load from other processes hits every arm alike. With the same seed the arms write the same questions (the
screen and the bound act after a question is written), so acceptance differs only where a bounded quote locates
other sentences.

    .venv/bin/python bench/needfirst_prefix.py --realq /tmp/realq-debian --model M [--rows 6] [--rounds 2]
        [--threads 2] [--first-seed 0] [--arms original,kept,screened] [--count-tokens] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import raw_decode  # noqa: E402
from validity import import_real_questions  # noqa: E402
from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.generation import asking, needfirst  # noqa: E402
from curator.core.generation import checks as checks_mod  # noqa: E402
from curator.core.generation.backends import llama_batch  # noqa: E402
from curator.core.generation.config import GenerationConfig  # noqa: E402
from curator.core.generation.engine import open_engine  # noqa: E402
from curator.core.generation import generate as generate_mod  # noqa: E402
from curator.core.store import open_project  # noqa: E402

# Only the types a need-first prompt writes (multi-hop rows and near misses are made by rule, with prompts of their own).
NEED_FIRST_MIX = {"factoid": 2, "keyword": 1, "vague": 1}
PER_KIND = llama_batch.NEED_FIRST_KEEP
# name: (the same worked examples for every chunk, one kept prompt per kind, the question screened and quote bounded,
# the reply's shape spelled out in every worked example's turn, the likelihood check of the quoted answer)
ARMS = {"original": (False, False, False, True, False), "kept": (False, True, False, True, False),
        "screened": (False, True, True, True, False), "fixed": (True, True, True, True, False),
        "once": (False, True, True, False, False), "checked": (False, True, True, True, True)}


def build_template(realq: Path, folder: Path) -> Path:
    template = folder / "template.curator"
    db = open_project(template, create=True)
    ingest(db, [realq / "corpus"])
    print(f"{import_real_questions(db, realq, folder)} real questions approved as gold")
    db.close()
    return template


def arm_parts(arm: str) -> tuple[str, int]:
    """'screened@2' is the screened arm with two sequences decoded together; a bare name runs one."""
    name, _, parallel = arm.partition("@")
    if name not in ARMS:
        raise SystemExit(f"unknown arm {name!r}: choose from {', '.join(ARMS)} (with @N for N sequences)")
    return name, int(parallel or 1)


def one_round(template: Path, folder: Path, backend, arm: str, rows: int, seed: int, threads: int) -> dict:
    name, parallel = arm_parts(arm)
    fixed, kept_per_kind, screened, format_in_examples, answer_check = ARMS[name]
    project = folder / f"round-{seed}-{arm.replace('@', 'x')}.curator"
    shutil.copy(template, project)
    db = open_project(project)
    asking.FIXED_NEED_FIRST_SHOTS = fixed
    needfirst.FORMAT_IN_EXAMPLES = format_in_examples
    generate_mod.SCREEN_NEED_FIRST = screened
    checks_mod.NEED_FIRST_ANSWER_CHECK = answer_check
    backend._decoder = None  # every round starts with no prompt kept from another arm's round
    backend.parallel = parallel
    llama_batch.NEED_FIRST_KEEP = PER_KIND if kept_per_kind else (llama_batch.KEEP_PROMPTS, llama_batch.KEEP_CELLS)
    start, cpu = time.perf_counter(), time.process_time()
    summary = generate_mod.generate(db, GenerationConfig(count=rows, seed=seed, mode="need-first", threads=threads,
                                                         parallel=parallel, mix=NEED_FIRST_MIX), backend=backend)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    stats = {k: backend._decoder.stats[k] for k in ("prompt_tokens", "reused_tokens", "generated_tokens", "gate_stops")}
    requests = summary["accepted"] + summary["rejected"]
    db.close()
    return {"seconds": seconds, "cpu": cpu, "accepted": summary["accepted"], "requests": requests, **stats}


def count_tokens_only(template: Path, model: str, chunks: int = 40) -> None:
    """Steady state without decoding: ``chunks`` chunks in turn of the three kinds, each prompt's tokens (the model's
    tokenizer, ChatML) minus the longest prefix it shares with any of the last NEED_FIRST_KEEP[0] prompts."""
    import llama_cpp

    from curator.core.generation import examples, needfirst
    from curator.core.generation.backends.llama_batch import common_prefix

    llm = llama_cpp.Llama(model, vocab_only=True, verbose=False)
    db = open_project(template)
    shown = examples.load(db)
    chosen = [dict(id=i, doc_id=d, text=t) for i, d, t in
              db.execute("SELECT id, doc_id, text FROM chunks WHERE active = 1 ORDER BY random()")][:chunks]
    for fixed in (False, True):
        kept, total, evaluated = [], 0, 0
        for number, chunk in enumerate(chosen):
            kind = ("factoid", "keyword", "vague")[number % 3]
            shots = (shown.fixed_shots if fixed else shown.shots)(kind, chunk)
            messages = needfirst.build_messages(kind, asking._truncate(chunk["text"]), shots, [])
            text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
            tokens = llm.tokenize((text + "<|im_start|>assistant\n").encode(), add_bos=False, special=True)
            total += len(tokens)
            evaluated += len(tokens) - max([common_prefix(k, tokens) for k in kept] + [0])
            kept = (kept + [tokens])[-PER_KIND[0]:]
        print(f"{'same examples' if fixed else 'nearest examples'}: {evaluated / len(chosen):.0f} of "
              f"{total / len(chosen):.0f} prompt tokens evaluated per request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--realq", type=Path, required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--rows", type=int, default=6, help="accepted rows per round and arm")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0, help="seed of the first round (then +1 a round)")
    parser.add_argument("--arms", default="original,kept,screened",
                        help="comma-separated, from: " + ", ".join(ARMS) + " (the first is the reference)")
    parser.add_argument("--count-tokens", action="store_true",
                        help="only count the prompt tokens each arm evaluates in steady state (no decoding)")
    parser.add_argument("--keep", type=Path, help="keep each round's project in this folder (to read its candidates)")
    args = parser.parse_args()
    arms = args.arms.split(",")
    for arm in arms:
        arm_parts(arm)
    print(f"load {os.getloadavg()[0]:.1f}; {args.realq.name}; {Path(args.model).name}; threads {args.threads}")
    folder = args.keep or Path(tempfile.mkdtemp())
    folder.mkdir(parents=True, exist_ok=True)
    totals = {arm: {} for arm in arms}
    try:
        template = build_template(args.realq, folder)
        if args.count_tokens:
            count_tokens_only(template, args.model)
            return
        backend = open_engine(GenerationConfig(model_path=args.model, threads=args.threads, parallel=1,
                                               mode="need-first"), None)
        raw = [raw_decode(backend)]
        for number in range(args.rounds):
            for arm in arms if number % 2 == 0 else list(reversed(arms)):
                run = one_round(template, folder, backend, arm, args.rows, args.first_seed + number, args.threads)
                for key, value in run.items():
                    totals[arm][key] = totals[arm].get(key, 0) + value
                print(f"round {number} {arm}: {run['accepted']} accepted of {run['requests']} in {run['seconds']:.0f} s "
                      f"(CPU {run['cpu']:.0f} s); prompt tokens {run['prompt_tokens']}, {run['reused_tokens']} of them "
                      f"kept from earlier prompts; {run['generated_tokens']} generated; {run['gate_stops']} stopped at "
                      f"the question; load {os.getloadavg()[0]:.1f}", flush=True)
        raw.append(raw_decode(backend))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    report(totals, arms[0], raw)


def report(totals: dict, reference: str, raw: list[float]) -> None:
    base = 60 * totals[reference]["accepted"] / totals[reference]["seconds"]
    print(f"raw decode (plain completion, same model and threads): {' and '.join(f'{r:.1f}' for r in raw)} tokens/s "
          "(before and after the rounds)")
    for arm, t in totals.items():
        per_min, asked = 60 * t["accepted"] / t["seconds"], max(1, t["requests"])
        print(f"{arm}: {per_min:.2f} accepted rows/min ({per_min / base:.2f}x), acceptance {t['accepted'] / asked:.0%} "
              f"({t['accepted']} of {t['requests']}), {(t['prompt_tokens'] - t['reused_tokens']) / asked:.0f} prompt "
              f"tokens evaluated per request of {t['prompt_tokens'] / asked:.0f}, {t['generated_tokens'] / asked:.0f} "
              f"tokens generated per request ({t['generated_tokens'] / t['seconds']:.1f} generated tokens/s over the "
              f"run's wall time), {t['gate_stops']} replies stopped at their question")
    print(f"peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
