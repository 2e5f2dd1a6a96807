"""Benchmark fair gold by pooled review (curator.core.review.pool); prints figures, asserts nothing.

On a project with generated rows (e.g. bench/validity.py's on the Python FAQ set):
1. widens the generated rows' gold to every chunk holding the reference sentence (today's gold);
2. pools the top ``--k`` of bm25, tfidf, dense and hybrid for every answerable generated row (and
   the real rows, for comparison) and prints how many chunks per row a reviewer is offered;
3. writes a labelling sheet for ``--sample`` generated rows (question, reference, gold chunk,
   each pooled chunk with who found it) to ``--sheet``; with ``--blind``, without who found it and
   in a shuffled order, so the grader cannot favour a retriever;
4. with ``--labels FILE`` (JSONL ``{"query_id", "chunk_id", "grade"}``, 0/1/2, written by a person
   reading the sheet), records them through ``pool.grade`` and prints, on the sampled rows,
   recall@5 and hit@5 of each retriever against the gold before and after the grades, and how many
   pooled chunks were judged relevant;
5. prints each pair of retrievers' recall@k gap, with its paired bootstrap interval, on the sampled
   rows (after the grades), on all generated rows and on the real rows, so "dense passes hybrid
   after grading" can be read against the noise of 20-40 rows.

Recall@5 comes from the stored pool itself (each retriever's top k, gold chunks included), so it
is exactly what ``curator eval`` gives at k <= --k.

Usage:
    .venv/bin/python bench/pool.py --project /tmp/validity-bench.curator --sheet /tmp/pool-sheet.jsonl
    .venv/bin/python bench/pool.py --project ... --sheet /tmp/sheet.jsonl --blind   # for a blind grader
    .venv/bin/python bench/pool.py --project ... --labels bench/pool_labels.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.core.evaluation import metrics  # noqa: E402
from curator.core.evaluation.validity import pair_gap  # noqa: E402
from curator.core.review import pool  # noqa: E402
from curator.core.store import open_project  # noqa: E402
from curator.core.store.gold import widen_gold  # noqa: E402

LABELLER = "bench-pool-labeller"


def answerable_rows(db, source: str) -> list[str]:
    return [r[0] for r in db.execute(
        "SELECT id FROM queries WHERE source = ? AND answerable = 1 AND status != 'rejected' "
        "AND json_array_length(gold_chunk_ids) > 0 ORDER BY id", [source])]


def gold_of(db, ids: list[str]) -> dict[str, dict[str, int]]:
    """Graded qrels (grade >= 1) of the rows, as evaluate.gold_qrels makes them."""
    out = {}
    for qid in ids:
        state = pool.snapshot(db, qid)
        out[qid] = {c: int(state["gold_grades"].get(c, 1)) for c in state["gold_chunk_ids"]}
    return out


def runs_from_pool(db, ids: list[str]) -> dict[str, metrics.Run]:
    runs: dict[str, metrics.Run] = {}
    for retriever, qid, chunk, score in db.execute(
            f"SELECT retriever, query_id, chunk_id, score FROM pool_hits WHERE query_id IN ({','.join('?' * len(ids))})",
            ids):
        runs.setdefault(retriever, {}).setdefault(qid, {})[chunk] = score
    return runs


def per_row(db, ids: list[str], k: int) -> dict[str, dict[str, dict[str, float]]]:
    """Each retriever's metrics per row (rows without relevant chunks are left out, as in eval)."""
    qrels = gold_of(db, ids)
    return {retriever: metrics.per_query({q: run.get(q, {}) for q in ids}, qrels, (k,))
            for retriever, run in runs_from_pool(db, ids).items()}


def scores(db, ids: list[str], k: int) -> dict[str, dict[str, float]]:
    return {retriever: metrics.mean(list(per.values())) for retriever, per in per_row(db, ids, k).items()}


def print_pair_gaps(title: str, db, ids: list[str], k: int) -> None:
    """Recall@k of A minus B per pair, paired over the rows both score, with a 95% bootstrap interval."""
    per = per_row(db, ids, k)
    names = sorted(per)
    rows = sorted(set.intersection(*(set(per[n]) for n in names))) if names else []
    if not rows:
        return
    values = np.array([[per[n][q][f"recall@{k}"] for n in names] for q in rows])
    print(f"{title} ({len(rows)} rows), recall@{k} gap [95% interval]:")
    for i, j in combinations(range(len(names)), 2):
        gap = pair_gap(values, i, j, resamples=10_000, seed=0)
        low, high = gap["ci95"]
        print(f"  {names[i]:7s} - {names[j]:7s} {gap['gap']:+.3f} [{low:+.3f}, {high:+.3f}]{'  clear' if gap['clear'] else ''}")


def offered_stats(db, ids: list[str]) -> str:
    counts = sorted(len(pool.pooled(db, q)) for q in ids)
    if not counts:
        return "no rows"
    return (f"{len(counts)} rows, offered per row mean {sum(counts) / len(counts):.2f}, median "
            f"{counts[len(counts) // 2]}, min {counts[0]}, max {counts[-1]}")


def write_sheet(db, ids: list[str], path: Path, blind: bool = False, seed: int = 0) -> None:
    """One JSON line per row. BLIND drops who found each chunk and shuffles the chunks (seeded per
    row), because the pool's own order (best rank first) and the found_by marks tell the grader
    which retriever a chunk helps; the chunk ids still tie each grade to its chunk."""
    with open(path, "w", encoding="utf-8") as fh:
        for qid in ids:
            q = db.execute("SELECT text, reference, query_type FROM queries WHERE id = ?", [qid]).fetchone()
            gold = pool.snapshot(db, qid)["gold_chunk_ids"]
            gold_text = [db.execute("SELECT text FROM chunks WHERE id = ?", [c]).fetchone()[0][:400] for c in gold]
            entries = [{"chunk_id": e["chunk_id"], "found_by": pool.found_by_text(e), "path": e["path"],
                        "title": e["title"], "text": " ".join(e["text"].split())[:600]} for e in pool.pooled(db, qid)]
            if blind:
                entries = [{k: v for k, v in e.items() if k != "found_by"} for e in entries]
                random.Random(f"{seed}:{qid}").shuffle(entries)
            fh.write(json.dumps({"query_id": qid, "type": q[2], "question": q[0], "reference": q[1],
                                 "gold": gold_text, "pooled": entries}, ensure_ascii=False) + "\n")


def apply_labels(db, path: Path) -> dict:
    counts = {"relevant": 0, "highly": 0, "not_relevant": 0}
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            label = json.loads(line)
            pool.grade(db, label["query_id"], label["chunk_id"], int(label["grade"]), LABELLER)
            counts[{0: "not_relevant", 1: "relevant", 2: "highly"}[int(label["grade"])]] += 1
    return counts


def print_table(title: str, before: dict, after: dict | None, k: int) -> None:
    print(title)
    for retriever in before:
        line = f"  {retriever:8s} recall@{k} {before[retriever][f'recall@{k}']:.3f}  hit@{k} {before[retriever][f'hit@{k}']:.3f}"
        if after is not None:
            line += (f"  ->  recall@{k} {after[retriever][f'recall@{k}']:.3f}  hit@{k} "
                     f"{after[retriever][f'hit@{k}']:.3f}")
        print(line)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", required=True)
    parser.add_argument("--k", type=int, default=pool.DEFAULT_K)
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sheet", help="Write the labelling sheet of the sampled rows here (JSONL).")
    parser.add_argument("--blind", action="store_true",
                        help="Sheet without who found each chunk, chunks in a seeded random order.")
    parser.add_argument("--labels", help="Grades to record (JSONL query_id, chunk_id, grade).")
    args = parser.parse_args(argv)
    db = open_project(args.project)
    print("widen:", widen_gold(db))
    synthetic, real = answerable_rows(db, "synthetic"), answerable_rows(db, "log")
    todo = [q for q in synthetic + real if not pool.is_computed(db, q)]
    wall, cpu = time.perf_counter(), time.process_time()
    if todo:
        result = pool.compute(db, todo, k=args.k, run_files=[])
        print(f"pooled {result['retrievers']} for {result['queries']} rows: {time.perf_counter() - wall:.1f} s wall, "
              f"CPU {time.process_time() - cpu:.1f} s")
    print("generated rows:", offered_stats(db, synthetic))
    print("real rows:     ", offered_stats(db, real))
    sample = sorted(random.Random(args.seed).sample(synthetic, min(args.sample, len(synthetic))))
    if args.sheet:
        write_sheet(db, sample, Path(args.sheet), args.blind, args.seed)
        print(f"labelling sheet of {len(sample)} rows: {args.sheet}")
    before = scores(db, sample, args.k)
    after = None
    if args.labels:
        done = {r[0] for r in db.execute("SELECT DISTINCT query_id FROM decisions WHERE reviewer = ?", [LABELLER])}
        if done:
            print("labels already recorded in this project; showing their effect only")
        else:
            print("recorded:", apply_labels(db, Path(args.labels)))
        after = scores(db, sample, args.k)
        if done:  # 'before' must be the gold without the labels: read it from the journal's first state
            before = None
    if before is not None:
        print_table(f"{len(sample)} sampled generated rows, gold before -> after the grades", before, after, args.k)
    else:
        print_table(f"{len(sample)} sampled generated rows, gold after the grades", after, None, args.k)
    print("all generated rows (after):")
    for retriever, s in scores(db, synthetic, args.k).items():
        print(f"  {retriever:8s} recall@{args.k} {s[f'recall@{args.k}']:.3f}  hit@{args.k} {s[f'hit@{args.k}']:.3f}")
    print("real rows (their own gold):")
    for retriever, s in scores(db, real, args.k).items():
        print(f"  {retriever:8s} recall@{args.k} {s[f'recall@{args.k}']:.3f}  hit@{args.k} {s[f'hit@{args.k}']:.3f}")
    print_pair_gaps(f"sampled generated rows{' after the grades' if args.labels else ''}", db, sample, args.k)
    print_pair_gaps("all generated rows", db, synthetic, args.k)
    print_pair_gaps("real rows", db, real, args.k)
    db.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
