"""Benchmark `curator cluster` as a user runs it: a fresh process per call (``--embedder``: the default
unless given; ``--embedder static`` times the distilled static model).

Each call is timed end to end (interpreter start, imports, embedding, UMAP in its worker, KMeans,
labels), on projects of pydoc sentences (bench/cluster.py's pool):
  1. numba's on-disk cache empty (a new machine), fresh project: the JIT is paid;
  2. the cache filled by call 1, another fresh project: what every later first run costs;
  3. the same project again: its vectors are cached in the project too;
  4. optionally a fresh project of --large queries with the cache filled (the 10k figure).
The cache of call 1 is a temporary NUMBA_CACHE_DIR, so the user's own cache is never touched.
Usage:
    .venv/bin/python bench/cluster_cli.py [--size 1000] [--large 10000] [--embedder static] [--only-large]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster import sentences  # noqa: E402

from curator.core.queries.rows import add_query  # noqa: E402
from curator.core.store import open_project  # noqa: E402


def make_project(path: Path, size: int) -> Path:
    db = open_project(path, create=True)
    with db.conn:
        for text, _ in sentences(size):
            add_query(db, text, "manual")
    db.close()
    return path


def timed_cluster(project: Path, env: dict, embedder: str = "default") -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "curator", "cluster", str(project), "--embedder", embedder],
                          env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"curator cluster failed:\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10000, help="0 skips the large run")
    parser.add_argument("--embedder", default="default", help="passed to curator cluster --embedder")
    parser.add_argument("--only-large", action="store_true",
                        help="skip calls 1-3; call 4 runs with the user's own numba cache (warm)")
    args = parser.parse_args()
    emb = args.embedder
    print(f"load average at start: {os.getloadavg()}; cores: {os.cpu_count()}; embedder: {emb}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "numba")}
        if args.only_large:
            env = dict(os.environ)
        else:
            first = make_project(tmp / "a.curator", args.size)
            print(f"1. empty numba cache, fresh project, n={args.size}: {timed_cluster(first, env, emb):.1f} s")
            second = make_project(tmp / "b.curator", args.size)
            print(f"2. numba cache filled, fresh project, n={args.size}: {timed_cluster(second, env, emb):.1f} s")
            print(f"3. same project again (vectors cached), n={args.size}: {timed_cluster(second, env, emb):.1f} s")
        if args.large:
            large = make_project(tmp / "c.curator", args.large)
            print(f"4. numba cache filled, fresh project, n={args.large}: {timed_cluster(large, env, emb):.1f} s")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
