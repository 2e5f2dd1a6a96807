"""The project file: migrations, pragmas, and refusing files that are not (current) projects."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from curator.core import store
from curator.core.errors import NewerSchema, NotAProject


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_new_project_has_migrations_and_marker(tmp_path):
    db = store.open_project(tmp_path / "p.curator", create=True)
    applied = [m.name for m in store.migrations.applied(db)]
    assert applied and applied[0] == "m001_initial"
    assert not store.migrations.pending(db)
    assert store.meta_get(db, "app") == store.APP_MARKER
    for table in ("documents", "chunks", "chunks_fts", "queries", "decisions", "review_queue", "eval_runs"):
        assert table in db.table_names()
    db.close()


def test_wal_foreign_keys_and_busy_timeout(tmp_path):
    db = store.open_project(tmp_path / "p.curator", create=True)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == store.BUSY_TIMEOUT_MS
    with pytest.raises(sqlite3.IntegrityError):  # foreign keys are really enforced
        with db.conn:
            db.execute("INSERT INTO chunks (id, doc_id, ord, text) VALUES ('c', 'no-such-doc', 0, 'x')")
    db.close()


def test_reopen_is_idempotent_and_keeps_data(tmp_path):
    path = tmp_path / "p.curator"
    db = store.open_project(path, create=True)
    store.meta_set(db, "hello", "world")
    db.close()
    db = store.open_project(path)
    assert store.meta_get(db, "hello") == "world"
    assert len(store.migrations.applied(db)) == len(store.migrations._migrations)
    db.close()
    assert not list(tmp_path.glob("*.bak-*"))  # nothing to migrate, so no backup


def test_missing_project_not_created_without_create(tmp_path):
    with pytest.raises(NotAProject, match="curator init"):
        store.open_project(tmp_path / "nope.curator")
    assert not (tmp_path / "nope.curator").exists()


def test_folder_refused(tmp_path):
    with pytest.raises(NotAProject, match="folder"):
        store.open_project(tmp_path)


def test_random_bytes_refused_unmodified(tmp_path):
    path = tmp_path / "random.curator"
    path.write_bytes(os.urandom(4096))
    digest = _sha(path)
    with pytest.raises(NotAProject, match="not modified"):
        store.open_project(path, create=True)
    assert _sha(path) == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["random.curator"]


def test_text_file_refused_unmodified(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n")
    digest = _sha(path)
    with pytest.raises(NotAProject):
        store.open_project(path)
    assert _sha(path) == digest


def test_foreign_sqlite_refused_unmodified(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.execute("INSERT INTO people VALUES ('ada')")
    conn.commit()
    conn.close()
    digest = _sha(path)
    with pytest.raises(NotAProject, match="not a Curator project"):
        store.open_project(path)
    assert _sha(path) == digest
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not switched to WAL
    conn.close()


def test_sqlite_with_foreign_meta_table_refused(tmp_path):
    path = tmp_path / "meta.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    conn.execute("INSERT INTO meta VALUES ('app', 'something-else')")
    conn.commit()
    conn.close()
    digest = _sha(path)
    with pytest.raises(NotAProject):
        store.open_project(path)
    assert _sha(path) == digest



def test_newer_schema_refused_unmodified(tmp_path):
    path = tmp_path / "p.curator"
    store.open_project(path, create=True).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES (?, ?, ?)",
        [store.MIGRATION_SET, "m999_from_the_future", "2099-01-01"],
    )
    conn.commit()
    conn.close()
    digest = _sha(path)
    with pytest.raises(NewerSchema, match="m999_from_the_future"):
        store.open_project(path)
    assert _sha(path) == digest
    assert not Path(str(path) + "-wal").exists()


def test_empty_file_becomes_project_only_when_asked(tmp_path):
    path = tmp_path / "blank.curator"
    path.touch()
    with pytest.raises(NotAProject, match="an empty file"):
        store.open_project(path)  # issue 20: a zero-byte file is not silently turned into a project
    assert path.stat().st_size == 0
    db = store.open_project(path, create=True)
    assert store.meta_get(db, "app") == store.APP_MARKER
    db.close()


def test_json_helpers_are_byte_stable():
    assert store.dumps({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    assert store.loads(None, []) == [] and store.loads("", {}) == {} and store.loads("[1]") == [1]
    stamps = [store.now() for _ in range(3)]
    assert stamps == sorted(stamps)


def _real_project_bytes(tmp_path: Path, sample_corpus: Path) -> bytes:
    from curator.core.corpus.ingest import ingest

    path = tmp_path / "whole.curator"
    db = store.open_project(path, create=True)
    ingest(db, [sample_corpus])
    db.close()
    return path.read_bytes()


@pytest.mark.parametrize("damage", ["truncated", "overwritten_pages"])
def test_damaged_project_refused_unmodified(tmp_path, sample_corpus, damage):
    """A project cut short (a half-copied file) or with pages overwritten keeps its SQLite
    header, so it looks like a project; it must still be refused, and never written to."""
    data = _real_project_bytes(tmp_path, sample_corpus)
    assert len(data) > 16384
    if damage == "truncated":
        data = data[: len(data) // 3]
    else:
        data = data[:100] + bytes(range(256)) * 16 + data[100 + 4096:]
    path = tmp_path / f"{damage}.curator"
    path.write_bytes(data)
    before = _sha(path)
    with pytest.raises(NotAProject, match="not a readable SQLite file.*not modified"):
        store.open_project(path)
    assert _sha(path) == before
    assert not Path(str(path) + "-wal").exists() or Path(str(path) + "-wal").stat().st_size == 0


def test_m001_project_is_migrated_to_bulk_fts_with_a_backup(tmp_path, sample_project_path):
    """A project from before m002 (per-row FTS trigger) is backed up, migrated, and still searchable."""
    import shutil
    import sqlite3

    from curator.core.corpus.ingest import ingest
    from curator.core.corpus.search import search_chunks
    from curator.core.store import open_project

    path = tmp_path / "old.curator"
    shutil.copy(sample_project_path, path)
    conn = sqlite3.connect(path)  # put back m001's triggers and forget m002
    conn.executescript("""
        DROP TRIGGER chunks_au;
        CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
          INSERT INTO chunks_fts (rowid, title, text) VALUES (new.rowid, new.title, new.text); END;
        CREATE TRIGGER chunks_au AFTER UPDATE ON chunks BEGIN
          INSERT INTO chunks_fts (chunks_fts, rowid, title, text) VALUES ('delete', old.rowid, old.title, old.text);
          INSERT INTO chunks_fts (rowid, title, text) VALUES (new.rowid, new.title, new.text); END;
        DELETE FROM _sqlite_migrations WHERE name = 'm002_chunk_fts_bulk';""")
    conn.commit()
    conn.close()
    db = open_project(path)
    triggers = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert "chunks_ai" not in triggers and "chunks_au" in triggers
    assert len(list(tmp_path.glob("old.curator.bak-*"))) == 1
    assert search_chunks(db, "rotate", limit=3)  # the index built under m001 still answers
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "zebra.md").write_text("# Zebras\n\n" + "Quagga zebras graze on the savanna in large herds. " * 10)
    ingest(db, [extra])
    assert [r["doc_path"] for r in search_chunks(db, "quagga")] == ["extra/zebra.md"]
    assert db.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)") is not None
    db.close()
