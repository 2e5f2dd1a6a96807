"""What the Review tab shows, read in one place: the row with its gold chunks in context, why it
is queued, the side panel, and what an empty queue lacks. The view renders these and runs no SQL.
"""

from __future__ import annotations

from typing import Collection, Optional

import sqlite_utils

from curator.core import store
from curator.core.corpus import documents
from curator.core.queries.rows import get_query
from curator.core.review import decisions
from curator.core.review.navigation import progress_by_cluster, review_order
from curator.core.review.sample import queue_entry

CONTEXT_CHARS = 300  # of the chunk before and after a gold chunk


def review_row(db: sqlite_utils.Database, query_id: Optional[str]) -> Optional[dict]:
    """The query (as ``get_query`` gives it) plus ``queue_entry`` (why it was drawn, or None)."""
    query = get_query(db, query_id) if query_id else None
    if query is not None:
        query["queue_entry"] = queue_entry(db, query_id)
    return query


def gold_in_context(db: sqlite_utils.Database, query: dict) -> list[dict]:
    """Each gold chunk of QUERY with its grade and the end of the chunk before it and the start of
    the chunk after it in the same document (None at a document's edge)."""
    out = []
    for chunk in documents.get_chunks(db, query["gold_chunk_ids"]):
        near = documents.neighbours(db, chunk["id"])
        out.append({**chunk, "grade": int(query["gold_grades"].get(chunk["id"], 1)),
                    "before": near["previous"]["text"][-CONTEXT_CHARS:] if near["previous"] else None,
                    "after": near["next"]["text"][:CONTEXT_CHARS] if near["next"] else None})
    return out


def missing_stage(db: sqlite_utils.Database) -> str:
    """For an empty queue, the earliest stage not done: 'corpus' (no active chunk), 'generate'
    (no query) or 'clusters' (queries, but nothing pending in a queue)."""
    if store.rows(db, "SELECT 1 FROM chunks WHERE active = 1 LIMIT 1") == []:
        return "corpus"
    if store.rows(db, "SELECT 1 FROM queries LIMIT 1") == []:
        return "generate"
    return "clusters"


def side_panel(db: sqlite_utils.Database, reviewer: str, limit: int = 10) -> dict:
    """Progress over the queue (overall and per cluster) and the reviewer's latest decisions."""
    return {"progress": decisions.progress(db), "by_cluster": progress_by_cluster(db),
            "history": decisions.history(db, reviewer, limit=limit)}


def pending_within(db: sqlite_utils.Database, query_ids: Collection[str]) -> int:
    """How many of a selection still wait for a decision."""
    return sum(1 for row in review_order(db, query_ids) if row["status"] == "pending")


def in_review_order(db: sqlite_utils.Database, query_id: str) -> bool:
    return any(row["query_id"] == query_id for row in review_order(db))
