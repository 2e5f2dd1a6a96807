"""What a project holds, in one dictionary."""

from __future__ import annotations

import sqlite_utils


def _grouped(db: sqlite_utils.Database, column: str) -> dict[str, int]:
    return {str(k): n for k, n in db.execute(f"SELECT {column}, COUNT(*) FROM queries GROUP BY 1 ORDER BY 1")}


def project_stats(db: sqlite_utils.Database) -> dict:
    def count(sql: str) -> int:
        return db.execute(sql).fetchone()[0] or 0

    return {
        "documents": count("SELECT COUNT(*) FROM documents"),
        "chunks": count("SELECT COUNT(*) FROM chunks WHERE active = 1"),
        "retired_chunks": count("SELECT COUNT(*) FROM chunks WHERE active = 0"),
        "corpus_tokens": count("SELECT SUM(tokens) FROM chunks WHERE active = 1"),
        "documents_by_format": {k: n for k, n in db.execute("SELECT format, COUNT(*) FROM documents GROUP BY 1 ORDER BY 1")},
        "queries": count("SELECT COUNT(*) FROM queries"),
        "queries_by_status": _grouped(db, "status"),
        "queries_by_type": _grouped(db, "query_type"),
        "queries_by_source": _grouped(db, "source"),
        "stale_queries": count("SELECT COUNT(*) FROM queries WHERE stale = 1"),
        "rejected_candidates": count("SELECT COUNT(*) FROM rejected_candidates"),
        "generation_runs": count("SELECT COUNT(*) FROM generation_runs"),
        "cluster_runs": count("SELECT COUNT(*) FROM cluster_runs"),
        "queued": count("SELECT COUNT(*) FROM review_queue"),
        "decisions": count("SELECT COUNT(*) FROM decisions WHERE state = 'done'"),
        "eval_runs": count("SELECT COUNT(*) FROM eval_runs"),
    }
