"""Log import benchmark: `import_log` of 50,000-line logs into a fresh project, and the record pass
alone (reading and splitting the lines, what a change to the CSV reader moves).

Logs: a plain CSV; a CSV where one record in 100 holds a quoted field of three lines; the CSV of
issue 43 (a header, one line opening a quote that never closes, then the queries); the same
queries as JSONL. Prints wall and CPU seconds (median of ``--rounds``; CPU time moves less on a
loaded machine) and lines per second of wall time. Never asserts.
To compare two trees, run it from each (``PYTHONPATH=TREE``): the figures are for the tree imported.

    PYTHONPATH=. .venv/bin/python bench/import_log.py [--lines 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import curator
from curator.core.files import LineProblems
from curator.core.queries import logs
from curator.core.store import open_project


def write_logs(folder: Path, lines: int) -> dict[str, Path]:
    queries = [f"how do I configure option {i} of the mail server" for i in range(lines)]
    made = {"plain.csv": "query,feedback\n" + "".join(f"{q},{i % 2}\n" for i, q in enumerate(queries)),
            "multiline.csv": "query,feedback\n" + "".join(
                (f'"{q}\nsecond line\nthird line",{i % 2}\n' if i % 100 == 0 else f"{q},{i % 2}\n")
                for i, q in enumerate(queries)),
            "unclosed.csv": 'query,feedback\n"unclosed,1\n' + "".join(f"{q},{i % 2}\n" for i, q in enumerate(queries)),
            "plain.jsonl": "".join(json.dumps({"query": q, "feedback": i % 2}) + "\n" for i, q in enumerate(queries))}
    paths = {}
    for name, text in made.items():
        paths[name] = folder / name
        paths[name].write_text(text, encoding="utf-8")
    return paths


def timed(work) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds of this process, what ``work()`` returned)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = work()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def count_records(path: Path) -> int:
    return sum(1 for _ in logs._records(path, LineProblems()))


def import_into_new_project(path: Path, folder: Path) -> dict:
    project = folder / f"p{time.monotonic_ns()}.curator"
    db = open_project(project, create=True)
    try:
        return logs.import_log(db, path)
    finally:
        db.close()
        for leftover in folder.glob(project.name + "*"):
            leftover.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"tree {Path(curator.__file__).parent.parent}, {args.lines:,} lines, median of {args.rounds}, "
          f"load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, path in write_logs(folder, args.lines).items():
            parse = [timed(lambda: count_records(path)) for _ in range(args.rounds)]
            full = [timed(lambda: import_into_new_project(path, folder)) for _ in range(args.rounds)]
            parse_wall, parse_cpu = (statistics.median(p[i] for p in parse) for i in (0, 1))
            full_wall, full_cpu = (statistics.median(f[i] for f in full) for i in (0, 1))
            result = full[-1][2]
            print(f"{name:15} records pass {parse_wall:6.3f} s wall, {parse_cpu:6.3f} s CPU ({parse[-1][2]:,} records); "
                  f"import {full_wall:6.2f} s wall, {full_cpu:6.2f} s CPU ({args.lines / full_wall:,.0f} lines/s), "
                  f"imported {result['imported']:,}, skipped {result['skipped']:,}")

if __name__ == "__main__":
    main()
