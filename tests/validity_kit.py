"""A project with scripted synthetic and log slices for the validity tests (``import validity_kit``).

Real SQLite through core functions: the sample corpus ingested, synthetic rows added and
approved, log rows imported with import_log and approved with their gold chunk; then one TREC
run file per made-up retriever, which puts the gold chunk first for a chosen share of each
slice's queries and nowhere for the rest, so each slice's ranking is known in advance.
"""

from __future__ import annotations

import json
from pathlib import Path

from curator.core.queries.logs import import_log
from curator.core.queries.rows import add_query, make_query_id
from curator.core.review.decisions import decide

PER_SLICE = 20
# Share of each slice's queries whose gold chunk a run finds at rank 1.
AGREE = {"alpha": (0.9, 0.8), "beta": (0.6, 0.5), "gamma": (0.3, 0.2)}  # (synthetic, log)
DISAGREE = {"alpha": (0.9, 0.2), "beta": (0.6, 0.5), "gamma": (0.3, 0.8)}


def _chunk_ids(db) -> list[str]:
    return [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id")]


def _words(db, chunk_id: str, start: int, count: int) -> str:
    """Some words of the chunk, so that built-in retrievers find it more or less well."""
    text = db.execute("SELECT text FROM chunks WHERE id = ?", [chunk_id]).fetchone()[0]
    return " ".join(text.split()[start:start + count])


def add_slices(db, tmp_path: Path, per_slice: int = PER_SLICE, with_log: bool = True) -> dict[str, list[tuple]]:
    """Approved synthetic (factoid) and log rows, each with its own gold chunk: {source: [(qid, gold)]}."""
    chunks = _chunk_ids(db)
    slices: dict[str, list[tuple]] = {"synthetic": [], "log": []}
    for i in range(per_slice):
        gold = chunks[i]
        with db.conn:
            qid = add_query(db, f"{_words(db, gold, 4, 4)} (synthetic {i})", "synthetic", query_type="factoid",
                            source_chunk_ids=[gold], gold_chunk_ids=[gold])
        decide(db, qid, "approve", "ana")
        slices["synthetic"].append((qid, gold))
    if not with_log:
        return slices
    log = tmp_path / "queries.jsonl"
    texts = [f"{_words(db, chunks[per_slice + i], 12, 2)} (user {i})" for i in range(per_slice)]  # vaguer
    log.write_text("".join(json.dumps({"query": text}) + "\n" for text in texts))
    import_log(db, log)
    for i, text in enumerate(texts):
        gold = chunks[per_slice + i]
        qid = make_query_id("log", text)
        decide(db, qid, "approve", "ana", gold=[gold])
        slices["log"].append((qid, gold))
    return slices


def write_runs(slices: dict[str, list[tuple]], shares: dict[str, tuple[float, float]], folder: Path,
               decoy: str) -> dict[str, str]:
    """One TREC run file per retriever: gold at rank 1 for the first share of each slice, else a decoy."""
    runs = {}
    for name, (syn_share, log_share) in shares.items():
        lines = []
        for source, share in (("synthetic", syn_share), ("log", log_share)):
            members = slices[source]
            for i, (qid, gold) in enumerate(members):
                doc = gold if i < round(share * len(members)) else decoy
                lines.append(f"{qid} Q0 {doc} 1 1.0 {name}")
        path = folder / f"{name}.trec"
        path.write_text("\n".join(lines) + "\n")
        runs[name] = str(path)
    return runs


def decoy_chunk(db) -> str:
    """A chunk that is nobody's gold (the last one)."""
    return _chunk_ids(db)[-1]
