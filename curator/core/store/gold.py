"""The gold invariant: an approved, answerable row has at least one gold chunk, and every one of
its gold chunks exists and is active (not retired by a re-ingest).

A row that breaks it would be exported as ``answerable: true`` with no usable
``reference_context_ids`` and silently dropped by evaluate, which quietly corrupts a gold set.
``decide`` refuses to create such a row (``gold_problem``); export, evaluate and stats use
``broken_gold_ids`` to keep rows that broke it later (a re-ingest retired their chunk, an older
project) out of the gold set and to count them as needing attention.
"""

from __future__ import annotations

from typing import Iterable, Optional

import sqlite_utils

from curator.core.errors import InputError

# One row breaks the invariant when this holds (``q`` is the queries row).
BROKEN_GOLD_SQL = """q.status = 'approved' AND q.answerable = 1 AND (
    json_array_length(q.gold_chunk_ids) = 0
    OR EXISTS (SELECT 1 FROM json_each(q.gold_chunk_ids) g LEFT JOIN chunks c ON c.id = g.value
               WHERE c.id IS NULL OR c.active = 0))"""


class GoldMissing(InputError):
    """``decide`` refused an approval whose gold chunks are missing or retired."""

    def __init__(self, query_id: str, unusable: list[str]) -> None:
        self.query_id, self.unusable = query_id, unusable
        if unusable:
            text = (f"{query_id} has retired or unknown gold chunk(s) {', '.join(unusable)}: replace them with "
                    "--gold c_..., or label it unanswerable")
        else:
            text = f"{query_id} has no gold chunk: add one with --gold c_..., or label it unanswerable"
        super().__init__(text)


def unusable_chunks(db: sqlite_utils.Database, chunk_ids: Iterable[str]) -> list[str]:
    """The ids among ``chunk_ids`` that are unknown or retired, in their given order."""
    ids = list(dict.fromkeys(chunk_ids))
    active: set[str] = set()
    for start in range(0, len(ids), 900):
        batch = ids[start : start + 900]
        marks = ",".join("?" * len(batch))
        active.update(r[0] for r in db.execute(f"SELECT id FROM chunks WHERE active = 1 AND id IN ({marks})", batch))
    return [i for i in ids if i not in active]


def gold_problem(db: sqlite_utils.Database, query_id: str, state: dict) -> Optional[GoldMissing]:
    """The reason ``state`` (a row's reviewable fields) breaks the invariant, or None."""
    if state.get("status") != "approved" or not state.get("answerable"):
        return None
    gold = list(state.get("gold_chunk_ids") or [])
    if not gold:
        return GoldMissing(query_id, [])
    unusable = unusable_chunks(db, gold)
    return GoldMissing(query_id, unusable) if unusable else None


def broken_gold_ids(db: sqlite_utils.Database) -> set[str]:
    """Ids of the rows that break the invariant now (one query, for export, evaluate and stats)."""
    return {r[0] for r in db.execute(f"SELECT q.id FROM queries q WHERE {BROKEN_GOLD_SQL}")}
