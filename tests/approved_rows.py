"""A closed project holding approved manual rows: the gold that export, eval and read-only tests read."""

from __future__ import annotations

from pathlib import Path

from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.core.store import open_project


def approve_manual_rows(project: Path, count: int, question: str, reference: str) -> None:
    """``count`` rows (``question`` formatted with n) approved by ana, each with its own chunk as gold; the
    project is checkpointed and closed, so it is one file the caller may copy or open from another process."""
    db = open_project(project)
    ids = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id LIMIT ?", [count])]
    with db.conn:
        made = [add_query(db, question.format(n=n), "manual", reference=reference, gold_chunk_ids=[ids[n]])
                for n in range(count)]
    for qid in made:
        decide(db, qid, "approve", "ana")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
