"""One trace as a reviewer reads it: query, gold chunks, retrieved chunks (gold marked), claims and
the reference statements its recall was judged from."""

from __future__ import annotations

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError
from curator.core.diagnosis.faithfulness import REFERENCE, claim_verdicts, statement_recall, trace_contexts
from curator.core.diagnosis.recall import uses_ids
from curator.core.diagnosis.traces import trace_gold


def _chunk_texts(db: sqlite_utils.Database, ids: list[str]) -> dict[str, str]:
    if not ids:
        return {}
    return dict(db.execute(f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids))


def trace_detail(db: sqlite_utils.Database, trace_id: str) -> dict:
    found = store.rows(db, "SELECT * FROM traces WHERE id = ?", [trace_id])
    if not found:
        raise InputError(f"no trace with id {trace_id!r}")
    trace = found[0]
    gold, basis = trace_gold(db, trace)
    retrieved_ids = store.loads(trace["retrieved_ids"], [])
    if not uses_ids(gold, retrieved_ids, store.loads(trace["retrieved_texts"], [])):
        basis = statement_recall(db, trace_id)[1]
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
            "retrieved": retrieved, "claims": claim_verdicts(db, trace_id),
            "statements": claim_verdicts(db, trace_id, REFERENCE)}
