"""A read-only project whose committed changes are still in its -wal file is refused, not read without
them (issue 43 item 8, second review): SQLite's immutable=1 fallback for read-only media reads the main
file only, so an export was silently empty. Tests run as root, so the real case uses ``chattr +i``."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core import store
from curator.core.errors import ProjectNotWritable
from curator.core.review import merge
from curator.core.store import connection

MESSAGE = "the project has changes in its -wal file that cannot be read here"
# A writer that approves two rows and is killed before any checkpoint: its commits stay in the -wal.
WRITER = """
import os, signal, sys
from curator.core import store
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
db = store.open_project(sys.argv[1])
db.execute("PRAGMA wal_autocheckpoint = 0")
ids = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id LIMIT 2")]
for n in range(2):
    with db.conn:
        qid = add_query(db, f"What does part {n} say?", "manual", reference="it", gold_chunk_ids=[ids[n]])
    decide(db, qid, "approve", "ana")
os.kill(os.getpid(), signal.SIGKILL)
"""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _killed_writer_copy(sample_project_path: Path, folder: Path) -> Path:
    folder.mkdir()
    path = Path(shutil.copy(sample_project_path, folder / "p.curator"))
    run = subprocess.run([sys.executable, "-c", WRITER, str(path)], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert run.returncode == -signal.SIGKILL, run.stderr
    wal = path.with_name(path.name + "-wal")
    assert wal.stat().st_size > 0
    return path


def _refuses(path: Path, out: Path) -> None:
    before = _sha(path)
    for argv in (["export", str(path), str(out)], ["stats", str(path)]):
        result = CliRunner().invoke(cli, argv)
        assert result.exit_code == 1, (argv, result.output)
        assert MESSAGE in result.output and "copy the project together with its -wal" in result.output
        assert len(result.output.splitlines()) == 1
    assert not out.exists() and _sha(path) == before
    with pytest.raises(ProjectNotWritable, match=MESSAGE):
        merge.open_other(path)


def test_a_read_only_project_with_a_non_empty_wal_is_refused(sample_project_path, tmp_path, monkeypatch):
    """As on read-only media without the -shm file: mode=ro cannot open, only immutable=1 could."""
    path = _killed_writer_copy(sample_project_path, tmp_path / "ro")
    real_connect = sqlite3.connect

    def no_plain_read_only(database, *args, **kwargs):
        if kwargs.get("factory") is connection.ReadOnlyConnection and str(database).endswith("?mode=ro"):
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(connection, "writable", lambda p: False)
    monkeypatch.setattr(connection.sqlite3, "connect", no_plain_read_only)
    _refuses(path, tmp_path / "gold.jsonl")


def _chattr(flag: str, *paths: Path) -> bool:
    try:
        return subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


def test_an_immutable_folder_holding_a_killed_writers_wal_is_refused(sample_project_path, tmp_path):
    path = _killed_writer_copy(sample_project_path, tmp_path / "ro")
    path.with_name(path.name + "-shm").unlink()  # as copied to read-only media without it
    frozen = [path, path.with_name(path.name + "-wal"), path.parent]
    if not _chattr("+i", *frozen):
        pytest.skip("chattr +i is not allowed here")
    try:
        _refuses(path, tmp_path / "gold.jsonl")
        assert sorted(os.listdir(path.parent)) == ["p.curator", "p.curator-wal"]
    finally:
        _chattr("-i", *frozen)
    db = store.open_project(path)  # writable again: the changes were in the -wal all along
    assert db.execute("SELECT COUNT(*) FROM queries WHERE status = 'approved'").fetchone()[0] == 2
    db.close()
