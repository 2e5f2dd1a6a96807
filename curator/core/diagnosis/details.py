"""One trace as a reviewer reads it: query, gold chunks, retrieved chunks (gold marked), claims (with
the evidence sentence and probability of the default judge, and how the response was split) and the
reference statements its recall was judged from."""

from __future__ import annotations

import sqlite_utils

from curator.core import store
from curator.core.corpus.documents import chunk_texts
from curator.core.errors import InputError
from curator.core.diagnosis.claims import explain_split
from curator.core.diagnosis.faithfulness import REFERENCE, claim_verdicts, needs_statements, statement_recall
from curator.core.diagnosis.traces import trace_gold


NOT_IN_CORPUS = "(not in this corpus)"


def _retrieved(db: sqlite_utils.Database, trace: dict, gold: list[str]) -> list[dict]:
    """The retrieved contexts in rank order, each with the chunk it is (or was matched to)."""
    retrieved_ids = store.loads(trace["retrieved_ids"], [])
    matches = store.loads(trace["context_matches"], [])
    texts = store.loads(trace["retrieved_texts"], [])
    if not texts:  # ids only: every id keeps its rank, an id the corpus lacks says so
        known = chunk_texts(db, retrieved_ids)
        return [{"rank": i + 1, "chunk_id": cid, "text": known.get(cid, NOT_IN_CORPUS), "gold": cid in gold,
                 "matched": "id" if cid in known else "unknown id"} for i, cid in enumerate(retrieved_ids)]
    out = []
    for i, text in enumerate(texts):
        chunk_id = matches[i]["chunk_id"] if matches else (retrieved_ids[i] if i < len(retrieved_ids) else None)
        out.append({"rank": i + 1, "chunk_id": chunk_id, "text": text, "gold": chunk_id in gold,
                    "matched": matches[i]["how"] if matches else "id"})
    return out


def trace_detail(db: sqlite_utils.Database, trace_id: str) -> dict:
    found = store.rows(db, "SELECT * FROM traces WHERE id = ?", [trace_id])
    if not found:
        raise InputError(f"no trace with id {trace_id!r}")
    trace = found[0]
    gold, basis = trace_gold(db, trace)
    recall = trace["context_recall"]
    if needs_statements(db, trace):
        recall, basis = statement_recall(db, trace_id)  # from the statements as judged now, never a stale copy
    texts = chunk_texts(db, gold)
    return {"id": trace_id, "question": trace["question"], "query_id": trace["query_id"],
            "matched_by": trace["matched_by"], "response": trace["response"], "reference": trace["reference"],
            "context_recall": recall, "faithfulness": trace["faithfulness"],
            "recall_basis": basis, "human_label": trace["human_label"],
            "gold": [{"chunk_id": cid, "text": texts.get(cid, NOT_IN_CORPUS)} for cid in gold],
            "retrieved": _retrieved(db, trace, gold), "claims": claim_verdicts(db, trace_id),
            "statements": claim_verdicts(db, trace_id, REFERENCE),
            # the rules that cut the response into claims, so a reviewer can check the split
            "claim_split": explain_split(trace["response"])}
