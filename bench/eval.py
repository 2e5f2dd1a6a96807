"""Benchmark evaluation and export on a synthetic project (prints figures, asserts nothing).

Builds a project of ``--chunks`` chunks (three pydoc_data sentences each, fast executemany
inserts; the FTS5 triggers index them) and ``--rows`` approved gold queries, then prints:
- each built-in retriever's fit seconds and queries/second on ``--queries`` queries
  (targets: bm25 >= 200 q/s over 100k chunks), with the reference figure of the same
  queries through one raw FTS5 MATCH each (``SELECT rowid ... ORDER BY rank``);
- export seconds of the gold rows as JSONL, BEIR and TREC (target: JSONL of 100k rows <= 5 s),
  with the reference figure of a bare ``SELECT * FROM queries`` plus ``json.dumps`` per row.
Usage:
    .venv/bin/python bench/eval.py [--chunks 100000] [--rows 100000] [--queries 1000] [--fit-texts 10000]
        [--skip dense,hybrid,export]
The machine is shared (2 cores, other jobs), so wall-clock figures are noisy: each figure also
shows CPU seconds (process time) of this process, steadier under load. Run twice and quote both.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

from pydoc_data.topics import topics

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.core import store  # noqa: E402
from curator.core.export.writers import export  # noqa: E402
from curator.core.retrieval.retrievers import get_retriever  # noqa: E402
from curator.core.corpus.search import fts_query  # noqa: E402
from curator.core.store import open_project  # noqa: E402

CHUNKS_PER_DOC = 100


class Timer:
    """Wall and CPU seconds of a block: on a shared machine CPU time is the steadier of the two."""

    def __enter__(self) -> "Timer":
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu

    def __str__(self) -> str:
        return f"{self.wall:.2f} s (CPU {self.cpu:.2f} s)"


def sentences() -> list[str]:
    text = " ".join(" ".join(topics.values()).split())
    return [s for s in re.split(r"(?<=[.:])\s+", text) if 20 < len(s) < 300]


def build(db, n_chunks: int, n_rows: int, rng: random.Random) -> list[str]:
    """Documents, chunks and approved queries inserted in bulk; returns the chunk ids."""
    pool = sentences()
    now = store.now()
    docs = [(f"d_{i:08x}", f"docs/file{i}.md", f"File {i}", "md", f"h{i}", 0, "{}", "{}", now)
            for i in range((n_chunks + CHUNKS_PER_DOC - 1) // CHUNKS_PER_DOC)]
    chunks = [(f"c_{i:016x}", docs[i // CHUNKS_PER_DOC][0], i % CHUNKS_PER_DOC, f"Section {i % 997}",
               " ".join(rng.choice(pool) for _ in range(3)), 60) for i in range(n_chunks)]
    with db.conn:
        db.conn.executemany("INSERT INTO documents (id, path, title, format, content_hash, bytes, chunk_params, "
                            "metadata, ingested_at) VALUES (?,?,?,?,?,?,?,?,?)", docs)
        db.conn.executemany("INSERT INTO chunks (id, doc_id, ord, title, text, tokens) VALUES (?,?,?,?,?,?)", chunks)
        store.index_new_chunks(db, 0)  # as ingest does: chunks enter the full-text index in bulk
    ids = [c[0] for c in chunks]
    rows = []
    for i in range(n_rows):
        gold = rng.sample(ids, 2)
        text = " ".join(rng.sample(pool[i % len(pool)].split(), min(6, len(pool[i % len(pool)].split()))))
        rows.append((f"q_{i:016x}", f"{text} {i}", f"{text.lower()} {i}", "factoid", "synthetic", 1, "an answer",
                     json.dumps(gold), json.dumps(gold), json.dumps({g: 1 for g in gold}), "approved", "ana", now,
                     now))
    with db.conn:
        db.conn.executemany("INSERT INTO queries (id, text, text_norm, query_type, source, answerable, reference, "
                            "source_chunk_ids, gold_chunk_ids, gold_grades, status, reviewer, reviewed_at, "
                            "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    return ids


def query_texts(n: int, rng: random.Random) -> list[str]:
    """Six words of a random sentence each: common words included, as real queries have them."""
    pool = sentences()
    out = []
    for _ in range(n):
        words = re.findall(r"\w+", rng.choice(pool))
        out.append(" ".join(rng.sample(words, min(6, len(words)))))
    return out


def rates(n: int, timer: Timer) -> str:
    return f"{n / timer.wall:.1f} q/s (per CPU second {n / max(timer.cpu, 1e-9):.1f})"


def raw_fts_rate(db, texts: list[str], depth: int = 100) -> str:
    with Timer() as timer:
        for text in texts:
            db.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
                       [fts_query(text), depth]).fetchall()
    return rates(len(texts), timer)


def shared_embedder(db, n_texts: int):
    """The tfidf (LSA) embedder fitted on a sample of the chunk texts.

    get_embedder("tfidf", db) fits on every query and chunk (200k texts here, minutes of char
    n-gram TF-IDF + SVD); the search cost measured below does not depend on the fitting sample.
    """
    from curator.core.embedding.embed import TfidfEmbedder

    texts = [r[0] for r in db.execute("SELECT text FROM chunks ORDER BY id LIMIT ?", [n_texts])]
    with Timer() as timer:
        embedder = TfidfEmbedder().fit(texts)
    print(f"dense embedder: tfidf/LSA fitted on {len(texts)} chunk texts in {timer}")
    return embedder


def bench_retrievers(db, texts: list[str], skip: set[str], n_chunks: int, fit_texts: int) -> None:
    reference = texts[:100]
    embedder = shared_embedder(db, fit_texts) if {"dense", "hybrid"} - skip else None
    for name in ("bm25", "fts5", "tfidf", "dense", "hybrid"):
        if name in skip:
            continue
        queries = reference if name == "fts5" else texts  # fts5 is the slow reference: fewer queries
        with Timer() as fit:
            retriever = get_retriever(name, db, embedder)
        with Timer() as search:
            run = retriever.search({str(i): q for i, q in enumerate(queries)}, 100)
        found = sum(1 for hits in run.values() if hits) / len(run)
        print(f"{name}: fit {fit}, search {rates(len(queries), search)} over {n_chunks} chunks "
              f"({len(queries)} queries, depth 100, {found:.0%} with hits)")
        if name == "dense":  # second fit: chunk vectors come from the project's embedding cache
            with Timer() as refit:
                get_retriever(name, db, embedder)
            print(f"dense: refit with cached vectors {refit}")
    # After the retrievers, so that both read a warm page cache.
    print(f"reference: raw FTS5 MATCH loop (SELECT rowid ... ORDER BY rank LIMIT 100), {len(reference)} queries: "
          f"{raw_fts_rate(db, reference)}")


def bench_export(db, out: Path, n_rows: int) -> None:
    with Timer() as timer:
        cursor = db.execute("SELECT * FROM queries")
        names = [d[0] for d in cursor.description]
        n = len([json.dumps(dict(zip(names, row))) for row in cursor.fetchall()])
    print(f"reference: SELECT * FROM queries + json.dumps per row, {n} rows: {timer}")
    for fmt, target in (("jsonl", out / "gold.jsonl"), ("beir", out / "beir"), ("trec", out / "gold.qrels")):
        with Timer() as timer:
            manifest = export(db, target, fmt)
        print(f"export {fmt}: {manifest['rows']} rows in {timer}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--fit-texts", type=int, default=10_000, help="chunk texts the dense embedder is fitted on")
    parser.add_argument("--skip", default="", help="comma-separated retrievers (or export) not to run, e.g. dense,hybrid")
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        db = open_project(Path(tmp) / "bench.curator", create=True)
        with Timer() as timer:
            build(db, args.chunks, args.rows, rng)
        print(f"built {args.chunks} chunks and {args.rows} approved queries in {timer}")
        skip = set(filter(None, args.skip.split(",")))
        if "export" not in skip:  # first: the dense retriever adds 200k cached vectors to the file
            bench_export(db, Path(tmp), args.rows)
        bench_retrievers(db, query_texts(args.queries, rng), skip, args.chunks, args.fit_texts)
        db.close()


if __name__ == "__main__":
    main()
