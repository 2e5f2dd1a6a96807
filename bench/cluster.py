"""Benchmark clustering: 1k and 10k queries built from pydoc_data topics, labelled by topic area.

Prints seconds per step (embed, UMAP, KMeans, labels) cold and warm, peak memory (RSS of this
process and of the UMAP worker), and ARI/NMI against the area labels. Usage:
    .venv/bin/python bench/cluster.py [--sizes 1000,10000] [--fast]
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
from curator.core.cluster import cluster_queries, shutdown_worker, warm_up
from curator.core.queries import add_query
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


def run(size: int, fast: bool, embedder: str = "tfidf") -> None:
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    with tempfile.TemporaryDirectory() as tmp:
        db = open_project(Path(tmp) / "b.curator", create=True)
        data = sentences(size)
        with db.conn:
            ids = [add_query(db, t, "manual") for t, _ in data]
        truth = dict(zip(ids, [a for _, a in data]))
        out = cluster_queries(db, embedder=embedder, k="auto" if size <= 1000 else len(AREAS), seed=0, fast=fast)
        rows = store.rows(db, "SELECT query_id, cluster FROM query_clusters WHERE run_id=?", [out["run_id"]])
        ari = adjusted_rand_score([truth[r["query_id"]] for r in rows], [r["cluster"] for r in rows])
        nmi = normalized_mutual_info_score([truth[r["query_id"]] for r in rows], [r["cluster"] for r in rows])
        print(f"n={size} embedder={embedder} fast={fast} k={out['k']} total={out['seconds']}s steps={out['timings']} "
              f"ARI={ari:.3f} NMI={nmi:.3f}")
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--fast", action="store_true")
    args = parser.parse_args()
    t = time.perf_counter()
    cold = warm_up()
    print(f"warm_up (cold JIT in fresh worker): {cold:.1f}s; again: {warm_up():.2f}s")
    for size in [int(s) for s in args.sizes.split(",")]:
        run(size, args.fast)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    shutdown_worker()
    kids = max(kids, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    print(f"peak RSS main={rss:.0f}MB worker={kids:.0f}MB; wall {time.perf_counter() - t:.1f}s")


if __name__ == "__main__":
    main()
