"""The project file (one SQLite database): open and check it, its schema, and small row helpers.

Every stage imports this package as ``store`` and uses the names below; the modules behind
them are ``connection`` (open, check, locks), ``schema`` (numbered migrations), ``records``
(timestamps, stable JSON, rows, meta) and ``stats`` (the project's counts).
"""

from curator.core.store.connection import (BUSY_TIMEOUT_MS, SQLITE_MAGIC, _check_is_project, _looks_like_sqlite,
                                           begin_immediate, cannot_open, connect_read_only, is_read_only,
                                           open_project)
from curator.core.store.records import dumps, loads, meta_get, meta_set, now, rows
from curator.core.store.schema import APP_MARKER, MIGRATION_SET, index_new_chunks, last_chunk_rowid, migrations

__all__ = ["APP_MARKER", "BUSY_TIMEOUT_MS", "MIGRATION_SET", "SQLITE_MAGIC", "begin_immediate", "cannot_open",
           "connect_read_only", "dumps", "index_new_chunks", "is_read_only", "last_chunk_rowid", "loads", "meta_get",
           "meta_set", "migrations", "now", "open_project", "rows", "_check_is_project", "_looks_like_sqlite"]
