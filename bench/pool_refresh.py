"""Benchmark what keeping pools current after a re-ingest costs (curator.core.review.pool); prints
figures, asserts nothing.

On a copy of a real corpus (default the Python FAQ set, /tmp/realq, built by bench/realq/build.py)
with its real questions as rows:
1. pools every row with the four built-ins (bm25, tfidf, dense, hybrid): the first pool, which
   embeds every chunk once (the vectors are cached in the project);
2. ``--rounds`` times, alternating: edit one corpus file and re-ingest (what the user ran), then
   ``pool.refresh`` (what the Review tab's worker and ``curator pool`` run after it), and print
   each, with refresh / re-ingest and refresh / first pool as ratios measured in the same run;
3. times ``corpus_key`` (the check each shown row makes) against ``pool.pooled`` (what showing a
   row reads anyway).

Usage:
    nice -n 5 /work/main/.venv/bin/python bench/pool_refresh.py [--realq /tmp/realq] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.realq.load import questions  # noqa: E402
from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.queries.rows import add_query  # noqa: E402
from curator.core.review import pool  # noqa: E402
from curator.core.store import open_project  # noqa: E402
from curator.core.store.stats import corpus_key  # noqa: E402


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def _project(realq: Path, work: Path):
    corpus = work / "corpus"
    shutil.copytree(realq / "corpus", corpus)
    db = open_project(work / "bench.curator", create=True)
    ingest(db, [corpus])
    with db.conn:
        ids = [add_query(db, q["question"], "log") for q in questions(realq)]
    return db, corpus, ids


def _edit_one_file(corpus: Path, round_: int) -> Path:
    """Append a paragraph to the largest file: its chunks near the end change, the rest stay."""
    files = sorted((p for p in corpus.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    target = files[-1]
    with target.open("a", encoding="utf-8") as out:
        out.write(f"\n\nAdded in round {round_}: the interpreter also reads PYTHONSTARTUP before the "
                  "first prompt, so a startup file can import modules for interactive use.\n")
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--realq", type=Path, default=Path("/tmp/realq"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="pool-refresh-") as tmp:
        db, corpus, ids = _project(args.realq, Path(tmp))
        chunks = db.execute("SELECT COUNT(*) FROM chunks WHERE active = 1").fetchone()[0]
        print(f"{len(ids)} real questions, {chunks} chunks")
        first, result = _timed(pool.compute, db, ids, run_files=[])
        print(f"first pool of {result['queries']} rows ({', '.join(result['retrievers'])}): {first:.1f} s "
              "(embeds every chunk once)")
        rows = []
        for round_ in range(1, args.rounds + 1):
            edited = _edit_one_file(corpus, round_)
            reingest_s, report = _timed(ingest, db, [corpus])
            outdated = len(pool.outdated(db))
            refresh_s, refreshed = _timed(pool.refresh, db)
            rows.append((reingest_s, refresh_s))
            print(f"round {round_}: edited {edited.name} (+{report.chunks_added} -{report.chunks_retired} chunks); "
                  f"re-ingest {reingest_s:.2f} s; {outdated} pools out of date; refresh of "
                  f"{refreshed['queries']} rows {refresh_s:.2f} s; refresh/re-ingest {refresh_s / reingest_s:.1f}x; "
                  f"refresh/first pool {refresh_s / first:.4f}; load {os.getloadavg()[0]:.2f}")
        print(f"median refresh {statistics.median(r for _, r in rows):.2f} s, median re-ingest "
              f"{statistics.median(i for i, _ in rows):.2f} s over {len(rows)} rounds")
        key_s = min(_timed(lambda: [corpus_key(db) for _ in range(50)])[0] for _ in range(3)) / 50
        shown_s = min(_timed(lambda: [pool.pooled(db, qid) for qid in ids[:50]])[0] for _ in range(3)) / 50
        print(f"corpus_key per shown row {key_s * 1000:.2f} ms vs pool.pooled {shown_s * 1000:.2f} ms "
              f"({key_s / shown_s:.2f} of what showing the pool reads anyway)")
        print(f"load average at end: {os.getloadavg()}")
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
