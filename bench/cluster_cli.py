"""Benchmark `curator cluster` as a user runs it: a fresh process per call (``--embedder``: the default
unless given; ``--embedder static`` times the distilled static model).

Each call is timed end to end (interpreter start, imports, embedding, UMAP in its worker, KMeans,
labels), on projects of pydoc sentences (bench/cluster.py's pool, each labelled by its pydoc area):
  1. numba's on-disk cache empty (a new machine), fresh project: the JIT is paid;
  2. the cache filled by call 1, another fresh project: what every later first run costs;
  3. the same project again: its vectors are cached in the project too;
  4. optionally a fresh project of --large queries with the cache filled (the 10k figure).
The cache of call 1 is a temporary NUMBA_CACHE_DIR, so the user's own cache is never touched.
Each line gives the wall time, the step timings `curator cluster --json` reports (the rest of the
wall time is process start, imports and the UMAP worker's start) and ARI / NMI of the clusters
against the pydoc areas, so a speed change that costs quality shows.

``--ab DIR`` (repeatable) runs call 4 alternately with the code of each DIR (a checkout or
``git archive`` of another commit; the cwd of the call, so its ``curator`` is imported) and with this
tree, ``--repeat`` times: ratios within one run, on the same project size.
Usage:
    .venv/bin/python bench/cluster_cli.py [--size 1000] [--large 10000] [--embedder static] [--only-large]
        [--ab /tmp/base --repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's curator, not the installed one
from cluster import sentences  # noqa: E402

from curator.core.queries.rows import add_query  # noqa: E402
from curator.core.store import open_project, rows  # noqa: E402

HERE = Path(__file__).resolve().parent.parent


def make_project(path: Path, size: int) -> Path:
    db = open_project(path, create=True)
    with db.conn:
        for text, _ in sentences(size):
            add_query(db, text, "manual")
    db.close()
    return path


def agreement(project: Path, run_id: int, size: int) -> str:
    """ARI / NMI of the run's clusters against the pydoc area of each sentence."""
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    area = {text: a for text, a in sentences(size)}
    db = open_project(project)
    got = rows(db, "SELECT q.text, c.cluster FROM query_clusters c JOIN queries q ON q.id = c.query_id "
                   "WHERE c.run_id = ?", [run_id])
    db.close()
    truth, found = [area[r["text"]] for r in got], [r["cluster"] for r in got]
    return f"ARI={adjusted_rand_score(truth, found):.3f} NMI={normalized_mutual_info_score(truth, found):.3f}"


def timed_cluster(project: Path, env: dict, embedder: str = "default", code: Path = HERE) -> str:
    """One `curator cluster --json` call in a fresh process; its wall time, steps and agreement."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "curator", "cluster", str(project), "--embedder", embedder, "--json"],
                          env=env, capture_output=True, text=True, cwd=code)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"curator cluster failed:\n{done.stderr}")
    out = json.loads(done.stdout)
    steps = " ".join(f"{name}={value:.1f}" for name, value in out["timings"].items())
    size = out.get("n") or sum(out["sizes"])
    return (f"{seconds:.1f} s (in cluster_queries {out['seconds']:.1f} s: {steps}; k={out['k']}; "
            f"{agreement(project, out['run_id'], size)})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10000, help="0 skips the large run")
    parser.add_argument("--embedder", default="default", help="passed to curator cluster --embedder")
    parser.add_argument("--only-large", action="store_true",
                        help="skip calls 1-3; call 4 runs with the user's own numba cache (warm)")
    parser.add_argument("--ab", action="append", default=[], help="another code tree to alternate with (call 4)")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of call 4 (each tree once per round)")
    args = parser.parse_args()
    emb = args.embedder
    print(f"load average at start: {os.getloadavg()}; cores: {os.cpu_count()}; embedder: {emb}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "numba")}
        if args.only_large or args.ab:
            env = dict(os.environ)
        else:
            first = make_project(tmp / "a.curator", args.size)
            print(f"1. empty numba cache, fresh project, n={args.size}: {timed_cluster(first, env, emb)}", flush=True)
            second = make_project(tmp / "b.curator", args.size)
            print(f"2. numba cache filled, fresh project, n={args.size}: {timed_cluster(second, env, emb)}", flush=True)
            print(f"3. same project again (vectors cached), n={args.size}: {timed_cluster(second, env, emb)}", flush=True)
        if args.large:
            trees = [Path(p).resolve() for p in args.ab] + [HERE]
            for round_no in range(args.repeat):
                for tree in trees:
                    large = make_project(tmp / f"c{round_no}-{trees.index(tree)}.curator", args.large)
                    print(f"4. numba cache filled, fresh project, n={args.large}, code {tree}: "
                          f"{timed_cluster(large, env, emb, tree)}  [load {os.getloadavg()[0]:.1f}]", flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
