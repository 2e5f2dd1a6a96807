"""Where answer-first candidates are wasted: features known before the model is asked, against whether the
candidate was kept, mined from the stored candidates (accepted rows and rejected candidates) of projects.

Run from the repository root: PYTHONPATH=. .venv/bin/python bench/candidates.py PROJECT.curator [...]
[--labels bench/quality_labels*.jsonl]. Each project is read through SQLite's backup API into memory (never
its files: they may be in use). Only answer-first runs with the likelihood check count (the current checks);
the same candidate found in several copies of a project counts once. Prints, per corpus (named by what it
is about: "python", "debian"; leave held-out corpora's projects out, or ignore their lines), kept/asked
by query type, document kind (faq/ vs docs/), whether the chunk continues the section of the chunk before it
(generate.section_openers, the order SECTION_STARTS_FIRST gives answer-first questions), the answer sentence's
length, and with --labels the usable share of the labelled rows (validity.is_usable) by the same chunk feature.
Asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import json
import sqlite3
from pathlib import Path

from curator.core.generation.plan import section_openers, seldom_kept
from validity import is_usable, load_labels  # bench/ is on sys.path when run as bench/candidates.py

ANSWER_FIRST = ("factoid", "keyword", "vague")


def _in_memory(path: Path) -> sqlite3.Connection:
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    memory = sqlite3.connect(":memory:")
    source.backup(memory)
    source.close()
    return memory


def _corpus(db: sqlite3.Connection) -> str:
    """The corpus by what it is about (unanswerable.corpus_subject: "python", "debian", "zsh"...): the FAQ
    builders' folders look alike, and a held-out corpus must not be mixed into the tuning figures."""
    import sqlite_utils

    from curator.core.generation.unanswerable import corpus_subject

    return corpus_subject(sqlite_utils.Database(db)) or "unknown"


def _checked_runs(db: sqlite3.Connection) -> set[int]:
    """Answer-first runs whose answer-first questions passed the likelihood check."""
    runs = set()
    for run_id, params in db.execute("SELECT id, params FROM generation_runs"):
        params = json.loads(params or "{}")
        check = params.get("answer_check")
        if params.get("answers") == "extractive" and isinstance(check, dict) and check.get("likelihood"):
            runs.add(run_id)
    return runs


def candidates(path: Path, seen: set) -> list[dict]:
    """The project's answer-first candidates of checked runs, with what was known before asking."""
    db = _in_memory(path)
    try:
        runs = _checked_runs(db)
        docs = dict(db.execute("SELECT id, path FROM documents"))
        corpus = _corpus(db)
        doc_of = {cid: docs.get(doc, "") for cid, doc in db.execute("SELECT id, doc_id FROM chunks")}
        # generation's own definition (active chunks): a retired chunk's candidates have no section feature
        continues = {cid: not opens for cid, opens in section_openers(db).items()}
        asked = [(t, ids, text, ref, run, None) for t, ids, text, ref, run in db.execute(
            "SELECT query_type, source_chunk_ids, text, reference, run_id FROM queries WHERE source = 'synthetic'")]
        asked += db.execute("SELECT query_type, source_chunk_ids, text, reference, run_id, reason "
                            "FROM rejected_candidates").fetchall()
    finally:
        db.close()
    found = []
    for query_type, ids, text, reference, run, reason in asked:
        chunk_id = (json.loads(ids or "[]") or [None])[0]
        if query_type not in ANSWER_FIRST or run not in runs or chunk_id not in doc_of or not reference:
            continue
        key = (corpus, query_type, chunk_id, reference, text, reason)
        if key in seen:
            continue
        seen.add(key)
        found.append({"corpus": corpus, "type": query_type, "chunk": chunk_id, "kept": reason is None,
                      "kind": "faq" if "/faq/" in doc_of[chunk_id] else "docs",
                      "continues_section": continues.get(chunk_id), "seldom_kept": seldom_kept(query_type, reference),
                      "words": len(reference.split())})
    return found


def _table(name: str, rows: list[dict], key, value=lambda r: r["kept"]) -> None:
    counts = collections.defaultdict(lambda: [0, 0])
    for row in rows:
        k = key(row)
        if k is not None:
            counts[k][0] += value(row)
            counts[k][1] += 1
    print(f"  {name}: " + " | ".join(f"{k}: {a}/{n} ({a / n:.0%})" for k, (a, n) in
                                      sorted(counts.items(), key=lambda item: str(item[0]))))


def _length(words: int) -> str:
    return "8-15 words" if words < 16 else "16-23 words" if words < 24 else "24+ words"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("projects", nargs="+", type=Path)
    parser.add_argument("--labels", nargs="*", type=Path, default=[], help="labelled rows (quality_labels*.jsonl)")
    args = parser.parse_args()
    seen: set = set()
    rows = []
    for path in args.projects:
        try:
            rows += candidates(path, seen)
        except sqlite3.DatabaseError as error:  # not a project, or an older schema
            print(f"skipped {path}: {error}")
    for corpus in sorted({r["corpus"] for r in rows}):
        mine = [r for r in rows if r["corpus"] == corpus]
        print(f"{corpus}: {len(mine)} answer-first candidates, {sum(r['kept'] for r in mine)} kept")
        _table("by type", mine, lambda r: r["type"])
        _table("by document kind", mine, lambda r: r["kind"])
        _table("seldom kept (generate.seldom_kept)", mine, lambda r: r["seldom_kept"])
        asked_now = [r for r in mine if not r["seldom_kept"]]
        retired = sum(r["continues_section"] is None for r in asked_now)
        _table(f"chunk continues its section (not seldom kept; {retired} on retired chunks left out)", asked_now,
               lambda r: None if r["continues_section"] is None else (r["kind"], r["continues_section"]))
        _table("answer sentence length (not seldom kept)", asked_now, lambda r: _length(r["words"]))
    continues = {r["chunk"]: (r["corpus"], r["kind"], r["continues_section"]) for r in rows
                 if r["continues_section"] is not None}
    labelled = [row for path in args.labels for row in load_labels(path, code=None)]
    labelled = [r for r in labelled if r["query_type"] in ANSWER_FIRST and (r.get("source_chunk_ids") or [None])[0] in continues]
    if labelled:
        print(f"labelled answer-first rows from these projects' chunks: {len(labelled)}; usable by chunk continuing its section:")
        _table("usable", labelled, lambda r: continues[r["source_chunk_ids"][0]], is_usable)


if __name__ == "__main__":
    main()
