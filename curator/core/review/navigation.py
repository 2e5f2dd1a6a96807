"""The reviewer's way through the queue: order, next pending row, resume cursor, guidelines.

Reads only; decisions themselves go through ``decisions``.
"""

from __future__ import annotations

from typing import Collection, Optional

import sqlite_utils

from curator.core import store


GUIDELINES_KEY = "guidelines"
DEFAULT_GUIDELINES = (
    "Approve (A) when the question is answerable from the gold chunk(s) and the reference is right.\n"
    "Edit (E) a question or answer that is close but not quite right, then approve.\n"
    "Unanswerable (U) when the corpus does not answer it; Reject (X) when it is nonsense or a duplicate.\n"
    "Change gold (G) when another chunk answers it better; add several when each is needed."
)


def get_guidelines(db: sqlite_utils.Database) -> str:
    return store.meta_get(db, GUIDELINES_KEY, DEFAULT_GUIDELINES) or ""


def set_guidelines(db: sqlite_utils.Database, text: str) -> None:
    store.meta_set(db, GUIDELINES_KEY, text)


def _cursor_key(reviewer: str) -> str:
    return f"review_cursor:{reviewer}"


def get_cursor(db: sqlite_utils.Database, reviewer: str) -> Optional[str]:
    """The query this reviewer was looking at last, so reopening resumes at the same row."""
    return store.meta_get(db, _cursor_key(reviewer))


def set_cursor(db: sqlite_utils.Database, reviewer: str, query_id: str) -> None:
    store.meta_set(db, _cursor_key(reviewer), query_id)


def review_order(db: sqlite_utils.Database, within: Optional[Collection[str]] = None) -> list[dict]:
    """Rows to review in order: the queue if there is one, else every query by creation order.

    ``within`` (a selection, e.g. lassoed on the cluster map) restricts the order to those queries,
    queued or not: queued ones first in queue order, then the others by creation order.
    """
    if within is not None:
        chosen = set(within)
        rows = store.rows(db, """SELECT q.id AS query_id, q.status FROM queries q
                                 LEFT JOIN review_queue r ON r.query_id = q.id
                                 ORDER BY r.position IS NULL, r.position, q.created_at, q.id""")
        return [r for r in rows if r["query_id"] in chosen]
    queued = store.rows(
        db,
        """SELECT r.query_id, q.status FROM review_queue r JOIN queries q ON q.id = r.query_id
           ORDER BY r.position""",
    )
    if queued:
        return queued
    return store.rows(db, "SELECT id AS query_id, status FROM queries ORDER BY created_at, id")


def next_pending(db: sqlite_utils.Database, after: Optional[str] = None,
                 skip: frozenset[str] | set[str] = frozenset(),
                 within: Optional[Collection[str]] = None) -> Optional[str]:
    """The next pending row after ``after`` (wrapping round), leaving out ``skip``."""
    order = review_order(db, within)
    ids = [r["query_id"] for r in order]
    start = ids.index(after) + 1 if after in ids else 0
    rotated = order[start:] + order[:start]
    for row in rotated:
        if row["status"] == "pending" and row["query_id"] not in skip and row["query_id"] != after:
            return row["query_id"]
    return None


def progress_by_cluster(db: sqlite_utils.Database) -> list[dict]:
    """Queued and reviewed counts per queued cluster (None = no cluster)."""
    return store.rows(
        db,
        """SELECT r.cluster AS cluster, COUNT(*) AS queued, SUM(q.status != 'pending') AS reviewed
           FROM review_queue r JOIN queries q ON q.id = r.query_id GROUP BY r.cluster ORDER BY r.cluster""",
    )
