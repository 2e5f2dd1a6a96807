"""A project that cannot be written: read-only commands work, writing ones say why (issue 43: 8).

A project on a read-only mount, or on a full disk, was reported as "not a readable SQLite file".
Tests run as root, where chmod stops no write, so the real case is made with ``chattr +i`` on the
file and its folder (skipped where the filesystem or the container does not allow it); the
errors SQLite raises on a read-only mount and a full disk are also raised by hand in unit tests.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
import sqlite_utils
from approved_rows import approve_manual_rows
from click.testing import CliRunner
from sqlite_utils import Migrations

from curator.cli.main import cli
from curator.core import store
from curator.core.errors import ProjectNotWritable
from curator.core.store import connection


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _gold_copy(project: Path, folder: Path) -> Path:
    """A closed, checkpointed project with two approved rows, alone in ``folder`` (no -wal, no -shm)."""
    approve_manual_rows(project, 2, "What does part {n} say?", "it")
    folder.mkdir()
    return Path(shutil.copy(project, folder / "ro.curator"))


def _chattr(flag: str, *paths: Path) -> bool:
    try:
        return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


@pytest.fixture
def immutable_project(sample_project_path, tmp_path):
    """A project whose file and folder nobody (root included) may write: as on a read-only mount."""
    path = _gold_copy(sample_project_path, tmp_path / "ro")
    if not _chattr("+i", path, path.parent):
        pytest.skip("chattr +i is not allowed here")
    try:
        yield path
    finally:
        _chattr("-i", path, path.parent)


def test_read_only_commands_work_on_an_immutable_project(immutable_project, tmp_path):
    before = _sha(immutable_project)
    runner = CliRunner()
    out = tmp_path / "gold.jsonl"
    for argv in (["stats", "--json"], ["queries"], ["chunks"], ["search", "--", "the"], ["agreement"],
                 ["export", str(out)], ["eval"]):
        argv = [argv[0], str(immutable_project), *argv[1:]]
        result = runner.invoke(cli, argv)
        assert result.exit_code == 0, (argv, result.output)
    assert len(out.read_text().splitlines()) == 2
    assert "eval (not stored)" in result.output and "read-only" in result.output
    assert _sha(immutable_project) == before
    assert sorted(p.name for p in immutable_project.parent.iterdir()) == ["ro.curator"]  # no -wal, -shm


def test_a_writing_command_on_an_immutable_project_says_read_only(immutable_project):
    before = _sha(immutable_project)
    qid = "q_0000000000000000"
    result = CliRunner().invoke(cli, ["label", str(immutable_project), qid, "approve"])
    assert result.exit_code == 1 and "read-only" in result.output and "intact" in result.output, result.output
    assert "not a readable SQLite file" not in result.output
    assert _sha(immutable_project) == before


def test_the_read_only_connection_never_writes(immutable_project):
    db = store.open_project(immutable_project, reads_only=True)
    try:
        assert store.is_read_only(db)
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            db.execute("INSERT INTO meta (key, value) VALUES ('x', 'y')")
    finally:
        db.close()


def test_the_window_says_read_only_and_leaves_the_file(qtbot, immutable_project, tmp_path, monkeypatch):
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QMessageBox

    from curator.gui.window import MainWindow

    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown.append(text))
    before = _sha(immutable_project)
    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat), reviewer="ann")
    qtbot.addWidget(win)
    assert win.open_path(immutable_project) is False
    assert shown and "read-only" in shown[0] and "intact" in shown[0]
    assert _sha(immutable_project) == before


# ---------------------------------------------------------------- the errors, raised by hand

def _failing_prepare(message: str):
    def prepare(db, path):
        raise sqlite3.OperationalError(message)
    return prepare


@pytest.fixture
def project_copy(sample_project_path, tmp_path) -> Path:
    return _gold_copy(sample_project_path, tmp_path / "p")


def test_read_only_media_is_named_and_a_reading_command_falls_back(project_copy, monkeypatch):
    monkeypatch.setattr(connection, "_prepare", _failing_prepare("attempt to write a readonly database"))
    before = _sha(project_copy)
    with pytest.raises(ProjectNotWritable, match="read-only.*the file is intact"):
        store.open_project(project_copy)
    db = store.open_project(project_copy, reads_only=True)
    assert store.is_read_only(db) and db.execute("SELECT COUNT(*) FROM queries").fetchone()[0] == 2
    db.close()
    assert _sha(project_copy) == before


def test_a_full_disk_is_named_not_called_unreadable(project_copy, monkeypatch):
    def full(self, *args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(sqlite_utils.Database, "table_names", full)
    before = _sha(project_copy)
    result = CliRunner().invoke(cli, ["label", str(project_copy), "q_0000000000000000", "approve"])
    assert result.exit_code == 1 and "disk is full" in result.output and "intact" in result.output, result.output
    assert "not a readable" not in result.output
    assert _sha(project_copy) == before


def test_a_read_only_project_needing_migration_says_open_it_writable_once(project_copy, monkeypatch):
    known = list(store.migrations._migrations) + [Migrations._Migration("m999_simulated", lambda db: None)]
    monkeypatch.setattr(store.migrations, "_migrations", known)
    monkeypatch.setattr(connection, "writable", lambda path: False)
    before = _sha(project_copy)
    result = CliRunner().invoke(cli, ["stats", str(project_copy)])
    assert result.exit_code == 1 and "older Curator" in result.output and "writable" in result.output, result.output
    assert _sha(project_copy) == before
