"""Done-when of issue 17: a whole project driven from the window, no command line.

New project, add a folder (the sample corpus), import the bundled log, generate with the
scripted backend, cluster, build the queue, review with keys and buttons, export, merge a
second reviewer's copy and adjudicate. Real core, SQLite and widgets (offscreen); only the
file dialogs' answers and the generation backend are scripted.
"""

from __future__ import annotations

import json
import shutil

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QFileDialog

from curator.core.clustering.cluster import shutdown_worker
from curator.core.generation.backends import FakeBackend
from curator.core.resources import resources_dir
from curator.core.review import identity
from curator.core.review.decisions import decide
from curator.core.store import open_project
from curator.gui.window import MainWindow
from scripted import good_reply

SAMPLE_LOG = resources_dir() / "sample_logs" / "queries.jsonl"


@pytest.fixture(autouse=True)
def own_config(tmp_path, monkeypatch):
    monkeypatch.setenv(identity.CONFIG_DIR_VAR, str(tmp_path / "config"))
    monkeypatch.delenv(identity.ENV_VAR, raising=False)
    yield
    shutdown_worker()


def answer_dialogs(monkeypatch, **answers) -> None:
    """What the user would pick in each file dialog (a test cannot click in a native one)."""
    for name, value in answers.items():
        monkeypatch.setattr(QFileDialog, name, lambda *a, _v=value, **k: _v)


def finish(qtbot, view, start, timeout=240000):
    """Start a view's task the way a user does and wait for its outcome; a failure shows its message."""
    outcomes = []
    view.task_finished.connect(lambda *args: outcomes.append(("finished", args)))
    view.task_failed.connect(lambda *args: outcomes.append(("failed", args)))
    start()
    qtbot.waitUntil(lambda: bool(outcomes) and not view.busy(), timeout=timeout)
    kind, args = outcomes[0]
    assert kind == "finished", args
    return args


def test_a_whole_project_from_the_window(qtbot, tmp_path, sample_corpus, monkeypatch):
    win = MainWindow(None, settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat))
    qtbot.addWidget(win)
    win.resize(1200, 760)
    win.show()
    qtbot.waitExposed(win)
    win.set_reviewer("ana")

    # new project (the suffix is added), then the corpus from a folder
    answer_dialogs(monkeypatch, getSaveFileName=(str(tmp_path / "handbook"), ""),
                   getExistingDirectory=str(sample_corpus))
    win.start.buttons[0].click()
    assert win.project_path == tmp_path / "handbook.curator"
    (report,) = finish(qtbot, win.corpus_view, win.corpus_view.stack.empty.buttons[0].click)
    assert report.files_ingested >= 20 and report.skipped == [] and win.corpus_view.documents.count() >= 20

    # the bundled production log, with the mapping core detected
    answer_dialogs(monkeypatch, getOpenFileName=(str(SAMPLE_LOG), ""))
    win.tabs.setCurrentWidget(win.queries_view)
    win.queries_view.import_button.click()
    qtbot.waitUntil(lambda: win.queries_view.import_dialog is not None, timeout=30000)
    assert win.queries_view.import_dialog.combos["query"].currentText() == "query"
    (imported,) = finish(qtbot, win.queries_view, win.queries_view.import_dialog.accept)
    assert imported["imported"] > 20

    # generate with the scripted backend
    gen = win.generate_view
    gen.backend_factory = lambda config: FakeBackend(good_reply)
    gen.count.setValue(12)
    win.tabs.setCurrentWidget(gen)
    (summary,) = finish(qtbot, gen, gen.start_button.click)
    assert summary["accepted"] == 12 and gen.rows_model.rowCount() == 12

    # cluster every query, then fill the review queue
    clusters = win.clusters_view
    win.tabs.setCurrentWidget(clusters)
    clusters.k_spin.setValue(3)
    kind, result = finish(qtbot, clusters, clusters.cluster_button.click)
    assert kind == "cluster" and result["k"] == 3
    clusters.size_spin.setValue(12)
    kind, result = finish(qtbot, clusters, clusters.sample_button.click, timeout=120000)
    assert kind == "sample" and result["queued"] == 12

    # review: keys and buttons, as ana
    review = win.review_view
    win.tabs.setCurrentWidget(review)
    review.setFocus()
    decided = []
    review.decided.connect(decided.append)
    approved = 0
    for _ in range(30):  # approve three rows by key; a row with neither gold nor suggestions is rejected (X)
        row = review.current
        assert row is not None, "the queue ran out before three rows could be approved"
        if not row["gold_chunk_ids"] and review.suggestion_rows:
            qtbot.keyClick(review, Qt.Key_1)  # take the first suggested chunk as gold
        if row["gold_chunk_ids"] or review.suggestion_rows:
            qtbot.keyClick(review, Qt.Key_A)
            approved += 1
        else:
            qtbot.keyClick(review, Qt.Key_X)
        assert review.current is None or review.current["id"] != row["id"], review.message.text()
        if approved == 3:
            break
    review.buttons["reject"].click()
    review.buttons["unanswerable"].click()
    qtbot.keyClick(review, Qt.Key_Z, Qt.ControlModifier)  # undo the unanswerable one
    db = win.db
    journal = db.execute("SELECT reviewer, action, state FROM decisions ORDER BY id").fetchall()
    assert [r[1] for r in journal if r[2] == "done"].count("approve") == 3
    assert {r[0] for r in journal} == {"ana"} and ("ana", "unanswerable", "undone") in journal
    assert "approved" in win.queries_view.model.distinct(3)

    # export the approved rows
    ev = win.evaluate_view
    ev.out_dir.setText(str(tmp_path / "export"))
    win.tabs.setCurrentWidget(ev)
    kind, exported = finish(qtbot, ev, ev.export_button.click, timeout=60000)
    assert kind == "export" and exported["rows"] == 3
    rows = [json.loads(line) for line in open(exported["out"], encoding="utf-8")]
    assert len(rows) == 3 and all(r["reviewer"] == "ana" and r["reference_context_ids"] for r in rows)

    # bob reviewed a copy; merge it and adjudicate the conflict from the Adjudicate tab
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    bob_path = tmp_path / "handbook-bob.curator"
    shutil.copy(win.project_path, bob_path)
    approved = [r[0] for r in db.execute("SELECT id FROM queries WHERE status = 'approved' ORDER BY id")]
    bob = open_project(bob_path)
    decide(bob, approved[0], "reject", "bob")
    bob.close()
    answer_dialogs(monkeypatch, getOpenFileName=(str(bob_path), ""))
    adj = win.adjudication_view
    win.tabs.setCurrentWidget(adj)
    (merged,) = finish(qtbot, adj, adj.merge_button.click, timeout=60000)
    assert merged["decisions_imported"] >= 1 and len(merged["conflicts"]) == 1 and adj.listing.count() == 1
    adj.setFocus()
    picked = adj.current["decisions"][0]["reviewer"]
    qtbot.keyClick(adj, Qt.Key_A)  # take the left reviewer's decision
    assert adj.conflicts == []
    final = db.execute("SELECT status, reviewer FROM queries WHERE id = ?", [approved[0]]).fetchone()
    assert final[0] == ("approved" if picked == "ana" else "rejected") and final[1] == "ana"  # judged by ana
    assert win.grab().save(str(tmp_path / "adjudicated.png"))
    win.close()
