"""Log import benchmark: `import_log` of 50,000-line logs into a fresh project, and the record pass
alone (reading and splitting the lines, what a change to the CSV reader moves).

Logs: a plain CSV; a CSV where one record in 100 holds a quoted field of three lines; the CSV of
issue 43 (a header, one line opening a quote that never closes, then the queries); the same
queries as JSONL. Prints seconds (median of ``--rounds``) and lines per second. Never asserts.
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


def time_records(path: Path) -> tuple[float, int]:
    started = time.perf_counter()
    count = sum(1 for _ in logs._records(path, LineProblems()))
    return time.perf_counter() - started, count


def time_import(path: Path, folder: Path) -> tuple[float, dict]:
    project = folder / f"p{time.monotonic_ns()}.curator"
    db = open_project(project, create=True)
    started = time.perf_counter()
    result = logs.import_log(db, path)
    seconds = time.perf_counter() - started
    db.close()
    for leftover in folder.glob(project.name + "*"):
        leftover.unlink()
    return seconds, result


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
            parse = [time_records(path) for _ in range(args.rounds)]
            full = [time_import(path, folder) for _ in range(args.rounds)]
            parse_s, full_s = statistics.median(p[0] for p in parse), statistics.median(f[0] for f in full)
            result = full[-1][1]
            print(f"{name:15} records pass {parse_s:6.3f} s ({parse[-1][1]:,} records, {args.lines / parse_s:,.0f} "
                  f"lines/s); import {full_s:6.2f} s ({args.lines / full_s:,.0f} lines/s), imported "
                  f"{result['imported']:,}, skipped {result['skipped']:,}")


if __name__ == "__main__":
    main()
