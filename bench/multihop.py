"""Multi-hop bench (issue 28): on a held-out corpus, generate answer-first factoid rows, then
multi-hop rows built on them in the same project, and print each phase's candidates per accepted
row and rows per minute (the factoid phase is the comparison: same run, same model, same load).

Run: PYTHONPATH=. .venv/bin/python bench/multihop.py --corpus /tmp/realq/corpus --factoid 24 --count 8
       --seed 3 --out rows.jsonl

A multi-hop row reuses an approved factoid question as its first part (generation.multihop.built_on_rows),
so the factoid phase runs first; its cost is shown apart, and the multi-hop figures count only the
multi-hop phase's own candidates. --approve-factoid approves every kept factoid row in place of a
reviewer (so the row-based path runs; the first parts are then as good as unreviewed rows, 2-3 in 10
usable); without it a project has no approved rows and the rows are made by rule
(generation.multihop.both_by_rule; --factoid 0 measures that path alone, --model-parts adds rows
whose second part the model writes). --out gets the multi-hop rows as JSON lines for labelling by
bench/quality_rubric.md (each with both sentences, both chunks' text and the link). Prints figures;
asserts nothing.

Reviewed first parts, in two steps over one kept project (--project):
  bench/multihop.py --corpus C --project p.curator --factoid 30 --linked --count 0 --factoid-out f.jsonl
  (a reviewer reads f.jsonl by the rubric and lists the ids worth approving, one a line)
  bench/multihop.py --project p.curator --factoid 0 --approve-ids ids.txt --count 10 --out rows.jsonl
--linked spends the factoid rows on chunks that share a specific entity with another chunk (the
only ones a multi-hop row can start from).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from curator.core.corpus.ingest import ingest
from curator.core.generation import multihop
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.generation.plan import eligible_chunks, plan_tasks
from curator.core.store import open_project

sys.path.insert(0, str(Path(__file__).parent))
from quality import _rows  # noqa: E402  (the quality bench's row reader: same fields for labelling)


def phase(db, query_type: str, count: int, seed: int, chunk_ids: Optional[list] = None) -> dict:
    from curator.core.errors import NothingToGenerate

    wall = time.perf_counter()
    try:
        summary = generate(db, GenerationConfig(count=count, seed=seed, mix={query_type: 1}, chunk_ids=chunk_ids))
    except NothingToGenerate as reason:  # a corpus with no pair: 0 rows is the figure (the held-out zsh FAQ)
        return {"type": query_type, "status": "nothing to generate", "accepted": 0, "candidates": 0,
                "reason": str(reason), "load": open("/proc/loadavg").read().split()[:3]}
    wall = time.perf_counter() - wall
    accepted, rejected = summary["accepted_this_session"], summary["rejected_this_session"]
    return {"type": query_type, "status": summary["status"], "accepted": accepted, "candidates": accepted + rejected,
            "candidates_per_accepted": round((accepted + rejected) / max(1, accepted), 2), "wall_s": round(wall, 1),
            "rows_per_min_wall": round(60 * accepted / wall, 2), "rejected_by_reason": summary["rejected_by_reason"],
            "load": open("/proc/loadavg").read().split()[:3]}


def linked_chunks(db, seed: int) -> list[str]:
    """Chunks with a sentence about a specific entity that a sentence of another chunk is about too
    (both sides of each pair), in seeded order: where a multi-hop row can start."""
    scope, found = multihop.RunScope(db), []
    for chunk in eligible_chunks(db, seed):
        for pair in multihop.sentence_pairs(db, chunk, seed, scope):
            found += [chunk["id"], pair["partner"]["id"]]
    found = list(dict.fromkeys(found))
    random.Random(seed).shuffle(found)
    return found


def approve(db, ids_path: Path) -> int:
    """Approve the rows a reviewer listed: one id a line, or an id, a tab and the question as the
    reviewer edited it (a small edit); '#' starts a comment. Ids the project lacks are skipped."""
    from curator.core.review.decisions import decide

    known, approved = {r[0] for r in db.execute("SELECT id FROM queries")}, 0
    for line in ids_path.read_text().splitlines():
        query_id, _, edited = line.split("#")[0].strip().partition("\t")
        if query_id in known:
            decide(db, query_id, "approve", f"reviewer ({ids_path.name})", text=edited.strip() or None)
            approved += 1
    return approved


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/realq/corpus"))
    parser.add_argument("--factoid", type=int, default=24, help="answer-first rows to build on (first phase)")
    parser.add_argument("--count", type=int, default=8, help="multi-hop rows wanted (second phase)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="the multi-hop rows as JSON lines, for labelling")
    parser.add_argument("--approve-factoid", action="store_true", help="approve the kept factoid rows (no review)")
    parser.add_argument("--project", type=Path, help="keep the project here (reused when it exists: no ingest)")
    parser.add_argument("--linked", action="store_true", help="factoid rows only on chunks sharing an entity with another")
    parser.add_argument("--factoid-out", type=Path, help="the factoid rows as JSON lines, for a reviewer")
    parser.add_argument("--approve-ids", type=Path, help="approve these factoid rows (a reviewer's list) first")
    parser.add_argument("--plain-parts", action="store_true",
                        help="the model's second parts in the plain question grammar (entity checked, not spelled)")
    parser.add_argument("--model-parts", action="store_true",
                        help="without approved rows, also rows whose second part the model writes (a rule the first)")
    args = parser.parse_args()
    if args.plain_parts:
        multihop.FORCE_ENTITY = False
    if args.model_parts:
        multihop.MODEL_WRITES_SECOND_PART = True
    project = args.project or Path(tempfile.mkdtemp()) / "multihop.curator"
    print(f"project: {project}  load: {open('/proc/loadavg').read().split()[:3]}", flush=True)
    fresh = not project.exists()
    db = open_project(project, create=fresh)
    if fresh:
        ingest(db, [args.corpus])
    figures = []
    if args.factoid:
        chunk_ids = linked_chunks(db, args.seed) if args.linked else None
        if chunk_ids is not None:
            print(f"linked chunks: {len(chunk_ids)}", flush=True)
        figures.append(phase(db, "factoid", args.factoid, args.seed, chunk_ids))
    if args.factoid_out:
        rows = [r for r in _rows(db) if r["query_type"] == "factoid"]
        args.factoid_out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    if args.approve_ids:
        print(f"approved: {approve(db, args.approve_ids)}", flush=True)
    if args.approve_factoid:
        from curator.core.review.decisions import decide

        for (query_id,) in db.execute("SELECT id FROM queries WHERE query_type = 'factoid'").fetchall():
            decide(db, query_id, "approve", "bench (not reviewed)")
    if args.count:
        tasks = list(plan_tasks(db, {"multi_hop": args.count}, args.seed, answers_mode="extractive"))
        print(f"multi-hop tasks the plan finds: {len(tasks)} (first rows: "
              f"{len({o.get('first_row') for t in tasks for o in t.options} - {None})})", flush=True)
        figures.append(phase(db, "multi_hop", args.count, args.seed))
    print(json.dumps(figures, indent=1))
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")
    rows = [r for r in _rows(db) if r["query_type"] == "multi_hop"]
    if args.out:
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    for row in rows:
        print("-", row["text"])


if __name__ == "__main__":
    main()
