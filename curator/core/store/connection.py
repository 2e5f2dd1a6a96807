"""The project file: one SQLite database opened through sqlite-utils, checked and migrated."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import time
from datetime import datetime
from pathlib import Path

import sqlite_utils

from curator.core.errors import CuratorError, NewerSchema, NotAProject, ProjectNotWritable
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


def _check_is_project(db: sqlite_utils.Database, path: Path, create: bool = False) -> None:
    """Refuse files that are not Curator projects or were written by a newer Curator.

    An empty database becomes a project only with ``create`` (``init``): ``stats`` on an empty
    SQLite file migrated it into a project, a command that only reads."""
    try:
        tables = set(db.table_names())
    except sqlite3.DatabaseError as exc:
        raise cannot_open(path, exc) from None
    if not tables:
        if create:
            return
        raise NotAProject(f"{path}: an empty SQLite database, not a Curator project; it was not modified. "
                          f"Make it a project with 'curator init {path}'.")
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


MIN_DATABASE_BYTES = 512  # SQLite's smallest page: a shorter file holding anything is no database


def _check_file(path: Path, create: bool) -> None:
    """Refuse, by looking only, a path that is no project and may not become one."""
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
    # SQLite reads a file shorter than a page as an empty database: 'queries' on a one-byte file made it a project
    elif path.stat().st_size < MIN_DATABASE_BYTES or not _looks_like_sqlite(path):
        raise NotAProject(f"{path}: not a SQLite file, so not a Curator project; it was not modified.")


def open_project(path: str | Path, create: bool = False, reads_only: bool = False) -> sqlite_utils.Database:
    """Open (or with ``create`` make) a project file, migrated to the current schema.

    A foreign or newer file raises before anything is written to it. ``reads_only``: the caller
    never writes, so a project that cannot be written (read-only file, folder or mount) is opened
    read-only (see ``is_read_only``) instead of refused."""
    path = Path(path)
    _check_file(path, create)
    if reads_only and not create and not writable(path):
        return _open_read_only(path)
    db = _connect(path)
    try:
        _check_is_project(db, path, create)
        _prepare(db, path)
    except Exception as exc:
        db.close()
        error = cannot_open(path, exc) if isinstance(exc, (sqlite3.OperationalError, OSError)) else exc
        if reads_only and isinstance(error, ProjectNotWritable):
            return _open_read_only(path)  # a read-only mount, or a disk too full to migrate or make the WAL
        if error is exc:
            raise
        raise error from None
    return db


def _prepare(db: sqlite_utils.Database, path: Path) -> None:
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    _backup_before_migrating(db, path)
    migrations.apply(db)


# ---------------------------------------------------------------- a project that cannot be written

def writable(path: Path) -> bool:
    """Whether the project file and its folder (where SQLite makes the -wal and -shm files) take writes.

    False on a read-only mount and for an immutable file (chattr +i), even for root."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def is_read_only_error(exc: Exception) -> bool:
    return any(word in str(exc).lower() for word in ("readonly", "read-only"))


def is_disk_full_error(exc: Exception) -> bool:
    return any(words in str(exc).lower() for words in ("disk is full", "no space left"))


def cannot_open(path: Path, exc: Exception) -> CuratorError:
    """The one line for a project SQLite could not use, naming what is wrong: a read-only project
    and a full disk were both reported as 'not a readable SQLite file'."""
    if is_disk_full_error(exc):
        return ProjectNotWritable(f"{path}: the disk is full, so the project could not be written; the file is intact. "
                                  "Free some space and run the command again.")
    if is_read_only_error(exc) or ("unable to open" in str(exc) and not writable(path)):
        return ProjectNotWritable(f"{path}: the project (or its folder) is read-only, so this command cannot "
                                  "write to it; the file is intact. Make it writable, or copy it somewhere writable.")
    return NotAProject(f"{path}: not a readable SQLite file ({exc}); it was not modified.")


class ReadOnlyConnection(sqlite3.Connection):
    """A project opened with SQLite's mode=ro: no write, no migration, no WAL files made."""


def connect_read_only(path: Path) -> sqlite3.Connection:
    """mode=ro never writes the file; immutable=1 is the fallback for read-only media, where
    SQLite cannot create the shared-memory file a WAL database needs even for reading."""
    uri = path.resolve().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False, factory=ReadOnlyConnection)
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        _refuse_unread_wal(path)
        conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False,
                               factory=ReadOnlyConnection)
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn


def _refuse_unread_wal(path: Path) -> None:
    """immutable=1 reads the main file only: committed changes still in a -wal file (a writer killed
    before its checkpoint) would be silently missing from every read, and an export empty or short."""
    wal = path.with_name(path.name + "-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        raise ProjectNotWritable(f"{path}: the project has changes in its -wal file that cannot be read here (the "
                                 "folder cannot be written, so SQLite cannot open the -wal); copy the project together "
                                 "with its -wal somewhere writable and open it there; the file is intact.")


def is_read_only(db: sqlite_utils.Database) -> bool:
    """Whether ``db`` was opened read-only (``open_project(..., reads_only=True)`` on a read-only project)."""
    return isinstance(db.conn, ReadOnlyConnection)


def _open_read_only(path: Path) -> sqlite_utils.Database:
    try:
        db = sqlite_utils.Database(connect_read_only(path))
    except sqlite3.DatabaseError as exc:
        raise NotAProject(f"{path}: not a readable SQLite file ({exc}); it was not modified.") from None
    try:
        _check_is_project(db, path)
        if migrations.pending(db):  # migrating writes; a read-only connection never does
            raise ProjectNotWritable(f"{path}: read-only, and made by an older Curator: its schema must be updated "
                                     "once, which writes to it. Open it once where it can be written (or work on "
                                     "a writable copy); the file is intact.")
    except Exception:
        db.close()
        raise
    return db
