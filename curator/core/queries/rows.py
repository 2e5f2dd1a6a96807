"""Query rows: stable ids, normalisation, insertion and listing, shared by every source."""

from __future__ import annotations

import hashlib
import re
from typing import Iterable, Optional

import sqlite_utils

from curator.core import store

SOURCES = ("synthetic", "log", "manual")
QUERY_TYPES = ("factoid", "keyword", "vague", "multi_hop", "unanswerable", "log", "manual")
_WORD = re.compile(r"\w+")


def normalize_text(text: str) -> str:
    """Lower case words joined by single spaces: the key for exact de-duplication."""
    return " ".join(_WORD.findall((text or "").lower()))


def make_query_id(source: str, text: str) -> str:
    """Stable id from source and normalised text, so copies of a project agree on ids."""
    digest = hashlib.sha1(f"{source}\x00{normalize_text(text)}".encode("utf-8")).hexdigest()
    return "q_" + digest[:16]


def add_query(
    db: sqlite_utils.Database,
    text: str,
    source: str,
    *,
    query_type: Optional[str] = None,
    answerable: bool = True,
    reference: Optional[str] = None,
    source_chunk_ids: Iterable[str] = (),
    gold_chunk_ids: Iterable[str] = (),
    run_id: Optional[int] = None,
    raw_output: Optional[str] = None,
    metadata: Optional[dict] = None,
    frequency: int = 1,
    negative_count: int = 0,
) -> str:
    """Insert a query (no transaction of its own: callers commit); returns its id.

    An existing row with the same id is left as it is (re-runs never duplicate rows).
    """
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}")
    query_id = make_query_id(source, text)
    gold = list(dict.fromkeys(gold_chunk_ids))
    db.execute(
        """INSERT OR IGNORE INTO queries (id, text, text_norm, query_type, source, answerable, reference,
               source_chunk_ids, gold_chunk_ids, gold_grades, run_id, raw_output, status, metadata,
               frequency, negative_count, created_at)
           VALUES (?,?,?,?,?,?,?,?,?,?,?,?,'pending',?,?,?,?)""",
        [query_id, text.strip(), normalize_text(text), query_type or source, source, int(bool(answerable)), reference,
         store.dumps(list(source_chunk_ids)), store.dumps(gold), store.dumps({c: 1 for c in gold}), run_id,
         raw_output, store.dumps(metadata or {}), frequency, negative_count, store.now()],
    )
    return query_id


def get_query(db: sqlite_utils.Database, query_id: str) -> Optional[dict]:
    found = list_queries(db, ids=[query_id])
    return found[0] if found else None


def list_queries(
    db: sqlite_utils.Database,
    status: Optional[str] = None,
    query_type: Optional[str] = None,
    source: Optional[str] = None,
    ids: Optional[list[str]] = None,
) -> list[dict]:
    """Queries with decoded JSON fields, plus cluster (active cluster run) and queue state."""
    clauses, params = [], []
    for column, value in (("q.status", status), ("q.query_type", query_type), ("q.source", source)):
        if value:
            clauses.append(f"{column} = ?")
            params.append(value)
    if ids is not None:
        clauses.append(f"q.id IN ({','.join('?' * len(ids))})")
        params.extend(ids)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    result = store.rows(
        db,
        f"""SELECT q.*, qc.cluster AS cluster, cl.label AS cluster_label,
                   (r.query_id IS NOT NULL) AS queued,
                   (SELECT json_group_array(s.chunk_id) FROM (SELECT chunk_id FROM suggestions
                     WHERE query_id = q.id ORDER BY rank) s) AS suggested_chunk_ids
            FROM queries q
            LEFT JOIN cluster_runs cr ON cr.active = 1
            LEFT JOIN query_clusters qc ON qc.run_id = cr.id AND qc.query_id = q.id
            LEFT JOIN clusters cl ON cl.run_id = cr.id AND cl.cluster = qc.cluster
            LEFT JOIN review_queue r ON r.query_id = q.id
            {where} ORDER BY q.created_at, q.id""",
        params,
    )
    for row in result:
        for name, default in (("source_chunk_ids", []), ("gold_chunk_ids", []), ("gold_grades", {}), ("metadata", {}),
                              ("suggested_chunk_ids", []), ("quality_signals", None)):  # suggested: best first
            row[name] = store.loads(row[name], default)
        for flag in ("queued", "answerable", "stale"):
            row[flag] = bool(row[flag])
    return result
