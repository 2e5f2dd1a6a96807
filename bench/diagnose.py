"""Benchmark the claim judges on held-out claims: accuracy, calibration, speed, context recall.

Data: bench/diagnose_claims_hard.jsonl, 256 claims written and labelled by hand over the Python FAQ
and the Debian FAQ (its first line says how they were made); the contexts are in
bench/diagnose_claims_contexts.jsonl. Only rows with split 'heldout' (whole FAQ entries the weights
never saw: bench/diagnose_fit.py fits on 'train') are measured. Each claim is judged against two
retrieved contexts, its own entry and the next one of its corpus, as bench/diagnose_fit.py does.

Printed:
- balanced accuracy of the default judge, overall, per corpus and per kind of claim, next to word
  overlap on the same claims: the rule the README quoted (supported when >= 80% of the claim's words
  are in the contexts) and the same rule with its threshold tuned on the train split;
- calibration: Brier score and the supported share per probability bin;
- speed: claims judged per second (wall and CPU of this process), MiniLM loaded before the clock
  starts and no vector cached (the machine is shared: CPU time is the steadier figure);
- context recall from judged reference statements against the human value on traces built from
  the held-out entries (per entry: two traces with the right context and four statements drawn
  with a fixed seed, one trace whose only context is another entry, human recall 0), run through
  a real project (import_traces, judge_traces);
- with --judge-model PATH (or --bundled for the bundled 135M model): that LLM judge alone on the
  held-out claims, and the default judge with the LLM re-judging only its unsure claims.

Usage:
    .venv/bin/python bench/diagnose.py [--judge-model PATH | --bundled] [--parallel 1]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from diagnose_fit import CLAIMS, load_rows, trace_contexts  # noqa: E402

from curator.core.diagnosis.faithfulness import (VERDICT_GRAMMAR, claim_verdicts, judge_messages,  # noqa: E402
                                                 judge_traces, parse_verdict)
from curator.core.diagnosis.judge import ClaimJudge, default_embed, unsure  # noqa: E402
from curator.core.diagnosis.recall import coverage  # noqa: E402
from curator.core.diagnosis.traces import import_traces  # noqa: E402
from curator.core.generation.backends import Request, open_backend  # noqa: E402
from curator.core.store import open_project  # noqa: E402


def balanced(labels: list[bool], said: list[bool]) -> float:
    pos = [s for l, s in zip(labels, said) if l]
    neg = [not s for l, s in zip(labels, said) if not l]
    return (np.mean(pos) + np.mean(neg)) / 2


def by_trace(rows: list[dict]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["corpus"], row["context_path"])].append(row)
    return groups


def judge_all(judge: ClaimJudge, rows: list[dict], contexts: dict) -> list[dict]:
    out = []
    for key, group in by_trace(rows).items():
        for row, verdict in zip(group, judge.judge([r["claim"] for r in group], contexts[key])):
            out.append({**row, **verdict})
    return out


def overlap_rule(rows: list[dict], contexts: dict, threshold: float) -> list[bool]:
    return [coverage(r["claim"], "\n".join(contexts[(r["corpus"], r["context_path"])])) >= threshold for r in rows]


def tuned_threshold(train: list[dict], contexts: dict) -> float:
    labels = [r["label"] == "supported" for r in train]
    return max(np.arange(0.3, 1.0, 0.05), key=lambda t: balanced(labels, overlap_rule(train, contexts, t)))


def report_accuracy(judged: list[dict], train: list[dict], contexts: dict) -> None:
    labels = [r["label"] == "supported" for r in judged]
    said = [r["verdict"] == "supported" for r in judged]
    tuned = tuned_threshold(train, contexts)
    print(f"held-out claims: {len(judged)} ({sum(labels)} supported)")
    print(f"balanced accuracy: default judge {balanced(labels, said):.1%}; word overlap >= 0.8 "
          f"{balanced(labels, overlap_rule(judged, contexts, 0.8)):.1%}; word overlap >= {tuned:.2f} (tuned on train) "
          f"{balanced(labels, overlap_rule(judged, contexts, tuned)):.1%}")
    for corpus in ("python", "debian"):
        part = [i for i, r in enumerate(judged) if r["corpus"] == corpus]
        print(f"  {corpus}: {balanced([labels[i] for i in part], [said[i] for i in part]):.1%} on {len(part)} claims")
    kinds = defaultdict(list)
    for r, s in zip(judged, said):
        kinds[r["kind"]].append(s == (r["label"] == "supported"))
    print("  right per kind: " + ", ".join(f"{k} {sum(v)}/{len(v)}" for k, v in sorted(kinds.items())))


def report_calibration(judged: list[dict]) -> None:
    p = np.array([r["probability"] for r in judged])
    y = np.array([r["label"] == "supported" for r in judged], dtype=float)
    print(f"calibration: Brier {np.mean((p - y) ** 2):.3f}; unsure (p in 0.25..0.75) {sum(map(unsure, judged))} claims")
    for lo in (0.0, 0.25, 0.5, 0.75):
        inside = (p >= lo) & (p < lo + 0.25 + (lo == 0.75))
        if inside.any():
            print(f"  p {lo:.2f}-{lo + 0.25:.2f}: {inside.sum():3d} claims, mean p {p[inside].mean():.2f}, "
                  f"supported {y[inside].mean():.2f}")


def report_speed(rows: list[dict], contexts: dict) -> None:
    embed = default_embed()
    embed(["warm up the model before the clock starts"])
    judge = ClaimJudge(embed)
    wall, cpu = time.perf_counter(), time.process_time()
    judge_all(judge, rows, contexts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"speed: {len(rows)} claims in {wall:.1f} s wall, {cpu:.1f} s CPU -> {len(rows) / wall:.1f} claims/s wall, "
          f"{len(rows) / cpu:.1f} per CPU-second (no vector cached; 2 cores shared with other work)")


def recall_traces(rows: list[dict], contexts: dict) -> list[dict]:
    rng = random.Random(29)
    keys = sorted(by_trace(rows))
    traces = []
    for i, key in enumerate(keys):
        group = by_trace(rows)[key]
        other = contexts[keys[(i + 1) % len(keys)]][0]
        for n, retrieved in enumerate(([contexts[key][0], other], [contexts[key][0], other], [other])):
            statements = rng.sample(group, 4)
            human = (sum(r["label"] == "supported" for r in statements) / 4) if len(retrieved) == 2 else 0.0
            traces.append({"trace_id": f"{key[1]}#{n}", "user_input": f"question {key[1]} #{n}",
                           "retrieved_contexts": retrieved, "response": "",
                           "reference": " ".join(r["claim"] for r in statements), "human": human})
    return traces


def report_recall(rows: list[dict], contexts: dict) -> None:
    traces = recall_traces(rows, contexts)
    with tempfile.TemporaryDirectory() as tmp:
        db = open_project(Path(tmp) / "recall.curator", create=True)
        path = Path(tmp) / "traces.jsonl"
        path.write_text("".join(json.dumps({k: v for k, v in t.items() if k != "human"}) + "\n" for t in traces))
        import_traces(db, path)
        judge_traces(db, judge=ClaimJudge(default_embed()))
        judged = dict(db.execute("SELECT external_id, context_recall FROM traces").fetchall())
        statements = sum(len(claim_verdicts(db, tid, "reference")) for (tid,) in db.execute("SELECT id FROM traces"))
        db.close()
    errors = [abs((judged[t["trace_id"]] or 0.0) - t["human"]) for t in traces]
    print(f"context recall on {len(traces)} traces ({statements} statements split from {4 * len(traces)} written): "
          f"mean |judged - human| {np.mean(errors):.3f}, within 0.1 on {sum(e <= 0.1 for e in errors)}/{len(traces)}; "
          f"mean recall judged {np.mean([judged[t['trace_id']] or 0 for t in traces]):.3f} vs human "
          f"{np.mean([t['human'] for t in traces]):.3f}")


def report_llm(backend, judged: list[dict], contexts: dict) -> None:
    requests = (Request(judge_messages(contexts[(r["corpus"], r["context_path"])], r["claim"]), max_tokens=4,
                        temperature=0.0, grammar=VERDICT_GRAMMAR, tag=i) for i, r in enumerate(judged))
    wall, cpu = time.perf_counter(), time.process_time()
    said = {request.tag: parse_verdict(reply) for request, reply in backend.iter_complete(requests)}
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    labels = [r["label"] == "supported" for r in judged]
    llm = [said[i] == "supported" for i in range(len(judged))]
    both = [llm[i] if unsure(r) else r["verdict"] == "supported" for i, r in enumerate(judged)]
    print(f"LLM judge {getattr(backend, 'model_path', backend.id)}: balanced accuracy alone {balanced(labels, llm):.1%} "
          f"({sum(v is None for v in said.values())} unparsed, says supported {sum(llm)}/{len(llm)}); default judge "
          f"with the LLM on its {sum(map(unsure, judged))} unsure claims {balanced(labels, both):.1%}; "
          f"{len(judged) / wall:.2f} claims/s wall ({cpu:.0f} s CPU)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judge-model")
    parser.add_argument("--bundled", action="store_true", help="measure the bundled 135M model as LLM judge")
    parser.add_argument("--parallel", type=int, default=1)
    args = parser.parse_args()
    rows = load_rows(CLAIMS)
    held = [r for r in rows if r["split"] == "heldout"]
    train = [r for r in rows if r["split"] == "train"]
    contexts = trace_contexts()
    judged = judge_all(ClaimJudge(default_embed()), held, contexts)
    report_accuracy(judged, train, contexts)
    report_calibration(judged)
    report_speed(held, contexts)
    report_recall(held, contexts)
    if args.judge_model or args.bundled:
        report_llm(open_backend(args.judge_model, parallel=args.parallel), judged, contexts)


if __name__ == "__main__":
    main()
