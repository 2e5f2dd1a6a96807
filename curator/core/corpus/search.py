"""Full-text search over active chunks with SQLite FTS5, ranked by bm25."""

from __future__ import annotations

import re

import sqlite_utils

from curator.core import store

_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str, mode: str = "any") -> str:
    """A safe FTS5 MATCH expression: every word quoted, joined by OR (any) or AND (all).

    Quoting keeps user text such as ``C++ AND "x`` from being read as FTS5 syntax.
    """
    words = _WORD.findall(text.lower())
    joiner = " OR " if mode == "any" else " AND "
    return joiner.join(f'"{w}"' for w in dict.fromkeys(words))


def search_chunks(db: sqlite_utils.Database, query: str, limit: int = 10, mode: str = "any") -> list[dict]:
    """Ranked chunks for a query: id, doc path, title, text, score (higher is better)."""
    match = fts_query(query, mode)
    if not match:
        return []
    return store.rows(
        db,
        """SELECT c.id, d.path AS doc_path, c.title, c.text, -bm25(chunks_fts) AS score
           FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
           JOIN documents d ON d.id = c.doc_id
           WHERE chunks_fts MATCH ? AND c.active = 1
           ORDER BY bm25(chunks_fts), c.id LIMIT ?""",
        [match, limit],
    )
