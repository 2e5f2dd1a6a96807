"""Benchmark the faithfulness judge: traces judged per minute, and agreement with a human.

bench/diagnose_claims.jsonl holds 40 claims labelled by hand (supported / not supported)
against 10 FAQ answers of the realq corpus (python3 bench/realq/build.py --out /tmp/realq).
The bench ingests those 10 answers into a fresh project, imports one trace per answer (the
answer as the retrieved context, its 4 claims as the response) through ``import_traces``,
judges them with ``judge_traces`` and prints:
- traces and claims judged per minute (wall and CPU seconds of this process: the machine is
  shared, so CPU time is the steadier figure);
- the share of the 40 claims on which the judge agrees with the human label, next to two
  references computed in the same run: always "supported" (the share of supported labels), and
  a word-overlap rule (supported when >= 80% of the claim's words are in the context).
Usage:
    .venv/bin/python bench/diagnose.py [--realq /tmp/realq] [--judge-model PATH] [--parallel 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.diagnosis.faithfulness import claim_verdicts, judge_traces, split_claims  # noqa: E402
from curator.core.diagnosis.recall import coverage  # noqa: E402
from curator.core.diagnosis.traces import import_traces  # noqa: E402
from curator.core.generation.backends import open_backend  # noqa: E402
from curator.core.store import open_project  # noqa: E402

CLAIMS = Path(__file__).with_name("diagnose_claims.jsonl")


def load_claims() -> dict[str, list[dict]]:
    by_context: dict[str, list[dict]] = {}
    for line in CLAIMS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        by_context.setdefault(row["context_path"], []).append(row)
    return by_context


def build_project(work: Path, corpus: Path, by_context: dict) -> tuple[object, Path]:
    for rel in by_context:
        target = work / "corpus" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(corpus / rel, target)
    db = open_project(work / "bench.curator", create=True)
    ingest(db, [work / "corpus"])
    traces = work / "traces.jsonl"
    with open(traces, "w", encoding="utf-8") as handle:
        for rel, rows in by_context.items():
            handle.write(json.dumps({"trace_id": rel, "user_input": f"What does {rel} say?",
                                     "retrieved_contexts": [(corpus / rel).read_text(encoding="utf-8")],
                                     "response": " ".join(r["claim"] for r in rows)}) + "\n")
    return db, traces


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--realq", default="/tmp/realq")
    parser.add_argument("--judge-model")
    parser.add_argument("--parallel", type=int, default=1)
    args = parser.parse_args()
    corpus = Path(args.realq) / "corpus"
    by_context = load_claims()
    labels = {r["claim"]: r["label"] for rows in by_context.values() for r in rows}
    contexts = {r["claim"]: (corpus / rel).read_text(encoding="utf-8") for rel, rows in by_context.items() for r in rows}
    with tempfile.TemporaryDirectory() as tmp:
        db, traces = build_project(Path(tmp), corpus, by_context)
        imported = import_traces(db, traces)
        split = sum(len(split_claims(" ".join(r["claim"] for r in rows))) for rows in by_context.values())
        backend = open_backend(args.judge_model, parallel=args.parallel)
        backend_llm = getattr(backend, "llm", None)  # load the model before the clock starts
        wall, cpu = time.perf_counter(), time.process_time()
        summary = judge_traces(db, backend)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        judged = {c["text"]: c["verdict"] for (tid,) in db.execute("SELECT id FROM traces")
                  for c in claim_verdicts(db, tid)}
        db.close()
    del backend_llm
    agree = sum(judged.get(claim) == label for claim, label in labels.items())
    overlap = sum(("supported" if coverage(c, contexts[c]) >= 0.8 else "not supported") == label
                  for c, label in labels.items())
    supported = sum(label == "supported" for label in labels.values())
    print(f"judge {summary['judge']} parallel {args.parallel}: {imported['imported']} traces, "
          f"{split} claims split (of {len(labels)} labelled), {summary['claims_judged']} judged, "
          f"{summary['unparsed']} unparsed")
    print(f"time: {wall:.1f} s wall, {cpu:.1f} s CPU -> {imported['imported'] / wall * 60:.2f} traces/min wall "
          f"({imported['imported'] / cpu * 60:.2f} per CPU-minute), {summary['claims_judged'] / wall * 60:.1f} claims/min")
    print(f"agreement with the human labels: judge {agree}/{len(labels)} = {agree / len(labels):.0%}; "
          f"references: always 'supported' {supported / len(labels):.0%}, word overlap >= 0.8 "
          f"{overlap / len(labels):.0%}")
    said = [v for v in judged.values()]
    print(f"judge verdicts: supported {said.count('supported')}, not supported {said.count('not supported')}")


if __name__ == "__main__":
    main()
