"""Two (and three) processes on one project at once: nobody sees "database is locked".

The GUI keeps one long-lived connection and commits every decision at once; the CLI runs a
generation that commits a row at a time. WAL, the busy timeout and short transactions must let
both finish.
"""

from __future__ import annotations

import json
import sqlite3

from curator.core.queries.rows import add_query
from curator.core.store import open_project

from trustkit import curator_cmd, python_child, spawn

# Like the review screen: one connection held open, decisions, undos and redos as fast as possible.
REVIEWER_CHILD = r"""
import sys, time
from curator.core.review import decisions
from curator.core.store import open_project
db = open_project(sys.argv[1])
ids = [r[0] for r in db.execute("SELECT id FROM queries WHERE source = 'manual' ORDER BY id")]
def generating():
    row = db.execute("SELECT status FROM generation_runs ORDER BY id DESC LIMIT 1").fetchone()
    return None if row is None else row[0] == "running"
deadline = time.monotonic() + 60
while generating() is None and time.monotonic() < deadline:  # start once the generator has
    time.sleep(0.01)
i = 0
while generating() or i < int(sys.argv[2]):  # keep deciding for as long as it generates
    decisions.decide(db, ids[i % len(ids)], ("approve", "reject", "unanswerable")[i % 3], "ann", note=f"n{i}")
    if i % 10 == 9:
        decisions.undo(db, "ann")
        decisions.redo(db, "ann")
    i += 1
print("REVIEWED", i, flush=True)
"""

EXPORTER_CHILD = r"""
import sys
from curator.cli.main import cli
for i in range(int(sys.argv[3])):
    cli.main(["export", sys.argv[1], sys.argv[2]], standalone_mode=False)
print("EXPORTED", flush=True)
"""


def _seed(path, n: int = 30) -> None:
    db = open_project(path)
    chunk = db.execute("SELECT id FROM chunks WHERE active = 1 LIMIT 1").fetchone()  # approving needs gold
    with db.conn:
        for i in range(n):
            add_query(db, f"a manual question number {i} for review?", "manual",
                      gold_chunk_ids=[chunk[0]] if chunk else [])
    db.close()


def _finish(proc, timeout: float = 120) -> tuple[str, str]:
    out, err = proc.communicate(timeout=timeout)
    assert "locked" not in err.lower() and "busy" not in err.lower(), err
    assert proc.returncode == 0, err[-3000:]
    return out, err


def test_generation_and_reviews_at_once(sample_project_path, fake_model, tmp_path):
    _seed(sample_project_path)
    fake_model.delay = 0.02
    generator = spawn(curator_cmd("generate", str(sample_project_path), "--endpoint", fake_model.url, "--answers", "free",
                                  "--count", "25", "--seed", "2", "--json"))
    reviewer = python_child(REVIEWER_CHILD, str(sample_project_path), "200")
    exporter = python_child(EXPORTER_CHILD, str(sample_project_path), str(tmp_path / "gold.jsonl"), "15")
    summary = json.loads(_finish(generator)[0])
    reviewed = int(_finish(reviewer)[0].split()[-1])
    assert reviewed >= 200
    assert "EXPORTED" in _finish(exporter)[0]
    assert summary["status"] == "complete" and summary["accepted"] == 25

    conn = sqlite3.connect(sample_project_path)
    try:
        assert conn.execute("SELECT COUNT(*) FROM queries WHERE source = 'synthetic'").fetchone()[0] == 25
        assert conn.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == reviewed
        assert conn.execute("SELECT COUNT(*) FROM exports").fetchone()[0] == 15
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_two_cli_reviewers_labelling_the_same_project(sample_project_path):
    """Two shells running ``curator label`` loops (a connection per command) on one file."""
    _seed(sample_project_path, 10)
    code = r"""
import sys
from curator.cli.main import cli
from curator.core.store import open_project
db = open_project(sys.argv[1]); ids = [r[0] for r in db.execute("SELECT id FROM queries ORDER BY id")]; db.close()
for i in range(120):
    cli.main(["label", sys.argv[1], ids[i % len(ids)], "approve", "--reviewer", sys.argv[2]], standalone_mode=False)
"""
    procs = [python_child(code, str(sample_project_path), name) for name in ("ann", "bob")]
    for proc in procs:
        _finish(proc)
    conn = sqlite3.connect(sample_project_path)
    assert conn.execute("SELECT reviewer, COUNT(*) FROM decisions GROUP BY 1 ORDER BY 1").fetchall() == [
        ("ann", 120), ("bob", 120)]
    conn.close()


def test_merge_from_a_copy_its_reviewer_is_still_labelling(sample_project_path, tmp_path):
    """Merging reads the other copy in one read-only snapshot while its reviewer writes to it."""
    from curator.core.review.merge import merge

    _seed(sample_project_path, 40)
    conn = sqlite3.connect(sample_project_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    theirs = tmp_path / "bob.curator"
    theirs.write_bytes(sample_project_path.read_bytes())
    code = r"""
import sys
from curator.core.review import decisions
from curator.core.store import open_project
db = open_project(sys.argv[1])
ids = [r[0] for r in db.execute("SELECT id FROM queries WHERE source = 'manual' ORDER BY id")]
print("READY", flush=True)
for i in range(400):
    decisions.decide(db, ids[i % len(ids)], ("approve", "reject")[i % 2], "bob")
"""
    labeller = python_child(code, str(theirs))
    assert labeller.stdout.readline().startswith("READY")
    db = open_project(sample_project_path)
    try:
        results = [merge(db, theirs) for _ in range(5)]
    finally:
        db.close()
    _finish(labeller)
    db = open_project(sample_project_path)
    final = merge(db, theirs)  # after the labeller is done: everything it decided is here once
    merged = db.execute("SELECT COUNT(*) FROM decisions WHERE state = 'merged'").fetchone()[0]
    db.close()
    assert merged == 400 and final["errors"] == [] and all(r["errors"] == [] for r in results)


_WRITER = """
import sys
from curator.core.queries.rows import add_query
from curator.core.store import open_project
db = open_project(sys.argv[1])
for i in range(300):
    add_query(db, f"question {i} from the other process", "log")
db.close()
"""


def test_opening_the_project_again_keeps_the_open_connections_safe(tmp_path):
    """Opening a project in a second connection (what every GUI worker does) must not drop the
    first one's locks: with them gone, another process closing its connection took itself for the
    last one and removed the WAL under the app ("database disk image is malformed")."""
    path = tmp_path / "p.curator"
    app = open_project(path, create=True)  # the window's connection, kept open throughout
    assert app.execute("SELECT COUNT(*) FROM queries").fetchone()[0] == 0
    open_project(path).close()  # a worker thread's connection
    child = python_child(_WRITER, str(path))
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    worker = open_project(path)
    add_query(worker, "one more from a worker thread", "log")
    worker.close()
    assert app.execute("SELECT COUNT(*) FROM queries").fetchone()[0] == 301
    app.close()
