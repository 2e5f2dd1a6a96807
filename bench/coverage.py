"""Does ``generate --target coverage`` put synthetic rows where the real queries are?

From one clustered project with real (log) queries, two copies get the same number of new rows
from the bundled model, one by a default run (chunks drawn across the corpus) and one aimed at the
under-covered clusters. Printed for the project as it was and for each copy: the share of real
queries whose cluster holds no synthetic row, and the share with no synthetic row among their 5
nearest queries. New rows are placed in the cluster of their nearest clustered query (the active
run is kept, so the clusters compared are the same ones).

Usage:
    .venv/bin/python bench/coverage.py PROJECT [--count 12] [--seed 0] [--out /tmp/cov-bench]

Measured (2026-12-05, bundled model, 2 cores shared with other jobs, load ~13): a demo project
(``curator demo --count 6``: the sample corpus, 6 generated rows, the 32-query sample log, 7
clusters), 12 rows asked per run, 9 accepted in each (both runs ended "exhausted" at 9):

    before            real in a cluster without synthetic rows 10/32 (31.2%), without a synthetic neighbour 6 (18.8%)
    default           real in a cluster without synthetic rows  5/32 (15.6%), without a synthetic neighbour 3 (9.4%)
    target coverage   real in a cluster without synthetic rows  0/32 (0.0%),  without a synthetic neighbour 0 (0.0%)

The Python FAQ set (bench/realq: 167 real questions, 12 generated rows, clustered by default into 5
clusters, every one of which already held a synthetic row), 12 rows asked and accepted per run:

    before            real in a cluster without synthetic rows 0/167 (0.0%), without a synthetic neighbour 132 (79.0%)
    default           real in a cluster without synthetic rows 0/167 (0.0%), without a synthetic neighbour 114 (68.3%)
    target coverage   real in a cluster without synthetic rows 0/167 (0.0%), without a synthetic neighbour 111 (66.5%)

There every cluster was under-covered by its neighbour gaps, so the aimed run spread over all five
in proportion to traffic and did little better than the default one; the cluster-level share only
separates the two where whole clusters lack synthetic rows (the demo).

The Debian FAQ (bench/realq/build_debian.py: 119 real questions imported as the log, 12 factoid rows
generated with seed 0, then ``curator cluster --k 12 --layout free``: about ten real questions a
cluster, near the FAQ's dozen chapters, so that whole clusters lack synthetic rows and the
cluster-level share can move; with 5 clusters on the Python FAQ it could not), 12 rows asked and
accepted per run (2026-12-05, load 6.5-4.5):

    before            real in a cluster without synthetic rows 60/119 (50.4%), without a synthetic neighbour 83 (69.8%)
    default           real in a cluster without synthetic rows 22/119 (18.5%), without a synthetic neighbour 57 (47.9%)
    target coverage   real in a cluster without synthetic rows 28/119 (23.5%), without a synthetic neighbour 54 (45.4%)

The aimed run planned its rows over the 11 under-covered clusters in proportion to traffic, but its
12 rows were placed (each in its nearest clustered query's cluster) in 5 clusters: 4 in cluster 5,
which was covered already, 3 each in 10 and 11, 1 each in 3 and 6 (the Clusters tab of the copy).
The questions written for the chunks suggested for a cluster's real queries sat nearer other
clusters' queries. Aiming beat the default on the neighbour share only (3 queries), one run each.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.core.clustering.coverage import coverage, target_chunks  # noqa: E402
from curator.core.generation.generate import GenerationConfig, generate  # noqa: E402
from curator.core.store import open_project  # noqa: E402


def copy_project(source: Path, target: Path) -> Path:
    """A consistent copy of a project file (its WAL included), through SQLite's backup."""
    target.unlink(missing_ok=True)
    with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


def line(name: str, r: dict) -> str:
    pct = lambda s: "n/a" if s is None else f"{100 * s:5.1f}%"  # noqa: E731
    return (f"{name:<18} synthetic {r['synthetic']:>4}  real {r['real']:>4}  "
            f"real in a cluster without synthetic rows {r['real_in_clusters_without_synthetic']:>3} "
            f"({pct(r['share_real_in_clusters_without_synthetic'])})  "
            f"without a synthetic neighbour {r['real_without_synthetic_neighbour']:>3} "
            f"({pct(r['share_real_without_synthetic_neighbour'])})  under-covered clusters {r['under_covered']}")


def run(project: Path, name: str, count: int, seed: int, aimed: bool) -> dict:
    db = open_project(project)
    try:
        config = GenerationConfig(count=count, seed=seed)
        if aimed:
            plan = target_chunks(db)
            config.chunk_ids = plan["chunk_ids"]
            print(f"  {name}: {len(plan['chunk_ids'])} chunks for {plan['queries']} real queries of clusters "
                  + ", ".join(f"{c['cluster']} ({100 * c['share']:.0f}%)" for c in plan["clusters"]), flush=True)
        started = time.perf_counter()
        summary = generate(db, config)
        print(f"  {name}: {summary['accepted_this_session']} rows in {time.perf_counter() - started:.0f} s "
              f"({summary['status']})", flush=True)
        return coverage(db)
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--count", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("/tmp/cov-bench"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    base = copy_project(args.project, args.out / "before.curator")
    db = open_project(base)
    before = coverage(db)
    db.close()
    results = {"before": before}
    for name, aimed in (("default", False), ("target coverage", True)):
        copy = copy_project(base, args.out / f"{name.replace(' ', '-')}.curator")
        results[name] = run(copy, name, args.count, args.seed, aimed)
    print(f"{args.project}: {args.count} rows per run, seed {args.seed}, cluster run {before['run_id']} "
          f"({len(before['clusters'])} clusters)")
    for name, r in results.items():
        print(line(name, r))


if __name__ == "__main__":
    main()
