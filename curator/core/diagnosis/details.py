"""One trace as a reviewer reads it: query, gold chunks, retrieved chunks (gold marked), claims."""

from __future__ import annotations

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError
from curator.core.diagnosis.faithfulness import claim_verdicts, trace_contexts
from curator.core.diagnosis.traces import gold_ids_for


def _chunk_texts(db: sqlite_utils.Database, ids: list[str]) -> dict[str, str]:
    if not ids:
        return {}
    return dict(db.execute(f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids))


def trace_detail(db: sqlite_utils.Database, trace_id: str) -> dict:
    found = store.rows(db, "SELECT * FROM traces WHERE id = ?", [trace_id])
    if not found:
        raise InputError(f"no trace with id {trace_id!r}")
    trace = found[0]
    query = store.rows(db, "SELECT id, status, gold_chunk_ids FROM queries WHERE id = ?", [trace["query_id"]])
    gold, basis = gold_ids_for(query[0] if query else None, store.loads(trace["reference_ids"], []))
    retrieved_ids = store.loads(trace["retrieved_ids"], [])
    matches = store.loads(trace["context_matches"], [])
    texts = _chunk_texts(db, gold + retrieved_ids)
    contexts = trace_contexts(db, trace)
    retrieved = []
    for i, text in enumerate(contexts):
        chunk_id = matches[i]["chunk_id"] if matches else (retrieved_ids[i] if i < len(retrieved_ids) else None)
        retrieved.append({"rank": i + 1, "chunk_id": chunk_id, "text": text, "gold": chunk_id in gold,
                          "matched": matches[i]["how"] if matches else "id"})
    return {"id": trace_id, "question": trace["question"], "query_id": trace["query_id"],
            "matched_by": trace["matched_by"], "response": trace["response"], "reference": trace["reference"],
            "context_recall": trace["context_recall"], "faithfulness": trace["faithfulness"],
            "recall_basis": basis, "human_label": trace["human_label"],
            "gold": [{"chunk_id": cid, "text": texts.get(cid, "(not in this corpus)")} for cid in gold],
            "retrieved": retrieved, "claims": claim_verdicts(db, trace_id)}
