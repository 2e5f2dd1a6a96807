"""Suggested gold chunks: for each queued query without usable gold (log queries, stale
synthetic rows), the top-k chunks of the best retriever the project has, stored in
``suggestions`` so the review view shows them without waiting.

The ranking is reciprocal rank fusion of BM25 and the dense MiniLM embedder with the dense run
weighted up (bench/suggest.py measured it on the Python FAQ set: see README). Without the MiniLM
package the dense half falls back to the project's own embedder (tfidf/LSA).
"""

from __future__ import annotations

from typing import Iterable, Optional

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError, ModelFileError
from curator.core.progress import CancelToken, ProgressCallback, report
from curator.core.retrieval import ranking
from curator.core.retrieval.retrievers import HybridRetriever, Retriever

DEFAULT_K = 5
DENSE_WEIGHT = 4.0  # bench/suggest.py, Python FAQ: hit@5 0.893 at x4, 0.858 at x2, dense alone 0.899, bm25 0.627
_BATCH = 64

# A row without usable gold: its gold is empty, stale, or points at a retired/unknown chunk.
_WITHOUT_GOLD = """(json_array_length(q.gold_chunk_ids) = 0 OR q.stale = 1
        OR EXISTS (SELECT 1 FROM json_each(q.gold_chunk_ids) g LEFT JOIN chunks c ON c.id = g.value
                   WHERE c.id IS NULL OR c.active = 0))"""
_NEEDING_SQL = f"""SELECT q.id, q.text FROM queries q LEFT JOIN review_queue r ON r.query_id = q.id
    WHERE q.status = 'pending' AND {_WITHOUT_GOLD} AND (r.query_id IS NOT NULL OR :everywhere)
    ORDER BY r.position IS NULL, r.position, q.created_at, q.id"""


def best_retriever(db: sqlite_utils.Database, dense_weight: float = DENSE_WEIGHT) -> HybridRetriever:
    """Hybrid BM25 + MiniLM (dense weighted up), fitted; the project's own embedder without MiniLM."""
    try:
        return HybridRetriever("minilm", dense_weight=dense_weight).fit(db)
    except ModelFileError:  # no MiniLM package: the project's embedder still beats BM25 alone
        return HybridRetriever(None, dense_weight=dense_weight).fit(db)


def needing_suggestions(db: sqlite_utils.Database, queued_only: bool = True) -> list[tuple[str, str]]:
    """(id, text) of pending queries without usable gold: the queued ones in queue order, then
    (``queued_only=False``) the rest in creation order."""
    return [(r[0], r[1]) for r in db.execute(_NEEDING_SQL, {"everywhere": int(not queued_only)})]


def lacking_suggestions(db: sqlite_utils.Database, queued_only: bool = True) -> list[str]:
    """Ids of pending queries without usable gold (queued ones only, unless ``queued_only`` is
    False) that have no suggestion of an active chunk to show (never computed, or the corpus
    changed under them)."""
    sql = f"SELECT id FROM ({_NEEDING_SQL}) n WHERE NOT EXISTS (SELECT 1 FROM suggestions s JOIN chunks c " \
          "ON c.id = s.chunk_id WHERE s.query_id = n.id AND c.active = 1)"
    return [r[0] for r in db.execute(sql, {"everywhere": 0 if queued_only else 1})]


def fill_missing(db: sqlite_utils.Database, on_progress: Optional[ProgressCallback] = None,
                 cancel: Optional[CancelToken] = None) -> dict:
    """Suggestions for every queued row that lacks them (the window runs this in a worker when a
    project opens or its queue changes); rows that have suggestions are left as they are."""
    return suggest(db, lacking_suggestions(db), on_progress=on_progress, cancel=cancel)


def empty_reason(db: sqlite_utils.Database, query_id: str) -> str:
    """Why a query shows no suggestion: 'no_corpus' (no active chunk to suggest), 'has_gold' (its
    gold is usable, so none were asked for), 'not_queued' (only pending rows of the review queue
    get them) or 'none_found' (asked for and nothing stored: not computed yet, or nothing matched)."""
    if db.execute("SELECT 1 FROM chunks WHERE active = 1 LIMIT 1").fetchone() is None:
        return "no_corpus"
    without_gold = db.execute(f"SELECT {_WITHOUT_GOLD} FROM queries q WHERE q.id = ?", [query_id]).fetchone()
    if without_gold is None or not without_gold[0]:
        return "has_gold"
    queued = db.execute("SELECT 1 FROM queries q JOIN review_queue r ON r.query_id = q.id "
                        "WHERE q.id = ? AND q.status = 'pending'", [query_id]).fetchone()
    if queued is None:  # the one row, not the whole queue: the Review tab asks for every row it shows
        return "not_queued"
    return "none_found"


def _texts_of(db: sqlite_utils.Database, query_ids: Iterable[str]) -> list[tuple[str, str]]:
    ids = list(dict.fromkeys(query_ids))
    found = dict(db.execute(f"SELECT id, text FROM queries WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall()) if ids else {}
    missing = [i for i in ids if i not in found]
    if missing:
        raise InputError(f"no query with id {missing[0]!r} (curator queries lists them)")
    return [(i, found[i]) for i in ids]


def _store(db: sqlite_utils.Database, query_id: str, scores: dict[str, float], retriever: str) -> None:
    db.execute("DELETE FROM suggestions WHERE query_id = ?", [query_id])
    at = store.now()
    db.conn.executemany(
        "INSERT INTO suggestions (query_id, rank, chunk_id, score, retriever, created_at) VALUES (?,?,?,?,?,?)",
        [(query_id, rank, cid, scores[cid], retriever, at) for rank, cid in enumerate(ranking.ranked(scores), 1)],
    )


def suggest(db: sqlite_utils.Database, query_ids: Optional[Iterable[str]] = None, k: int = DEFAULT_K,
            retriever: Optional[Retriever] = None, on_progress: Optional[ProgressCallback] = None,
            cancel: Optional[CancelToken] = None) -> dict:
    """Compute and store the top-``k`` suggestions of the given queries (default: every queued
    query without usable gold). Each batch is committed as it is made, so a cancel keeps them."""
    todo = _texts_of(db, query_ids) if query_ids is not None else needing_suggestions(db)
    if not todo:
        return {"queries": 0, "k": k, "retriever": None}
    retriever = retriever or best_retriever(db)
    if cancel is not None:
        cancel.check()  # fitting the dense half is the slow part: stop here if asked meanwhile
    tag = store.dumps(retriever.params)
    for start in range(0, len(todo), _BATCH):
        if cancel is not None:
            cancel.check()
        batch = todo[start : start + _BATCH]
        results = retriever.search_texts([text for _, text in batch], k)
        with db.conn:
            for (query_id, _), scores in zip(batch, results):
                _store(db, query_id, scores, tag)
        report(on_progress, min(start + _BATCH, len(todo)), len(todo), "suggesting gold chunks")
    return {"queries": len(todo), "k": k, "retriever": retriever.params}


def suggested_ids(db: sqlite_utils.Database, query_ids: Optional[Iterable[str]] = None) -> dict[str, list[str]]:
    """query id -> its suggested chunk ids, best first."""
    out: dict[str, list[str]] = {}
    for query_id, chunk_id in db.execute("SELECT query_id, chunk_id FROM suggestions ORDER BY query_id, rank"):
        out.setdefault(query_id, []).append(chunk_id)
    if query_ids is not None:
        wanted = set(query_ids)
        out = {q: ids for q, ids in out.items() if q in wanted}
    return out


def suggest_and_list(db: sqlite_utils.Database, query_ids: Optional[list[str]] = None, k: int = DEFAULT_K,
                     on_progress: Optional[ProgressCallback] = None) -> dict:
    """``curator suggest``: compute, then return what was stored for those queries."""
    todo = query_ids if query_ids is not None else [q for q, _ in needing_suggestions(db)]
    result = suggest(db, todo, k, on_progress=on_progress)
    return {**result, "suggested": suggested_ids(db, todo)}


def suggestions(db: sqlite_utils.Database, query_id: str) -> list[dict]:
    """One query's stored suggestions with what the review view shows: path, heading, text."""
    return store.rows(
        db,
        """SELECT s.rank, s.chunk_id, s.score, c.title, c.text, c.ord, c.doc_id, d.path, c.active
           FROM suggestions s JOIN chunks c ON c.id = s.chunk_id JOIN documents d ON d.id = c.doc_id
           WHERE s.query_id = ? ORDER BY s.rank""",
        [query_id],
    )
