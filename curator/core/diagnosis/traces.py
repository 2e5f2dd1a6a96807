"""Import a RAG system's traces (JSONL or CSV) and match each one to a query of the project.

Field names follow RAGAS (``user_input``, ``retrieved_contexts``, ``retrieved_context_ids``,
``response``, ``reference``, ``reference_context_ids``); ``question``/``query`` and ``answer``
work too. A trace is matched to a query row by query id, else by normalised text (an approved
row first); an unmatched trace is kept and its question added as a log query, so it can be
reviewed into the gold set. A trace's id is a hash of all its fields, so importing the same file
twice changes nothing and two traces that differ in any field stay two; bad lines are reported
as file:line and skipped.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Any, Optional

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError
from curator.core.queries.logs import _records
from curator.core.queries.rows import add_query, normalize_text
from curator.core.diagnosis.recall import ChunkMatcher, context_recall, uses_ids

QUESTION_FIELDS = ("user_input", "question", "query")
RESPONSE_FIELDS = ("response", "answer")
TRACE_ID_FIELDS = ("trace_id", "id", "run_id")
QUERY_ID_FIELDS = ("query_id", "qid")
TIMESTAMP_FIELDS = ("timestamp", "time", "created_at", "ts")


def _first(record: dict, names: tuple[str, ...]) -> Any:
    return next((record[n] for n in names if record.get(n) not in (None, "")), None)


def as_list(value: Any) -> list[str]:
    """A list field as strings: a JSON list, a Python list literal (RAGAS CSV) or one value."""
    if value in (None, ""):
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            for parse in (json.loads, ast.literal_eval):
                try:
                    value = parse(text)
                    break
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    continue
            else:
                raise ValueError("a list field is neither JSON nor a list literal")
        else:
            return [text]
    if not isinstance(value, list):
        raise ValueError(f"expected a list, got {type(value).__name__}")
    return [str(v) for v in value if v is not None and str(v) != ""]


# Fields that make two traces different although question, response and contexts are the same:
# two runs of one question (their own trace ids, timestamps) are two traces, not one.
IDENTITY_FIELDS = ("external_id", "query_ref", "reference", "reference_ids", "timestamp")


def trace_id(trace: dict) -> str:
    """Stable id from everything a parsed trace says: the same run imported twice is one row,
    and traces that differ in any field (their query id, own id, reference or timestamp too) are
    two. A trace with none of the IDENTITY_FIELDS keeps the id it had before they counted."""
    extras = _identity_extras(trace)
    return _hash_id(_content(trace) + ([extras] if extras else []))


def _content(trace: dict) -> list:
    return [normalize_text(trace["question"]), trace["response"], trace["retrieved_ids"], trace["retrieved_texts"]]


def _identity_extras(trace: dict) -> dict:
    return {name: trace[name] for name in IDENTITY_FIELDS if trace.get(name) not in (None, "", [])}


def _hash_id(payload: list) -> str:
    return "t_" + hashlib.sha1(store.dumps(payload).encode("utf-8")).hexdigest()[:16]


def _imported_before(db: sqlite_utils.Database, trace: dict) -> bool:
    """Whether this trace is stored already: under its id, or under the content-only id that
    imports before the identity fields counted gave it, with the same fields stored."""
    if db.execute("SELECT 1 FROM traces WHERE id = ?", [trace_id(trace)]).fetchone():
        return True
    old = store.rows(db, "SELECT external_id, query_id, matched_by, reference, reference_ids, timestamp FROM traces "
                         "WHERE id = ?", [_hash_id(_content(trace))])
    if not old:
        return False
    row = old[0]
    # The query id a trace named is stored only when it matched a query. An old row whose query id
    # matched nothing cannot be told from one without: it counts as without, so such a trace may
    # be imported once more rather than a new trace with that query id be taken for it.
    query_ref = row["query_id"] if row["matched_by"] == "query_id" else None
    stored = {"external_id": row["external_id"], "query_ref": query_ref, "reference": row["reference"],
              "reference_ids": store.loads(row["reference_ids"], []), "timestamp": row["timestamp"]}
    return _identity_extras(stored) == _identity_extras(trace)


def parse_trace(record: dict) -> dict:
    """The fields of one trace record; raises ValueError naming what is wrong."""
    record = {str(k).lower(): v for k, v in record.items()}
    question = _first(record, QUESTION_FIELDS)
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"no question (looked for {', '.join(QUESTION_FIELDS)})")
    response = _first(record, RESPONSE_FIELDS) or ""
    if not isinstance(response, str):
        raise ValueError("the response is not text")
    ids, texts = as_list(record.get("retrieved_context_ids")), as_list(record.get("retrieved_contexts"))
    reference = record.get("reference")
    return {"question": question.strip(), "response": response.strip(), "retrieved_ids": ids, "retrieved_texts": texts,
            "reference": reference if isinstance(reference, str) else None,
            "reference_ids": as_list(record.get("reference_context_ids")),
            "external_id": _opt_str(_first(record, TRACE_ID_FIELDS)),
            "query_ref": _opt_str(_first(record, QUERY_ID_FIELDS)),
            "timestamp": _opt_str(_first(record, TIMESTAMP_FIELDS))}


def _opt_str(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def match_query(db: sqlite_utils.Database, trace: dict) -> tuple[Optional[dict], str]:
    """(query row, how) for a trace: by its query id, else by normalised text, approved rows first."""
    if trace["query_ref"]:
        row = store.rows(db, "SELECT id, status, gold_chunk_ids FROM queries WHERE id = ?", [trace["query_ref"]])
        if row:
            return row[0], "query_id"
    found = store.rows(db, "SELECT id, status, gold_chunk_ids FROM queries WHERE text_norm = ? "
                           "ORDER BY status = 'approved' DESC, created_at LIMIT 1", [normalize_text(trace["question"])])
    return (found[0], "text") if found else (None, "none")


def gold_ids_for(query: Optional[dict], reference_ids: list[str]) -> tuple[list[str], str]:
    """The reference chunk ids recall is measured against, and where they came from: the
    reviewed gold set first, else the trace's own ``reference_context_ids``."""
    if query and query["status"] == "approved":
        gold = store.loads(query["gold_chunk_ids"], [])
        if gold:
            return gold, "gold set"
    if reference_ids:
        return reference_ids, "trace reference_context_ids"
    return [], "none"


def trace_gold(db: sqlite_utils.Database, trace: dict) -> tuple[list[str], str]:
    """gold_ids_for a stored trace, read from its query's row as it is now."""
    found = store.rows(db, "SELECT id, status, gold_chunk_ids FROM queries WHERE id = ?", [trace["query_id"]])
    return gold_ids_for(found[0] if found else None, store.loads(trace["reference_ids"], []))


def import_traces(db: sqlite_utils.Database, path, matcher: Optional[ChunkMatcher] = None) -> dict:
    """Import one traces file; returns counts and the file:line messages of skipped lines."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such traces file.")
    errors: list[str] = []
    matcher = matcher or ChunkMatcher(db)
    counts = {"file": str(path), "lines_read": 0, "imported": 0, "unchanged": 0,
              "matched_by_id": 0, "matched_by_text": 0, "unmatched": 0, "errors": errors}
    records = 0
    for number, record in _records(path, errors):  # streamed: the reader adds its messages to errors
        records += 1
        try:
            trace = parse_trace(record)
        except ValueError as exc:
            errors.append(f"{path}:{number}: {exc}; line skipped.")
            continue
        _store_trace(db, path, number, trace, matcher, counts)
    # Lines the reader skipped never became records; its other messages (a decoding note) skip nothing.
    counts["skipped"] = sum(message.endswith("line skipped.") for message in errors)
    counts["lines_read"] = counts["imported"] + counts["unchanged"] + counts["skipped"]
    return counts


def _store_trace(db, path: Path, number: int, trace: dict, matcher: ChunkMatcher, counts: dict) -> None:
    if _imported_before(db, trace):
        counts["unchanged"] += 1
        return
    tid = trace_id(trace)
    with db.conn:  # each trace (and the log query it may add) commits on its own
        query, how = match_query(db, trace)
        if query is None:
            qid = add_query(db, trace["question"], "log", query_type="log",
                            metadata={"trace_file": path.name, "line": number, "trace_id": tid})
            query = {"id": qid, "status": "pending", "gold_chunk_ids": "[]"}
        counts[{"query_id": "matched_by_id", "text": "matched_by_text", "none": "unmatched"}[how]] += 1
        gold, basis = gold_ids_for(query, trace["reference_ids"])
        matches = [] if trace["retrieved_ids"] else matcher.match_all(trace["retrieved_texts"])
        retrieved = trace["retrieved_ids"] or [m["chunk_id"] for m in matches if m["chunk_id"]]
        # without usable ids, recall waits for the judge (the reference answer's statements)
        recall = context_recall(gold, retrieved) if uses_ids(gold, retrieved, trace["retrieved_texts"]) else None
        db.execute(
            """INSERT INTO traces (id, external_id, query_id, matched_by, question, response, reference,
                   retrieved_ids, retrieved_texts, context_matches, reference_ids, context_recall, recall_basis,
                   source_file, line, timestamp, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
            [tid, trace["external_id"], query["id"], how, trace["question"], trace["response"], trace["reference"],
             store.dumps(retrieved), store.dumps(trace["retrieved_texts"]), store.dumps(matches),
             store.dumps(trace["reference_ids"]), recall, basis, path.name, number, trace["timestamp"], store.now()],
        )
    counts["imported"] += 1
