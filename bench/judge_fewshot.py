"""The yes/no claim judge after worked examples (issue 40): six short earlier turns, each a context, a claim and the
right answer, before the claim to judge; read as P(yes) of the reply's first token.

The 1.5B model gives a claim that flips one word of its context as high a P(yes) as a true claim when asked cold.
The examples show it what "not supported" covers (a contradiction in the context's own words, an added detail, a
changed number) and that a paraphrase in other words is supported. They are written on an invented tool, from no
claim set. They come first in every prompt, so the model keeps them in its KV cache across all claims.

Readings go to bench/judge_sets/fewshot_<model>.jsonl (a stopped run resumes). Without --measure, prints leave one
choice set out for: the shipped combined judge, worked-examples P(yes) alone, and the combined judge with it in
place of the cold whole-context P(yes); then each fitted on all six choice sets, on the fresh sets. The adoption
rule was fixed before the run (bench/judge_sets/README.md).

Usage:
    .venv/bin/python bench/judge_fewshot.py --judge-model M --measure choice fresh fresh2
    .venv/bin/python bench/judge_fewshot.py --judge-model M
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from diagnose_route import balanced, grouped_by_set  # noqa: E402
from judge_combined import CHOICE, FRESH, FRESH2, _load, claims_of, readings_path, set_names  # noqa: E402
from judge_feature_mix import fit_and_say, per_style, supported  # noqa: E402

from curator.core.diagnosis.llm_judge import (QUESTION, SYSTEM, TOP_TOKENS, contexts_text, share_of_yes,  # noqa: E402
                                              yes_no_mass)

HERE = Path(__file__).resolve().parent
TOOL = ("backupd copies the folders listed in its configuration file to the backup server every night at 02:00. "
        "It keeps the last seven copies and deletes older ones. A copy that fails is not retried until the next "
        "night; the failure is written to the system log. Files larger than 4 GB are skipped unless the "
        "large-files option is set.")
EXAMPLES = (
    ("A failed copy is retried until the next night; the failure is written to the system log.", "no"),
    ("backupd copies the configured folders to the backup server every night at 02:00 and keeps the last seven "
     "copies.", "yes"),
    ("backupd keeps the last seven copies, deletes older ones, and compresses each copy with gzip.", "no"),
    ("If a nightly run breaks, nothing tries again before the following night, and the error ends up in the "
     "system's log.", "yes"),
    ("Files larger than 2 GB are skipped unless the large-files option is set.", "no"),
    ("Unless you turn on large-files, anything over 4 GB is left out of the backup.", "yes"),
)


def fewshot_messages(contexts: list[str], claim: str) -> list[dict]:
    """The worked examples as earlier turns (the same for every claim), then the context and the claim."""
    messages = [{"role": "system", "content": SYSTEM}]
    for example, answer in EXAMPLES:
        messages += [{"role": "user", "content": f"Context:\n{TOOL}\n\nClaim: {example}\n\n{QUESTION}"},
                     {"role": "assistant", "content": answer}]
    return messages + [{"role": "user", "content": f"Context:\n{contexts_text(contexts)}\n\nClaim: {claim}\n\n"
                                                   f"{QUESTION}"}]


def measure(model: str, names: list[str], path: Path) -> None:
    from curator.core.generation.backends import open_backend

    done = {(r["set"], r["claim"]) for r in _load(path)}
    backend = open_backend(model, parallel=1, n_ctx=4096)
    _ = backend.llm
    with path.open("a", encoding="utf-8") as out:
        for name in names:
            claims = [c for c in claims_of(name) if (c["set"], c["claim"]) not in done]
            for i, c in enumerate(claims):
                started = time.perf_counter()
                p_yes = share_of_yes(*yes_no_mass(backend.next_token_logprobs(fewshot_messages(c["contexts"],
                                                                                                c["claim"]),
                                                                               TOP_TOKENS)))
                row = {"set": c["set"], "claim": c["claim"], "label": c["label"], "style": c["style"],
                       "fewshot": round(p_yes, 4), "seconds": round(time.perf_counter() - started, 3)}
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(f"  {name} {i + 1}/{len(claims)} {c['label']:<13} P(yes) {p_yes:.2f} {row['seconds']:.1f}s",
                      file=sys.stderr)
    print(f"prompt tokens {getattr(backend, 'prompt_tokens', {})}")


CANDIDATES = {"combined (shipped)": ("whole", "nearest", "min_gain"),
              "worked examples alone": ("fewshot",),
              "combined, worked examples for whole": ("fewshot", "nearest", "min_gain")}


def summary(rows: list[dict]) -> None:
    by_set = grouped_by_set(rows)
    choice = [r for r in rows if r["set"] in CHOICE]
    print("raw P(yes) >= 0.5 of the worked-examples prompt:")
    for name, part in by_set.items():
        print(f"  {name:<26} {balanced(supported(part), [r['fewshot'] >= 0.5 for r in part]):.3f}")
    if {r["set"] for r in choice} == set(CHOICE):
        print(f"\nleave one choice set out ({len(choice)} claims):")
        for label, columns in CANDIDATES.items():
            accs = [balanced(supported(by_set[s]), fit_and_say([r for r in choice if r["set"] != s], by_set[s],
                                                               columns)) for s in CHOICE]
            print(f"  {label:<36} " + " ".join(f"{s[:12]}={a:.3f}" for s, a in zip(CHOICE, accs))
                  + f"  mean {np.mean(accs):.3f} min {min(accs):.3f}")
    for report in (FRESH, FRESH2):
        present = [s for s in report if s in by_set]
        if present and choice:
            print(f"\nfitted on the choice sets; on {', '.join(present)}:")
            for label, columns in CANDIDATES.items():
                said = {s: fit_and_say(choice, by_set[s], columns) for s in present}
                print(f"  {label:<36} " + " ".join(f"{balanced(supported(by_set[s]), said[s]):.3f}" for s in present)
                      + "   " + " | ".join(per_style(by_set[s], said[s]) for s in present))
    seconds = [r["seconds"] for r in rows]
    print(f"\nspeed: {len(seconds)} claims in {sum(seconds):.0f} s = {len(seconds) / sum(seconds):.2f} claims/s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judge-model", required=True)
    parser.add_argument("--measure", nargs="*", help="sets to read (names, or 'choice' / 'fresh' / 'fresh2')")
    args = parser.parse_args()
    path = HERE / "judge_sets" / f"fewshot_{Path(args.judge_model).stem}.jsonl"
    if args.measure is not None:
        measure(args.judge_model, set_names(args.measure), path)
    combined = {(r["set"], r["claim"]): r for r in _load(readings_path(args.judge_model))}
    summary([{**combined[(r["set"], r["claim"])], **r} for r in _load(path) if (r["set"], r["claim"]) in combined])


if __name__ == "__main__":
    main()
