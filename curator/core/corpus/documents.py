"""Reading the corpus back: documents, chunks, and a chunk with its neighbours."""

from __future__ import annotations

from typing import Optional

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError


def list_documents(db: sqlite_utils.Database) -> list[dict]:
    return store.rows(
        db,
        """SELECT d.id, d.path, d.title, d.format, d.bytes,
                  (SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.id AND c.active = 1) AS chunks
           FROM documents d ORDER BY d.path""",
    )


def list_chunks(db: sqlite_utils.Database, doc_path: Optional[str] = None, include_retired: bool = False) -> list[dict]:
    clauses = [] if include_retired else ["c.active = 1"]
    params = []
    if doc_path:
        if db.execute("SELECT 1 FROM documents WHERE path = ?", [doc_path]).fetchone() is None:
            raise InputError(f"no document with path {doc_path!r}: paths are as stored, relative to the "
                             "ingested folder (curator chunks PROJECT lists them)")
        clauses.append("d.path = ?")
        params.append(doc_path)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    return store.rows(
        db,
        f"""SELECT c.id, d.path AS doc_path, c.title, c.text, c.tokens, c.ord, c.active
            FROM chunks c JOIN documents d ON d.id = c.doc_id {where} ORDER BY d.path, c.ord""",
        params,
    )


def get_chunks(db: sqlite_utils.Database, ids: list[str]) -> list[dict]:
    """Chunks by id, in the order asked (missing ids are left out)."""
    if not ids:
        return []
    found = store.rows(
        db,
        f"""SELECT c.id, c.doc_id, d.path AS doc_path, d.title AS doc_title, c.title, c.text, c.ord, c.active
            FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({','.join('?' * len(ids))})""",
        ids,
    )
    by_id = {row["id"]: row for row in found}
    return [by_id[i] for i in ids if i in by_id]


def chunk_texts(db: sqlite_utils.Database, ids: list[str]) -> dict[str, str]:
    """Chunk id -> text for the ids the corpus has (retired chunks included; missing ids left out)."""
    if not ids:
        return {}
    return dict(db.execute(f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids))


def neighbours(db: sqlite_utils.Database, chunk_id: str) -> dict:
    """The previous and next active chunk of the same document (surrounding text for review)."""
    row = db.execute("SELECT doc_id, ord FROM chunks WHERE id = ?", [chunk_id]).fetchone()
    if row is None:
        return {"previous": None, "next": None}
    def pick(op: str, order: str) -> Optional[dict]:
        found = store.rows(
            db, f"SELECT id, title, text FROM chunks WHERE doc_id = ? AND active = 1 AND ord {op} ? ORDER BY ord {order} LIMIT 1",
            [row[0], row[1]])
        return found[0] if found else None
    return {"previous": pick("<", "DESC"), "next": pick(">", "ASC")}
