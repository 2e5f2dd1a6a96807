"""Ingest benchmark on a corpus every machine has: pydoc topics and stdlib docstrings.

Prints MB/s, chunks/s, peak memory and the time of an all-unchanged re-ingest (and MB/s on a
BEIR-style corpus.jsonl of short passages), against a floor
measured in the same run that only reads the files and indexes their text in FTS5 (the least any
ingest here must do).
Target: >= 10 MB/s on the first ingest. Never asserts.

    .venv/bin/python bench/ingest.py [--mb 20] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import pkgutil
import pstats
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path

from curator.core.corpus.ingest import ingest
from curator.core.store import open_project

TARGET_MB_S = 10.0


def _stdlib_docs() -> list[tuple[str, str]]:
    """(name, text) for every importable stdlib module with a docstring (plus its members)."""
    docs = []
    skip = ("test", "idlelib", "tkinter", "turtle", "antigravity", "this", "lib2to3", "ensurepip")
    warnings.simplefilter("ignore")
    for info in pkgutil.iter_modules():
        name = info.name
        if name.startswith("_") or name in skip or name not in sys.stdlib_module_names:
            continue
        try:
            module = importlib.import_module(name)
        except Exception:
            continue
        parts = [f"# {name}\n\n{module.__doc__ or ''}"]
        for attr in sorted(dir(module)):
            doc = getattr(getattr(module, attr, None), "__doc__", None)
            if isinstance(doc, str) and len(doc) > 80 and not attr.startswith("_"):
                parts.append(f"## {attr}\n\n{doc}")
        if len(parts) > 1 or module.__doc__:
            docs.append((name, "\n\n".join(parts)))
    return docs


def write_corpus(root: Path, target_mb: float) -> int:
    """Write topics as .txt and module docs as .md/.txt, repeated (with a copy marker so
    every file is distinct) until the corpus reaches target_mb. Returns total bytes."""
    from pydoc_data.topics import topics

    base = [(f"topic_{k}", "txt", v) for k, v in topics.items()]
    base += [(f"mod_{n}", "md" if i % 2 else "txt", t) for i, (n, t) in enumerate(_stdlib_docs())]
    total, copy = 0, 0
    while total < target_mb * 1e6:
        folder = root / f"copy{copy:02d}"
        folder.mkdir(parents=True)
        for name, ext, text in base:
            data = f"Copy {copy} of {name}.\n\n{text}\n".encode("utf-8")
            (folder / f"{name}.{ext}").write_bytes(data)
            total += len(data)
        copy += 1
    return total


def write_jsonl_corpus(path: Path, target_mb: float) -> int:
    """A BEIR-style corpus.jsonl: passages of 30-90 words cut from the pydoc topics."""
    import json
    import random

    from pydoc_data.topics import topics

    words = " ".join(topics.values()).split()
    rng, total, number = random.Random(0), 0, 0
    with path.open("w", encoding="utf-8") as out:
        while total < target_mb * 1e6:
            start = rng.randrange(len(words) - 90)
            line = json.dumps({"_id": f"p{number}", "title": f"Passage {number}",
                               "text": " ".join(words[start : start + rng.randint(30, 90)])}) + "\n"
            out.write(line)
            total, number = total + len(line.encode("utf-8")), number + 1
    return total


def fts_floor(root: Path, path: Path) -> float:
    """Seconds to read every file and index its whole text in an FTS5 table (porter, as Curator)."""
    import sqlite3

    started = time.perf_counter()
    conn = sqlite3.connect(path)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(title, text, tokenize='porter')")
    with conn:
        conn.executemany("INSERT INTO t VALUES (?, ?)",
                         ((p.name, p.read_text("utf-8")) for p in sorted(root.rglob("*.*"))))
    conn.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0, help="corpus size to write (MB)")
    parser.add_argument("--profile", action="store_true", help="cProfile the first ingest, print top 25")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        started = time.perf_counter()
        size = write_corpus(root, args.mb)
        files = sum(1 for _ in root.rglob("*.*"))
        print(f"corpus: {files} files, {size / 1e6:.1f} MB, written in {time.perf_counter() - started:.1f} s")
        db = open_project(Path(tmp) / "bench.curator", create=True)
        profiler = cProfile.Profile() if args.profile else None
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        first = ingest(db, [root])
        if profiler:
            profiler.disable()
        seconds = time.perf_counter() - started
        rate = size / 1e6 / seconds
        print(f"first ingest: {seconds:.2f} s, {rate:.2f} MB/s (target {TARGET_MB_S} MB/s: "
              f"{'met' if rate >= TARGET_MB_S else 'NOT met'}), {first.total_chunks} chunks, "
              f"{first.total_chunks / seconds:.0f} chunks/s, skipped {len(first.skipped)}")
        started = time.perf_counter()
        second = ingest(db, [root])
        print(f"re-ingest: {time.perf_counter() - started:.2f} s, unchanged {second.files_unchanged}/"
              f"{second.files_seen}, ingested {second.files_ingested}, chunks added {second.chunks_added}")
        db.close()
        floor = fts_floor(root, Path(tmp) / "floor.sqlite")
        print(f"reference, floor (read + FTS5 insert of each file's text, one transaction): {floor:.2f} s, "
              f"{size / 1e6 / floor:.2f} MB/s; ingest takes {seconds / floor:.1f}x the floor")
        jsonl = Path(tmp) / "corpus.jsonl"
        jsonl_size = write_jsonl_corpus(jsonl, args.mb)
        db = open_project(Path(tmp) / "beir.curator", create=True)
        started = time.perf_counter()
        beir = ingest(db, [jsonl])
        seconds = time.perf_counter() - started
        print(f"BEIR-style corpus.jsonl: {beir.total_documents} passages, {jsonl_size / 1e6:.1f} MB in {seconds:.2f} s, "
              f"{jsonl_size / 1e6 / seconds:.2f} MB/s, {beir.total_chunks / seconds:.0f} chunks/s")
        db.close()
        db = open_project(Path(tmp) / "bench.curator")
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux
        print(f"peak memory (ru_maxrss): {peak_kb / 1024:.0f} MB")
        db.close()
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
