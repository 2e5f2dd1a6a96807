"""The project file's schema: numbered migrations, applied in order by ``open_project``.

A landed migration is never edited; a change is a new ``mNNN_`` function appended at the end.
"""

from __future__ import annotations

import sqlite_utils
from sqlite_utils import Migrations

from curator.core.store.records import dumps, now

APP_MARKER = "curator"
MIGRATION_SET = "curator"

migrations = Migrations(MIGRATION_SET)


@migrations()
def m001_initial(db: sqlite_utils.Database) -> None:
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute(
        """CREATE TABLE documents (
            id TEXT PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            title TEXT,
            format TEXT,
            content_hash TEXT NOT NULL,
            bytes INTEGER,
            chunk_params TEXT,
            metadata TEXT,
            ingested_at TEXT
        )"""
    )
    db.execute(
        """CREATE TABLE chunks (
            id TEXT PRIMARY KEY,
            doc_id TEXT NOT NULL REFERENCES documents(id),
            ord INTEGER NOT NULL,
            title TEXT,
            text TEXT NOT NULL,
            tokens INTEGER,
            active INTEGER NOT NULL DEFAULT 1
        )"""
    )
    db.execute("CREATE INDEX chunks_doc ON chunks(doc_id, ord)")
    db["chunks"].enable_fts(["title", "text"], create_triggers=True, tokenize="porter")
    db.execute(
        """CREATE TABLE generation_runs (
            id INTEGER PRIMARY KEY,
            created_at TEXT,
            backend TEXT,
            model_path TEXT,
            model_size INTEGER,
            model_sha256 TEXT,
            params TEXT,
            seed INTEGER,
            prompts TEXT,
            mix TEXT,
            target INTEGER,
            status TEXT,
            counts TEXT
        )"""
    )
    db.execute(
        """CREATE TABLE queries (
            id TEXT PRIMARY KEY,
            text TEXT NOT NULL,
            text_norm TEXT NOT NULL,
            query_type TEXT,
            source TEXT NOT NULL,
            answerable INTEGER NOT NULL DEFAULT 1,
            reference TEXT,
            source_chunk_ids TEXT NOT NULL DEFAULT '[]',
            gold_chunk_ids TEXT NOT NULL DEFAULT '[]',
            gold_grades TEXT NOT NULL DEFAULT '{}',
            run_id INTEGER REFERENCES generation_runs(id),
            raw_output TEXT,
            status TEXT NOT NULL DEFAULT 'pending',
            reviewer TEXT,
            reviewed_at TEXT,
            note TEXT,
            stale INTEGER NOT NULL DEFAULT 0,
            frequency INTEGER NOT NULL DEFAULT 1,
            negative_count INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}',
            created_at TEXT
        )"""
    )
    db.execute("CREATE INDEX queries_norm ON queries(text_norm)")
    db.execute("CREATE INDEX queries_status ON queries(status)")
    db.execute(
        """CREATE TABLE rejected_candidates (
            id INTEGER PRIMARY KEY,
            run_id INTEGER REFERENCES generation_runs(id),
            query_type TEXT,
            source_chunk_ids TEXT,
            text TEXT,
            reference TEXT,
            reason TEXT,
            raw_output TEXT,
            created_at TEXT
        )"""
    )
    db.execute(
        """CREATE TABLE embeddings (
            text_hash TEXT NOT NULL,
            embedder TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (text_hash, embedder)
        )"""
    )
    db.execute(
        """CREATE TABLE cluster_runs (
            id INTEGER PRIMARY KEY,
            created_at TEXT,
            embedder TEXT,
            params TEXT,
            k INTEGER,
            silhouette REAL,
            active INTEGER NOT NULL DEFAULT 0
        )"""
    )
    db.execute(
        """CREATE TABLE clusters (
            run_id INTEGER NOT NULL REFERENCES cluster_runs(id),
            cluster INTEGER NOT NULL,
            label TEXT,
            terms TEXT,
            size INTEGER,
            PRIMARY KEY (run_id, cluster)
        )"""
    )
    db.execute(
        """CREATE TABLE query_clusters (
            run_id INTEGER NOT NULL REFERENCES cluster_runs(id),
            query_id TEXT NOT NULL REFERENCES queries(id),
            cluster INTEGER NOT NULL,
            x REAL,
            y REAL,
            PRIMARY KEY (run_id, query_id)
        )"""
    )
    db.execute(
        """CREATE TABLE review_queue (
            query_id TEXT PRIMARY KEY REFERENCES queries(id),
            position INTEGER NOT NULL,
            cluster_run INTEGER,
            cluster INTEGER,
            stratum TEXT,
            reason TEXT,
            added_at TEXT
        )"""
    )
    # The review journal: every decision with who, when, and the row before and after.
    # Undo, redo, audit, merge and crash recovery all read this one table.
    db.execute(
        """CREATE TABLE decisions (
            id INTEGER PRIMARY KEY,
            query_id TEXT NOT NULL REFERENCES queries(id),
            reviewer TEXT,
            at TEXT NOT NULL,
            action TEXT NOT NULL,
            before TEXT NOT NULL,
            after TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'done'
        )"""
    )
    db.execute("CREATE INDEX decisions_query ON decisions(query_id, id)")
    db.execute(
        """CREATE TABLE eval_runs (
            id INTEGER PRIMARY KEY,
            created_at TEXT,
            retriever TEXT,
            params TEXT,
            metrics TEXT,
            per_query TEXT,
            run_file TEXT
        )"""
    )
    db.execute(
        """CREATE TABLE exports (
            id INTEGER PRIMARY KEY,
            created_at TEXT,
            format TEXT,
            path TEXT,
            manifest TEXT
        )"""
    )
    db["meta"].insert({"key": "app", "value": APP_MARKER})
    db["meta"].insert({"key": "created_at", "value": now()})


# Later migrations go below, numbered m002_, m003_, ... and are never edited once landed.


@migrations()
def m002_chunk_fts_bulk(db: sqlite_utils.Database) -> None:
    """Chunks enter the full-text index in bulk, and only text changes re-index a chunk.

    The per-row insert trigger cost 4x a bulk ``INSERT ... SELECT`` into FTS5 (0.73 s vs 0.2 s
    for 11.6 MB, bench/ingest.py): ingest now indexes its new rows itself (``index_new_chunks``).
    The update trigger fired on every ``active`` flip and re-indexed unchanged text.
    """
    db.execute("DROP TRIGGER IF EXISTS chunks_ai")
    db.execute("DROP TRIGGER IF EXISTS chunks_au")
    db.execute(
        """CREATE TRIGGER chunks_au AFTER UPDATE OF title, text ON chunks BEGIN
             INSERT INTO chunks_fts (chunks_fts, rowid, title, text) VALUES ('delete', old.rowid, old.title, old.text);
             INSERT INTO chunks_fts (rowid, title, text) VALUES (new.rowid, new.title, new.text);
           END"""
    )


def index_new_chunks(db: sqlite_utils.Database, after_rowid: int) -> None:
    """Add every chunk row inserted after ``after_rowid`` to the full-text index (see m002)."""
    db.execute("INSERT INTO chunks_fts (rowid, title, text) SELECT rowid, title, text FROM chunks WHERE rowid > ?",
               [after_rowid])


def last_chunk_rowid(db: sqlite_utils.Database) -> int:
    return db.execute("SELECT COALESCE(MAX(rowid), 0) FROM chunks").fetchone()[0]


@migrations()
def m003_gold_invariant(db: sqlite_utils.Database) -> None:
    """Approved, answerable rows without an active gold chunk go back to pending, journaled.

    Before this, key A or ``curator label ... approve`` could approve a query with no gold chunk;
    it was exported as ``answerable: true`` with empty ``reference_context_ids`` and dropped by
    evaluate. Such rows (and approved rows whose gold chunks were all or partly retired) are set
    back to pending with a note saying why, and a ``pending`` journal row by ``curator-migration``
    records the change (so the audit shows it; no reviewer's undo stack picks it up). The SQL is
    written out here, not imported, because a landed migration must not change with later code.
    """
    import json

    fields = ("status", "text", "reference", "gold_chunk_ids", "gold_grades", "answerable", "note",
              "reviewer", "reviewed_at")
    broken = db.execute(
        f"""SELECT id, {', '.join(fields)} FROM queries q WHERE q.status = 'approved' AND q.answerable = 1 AND (
                json_array_length(q.gold_chunk_ids) = 0
                OR EXISTS (SELECT 1 FROM json_each(q.gold_chunk_ids) g LEFT JOIN chunks c ON c.id = g.value
                           WHERE c.id IS NULL OR c.active = 0))"""
    ).fetchall()
    at = now()
    for query_id, *values in broken:
        before = dict(zip(fields, values))
        before["gold_chunk_ids"] = json.loads(before["gold_chunk_ids"] or "[]")
        before["gold_grades"] = json.loads(before["gold_grades"] or "{}")
        why = ("set back to pending by curator: it was approved as answerable "
               + ("with no gold chunk" if not before["gold_chunk_ids"] else "with a retired or unknown gold chunk")
               + "; add gold chunks (G) or label it unanswerable")
        note = f"{before['note']}\n{why}" if before["note"] else why
        after = {**before, "status": "pending", "note": note, "reviewer": "curator-migration", "reviewed_at": at}
        db.execute("UPDATE queries SET status = 'pending', note = ?, reviewer = ?, reviewed_at = ? WHERE id = ?",
                   [note, after["reviewer"], at, query_id])
        db.execute(
            "INSERT INTO decisions (query_id, reviewer, at, action, before, after, state) VALUES (?,?,?,?,?,?,'done')",
            [query_id, "curator-migration", at, "pending", dumps(before), dumps(after)],
        )


@migrations()
def m004_suggestions(db: sqlite_utils.Database) -> None:
    """Suggested gold chunks for queued queries without gold, ranked, so review shows them at once."""
    db.execute(
        """CREATE TABLE suggestions (
            query_id TEXT NOT NULL REFERENCES queries(id),
            rank INTEGER NOT NULL,
            chunk_id TEXT NOT NULL,
            score REAL,
            retriever TEXT,
            created_at TEXT,
            PRIMARY KEY (query_id, rank)
        )"""
    )


@migrations()
def m005_query_quality(db: sqlite_utils.Database) -> None:
    """A quality score per generated row and the signals behind it (generation.quality)."""
    db.execute("ALTER TABLE queries ADD COLUMN quality REAL")
    db.execute("ALTER TABLE queries ADD COLUMN quality_signals TEXT")


@migrations()
def m006_diagnosis_traces(db: sqlite_utils.Database) -> None:
    """A RAG system's traces, the claims of their responses and every judgement of a claim.

    ``judgements`` is append-only: the judge's verdict and each reviewer correction are rows,
    the newest row of a claim is its verdict, and a correction keeps the verdict it replaced.
    """
    db.execute(
        """CREATE TABLE traces (
            id TEXT PRIMARY KEY,
            external_id TEXT,
            query_id TEXT REFERENCES queries(id),
            matched_by TEXT NOT NULL,
            question TEXT NOT NULL,
            response TEXT NOT NULL DEFAULT '',
            reference TEXT,
            retrieved_ids TEXT NOT NULL DEFAULT '[]',
            retrieved_texts TEXT NOT NULL DEFAULT '[]',
            context_matches TEXT NOT NULL DEFAULT '[]',
            reference_ids TEXT NOT NULL DEFAULT '[]',
            context_recall REAL,
            recall_basis TEXT,
            faithfulness REAL,
            human_label TEXT,
            labelled_by TEXT,
            labelled_at TEXT,
            source_file TEXT,
            line INTEGER,
            timestamp TEXT,
            created_at TEXT
        )"""
    )
    db.execute("CREATE INDEX traces_query ON traces(query_id)")
    db.execute(
        """CREATE TABLE claims (
            id INTEGER PRIMARY KEY,
            trace_id TEXT NOT NULL REFERENCES traces(id),
            ord INTEGER NOT NULL,
            text TEXT NOT NULL,
            UNIQUE (trace_id, ord)
        )"""
    )
    db.execute(
        """CREATE TABLE judgements (
            id INTEGER PRIMARY KEY,
            claim_id INTEGER NOT NULL REFERENCES claims(id),
            verdict TEXT NOT NULL,
            context_index INTEGER,
            judge TEXT NOT NULL,
            reviewer TEXT,
            raw TEXT,
            before TEXT,
            at TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX judgements_claim ON judgements(claim_id, id)")


@migrations()
def m007_reference_statements(db: sqlite_utils.Database) -> None:
    """Claims of two kinds: 'response' (judged for faithfulness) and 'reference', the statements
    of a trace's reference answer judged against its contexts for context recall where no chunk
    ids can be had (diagnosis.faithfulness). Existing claims are all of responses."""
    db.execute("ALTER TABLE claims ADD COLUMN kind TEXT NOT NULL DEFAULT 'response'")


@migrations()
def m008_gold_changes(db: sqlite_utils.Database) -> None:
    """Gold labels whose chunk got other text under the same id (a BEIR passage edited in place):
    the text each query was labelled against, by hash, so the query stays stale until the passage
    reads as it did (corpus.ingest._record_text_changes, refresh_stale)."""
    db.execute(
        """CREATE TABLE gold_changes (
            query_id TEXT NOT NULL,
            chunk_id TEXT NOT NULL,
            labelled_sha TEXT NOT NULL,
            changed_at TEXT NOT NULL,
            PRIMARY KEY (query_id, chunk_id)
        )"""
    )
    db.execute("CREATE INDEX gold_changes_chunk ON gold_changes(chunk_id)")


@migrations()
def m009_query_realism(db: sqlite_utils.Database) -> None:
    """How each query with gold reads (queries.realism): overlap with its gold chunk and with its
    reference answer, length, stop-word share and form. ``key`` is a hash of what the figures were
    measured from (text, gold, reference), so an edited row is measured again; rows are filled in
    by the code that reads them (queries.realism.refresh), not here: a landed migration must not
    change with that code."""
    db.execute(
        """CREATE TABLE query_realism (
            query_id TEXT PRIMARY KEY REFERENCES queries(id),
            key TEXT NOT NULL,
            chunk_overlap REAL,
            answer_overlap REAL,
            words INTEGER NOT NULL,
            stopword_share REAL NOT NULL,
            form TEXT NOT NULL,
            measured_at TEXT
        )"""
    )



@migrations()
def m010_judgement_pool(db: sqlite_utils.Database) -> None:
    """The pooled top results of each retriever under evaluation, per query (review.pool), so the
    Review tab offers them for grading without waiting: ``pool_hits`` holds every retriever's top-k
    as ranked (gold chunks too: what is gold or judged is filtered when read, so a grade needs no
    rewrite here), ``pool_queries`` when a query's pool was computed, at which depth, from what."""
    db.execute(
        """CREATE TABLE pool_hits (
            query_id TEXT NOT NULL REFERENCES queries(id),
            retriever TEXT NOT NULL,
            rank INTEGER NOT NULL,
            chunk_id TEXT NOT NULL,
            score REAL,
            PRIMARY KEY (query_id, retriever, rank)
        )"""
    )
    db.execute(
        """CREATE TABLE pool_queries (
            query_id TEXT PRIMARY KEY REFERENCES queries(id),
            k INTEGER NOT NULL,
            retrievers TEXT NOT NULL,
            computed_at TEXT NOT NULL
        )"""
    )


@migrations()
def m011_one_grade_scale(db: sqlite_utils.Database) -> None:
    """One graded-relevance scale, 0 not relevant, 1 relevant, 2 highly relevant (store.gold.GRADES).

    The gold dialog and Shift+1-5 allowed a grade 3 while the pooled review's "highly relevant" was 2,
    so a 3 and a 2 meant the same judgement told apart by which key gave it. A 3 becomes 2, in the rows
    and in the journal's before/after (so an undo does not bring a 3 back); every other grade is kept.
    The top grade is written out here, not imported: a landed migration must not change with later code.
    """
    import json

    top = 2

    def on_scale(grades: dict) -> dict:
        return {chunk: (top if isinstance(g, int) and g > top else g) for chunk, g in grades.items()}

    rows = db.execute("""SELECT id, gold_grades FROM queries WHERE EXISTS
                         (SELECT 1 FROM json_each(queries.gold_grades) g WHERE g.value > ?)""", [top]).fetchall()
    for query_id, grades in rows:
        db.execute("UPDATE queries SET gold_grades = ? WHERE id = ?", [dumps(on_scale(json.loads(grades))), query_id])
    journal = db.execute("""SELECT id, before, after FROM decisions WHERE action != 'verdict' AND (
                                EXISTS (SELECT 1 FROM json_each(decisions.before, '$.gold_grades') g WHERE g.value > ?)
                                OR EXISTS (SELECT 1 FROM json_each(decisions.after, '$.gold_grades') g WHERE g.value > ?))""",
                         [top, top]).fetchall()
    for decision_id, *sides in journal:
        fixed = []
        for side in sides:
            state = json.loads(side) if side else None
            if isinstance(state, dict) and isinstance(state.get("gold_grades"), dict):
                state["gold_grades"] = on_scale(state["gold_grades"])
            fixed.append(dumps(state) if state is not None else side)
        db.execute("UPDATE decisions SET before = ?, after = ? WHERE id = ?", [*fixed, decision_id])


@migrations()
def m012_pool_corpus_key(db: sqlite_utils.Database) -> None:
    """What corpus each pool was computed against (review.pool.corpus_key), so a re-ingest that adds,
    retires or edits chunks shows the pools as out of date and they are computed again. Pools from
    before have none and count as out of date once."""
    db.execute("ALTER TABLE pool_queries ADD COLUMN corpus_key TEXT")


@migrations()
def m013_corpus_key_in_meta(db: sqlite_utils.Database) -> None:
    """The corpus key (store.stats.corpus_key) kept in meta, written by each ingest commit: computed
    on every Review render it scanned the chunks table (60-80 ms at 100k chunks)."""
    from curator.core.store.stats import compute_corpus_key

    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('corpus_key', ?)", [compute_corpus_key(db)])

