"""Does the 2-D map read as clusters? Silhouette of the map by cluster label, before and after.

"free" is the map as it was: an unsupervised 2-D UMAP of the embeddings, independent of the
KMeans fit, so one cluster's colour was scattered over the map. "clusters" (the default now)
lays the map out from the cluster fit: a 2-D UMAP supervised by the KMeans labels. Both runs use
the same embedder, seed and 5-D space, so KMeans gives the same labels and only the map differs
(the script checks that). The silhouette is computed on the stored 2-D points with those labels:
near 1 = compact separate regions, near 0 = overlapping, below 0 = scattered.

Sets: the demo project (sample corpus, bundled-model questions, the sample log) and the Python
FAQ real questions (bench/realq, 169 questions). Usage:
    .venv/bin/python bench/cluster_map.py [--realq /tmp/realq] [--demo-count 20] [--embedder default]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from curator.core.clustering.cluster import cluster_queries, shutdown_worker  # noqa: E402
from curator.core.demo import build_demo_project  # noqa: E402
from curator.core.queries.rows import add_query  # noqa: E402
from curator.core.store import open_project  # noqa: E402
from realq.load import ensure, questions  # noqa: E402


def labels_of(db, run_id: int) -> list[int]:
    return [r[0] for r in db.execute("SELECT cluster FROM query_clusters WHERE run_id = ? ORDER BY query_id", [run_id])]


def compare_layouts(db, name: str, embedder: str) -> None:
    results = {}
    for layout in ("free", "clusters"):
        started = time.perf_counter()
        results[layout] = cluster_queries(db, embedder=embedder, k="auto", seed=0, layout=layout)
        results[layout]["wall"] = time.perf_counter() - started
    free, aware = results["free"], results["clusters"]
    same = labels_of(db, free["run_id"]) == labels_of(db, aware["run_id"])
    n = db.execute("SELECT COUNT(*) FROM queries").fetchone()[0]
    print(f"{name}: {n} queries, k={aware['k']} ({aware['method']}, {aware['embedder']}), "
          f"same cluster labels in both runs: {same}")
    for layout, r in results.items():
        print(f"  map layout {layout:<8}: 2-D silhouette by cluster {r['map_silhouette']:+.3f}   "
              f"(cluster-space silhouette {r['silhouette']:.3f}; {r['wall']:.1f} s)")


def demo_set(folder: Path, count: int) -> object:
    path = folder / "demo.curator"
    build_demo_project(path, count=count)
    return open_project(path)


def realq_set(folder: Path, realq: Path) -> object:
    db = open_project(folder / "realq.curator", create=True)
    with db.conn:
        for q in questions(ensure(realq)):
            add_query(db, q["question"], "log")
    return db


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--realq", type=Path, default=Path("/tmp/realq"))
    parser.add_argument("--demo-count", type=int, default=20)
    parser.add_argument("--embedder", default="default")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for name, make in (("demo project", lambda: demo_set(Path(tmp), args.demo_count)),
                               ("Python FAQ real questions", lambda: realq_set(Path(tmp), args.realq))):
                db = make()
                compare_layouts(db, name, args.embedder)
                db.close()
        finally:
            shutdown_worker()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
