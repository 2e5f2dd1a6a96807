"""Multi-hop bench (issue 28): on a held-out corpus, generate answer-first factoid rows, then
multi-hop rows built on them in the same project, and print each phase's candidates per accepted
row and rows per minute (the factoid phase is the comparison: same run, same model, same load).

Run: PYTHONPATH=. .venv/bin/python bench/multihop.py --corpus /tmp/realq/corpus --factoid 24 --count 8
       --seed 3 --out rows.jsonl

A multi-hop row reuses an approved factoid question as its first part (generation.multihop.built_on_rows),
so the factoid phase runs first; its cost is shown apart, and the multi-hop figures count only the
multi-hop phase's own candidates. --approve-factoid approves every kept factoid row in place of a
reviewer (so the row-based path runs; the first parts are then as good as unreviewed rows, 2-3 in 10
usable); without it a project has no approved rows and the model is asked for both questions of a
sentence pair. --out gets the multi-hop rows as JSON lines for labelling by
bench/quality_rubric.md (each with both sentences, both chunks' text and the link). Prints figures;
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from curator.core.corpus.ingest import ingest
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.store import open_project

sys.path.insert(0, str(Path(__file__).parent))
from quality import _rows  # noqa: E402  (the quality bench's row reader: same fields for labelling)


def phase(db, query_type: str, count: int, seed: int) -> dict:
    wall = time.perf_counter()
    summary = generate(db, GenerationConfig(count=count, seed=seed, mix={query_type: 1}))
    wall = time.perf_counter() - wall
    accepted, rejected = summary["accepted_this_session"], summary["rejected_this_session"]
    return {"type": query_type, "status": summary["status"], "accepted": accepted, "candidates": accepted + rejected,
            "candidates_per_accepted": round((accepted + rejected) / max(1, accepted), 2), "wall_s": round(wall, 1),
            "rows_per_min_wall": round(60 * accepted / wall, 2), "rejected_by_reason": summary["rejected_by_reason"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/realq/corpus"))
    parser.add_argument("--factoid", type=int, default=24, help="answer-first rows to build on (first phase)")
    parser.add_argument("--count", type=int, default=8, help="multi-hop rows wanted (second phase)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="the multi-hop rows as JSON lines, for labelling")
    parser.add_argument("--approve-factoid", action="store_true", help="approve the kept factoid rows (no review)")
    args = parser.parse_args()
    project = Path(tempfile.mkdtemp()) / "multihop.curator"
    print(f"project: {project}  load: {open('/proc/loadavg').read().split()[:3]}", flush=True)
    db = open_project(project, create=True)
    ingest(db, [args.corpus])
    figures = [phase(db, "factoid", args.factoid, args.seed)]
    if args.approve_factoid:
        from curator.core.review.decisions import decide

        for (query_id,) in db.execute("SELECT id FROM queries WHERE query_type = 'factoid'").fetchall():
            decide(db, query_id, "approve", "bench (not reviewed)")
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
