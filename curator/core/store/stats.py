"""What a project holds, in one dictionary."""

from __future__ import annotations

import sqlite_utils

from curator.core.store.gold import BROKEN_GOLD_SQL


def _grouped(db: sqlite_utils.Database, column: str) -> dict[str, int]:
    return {str(k): n for k, n in db.execute(f"SELECT {column}, COUNT(*) FROM queries GROUP BY 1 ORDER BY 1")}


def _needs_attention(db: sqlite_utils.Database) -> dict[str, int]:
    """Rows a reviewer must look at again: approved ones kept out of export because their gold is
    missing or retired (told apart: no usable gold chunk left, or a live one beside a retired one),
    and the ones migration m003 set back to pending for that reason."""
    reset = db.execute("""SELECT COUNT(*) FROM queries WHERE status = 'pending' AND id IN
                          (SELECT query_id FROM decisions WHERE reviewer = 'curator-migration')""").fetchone()[0]
    broken, partly = db.execute(f"""SELECT COUNT(*), TOTAL(EXISTS (
                                        SELECT 1 FROM json_each(q.gold_chunk_ids) g JOIN chunks c ON c.id = g.value
                                        WHERE c.active = 1)) FROM queries q WHERE {BROKEN_GOLD_SQL}""").fetchone()
    return {"approved_without_gold": broken - int(partly), "approved_with_retired_gold": int(partly),
            "set_back_to_pending": reset or 0}


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
        "needs_attention": _needs_attention(db),
        "rejected_candidates": count("SELECT COUNT(*) FROM rejected_candidates"),
        "generation_runs": count("SELECT COUNT(*) FROM generation_runs"),
        "cluster_runs": count("SELECT COUNT(*) FROM cluster_runs"),
        "queued": count("SELECT COUNT(*) FROM review_queue"),
        "decisions": count("SELECT COUNT(*) FROM decisions WHERE state = 'done'"),
        "eval_runs": count("SELECT COUNT(*) FROM eval_runs"),
        "pools": pool_counts(db),
    }


def corpus_key(db: sqlite_utils.Database) -> str:
    """What a pool (review.pool) is computed against, as the last ingest left it (meta, m013): read on
    every Review render, so it must not scan the corpus."""
    row = db.execute("SELECT value FROM meta WHERE key = 'corpus_key'").fetchone()
    return row[0] if row else compute_corpus_key(db)


def compute_corpus_key(db: sqlite_utils.Database) -> str:
    """The active chunks (how many, and the sum of their row numbers, which any chunk added, retired
    or brought back changes) and the last document write (a passage edited in place keeps its row,
    but its document is written again). One scan of chunks."""
    count, rowids = db.execute("SELECT COUNT(*), TOTAL(rowid) FROM chunks WHERE active = 1").fetchone()
    last = db.execute("SELECT MAX(ingested_at) FROM documents").fetchone()[0]
    return f"{count}:{int(rowids)}:{last or ''}"


def store_corpus_key(db: sqlite_utils.Database) -> None:
    """Record today's corpus key (inside the caller's transaction: ingest's commit)."""
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('corpus_key', ?)", [compute_corpus_key(db)])


def pool_counts(db: sqlite_utils.Database) -> dict[str, int]:
    """Rows with a pool, and how many of those pools a re-ingest left out of date."""
    pooled, outdated = db.execute("SELECT COUNT(*), TOTAL(corpus_key IS NOT ?) FROM pool_queries",
                                  [corpus_key(db)]).fetchone()
    return {"pooled": pooled or 0, "out_of_date": int(outdated or 0)}


def approved_by_source(db: sqlite_utils.Database) -> dict[str, int]:
    """Approved rows per source, in one grouped count (the views ask on every show)."""
    return {str(k): n for k, n in db.execute(
        "SELECT source, COUNT(*) FROM queries WHERE status = 'approved' GROUP BY 1 ORDER BY 1")}


def gold_set_version(db: sqlite_utils.Database) -> tuple:
    """Changes whenever what an evaluation of the gold set reads changes: approvals per source, any
    decision made, undone or redone (an edited question or gold set keeps the counts), and
    re-ingests that retire chunks or make rows stale. Cheap: a few aggregate queries."""
    decisions = db.execute("SELECT MAX(id), SUM(state = 'done') FROM decisions").fetchone()
    corpus = db.execute("SELECT COUNT(*), SUM(active) FROM chunks").fetchone()
    stale = db.execute("SELECT COUNT(*) FROM queries WHERE stale = 1").fetchone()[0]
    return tuple(sorted(approved_by_source(db).items())), tuple(decisions), tuple(corpus), stale

