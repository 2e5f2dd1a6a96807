"""The project file: one SQLite database opened through sqlite-utils, checked and migrated."""

from __future__ import annotations

import random
import shutil
import sqlite3
import time
from datetime import datetime
from pathlib import Path

import sqlite_utils

from curator.core.errors import NewerSchema, NotAProject
from curator.core.store.schema import APP_MARKER, migrations

BUSY_TIMEOUT_MS = 10_000
SQLITE_MAGIC = b"SQLite format 3\x00"


def _looks_like_sqlite(path: Path) -> bool:
    """Whether SQLite reads the file as a database, asked through SQLite itself (read-only).

    Never a plain open() and close(): closing any descriptor on the file drops every POSIX lock
    this process holds on it, the app's open connections' included (SQLite keeps its own
    descriptors open while locks are held for that reason). A worker thread opening the project
    then let another process (the clustering worker, the CLI) believe its connection was the
    last one: closing, it checkpointed and removed the WAL under the app, whose connection read
    "database disk image is malformed" from then on."""
    probe = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    try:
        probe.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc):
            # unreadable as a database, so no healthy connection can lose a lock to this read:
            # the header only tells a damaged project from a file that never was one
            return _has_sqlite_header(path)
        # locked, or on read-only media: a SQLite file all the same; opening it says more
    finally:
        probe.close()
    return True


def _has_sqlite_header(path: Path) -> bool:
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

    SQLite's busy handler backs off to 100 ms sleeps, so against a process committing back to
    back (a burst of review decisions) it almost never finds the lock free: generate starved for
    minutes in the two-process test. So the lock is asked for without the busy handler and asked
    again every 1-4 ms (jittered, so two waiters do not collide in step), which finds the gaps
    between the other process's transactions.
    """
    deadline = time.monotonic() + WRITE_LOCK_WAIT_S
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        while True:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(random.uniform(0.001, 0.004))
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")  # reads and statements outside blocks wait as before


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
    elif not path.stat().st_size:
        if not create:  # an empty file (a touched or truncated one) is not a project to write into
            raise NotAProject(f"{path}: an empty file, not a Curator project; it was not modified. "
                              f"Make it a project with 'curator init {path}'.")
    elif not _looks_like_sqlite(path):
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
