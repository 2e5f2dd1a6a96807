"""Every stage before review from the window: ingest (dialogs, drop, cancel, re-ingest, skipped
files), log import (detected mapping, editable, redaction), merge, one reviewer identity with the
CLI, the .curator suffix, empty states that lead on, Edit and Help menus, the map filter bar.

Real core, real SQLite, real widgets offscreen; the only stand-ins are the file dialogs'
return values (a test cannot click in a native dialog)."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QInputDialog

from curator.core.queries.rows import add_query, list_queries
from curator.core.resources import resources_dir
from curator.core.review import identity
from curator.core.review.decisions import decide
from curator.core.review.sample import build_queue
from curator.core.store import open_project
from curator.gui.corpus_view import CorpusView
from curator.gui.queries_view import QueriesView
from curator.gui.window import MainWindow

SAMPLE_LOG = resources_dir() / "sample_logs" / "queries.jsonl"
STATUS_COLUMN = 3


def shown_status(view: QueriesView, query_id: str) -> str:
    """The status the Queries tab's table shows for a query (what the user sees)."""
    model = view.model
    row = next(i for i in range(model.rowCount()) if model.query_id(i) == query_id)
    return model.cell(row, STATUS_COLUMN)


@pytest.fixture(autouse=True)
def own_config(tmp_path, monkeypatch):
    """The reviewer name a test stores goes to a temporary folder, never the user's own."""
    monkeypatch.setenv(identity.CONFIG_DIR_VAR, str(tmp_path / "config"))
    monkeypatch.delenv(identity.ENV_VAR, raising=False)


def window(qtbot, tmp_path, project=None, reviewer=None) -> MainWindow:
    win = MainWindow(project, settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat), reviewer=reviewer)
    qtbot.addWidget(win)
    win.resize(1200, 760)
    win.show()
    return win


def mixed_folder(tmp_path):
    """Two good files, one broken PDF (skipped with its reason) and a JSONL corpus with a bad line."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "install.md").write_text("# Install\n\n" + "Run the installer and pick a folder. " * 30)
    (root / "sync.txt").write_text("Sync runs every five minutes when the laptop is online. " * 30)
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    (root / "passages.jsonl").write_text(json.dumps({"_id": "p1", "text": "Backups run nightly at two."}) +
                                         "\n{not json\n")
    return root


def test_add_folder_ingests_in_a_worker_and_lists_the_skipped_files(qtbot, empty_db, tmp_path, monkeypatch):
    view = CorpusView(empty_db)
    qtbot.addWidget(view)
    assert view.stack.is_empty() and not view.reingest_button.isEnabled()
    assert ".pdf" in view.formats.text() and ".jsonl" in view.stack.empty.label.text()
    folder = mixed_folder(tmp_path)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(folder))
    with qtbot.waitSignal(view.task_finished, timeout=60000) as blocker:
        view.stack.empty.buttons[0].click()  # the empty state's "Add folder…"
        assert view.busy() and view.cancel_button.isEnabled() and not view.add_files_button.isEnabled()
    report = blocker.args[0]
    assert report.files_ingested == 3 and len(report.skipped) == 1
    assert not view.stack.is_empty() and view.documents.count() == 3
    listed = [view.skipped_list.item(i).text() for i in range(view.skipped_list.count())]
    assert any("broken.pdf" in line and " — " in line for line in listed)
    assert any("passages.jsonl:2" in line for line in listed)  # the bad line, as file:line
    assert view.skipped_list.isVisibleTo(view) and "1 file skipped" in view.status.text()
    assert view.reingest_button.isEnabled() and not view.busy()


def test_reingest_picks_up_a_changed_file_and_add_files_takes_single_files(qtbot, empty_db, tmp_path, monkeypatch):
    view = CorpusView(empty_db)
    qtbot.addWidget(view)
    folder = mixed_folder(tmp_path)
    with qtbot.waitSignal(view.task_finished, timeout=60000):
        view.ingest_paths([str(folder)])
    (folder / "sync.txt").write_text("Sync now waits for a charger before it starts. " * 30)
    with qtbot.waitSignal(view.task_finished, timeout=60000) as blocker:
        view.reingest_button.click()
    assert blocker.args[0].files_ingested == 1 and blocker.args[0].chunks_retired > 0
    extra = tmp_path / "faq.md"
    extra.write_text("# FAQ\n\n" + "Ask the helpdesk for a new licence key. " * 20)
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(extra)], ""))
    with qtbot.waitSignal(view.task_finished, timeout=60000):
        view.add_files_button.click()
    assert view.documents.count() == 4


def test_the_summary_counts_passages_edited_in_place_and_records_refused_for_a_taken_id(qtbot, empty_db, tmp_path):
    """The two counts `curator ingest` prints when non-zero, in its words; the refusal's file:line is listed."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    records = [{"_id": "1", "text": "Keys rotate every ninety days."}, {"_id": "2", "text": "Logs are kept a year."}]
    (first / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    view = CorpusView(empty_db)
    qtbot.addWidget(view)
    with qtbot.waitSignal(view.task_finished, timeout=60000):
        view.ingest_paths([str(first)])
    assert "changed in place" not in view.status.text() and "refused" not in view.status.text()
    with empty_db.conn:
        add_query(empty_db, "when do keys rotate?", "manual", gold_chunk_ids=["1"])
    records[0]["text"] = "Keys never rotate."
    (first / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (second / "corpus.jsonl").write_text(json.dumps({"_id": "2", "text": "Another corpus's passage two."}) + "\n")
    with qtbot.waitSignal(view.task_finished, timeout=60000) as blocker:
        view.ingest_paths([str(first), str(second)])
    assert blocker.args[0].chunks_changed == 1 and blocker.args[0].ids_refused == 1
    shown = view.status.text()
    assert "changed in place 1" in shown and "records refused for a taken id 1" in shown
    assert "1 queries with stale gold labels: review them again" in shown
    listed = [view.skipped_list.item(i).text() for i in range(view.skipped_list.count())]
    assert any(line.startswith(f"{second / 'corpus.jsonl'}:1: id '2' is already taken") for line in listed)


def test_dropping_a_folder_ingests_it_and_a_web_link_is_refused(qtbot, empty_db, tmp_path):
    view = CorpusView(empty_db)
    qtbot.addWidget(view)
    view.show()
    folder = mixed_folder(tmp_path)
    web = QMimeData()
    web.setUrls([QUrl("https://example.com/a.md")])
    enter = QDragEnterEvent(view.rect().center(), Qt.CopyAction, web, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(view, enter)
    assert not enter.isAccepted()
    local = QMimeData()
    local.setUrls([QUrl.fromLocalFile(str(folder))])
    enter = QDragEnterEvent(view.rect().center(), Qt.CopyAction, local, Qt.LeftButton, Qt.NoModifier)
    QApplication.sendEvent(view, enter)
    assert enter.isAccepted()
    with qtbot.waitSignal(view.task_finished, timeout=60000):
        QApplication.sendEvent(view, QDropEvent(QPointF(view.rect().center()), Qt.CopyAction, local,
                                                Qt.LeftButton, Qt.NoModifier))
    assert view.documents.count() == 3


def test_cancel_keeps_the_files_stored_before_it(qtbot, empty_db, tmp_path):
    root = tmp_path / "many"
    root.mkdir()
    for i in range(300):
        (root / f"f{i:03}.txt").write_text(f"File {i} says something about topic {i}. " * 40)
    view = CorpusView(empty_db)
    qtbot.addWidget(view)
    heard = []
    view.task_finished.connect(lambda r: heard.append("finished"))
    worker = view.ingest_paths([str(root)])
    assert worker is not None
    view.cancel()
    qtbot.waitUntil(lambda: not view.busy(), timeout=60000)
    assert "Cancelled" in view.status.text() and heard == []
    stored = empty_db.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    assert stored < 300 and view.documents.count() == stored
    with qtbot.waitSignal(view.task_finished, timeout=120000) as blocker:
        view.reingest()  # the rest comes in; what was stored is unchanged
    assert blocker.args[0].total_documents == 300 and blocker.args[0].files_unchanged == stored


def test_import_log_shows_the_detected_mapping_and_imports_with_it(qtbot, empty_db, tmp_path, monkeypatch):
    view = QueriesView(empty_db)
    qtbot.addWidget(view)
    assert view.stack.is_empty() and [b.text() for b in view.stack.empty.buttons] == ["Import log…", "Generate…"]
    log = tmp_path / "support.csv"
    log.write_text("asked_at,utterance,thumbs,email\n"
                   "2026-01-01T10:00:00,how do I reset my password,down,ann@example.com\n"
                   "2026-01-01T10:05:00,too few columns\n"
                   "2026-01-01T10:07:00,call me on +44 20 7946 0958 about sync,up,bob@example.com\n")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(log), ""))
    view.import_button.click()
    qtbot.waitUntil(lambda: view.import_dialog is not None and view.import_dialog.isVisible(), timeout=30000)
    dialog = view.import_dialog
    # "utterance" is no name core knows: the user picks it; "thumbs" is detected as feedback
    assert dialog.combos["feedback"].currentText() == "thumbs" and dialog.combos["timestamp"].currentText() == "(none)"
    dialog.combos["query"].setCurrentText("utterance")
    dialog.redact.setChecked(True)
    with qtbot.waitSignal(view.task_finished, timeout=30000) as blocker:
        dialog.accept()
    result = blocker.args[0]
    assert result["imported"] == 2 and result["negative"] == 1 and result["fields"]["query"] == "utterance"
    texts = sorted(r["text"] for r in list_queries(empty_db))
    assert texts == ["call me on <PHONE> about sync", "how do I reset my password"]
    assert not view.stack.is_empty() and view.model.rowCount() == 2
    errors = [view.errors.item(i).text() for i in range(view.errors.count())]
    assert len(errors) == 1 and errors[0].startswith(f"{log}:3") and view.errors.isVisibleTo(view)


def test_import_of_a_log_without_query_field_cannot_be_confirmed(qtbot, empty_db, tmp_path):
    view = QueriesView(empty_db)
    qtbot.addWidget(view)
    log = tmp_path / "empty.jsonl"
    log.write_text("not json at all\n")
    view.import_path(str(log))
    qtbot.waitUntil(lambda: view.import_dialog is not None, timeout=30000)
    assert not view.import_dialog.buttons.buttons()[0].isEnabled() or "cannot be imported" in view.import_dialog.problem.text()


def _bob_copy(sample_project_path, tmp_path) -> tuple:
    """Our project with 4 queued rows, and bob's copy of it where he decided them differently."""
    db = open_project(sample_project_path)
    ids = [add_query(db, f"question {i} about installing the app?", "synthetic", query_type="factoid",
                     gold_chunk_ids=[db.execute("SELECT id FROM chunks LIMIT 1").fetchone()[0]]) for i in range(4)]
    db.close()
    bob = tmp_path / "bob.curator"
    shutil.copy(sample_project_path, bob)
    other = open_project(bob)
    for qid in ids:
        decide(other, qid, "reject", "bob")
    other.close()
    mine = open_project(sample_project_path)
    for qid in ids[:2]:
        decide(mine, qid, "approve", "ana")
    mine.close()
    return ids, bob


def test_merge_another_copy_from_the_adjudicate_tab(qtbot, sample_project_path, tmp_path, monkeypatch):
    ids, bob = _bob_copy(sample_project_path, tmp_path)
    win = window(qtbot, tmp_path, sample_project_path, reviewer="carol")
    view = win.adjudication_view
    assert view.conflicts == [] and "Merge another reviewer's copy" in view.status_label.text()
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(bob), ""))
    with qtbot.waitSignal(view.task_finished, timeout=30000) as blocker:
        view.merge_button.click()
    result = blocker.args[0]
    assert result["matched"] == 4 and len(result["conflicts"]) == 2
    assert "bob.curator (bob)" in view.status.text() and "2 conflicts to adjudicate" in view.status.text()
    assert len(view.conflicts) == 2 and view.listing.count() == 2
    # the rows ana left alone took bob's decision, and the Queries tab shows it at once
    statuses = [shown_status(win.queries_view, qid) for qid in ids]
    assert sorted(statuses) == ["approved", "approved", "rejected", "rejected"]
    win.close()


def test_the_window_and_curator_undo_share_one_reviewer(qtbot, sample_project_path, tmp_path, monkeypatch):
    from curator.cli.main import cli

    db = open_project(sample_project_path)
    chunk = db.execute("SELECT id FROM chunks LIMIT 1").fetchone()[0]
    qid = add_query(db, "how long can the app stay offline?", "synthetic", query_type="factoid", gold_chunk_ids=[chunk])
    build_queue(db, size=5)
    db.close()
    win = window(qtbot, tmp_path, sample_project_path)  # no reviewer injected: the shared default
    assert win.reviewer() == identity.default_reviewer()
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("dora", True))
    win.change_reviewer_action.trigger()
    assert win.reviewer() == "dora" and win.review_view.reviewer == "dora" and win.adjudication_view.judge == "dora"
    assert identity.default_reviewer() == "dora"  # stored for the CLI too
    assert win.review_view.history_label.text() == "Last ten decisions by dora"
    win.review_view.show_query(qid)
    win.review_view.decide("approve")
    win.close()
    result = CliRunner().invoke(cli, ["undo", str(sample_project_path)])  # no --reviewer
    assert result.exit_code == 0 and f"undo: {qid}" in result.output, result.output
    db = open_project(sample_project_path)
    assert db.execute("SELECT status FROM queries WHERE id = ?", [qid]).fetchone()[0] == "pending"
    db.close()


def test_new_project_adds_the_suffix_and_every_empty_state_leads_on(qtbot, tmp_path, monkeypatch):
    win = window(qtbot, tmp_path, reviewer="ana")
    assert [b.text() for b in win.start.buttons] == ["New project…", "Open project…"]
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path / "handbook"), ""))
    win.start.buttons[0].click()
    assert win.project_path == tmp_path / "handbook.curator" and win.project_path.exists()
    assert win.windowTitle().endswith("handbook.curator")
    assert win.corpus_view.stack.is_empty() and win.queries_view.stack.is_empty()
    review = win.review_view
    assert review.next_step_button.isVisibleTo(review) and "Add documents" in review.next_step_button.text()
    review.next_step_button.click()
    assert win.tabs.currentWidget() is win.corpus_view
    win.queries_view.stack.empty.buttons[1].click()  # "Generate…"
    assert win.tabs.currentWidget() is win.generate_view
    win.close()


def test_edit_and_help_menus(qtbot, sample_project_path, tmp_path):
    db = open_project(sample_project_path)
    chunk = db.execute("SELECT id FROM chunks LIMIT 1").fetchone()[0]
    qid = add_query(db, "what does sync do when offline?", "synthetic", query_type="factoid", gold_chunk_ids=[chunk])
    build_queue(db, size=5)
    db.close()
    win = window(qtbot, tmp_path, sample_project_path, reviewer="ana")
    menus = [a.text().replace("&", "") for a in win.menuBar().actions()]
    assert menus == ["File", "Edit", "Review", "Help"]
    win.review_view.show_query(qid)
    win.review_view.decide("approve")
    assert win.undo_action.shortcut().toString() == "Ctrl+Z"
    win.undo_action.trigger()
    assert shown_status(win.queries_view, qid) == "pending"
    win.redo_action.trigger()
    db = open_project(sample_project_path)
    assert db.execute("SELECT status FROM queries WHERE id = ?", [qid]).fetchone()[0] == "approved"
    db.close()
    box = win.show_shortcuts()
    text = box.informativeText()
    assert "approve" in text and "Ctrl+Shift+Z" in text and "take the left / right decision" in text
    box.close()
    win.close()


def test_the_queries_tab_says_when_the_map_filters_it_and_whole_queue_clears_it(qtbot, sample_project_path, tmp_path):
    db = open_project(sample_project_path)
    ids = [add_query(db, f"log question {i}", "log") for i in range(5)]
    db.close()
    win = window(qtbot, tmp_path, sample_project_path, reviewer="ana")
    cleared = []
    win.clusters_view.map.selection_changed.connect(lambda sel: cleared.append(list(sel)))
    win.clusters_view.selection_changed.emit(set(ids[:2]))  # what a lasso on the map sends
    assert win.queries_view.visible_count() == 2 and win.queries_view.filter_bar.isVisibleTo(win.queries_view)
    assert "2 queries selected on the cluster map" in win.queries_view.filter_label.text()
    win.review_view._whole_queue()  # the review view's "Whole queue" button
    assert cleared and cleared[-1] == []  # the map's selection is dropped, which clears every filter
    assert win.queries_view.visible_count() == 5 and not win.queries_view.filter_bar.isVisibleTo(win.queries_view)
    win.close()


def test_review_header_names_the_cluster_once_and_a_new_queue_is_reviewed_from_its_start(qtbot, sample_project_path,
                                                                                         tmp_path):
    from curator.core.clustering.cluster import cluster_queries

    db = open_project(sample_project_path)
    texts = ["how do I sync offline", "sync stuck on spinner", "sync never finishes", "refund my annual plan",
             "refund after cancelling", "money back for plan", "install on ubuntu", "install on macos",
             "install fails on windows"]
    for text in texts:
        add_query(db, text, "log")
    db.close()
    win = window(qtbot, tmp_path, sample_project_path, reviewer="ana")
    review = win.review_view
    first = review.current["id"]
    assert review.status_label.text().startswith("PENDING · log") and "log · log" not in review.status_label.text()
    db = open_project(sample_project_path)
    cluster_queries(db, k=3, seed=0, embedder="tfidf")
    build_queue(db, size=4)
    queued = [r[0] for r in db.execute("SELECT query_id FROM review_queue ORDER BY position")]
    db.close()
    win.clusters_view.project_changed.emit()  # what the Clusters tab sends after sampling
    current = review.current
    assert current["id"] in queued and (first in queued or current["id"] == queued[0])
    db = open_project(sample_project_path)
    label = db.execute("SELECT label FROM clusters WHERE cluster = ? AND run_id = (SELECT MAX(id) FROM cluster_runs)",
                       [current["cluster"]]).fetchone()[0]
    db.close()
    assert f"cluster {current['cluster']}: {label}" in review.status_label.text()  # "cluster 2: sync · spinner · ..."
    win.close()


def test_a_name_the_window_kept_in_qt_settings_becomes_the_shared_one(qtbot, sample_project_path, tmp_path):
    settings = QSettings(str(tmp_path / "old.ini"), QSettings.IniFormat)
    settings.setValue("reviewer", "erin")  # where earlier versions kept it, out of the CLI's sight
    win = MainWindow(sample_project_path, settings=settings)
    qtbot.addWidget(win)
    assert win.reviewer() == "erin" and identity.default_reviewer() == "erin"
    assert settings.value("reviewer") is None
    win.close()
