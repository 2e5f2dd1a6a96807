"""Read helpers for the desktop app (no Qt here): small queries the GUI needs but core lacks.

The GUI never runs SQL itself; everything it reads or writes outside the other core modules
goes through these functions, so the headless tests can cover them too.
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


def rejected_candidates(db: sqlite_utils.Database, run_id: Optional[int] = None, limit: int = 500) -> list[dict]:
    where, params = ("WHERE run_id = ?", [run_id]) if run_id is not None else ("", [])
    return store.rows(
        db,
        f"""SELECT id, run_id, query_type, text, reason, created_at FROM rejected_candidates {where}
            ORDER BY id DESC LIMIT ?""",
        [*params, limit],
    )


def generation_runs(db: sqlite_utils.Database) -> list[dict]:
    return store.rows(db, "SELECT id, created_at, backend, model_path, target, status, counts FROM generation_runs ORDER BY id DESC")


def active_cluster_run(db: sqlite_utils.Database) -> Optional[dict]:
    found = store.rows(db, "SELECT id, created_at, embedder, k, silhouette FROM cluster_runs WHERE active = 1 ORDER BY id DESC LIMIT 1")
    return found[0] if found else None


def cluster_points(db: sqlite_utils.Database, run_id: Optional[int] = None) -> list[dict]:
    """Map coordinates of every query in a cluster run (the active one by default)."""
    run = run_id if run_id is not None else (active_cluster_run(db) or {}).get("id")
    if run is None:
        return []
    return store.rows(
        db,
        """SELECT qc.query_id, qc.cluster, qc.x, qc.y, q.text, q.source, q.status
           FROM query_clusters qc JOIN queries q ON q.id = qc.query_id WHERE qc.run_id = ?""",
        [run],
    )


def cluster_table(db: sqlite_utils.Database, run_id: Optional[int] = None) -> list[dict]:
    """Cluster list with label, size and queued/reviewed/approved counts."""
    run = run_id if run_id is not None else (active_cluster_run(db) or {}).get("id")
    if run is None:
        return []
    return store.rows(
        db,
        """SELECT c.cluster, c.label, c.size,
                  SUM(r.query_id IS NOT NULL) AS queued,
                  SUM(r.query_id IS NOT NULL AND q.status != 'pending') AS reviewed,
                  SUM(q.status = 'approved') AS approved
           FROM clusters c
           LEFT JOIN query_clusters qc ON qc.run_id = c.run_id AND qc.cluster = c.cluster
           LEFT JOIN queries q ON q.id = qc.query_id
           LEFT JOIN review_queue r ON r.query_id = qc.query_id
           WHERE c.run_id = ? GROUP BY c.cluster ORDER BY c.cluster""",
        [run],
    )


def eval_runs(db: sqlite_utils.Database, limit: int = 20) -> list[dict]:
    found = store.rows(db, "SELECT id, created_at, retriever, metrics FROM eval_runs ORDER BY id DESC LIMIT ?", [limit])
    for row in found:
        row["metrics"] = store.loads(row["metrics"], {})
    return found


def exports(db: sqlite_utils.Database, limit: int = 20) -> list[dict]:
    return store.rows(db, "SELECT id, created_at, format, path FROM exports ORDER BY id DESC LIMIT ?", [limit])
