"""Benchmark clustering: 1k and 10k queries built from pydoc_data topics, labelled by topic area.

Prints seconds per step (embed, UMAP n-D, UMAP 2-D, KMeans, labels) cold and warm, peak memory
(RSS of this process and of the UMAP worker), ARI/NMI against the area labels, and each
embedder's throughput (texts/s, uncached). Usage:
    .venv/bin/python bench/cluster.py [--sizes 1000,10000] [--fast] [--embedders tfidf,minilm]
        [--quality-size 1000]
"cold" is the first fit in a fresh worker after ``warm_up()``; warm_up's own time is the JIT cost.
The machine is shared (2 cores, other jobs), so figures are noisy: run twice and quote both.
"""

from __future__ import annotations

import argparse
import re
import resource
import tempfile
import time
from pathlib import Path

from pydoc_data.topics import topics

from curator.core import store
from curator.core.clustering.cluster import cluster_queries, shutdown_worker, warm_up
from curator.core.queries.rows import add_query
from curator.core.store import open_project

AREAS = ["assignment", "exceptions", "for", "if", "import", "lambda", "numbers", "string-methods", "typesseq", "with"]


def sentences(n: int) -> list[tuple[str, str]]:
    """``n`` (text, area) pairs cycling sentences of distinct pydoc topics, made unique with a counter."""
    pools = {}
    for area in AREAS:
        parts = [s.strip() for s in re.split(r"(?<=[.:])\s+", " ".join(topics[area].split())) if 20 < len(s) < 200]
        pools[area] = parts
    out, i = [], 0
    while len(out) < n:
        area = AREAS[i % len(AREAS)]
        pool = pools[area]
        out.append((f"{pool[(i // len(AREAS)) % len(pool)]} #{i}", area))
        i += 1
    return out


def run(size: int, fast: bool, embedder: str = "tfidf", k=None) -> None:
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    with tempfile.TemporaryDirectory() as tmp:
        db = open_project(Path(tmp) / "b.curator", create=True)
        data = sentences(size)
        with db.conn:
            ids = [add_query(db, t, "manual") for t, _ in data]
        truth = dict(zip(ids, [a for _, a in data]))
        out = cluster_queries(db, embedder=embedder, k=k or ("auto" if size <= 1000 else len(AREAS)), seed=0, fast=fast)
        rows = store.rows(db, "SELECT query_id, cluster FROM query_clusters WHERE run_id=?", [out["run_id"]])
        ari = adjusted_rand_score([truth[r["query_id"]] for r in rows], [r["cluster"] for r in rows])
        nmi = normalized_mutual_info_score([truth[r["query_id"]] for r in rows], [r["cluster"] for r in rows])
        print(f"n={size} embedder={embedder} fast={fast} k={out['k']} total={out['seconds']}s steps={out['timings']} "
              f"ARI={ari:.3f} NMI={nmi:.3f}")
        db.close()


def short_queries(n: int) -> list[str]:
    """``n`` short user-style queries: the bundled sample log's queries, cycled with a counter."""
    import json

    log = Path(__file__).resolve().parents[1] / "curator" / "resources" / "sample_logs" / "queries.jsonl"
    base = [json.loads(line)["query"] for line in log.read_text().splitlines() if line.strip()]
    base = [b for b in base if b]
    return [f"{base[i % len(base)]} {i}" for i in range(n)]


def throughput(embedder: str, n: int = 1000, short: bool = False) -> None:
    """Uncached texts/s of one embedder on ``n`` texts (pydoc sentences, or short log-style queries)."""
    from curator.core.embedding.embed import get_embedder

    texts = short_queries(n) if short else [t for t, _ in sentences(n)]
    with tempfile.TemporaryDirectory() as tmp:
        db = open_project(Path(tmp) / "t.curator", create=True)
        with db.conn:
            for t in texts:
                add_query(db, t, "manual")
        start = time.perf_counter()
        emb = get_embedder(embedder, db)
        emb.embed_batch(texts[:8])  # model load / fit, reported separately
        load = time.perf_counter() - start
        start = time.perf_counter()
        emb.embed_batch(texts)
        secs = time.perf_counter() - start
        kind = "short queries" if short else "pydoc sentences"
        print(f"embedder={embedder} {kind} n={n} load/fit={load:.2f}s embed={secs:.2f}s -> {n / secs:.0f} texts/s")
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--fast", action="store_true")
    parser.add_argument("--embedders", default="tfidf,minilm", help="quality + throughput for each")
    parser.add_argument("--quality-size", type=int, default=1000)
    args = parser.parse_args()
    t = time.perf_counter()
    cold = warm_up()
    print(f"warm_up (cold JIT in fresh worker): {cold:.1f}s; again: {warm_up():.2f}s")
    for size in [int(s) for s in args.sizes.split(",") if s]:
        run(size, args.fast)
        run(size, args.fast)  # warm: same sizes again in the same worker
    for name in [e for e in args.embedders.split(",") if e]:
        throughput(name, args.quality_size)
        throughput(name, args.quality_size, short=True)
        run(args.quality_size, args.fast, name, k=len(AREAS))  # quality at the true number of areas
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    shutdown_worker()
    kids = max(kids, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    print(f"peak RSS main={rss:.0f}MB worker={kids:.0f}MB; wall {time.perf_counter() - t:.1f}s")


if __name__ == "__main__":
    main()
