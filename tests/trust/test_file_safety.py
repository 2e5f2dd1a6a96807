"""Opening the wrong file never writes to it, and what the user sees says what to do.

Each bad file is opened through the real commands (``curator stats``, ``init``, ``ingest``,
``label``, ``merge``) and the desktop window; its bytes are hashed before and after. An older
project is backed up before it is migrated (simulated with an extra migration, because the
schema has only one so far).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlite_utils import Migrations

from curator.cli.main import cli
from curator.core import store
from curator.core.errors import NewerSchema


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _checkpointed_copy(src: Path, dst: Path) -> Path:
    conn = sqlite3.connect(src)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.copy(src, dst)
    return dst


def _foreign(tmp_path: Path) -> Path:
    path = tmp_path / "people.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.execute("INSERT INTO people VALUES ('ada')")
    conn.commit()
    conn.close()
    return path


def _truncated(tmp_path: Path, project: Path) -> Path:
    data = _checkpointed_copy(project, tmp_path / "whole.curator").read_bytes()
    path = tmp_path / "half.curator"
    path.write_bytes(data[: len(data) // 3])
    return path


def _corrupt_pages(tmp_path: Path, project: Path) -> Path:
    data = bytearray(_checkpointed_copy(project, tmp_path / "whole.curator").read_bytes())
    data[4096:4096 * 3] = os.urandom(4096 * 2)  # the schema table's pages are gone
    path = tmp_path / "corrupt.curator"
    path.write_bytes(bytes(data))
    return path


def _header_then_noise(tmp_path: Path, project: Path) -> Path:
    path = tmp_path / "noise.curator"
    path.write_bytes(store.SQLITE_MAGIC + os.urandom(8192))
    return path


def _random_bytes(tmp_path: Path, project: Path) -> Path:
    path = tmp_path / "random.curator"
    path.write_bytes(os.urandom(10_000))
    return path


def _one_byte(tmp_path: Path, project: Path) -> Path:
    path = tmp_path / "x.curator"  # SQLite reads a file shorter than a page as an empty database
    path.write_bytes(b"\n")
    return path


def _newer(tmp_path: Path, project: Path) -> Path:
    path = _checkpointed_copy(project, tmp_path / "newer.curator")
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES (?, ?, ?)",
                 [store.MIGRATION_SET, "m042_from_the_future", "2099-01-01"])
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


BAD_FILES = {
    "foreign sqlite": (lambda tmp, _p: _foreign(tmp), "not a Curator project"),
    "truncated project": (_truncated, "not a readable SQLite file"),
    "corrupt pages": (_corrupt_pages, "damaged"),
    "sqlite header then noise": (_header_then_noise, "not a readable SQLite file"),
    "random bytes": (_random_bytes, "not a SQLite file"),
    "one byte": (_one_byte, "not a SQLite file"),
    "newer schema": (_newer, "newer Curator"),
}
COMMANDS = {
    "stats": lambda p: ["stats", p],
    "init": lambda p: ["init", p],
    "ingest": lambda p: ["ingest", p, str(Path(__file__))],  # the corpus path is irrelevant: it fails first
    "label": lambda p: ["label", p, "q_0000000000000000", "approve"],
    "agreement": lambda p: ["agreement", p],
    "queries": lambda p: ["queries", p],
    "export": lambda p: ["export", p, str(Path(p).with_name("out.jsonl"))],
}


@pytest.mark.parametrize("kind", BAD_FILES)
def test_bad_file_refused_by_every_command_and_never_written(kind, tmp_path, sample_project_path):
    make, message = BAD_FILES[kind]
    path = make(tmp_path, sample_project_path)
    before = _sha(path)
    runner = CliRunner()
    for name, argv in COMMANDS.items():
        result = runner.invoke(cli, argv(str(path)))
        assert result.exit_code == 1, (name, result.output)
        assert result.output.startswith("Error: ") and message in result.output, (name, result.output)
        assert "not modified" in result.output or "upgrade Curator" in result.output
        assert "Traceback" not in result.output
    assert _sha(path) == before
    for sidecar in ("-wal", "-journal"):
        side = Path(str(path) + sidecar)
        assert not side.exists() or side.stat().st_size == 0


@pytest.mark.parametrize("kind", ["foreign sqlite", "truncated project", "random bytes", "newer schema"])
def test_bad_file_as_merge_source_is_refused_unmodified(kind, tmp_path, sample_project_path):
    make, message = BAD_FILES[kind]
    other = make(tmp_path, sample_project_path)
    before = _sha(other)
    result = CliRunner().invoke(cli, ["merge", str(sample_project_path), str(other)])
    assert result.exit_code == 1 and message in result.output, result.output
    assert _sha(other) == before


def _empty_database(tmp_path: Path) -> Path:
    path = tmp_path / "empty.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 7")  # writes the header page: a SQLite file with no tables
    conn.close()
    return path


def test_an_empty_sqlite_database_is_made_a_project_only_by_init(tmp_path, sample_project_path):
    path = _empty_database(tmp_path)
    before = _sha(path)
    runner = CliRunner()
    for argv in (["stats", str(path)], ["queries", str(path)], ["export", str(path), str(tmp_path / "o.jsonl")],
                 ["merge", str(path), str(sample_project_path)], ["agreement", str(path)]):
        result = runner.invoke(cli, argv)
        assert result.exit_code == 1 and "an empty SQLite database" in result.output, (argv, result.output)
        assert "curator init" in result.output
    assert _sha(path) == before and not (tmp_path / "o.jsonl").exists()
    result = runner.invoke(cli, ["init", str(path)])
    assert result.exit_code == 0, result.output
    store.open_project(path).close()  # now a project


def test_newer_schema_raises_the_specific_error(tmp_path, sample_project_path):
    path = _newer(tmp_path, sample_project_path)
    with pytest.raises(NewerSchema, match="m042_from_the_future"):
        store.open_project(path)


def test_folder_and_missing_file(tmp_path):
    runner = CliRunner()
    assert "is a folder" in runner.invoke(cli, ["stats", str(tmp_path)]).output
    missing = runner.invoke(cli, ["stats", str(tmp_path / "nope.curator")])
    assert missing.exit_code == 1 and "curator init" in missing.output
    assert not (tmp_path / "nope.curator").exists()


def test_garbage_wal_beside_a_project_is_ignored(tmp_path, sample_project_path):
    """A -wal file of noise (a bad copy, a crash of another tool) fails SQLite's checksums and is
    ignored: the project opens with all its data."""
    path = _checkpointed_copy(sample_project_path, tmp_path / "p.curator")
    conn = sqlite3.connect(path)
    chunks = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    conn.close()
    Path(str(path) + "-wal").write_bytes(os.urandom(50_000))
    db = store.open_project(path)
    assert db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == chunks
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()


@pytest.fixture
def extra_migration(monkeypatch):
    """Pretend this Curator knows one more migration than the project file has."""
    def m002_simulated(db):
        db.execute("CREATE TABLE simulated_future (x TEXT)")

    known = list(store.migrations._migrations) + [Migrations._Migration("m002_simulated", m002_simulated)]
    monkeypatch.setattr(store.migrations, "_migrations", known)


def test_older_project_is_backed_up_before_migrating(tmp_path, sample_project_path, extra_migration):
    path = _checkpointed_copy(sample_project_path, tmp_path / "old.curator")
    original = _sha(path)
    db = store.open_project(path)
    assert "simulated_future" in db.table_names()
    db.close()
    backups = list(tmp_path.glob("old.curator.bak-*"))
    assert len(backups) == 1
    assert _sha(backups[0]) == original  # the backup is the project exactly as it was
    conn = sqlite3.connect(f"{backups[0].as_uri()}?mode=ro&immutable=1", uri=True)  # no sidecar files
    assert "simulated_future" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.close()
    store.open_project(path).close()  # already migrated: no second backup
    assert len(list(tmp_path.glob("old.curator.bak-*"))) == 1


def test_new_empty_file_is_not_backed_up(tmp_path, extra_migration):
    store.open_project(tmp_path / "fresh.curator", create=True).close()
    assert not list(tmp_path.glob("*.bak-*"))


def test_window_shows_the_message_and_leaves_the_file(qtbot, tmp_path, sample_project_path, monkeypatch):
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QMessageBox

    from curator.gui.window import MainWindow

    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown.append((title, text)))
    path = _newer(tmp_path, sample_project_path)
    before = _sha(path)
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat), reviewer="ann")
    qtbot.addWidget(win)
    assert win.open_path(path) is False
    assert shown and "newer Curator" in shown[0][1]
    assert _sha(path) == before
