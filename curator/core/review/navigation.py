"""The reviewer's way through the queue: order, next pending row, resume cursor, guidelines.

Decisions themselves go through ``decisions``. The cursor (where a reviewer is in the queue) is
stored lazily by ``Cursor``: reopening resumes at the stored row while it waits for a decision,
else at the next pending row after it, so a reviewer who decides row after row in queue order
needs no cursor write at all; only leaving a row some other way (skip, jump, undo) writes one.
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


def resume_from(db: sqlite_utils.Database, saved: Optional[str]) -> Optional[str]:
    """Where a reviewer whose stored cursor is SAVED carries on: SAVED while it is pending (or
    outside the review order, e.g. a row opened from the Queries tab), else the next pending row
    after it; the first pending row without a usable cursor."""
    query = store.rows(db, "SELECT status FROM queries WHERE id = ?", [saved]) if saved else []
    if not query:
        return next_pending(db)
    if query[0]["status"] == "pending" or not any(r["query_id"] == saved for r in review_order(db)):
        return saved
    return next_pending(db, saved) or saved


def resume_row(db: sqlite_utils.Database, reviewer: str) -> Optional[str]:
    """The row this reviewer's window opens on."""
    return resume_from(db, get_cursor(db, reviewer))


class Cursor:
    """A reviewer's place in the queue, written only when reopening would not find it otherwise.

    ``moved_to(row)`` is called when the reviewer leaves a row for ROW, ``close(row)`` when the
    window closes on ROW. Neither writes if ``resume_from`` of the stored value already gives ROW
    (the usual case after a decision auto-advances), so deciding costs one transaction, the
    decision's own. A crash loses at most the row in flight: decisions are committed as made and
    the stored cursor, resumed from, leads to the row the reviewer was on."""

    def __init__(self, db: sqlite_utils.Database, reviewer: str) -> None:
        self.db, self.reviewer = db, reviewer
        self.saved = get_cursor(db, reviewer)
        self.writes = 0  # how many times this session stored the cursor (tests count them)

    def moved_to(self, query_id: Optional[str]) -> bool:
        """Store QUERY_ID if reopening would not resume there; True if it wrote."""
        if query_id is None or query_id == self.saved or resume_from(self.db, self.saved) == query_id:
            return False
        set_cursor(self.db, self.reviewer, query_id)
        self.saved, self.writes = query_id, self.writes + 1
        return True

    close = moved_to  # on close the row shown is stored the same way


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
