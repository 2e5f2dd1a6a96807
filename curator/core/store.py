"""The project file: one SQLite database opened through sqlite-utils.

Schema changes happen only through the numbered migrations below; a landed migration is
never edited, a change is a new ``mNNN_`` function appended at the end.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import sqlite_utils
from sqlite_utils import Migrations

from curator.core.errors import NewerSchema, NotAProject

APP_MARKER = "curator"
MIGRATION_SET = "curator"
BUSY_TIMEOUT_MS = 10_000
SQLITE_MAGIC = b"SQLite format 3\x00"

migrations = Migrations(MIGRATION_SET)


def now() -> str:
    """UTC timestamp with microseconds, sortable as text."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def dumps(value: Any) -> str:
    """Compact, key-sorted JSON so stored values are byte-stable."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def loads(text: str | None, default: Any = None) -> Any:
    if text in (None, ""):
        return default
    if text == "[]" or text == "{}":  # most id lists and grade maps: json.loads costs ~5 us each at 100k rows
        return [] if text == "[]" else {}
    return json.loads(text)


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


def _looks_like_sqlite(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(16) == SQLITE_MAGIC


class _Connection(sqlite3.Connection):
    """A connection whose ``with conn:`` block is one transaction.

    sqlite-utils 4 commits each write that opens an implicit transaction, so without an
    explicit BEGIN the statements of a ``with db.conn:`` block commit one by one: a crash
    between them left a query changed with no journal row, and an error never rolled back.
    IMMEDIATE takes the write lock up front (waiting under the busy timeout), so a block that
    reads before it writes never fails with "database is locked" when another writer got in."""

    def __enter__(self):
        if not self.in_transaction:
            begin_immediate(self)
        return super().__enter__()


WRITE_LOCK_WAIT_S = 60.0


def begin_immediate(conn: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE, waiting up to WRITE_LOCK_WAIT_S for the write lock.

    SQLite's busy handler backs off to 100 ms sleeps, so a process committing back to back (a
    burst of review decisions on a loaded machine) could keep another writer out for the whole
    10 s busy timeout: seen in the two-process test as "database is locked" in generate. Each
    try below waits the busy timeout again, so a writer gets a minute before it gives up.
    """
    deadline = time.monotonic() + WRITE_LOCK_WAIT_S
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() >= deadline:
                raise


def _connect(path: Path) -> sqlite_utils.Database:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                           factory=_Connection)
    db = sqlite_utils.Database(conn)
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    db.execute("PRAGMA foreign_keys = ON")
    return db


def _check_is_project(db: sqlite_utils.Database, path: Path) -> None:
    """Refuse files that are not Curator projects or were written by a newer Curator."""
    try:
        tables = set(db.table_names())
    except sqlite3.DatabaseError as exc:
        raise NotAProject(f"{path}: not a readable SQLite file ({exc}); it was not modified.") from None
    if not tables:
        return  # an empty database file becomes a new project
    _check_not_damaged(db, path)
    marker = None
    if "meta" in tables:
        row = db.execute("SELECT value FROM meta WHERE key = 'app'").fetchone()
        marker = row[0] if row else None
    if marker != APP_MARKER:
        raise NotAProject(
            f"{path}: this SQLite file is not a Curator project; it was not modified. "
            "Create one with 'curator init PATH'."
        )
    applied = {m.name for m in migrations.applied(db)}
    known = {m.name for m in migrations._migrations}
    unknown = sorted(applied - known)
    if unknown:
        raise NewerSchema(
            f"{path}: written by a newer Curator (schema {unknown[-1]}); "
            "upgrade Curator to open it. The file was not modified."
        )


def _check_not_damaged(db: sqlite_utils.Database, path: Path) -> None:
    """Refuse a project with damaged pages before any command reads or writes it.

    A damaged page past the schema only shows when a command reaches it, as a bare
    'database disk image is malformed' halfway through the work. quick_check reads every
    page but skips the index-content checks: about 1 ms per MB from the page cache."""
    try:
        problem = db.execute("PRAGMA quick_check(1)").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        problem = str(exc)
    if problem != "ok":
        raise NotAProject(f"{path}: the file is damaged ({' '.join(problem.split())}); it was not modified. "
                          "Restore the project from a backup or from another reviewer's copy.")


def _backup_before_migrating(db: sqlite_utils.Database, path: Path) -> Path | None:
    if not migrations.applied(db) or not migrations.pending(db):
        return None
    backup = path.with_name(path.name + f".bak-{datetime.now():%Y%m%d%H%M%S}")
    db.conn.execute("PRAGMA wal_checkpoint(FULL)")
    shutil.copy2(path, backup)
    return backup


def open_project(path: str | Path, create: bool = False) -> sqlite_utils.Database:
    """Open (or with ``create`` make) a project file, migrated to the current schema.

    A foreign or newer file raises before anything is written to it.
    """
    path = Path(path)
    if not path.exists():
        if not create:
            raise NotAProject(f"{path}: no such project; create it with 'curator init {path}'.")
        path.parent.mkdir(parents=True, exist_ok=True)
    elif path.is_dir():
        raise NotAProject(f"{path}: is a folder, not a project file.")
    elif path.stat().st_size and not _looks_like_sqlite(path):
        raise NotAProject(f"{path}: not a SQLite file, so not a Curator project; it was not modified.")
    db = _connect(path)
    try:
        _check_is_project(db, path)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        _backup_before_migrating(db, path)
        migrations.apply(db)
    except Exception:
        db.close()
        raise
    return db


def meta_get(db: sqlite_utils.Database, key: str, default: str | None = None) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return row[0] if row else default


def meta_set(db: sqlite_utils.Database, key: str, value: str) -> None:
    with db.conn:
        db["meta"].upsert({"key": key, "value": value}, pk="key")


def rows(db: sqlite_utils.Database, sql: str, params: Iterable[Any] = ()) -> list[dict]:
    """Run a query and return its rows as dicts."""
    cursor = db.execute(sql, list(params))
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor.fetchall()]
