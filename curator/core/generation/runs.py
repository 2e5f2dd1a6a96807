"""Reads of past generation runs and their rejected candidates (the Generate tab's lists)."""

from __future__ import annotations

from typing import Optional

import sqlite_utils

from curator.core import store


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
