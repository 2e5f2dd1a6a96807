"""Reads of a clustering run: the active run, map points and the cluster table."""

from __future__ import annotations

from typing import Optional

import sqlite_utils

from curator.core import store


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
