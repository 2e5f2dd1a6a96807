"""The real window on a real project file: keyboard loop, reopen, models, rendering."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt

from curator.core.review.navigation import get_cursor, get_guidelines, set_cursor, set_guidelines
from curator.core.corpus import documents
from curator.core.queries.rows import add_query, get_query
from curator.core.store import open_project
from curator.gui.models import QueryFilterProxy, QueryTableModel
from curator.gui.window import MainWindow


def _seed(path, n=4):
    db = open_project(path)
    chunks = documents.list_chunks(db)
    ids = []
    with db.conn:
        for i in range(n):
            c = chunks[i * 3]
            ids.append(add_query(db, f"question {i} about {c['title']}", "synthetic", query_type="factoid",
                                 reference=c["text"][:60], gold_chunk_ids=[c["id"]]))
    db.close()
    return ids, chunks


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)


def test_keyboard_loop_edit_gold_undo_across_reopen(qtbot, sample_project_path, settings):
    ids, chunks = _seed(sample_project_path)
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view = win.review_view
    assert view.current["id"] == ids[0]
    assert view.highlighted > 0  # answer words highlighted in the gold chunk
    qtbot.keyClick(view, Qt.Key_A)
    assert get_query(win.db, ids[0])["status"] == "approved"
    assert get_query(win.db, ids[0])["reviewer"] == "alice"
    assert view.current["id"] == ids[1]
    # keys do not fire while typing; Ctrl+Enter saves the edit
    qtbot.keyClick(view, Qt.Key_E)
    assert view.editing
    view.question.selectAll()
    qtbot.keyClicks(view.question, "axu edited")
    qtbot.keyClick(view.question, Qt.Key_Return, Qt.ControlModifier)
    assert not view.editing
    assert get_query(win.db, ids[1])["text"] == "axu edited"
    assert get_query(win.db, ids[1])["status"] == "pending"
    # gold change with two chunks and a grade
    qtbot.keyClick(view, Qt.Key_G)
    dlg = view.gold_dialog
    dlg._add(chunks[20]["id"], "extra", 2)
    dlg.accept()
    q = get_query(win.db, ids[1])
    assert chunks[20]["id"] in q["gold_chunk_ids"] and len(q["gold_chunk_ids"]) == 2
    assert q["gold_grades"][chunks[20]["id"]] == 2
    qtbot.keyClick(view, Qt.Key_X)
    assert get_query(win.db, ids[1])["status"] == "rejected"
    qtbot.keyClick(view, Qt.Key_Space)  # skip ids[2]
    assert view.current["id"] == ids[3]
    qtbot.keyClick(view, Qt.Key_U)
    assert get_query(win.db, ids[3])["status"] == "unanswerable"
    assert view.history.count() == 5
    qtbot.keyClick(view, Qt.Key_Z, Qt.ControlModifier)
    assert get_query(win.db, ids[3])["status"] == "pending"
    here = view.current["id"]
    win.close()
    # reopen: same row, and undo/redo continue from the journal
    win2 = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win2)
    v2 = win2.review_view
    assert v2.current["id"] == here
    qtbot.keyClick(v2, Qt.Key_Z, Qt.ControlModifier)
    assert get_query(win2.db, ids[1])["status"] == "pending"
    qtbot.keyClick(v2, Qt.Key_Z, Qt.ControlModifier | Qt.ShiftModifier)
    assert get_query(win2.db, ids[1])["status"] == "rejected"
    qtbot.keyClick(v2, Qt.Key_Question)
    assert not v2.help.isHidden()
    win2.close()


def test_models_pass_qtmodeltester(qtmodeltester):
    rows = [{"id": f"q{i}", "text": f"text {i}", "query_type": "factoid", "source": "log" if i % 2 else "synthetic",
             "status": "pending", "cluster": i % 3, "cluster_label": "x", "reviewer": None} for i in range(50)]
    model = QueryTableModel(rows)
    qtmodeltester.check(model)
    proxy = QueryFilterProxy()
    proxy.setSourceModel(model)
    proxy.set_column_filter(2, "log")
    assert proxy.rowCount() == 25
    proxy.set_text("text 1")
    assert proxy.rowCount() == 6  # 1, 11, 13, ... odd ones only
    qtmodeltester.check(proxy)
    model.sort(0, Qt.DescendingOrder)
    assert model.cell(0, 0) == "text 9"


def test_every_view_renders(qtbot, sample_project_path, settings, tmp_path):
    _seed(sample_project_path)
    win = MainWindow(sample_project_path, settings=settings, reviewer="bob")
    qtbot.addWidget(win)
    win.resize(1100, 700)
    win.show()
    for i in range(win.tabs.count()):
        win.tabs.setCurrentIndex(i)
        image = win.grab().toImage()
        path = tmp_path / f"tab{i}.png"
        assert image.save(str(path))
        colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
        assert len(colours) > 5, win.tabs.tabText(i)
    assert win.queries_view.visible_count() == 4
    win.close()


def test_views_cursor_and_guidelines(sample_db):
    set_guidelines(sample_db, "be strict")
    assert get_guidelines(sample_db) == "be strict"
    set_cursor(sample_db, "a", "q_x")
    assert get_cursor(sample_db, "a") == "q_x" and get_cursor(sample_db, "b") is None


def test_a_on_a_query_without_gold_does_not_approve(qtbot, sample_project_path, settings):
    db = open_project(sample_project_path)
    with db.conn:
        qid = add_query(db, "how do I reset my password", "log")
        add_query(db, "a later log query", "log")  # a row A would have advanced to
    db.close()
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view = win.review_view
    view.show_query(qid)
    qtbot.keyClick(view, Qt.Key_A)
    assert get_query(win.db, qid)["status"] == "pending"
    assert view.current["id"] == qid  # did not advance
    assert view.message.isVisibleTo(view) and "no gold chunk" in view.message.text()


def test_migrated_project_shows_a_broken_approved_row_pending(qtbot, sample_project_path, settings):
    db = open_project(sample_project_path)
    with db.conn:
        qid = add_query(db, "approved long ago without gold", "log")
        db.execute("UPDATE queries SET status = 'approved' WHERE id = ?", [qid])
        db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm003_gold_invariant'")  # an older project
    db.close()
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view = win.review_view
    assert get_query(win.db, qid)["status"] == "pending"
    view.show_query(qid)
    assert view.status_label.text().startswith("PENDING") and "set back to pending" in view.status_label.text()


def _log_query_with_suggestions(path):
    """A queued log query without gold whose suggestions come from BM25 (fast; the default
    MiniLM hybrid is tested in tests/core/test_suggest.py)."""
    from curator.core.retrieval.retrievers import BM25Retriever
    from curator.core.retrieval.suggest import suggest, suggested_ids
    from curator.core.review.sample import build_queue

    db = open_project(path)
    with db.conn:
        qid = add_query(db, "how do I rotate the api keys", "log", negative_count=1,
                        metadata={"signals": ["thumbs_down"]})
    build_queue(db, size=5)
    suggest(db, [qid], retriever=BM25Retriever().fit(db))
    ranked = suggested_ids(db)[qid]
    db.close()
    return qid, ranked


def _review_log_query(qtbot, path, settings):
    qid, ranked = _log_query_with_suggestions(path)
    win = MainWindow(path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    win.review_view.show_query(qid)
    return qid, ranked, win, win.review_view


def test_keys_1_to_5_set_gold_from_suggestions_then_a_approves(qtbot, sample_project_path, settings):
    qid, ranked, win, view = _review_log_query(qtbot, sample_project_path, settings)
    assert view.suggestions_panel.isVisibleTo(view) and len(view.suggestion_rows) == 5
    assert view.suggestions_panel.highlighted > 0  # question words marked in the snippets
    assert "negative feedback 1× (thumbs_down)" in view.why_label.text()
    qtbot.keyClick(view, Qt.Key_2)
    qtbot.keyClick(view, Qt.Key_4)
    assert get_query(win.db, qid)["gold_chunk_ids"] == [ranked[1], ranked[3]]
    qtbot.keyClick(view, Qt.Key_4, Qt.ShiftModifier)  # grade 1 -> 2 (highly relevant, the top of the one scale)
    assert get_query(win.db, qid)["gold_grades"] == {ranked[1]: 1, ranked[3]: 2}
    assert "✓ gold, grade 2 highly relevant" in view.suggestions_panel.toPlainText()
    qtbot.keyClick(view, Qt.Key_4, Qt.ShiftModifier)  # 2 -> 1: never a 3 the pool and the exports do not know
    assert get_query(win.db, qid)["gold_grades"] == {ranked[1]: 1, ranked[3]: 1}
    qtbot.keyClick(view, Qt.Key_4, Qt.ShiftModifier)
    qtbot.keyClick(view, Qt.Key_2)  # toggles it off again
    assert get_query(win.db, qid)["gold_chunk_ids"] == [ranked[3]]
    qtbot.keyClick(view, Qt.Key_A)
    q = get_query(win.db, qid)
    assert q["status"] == "approved" and q["gold_chunk_ids"] == [ranked[3]]


def test_decision_buttons_and_gold_dialog_by_keyboard(qtbot, sample_project_path, settings):
    qid, ranked, win, view = _review_log_query(qtbot, sample_project_path, settings)
    view.buttons["approve"].click()  # no gold yet: refused like the A key
    assert get_query(win.db, qid)["status"] == "pending" and "no gold chunk" in view.message.text()
    qtbot.keyClick(view, Qt.Key_G)
    dlg = view.gold_dialog
    assert dlg.results.count() == 5  # the suggestions, before anything is typed
    qtbot.keyClicks(dlg.search_box, "backup")
    assert dlg.results.count() > 0 and "backup" in dlg.preview.toPlainText().lower()
    qtbot.keyClick(dlg.search_box, Qt.Key_Down)
    qtbot.keyClick(dlg.results, Qt.Key_Return)
    assert len(dlg.chunk_ids()) == 1
    qtbot.keyClick(dlg.chosen, Qt.Key_3)  # off the scale: no grade
    assert dlg.grades() == {dlg.chunk_ids()[0]: 1}
    qtbot.keyClick(dlg.chosen, Qt.Key_2)
    assert dlg.chosen.item(0).text().startswith("[2 highly relevant]")
    chosen = dlg.chunk_ids()[0]
    qtbot.keyClick(dlg, Qt.Key_Return, Qt.ControlModifier)
    q = get_query(win.db, qid)
    assert q["gold_chunk_ids"] == [chosen] and q["gold_grades"] == {chosen: 2}
    view.buttons["approve"].click()
    assert get_query(win.db, qid)["status"] == "approved"


def _dark_pixels(view, item) -> int:
    """Pixels dark enough to be text inside ``item``'s row, as the list paints it."""
    image = view.viewport().grab().toImage()
    rect = view.visualItemRect(item).intersected(image.rect())
    return sum(1 for x in range(rect.left(), rect.right(), 2) for y in range(rect.top(), rect.bottom(), 2)
               if image.pixelColor(x, y).lightness() < 110)


def test_gold_dialog_selected_rows_show_their_text(qtbot, sample_project_path, settings):
    """The selected result and the gold row just added were painted blank (white text on a pale
    selection) once the lists had an item style: each selected row must show its text."""
    qid, ranked, win, view = _review_log_query(qtbot, sample_project_path, settings)
    qtbot.keyClick(view, Qt.Key_G)
    dlg = view.gold_dialog
    dlg.show()
    qtbot.waitExposed(dlg)
    dlg.results.setFocus()
    dlg.results.setCurrentRow(1)
    selected, other = dlg.results.item(1), dlg.results.item(0)
    assert selected.isSelected()
    assert _dark_pixels(dlg.results, selected) > 0.3 * _dark_pixels(dlg.results, other) > 0
    qtbot.keyClick(dlg.results, Qt.Key_Return)
    dlg.chosen.setFocus()
    added = dlg.chosen.currentItem()
    assert added is not None and added.isSelected() and _dark_pixels(dlg.chosen, added) > 20


# -- the cursor: stored on leaving a row some other way than a decision, or on close -------------

def _queued_rows(path, n=6):
    from curator.core.review.sample import build_queue

    ids, _ = _seed(path, n)
    db = open_project(path)
    build_queue(db, size=n)
    order = [r[0] for r in db.execute("SELECT query_id FROM review_queue ORDER BY position")]
    db.close()
    assert sorted(order) == sorted(ids)
    return order


def test_deciding_row_after_row_writes_no_cursor_and_reopening_resumes(qtbot, sample_project_path, settings):
    order = _queued_rows(sample_project_path)
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view = win.review_view
    assert view.current["id"] == order[0]
    for _ in range(3):
        qtbot.keyClick(view, Qt.Key_A)
    assert view.current["id"] == order[3]
    assert view.cursor.writes == 0 and get_cursor(win.db, "alice") is None  # the decisions say where she is
    qtbot.keyClick(view, Qt.Key_Space)  # a skip is not a decision: the cursor is stored
    assert view.current["id"] == order[4] and get_cursor(win.db, "alice") == order[4] and view.cursor.writes == 1
    qtbot.keyClick(view, Qt.Key_G)  # re-showing the same row (a gold change) writes nothing
    view.gold_dialog.accept()
    assert view.cursor.writes == 1
    win.close()
    win2 = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win2)
    assert win2.review_view.current["id"] == order[4]
    win2.close()


CRASH_SCRIPT = """
import os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from curator.gui.window import MainWindow
app = QApplication([])
win = MainWindow(sys.argv[1], settings=QSettings(sys.argv[2], QSettings.IniFormat), reviewer="alice")
view = win.review_view
for key in sys.argv[3]:
    QTest.keyClick(view, {"a": Qt.Key_A, "x": Qt.Key_X, "s": Qt.Key_S}[key])
print(view.current["id"], flush=True)
os._exit(1)  # a crash: no close, no cursor saved on the way out
"""


@pytest.mark.slow  # a child process
@pytest.mark.parametrize("keys", ["aax", "asa", "ss"])
def test_a_crash_loses_at_most_the_row_in_flight(sample_project_path, tmp_path, keys):
    """Decisions are committed as made; reopening after a crash shows the row the reviewer was on."""
    import subprocess
    import sys

    order = _queued_rows(sample_project_path)
    out = subprocess.run([sys.executable, "-c", CRASH_SCRIPT, str(sample_project_path), str(tmp_path / "s.ini"), keys],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    in_flight = out.stdout.split()[-1]
    db = open_project(sample_project_path)
    statuses = [get_query(db, qid)["status"] for qid in order]
    decided = sum(1 for k in keys if k != "s")
    assert len(statuses) - statuses.count("pending") == decided  # every decision made is there
    from curator.core.review.navigation import resume_row

    assert resume_row(db, "alice") == in_flight
    db.close()


# -- save_edit: core's refusal is a message, anything else is a bug that propagates -------------

def test_an_empty_question_is_refused_with_a_message_and_the_row_stays(qtbot, sample_project_path, settings):
    ids, _ = _seed(sample_project_path)
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view = win.review_view
    qtbot.keyClick(view, Qt.Key_E)
    view.question.selectAll()
    qtbot.keyClick(view.question, Qt.Key_Delete)
    qtbot.keyClick(view.question, Qt.Key_Return, Qt.ControlModifier)
    assert not view.editing and view.current["id"] == ids[0]
    assert view.message.isVisibleTo(view) and "Not saved: the question cannot be empty" in view.message.text()
    assert view.question.toPlainText() == get_query(win.db, ids[0])["text"] != ""
    win.close()


def test_an_unexpected_error_in_save_edit_is_not_swallowed(qtbot, sample_project_path, settings, monkeypatch):
    from curator.core.review import decisions

    _seed(sample_project_path)
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view = win.review_view
    view.start_edit()
    view.question.setPlainText("a changed question")

    def broken(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(decisions, "decide", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        view.save_edit()
    win.close()


# -- suggestions on first use ------------------------------------------------------------------

@pytest.fixture(scope="module")
def _embedded_template(tmp_path_factory, _ingested_template):
    """The sample project with its chunks' MiniLM vectors in the project's embedding cache (as after
    an evaluation), so the worker's retriever fits in a second: embedding the 116 chunks took
    146-160 s at a load average of 16 on 2 cores, a few seconds on an idle machine."""
    import shutil

    from curator.core.retrieval.suggest import best_retriever

    path = tmp_path_factory.mktemp("embedded") / "sample.curator"
    shutil.copy(_ingested_template, path)
    db = open_project(path)
    best_retriever(db)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path


@pytest.fixture
def embedded_project(tmp_path, _embedded_template):
    import shutil

    path = tmp_path / "sample.curator"
    shutil.copy(_embedded_template, path)
    return path


def test_opening_a_project_computes_missing_suggestions_with_visible_progress(qtbot, embedded_project, settings):
    """Queued log queries without suggestions (a queue built by hand, an older project): the window
    computes them in a worker, shows that it does, and the row shows them when done."""
    from curator.core.review.sample import build_queue
    from curator.core.retrieval.suggest import lacking_suggestions

    sample_project_path = embedded_project
    db = open_project(sample_project_path)
    with db.conn:
        asked = [add_query(db, text, "log")
                 for text in ("how do I rotate the api keys", "backup schedule for the database")]
    build_queue(db, size=5)
    assert sorted(lacking_suggestions(db)) == sorted(asked)
    db.close()
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view = win.review_view
    box = view.suggestions
    assert view.current["id"] in asked and box.busy()
    assert box.task_bar.isVisibleTo(box) and "Computing suggested gold chunks for 2 queued queries" in box.status.text()
    assert "being computed" in box.reason.text() and not view.suggestions_panel.isVisibleTo(view)
    qtbot.waitUntil(lambda: not box.busy(), timeout=120000)
    assert box.last_error is None
    assert len(view.suggestion_rows) == 5 and view.suggestions_panel.isVisibleTo(view)
    assert not box.reason.isVisibleTo(view) and not box.task_bar.isVisibleTo(view)
    assert lacking_suggestions(win.db) == []
    qtbot.keyClick(view, Qt.Key_1)  # the keys work on what was computed
    assert get_query(win.db, view.current["id"])["gold_chunk_ids"] == [view.suggestion_rows[0]["chunk_id"]]
    win.close()


def test_a_window_closed_while_suggestions_compute_is_left_alone_by_the_worker(qtbot, embedded_project, settings):
    """The worker's last signals arrive after the window closed its connection: they change nothing
    (they re-rendered the row from the closed database)."""
    from curator.core.review.sample import build_queue

    db = open_project(embedded_project)
    with db.conn:
        add_query(db, "how do I rotate the api keys", "log")
    build_queue(db, size=5)
    db.close()
    win = MainWindow(embedded_project, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    box = win.review_view.suggestions
    assert box.busy()
    win.close()  # before the worker's signals are handled
    assert win.db is None
    qtbot.waitUntil(lambda: not box.busy(), timeout=300000)  # its last signal has been handled


def test_an_empty_suggestion_list_says_why(qtbot, sample_project_path, settings):
    ids, _ = _seed(sample_project_path, n=1)
    db = open_project(sample_project_path)
    with db.conn:
        unqueued = add_query(db, "a log query outside the queue", "log")
    db.close()
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view, box = win.review_view, win.review_view.suggestions
    view.show_query(ids[0])
    assert "has its gold chunk" in box.reason.text() and box.reason.isVisibleTo(view)
    view.show_query(unqueued)
    assert "not one" in box.reason.text() and not box.busy()
    qtbot.keyClick(view, Qt.Key_1)
    assert "No suggestions for this query" in view.message.text()
    win.close()


def test_ctrl_z_refused_because_another_reviewer_decided_since_shows_why(qtbot, sample_project_path, settings):
    """Issue 43: an undo the core refuses (Bob approved the row after Alice) is a message under the
    row, not a traceback, and Bob's decision stays whole; Ctrl+Shift+Z with nothing to redo does nothing."""
    from curator.core.review import decisions

    ids, chunks = _seed(sample_project_path)
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view = win.review_view
    qtbot.keyClick(view, Qt.Key_A)
    decisions.decide(win.db, ids[0], "approve", "bob", gold=[chunks[0]["id"], chunks[1]["id"]], note="both")
    qtbot.keyClick(view, Qt.Key_Z, Qt.ControlModifier)
    assert view.message.isVisibleTo(view)
    assert "cannot undo alice's approve" in view.message.text() and "bob's approve" in view.message.text()
    q = get_query(win.db, ids[0])
    assert (q["status"], q["reviewer"], q["note"], len(q["gold_chunk_ids"])) == ("approved", "bob", "both", 2)
    qtbot.keyClick(view, Qt.Key_Z, Qt.ControlModifier | Qt.ShiftModifier)
    assert get_query(win.db, ids[0])["reviewer"] == "bob"
    win.close()


def test_a_refused_ctrl_z_names_the_reviewers_other_decisions_that_can_be_undone(qtbot, sample_project_path, settings):
    """Issue 43 review: one blocked row stranded the whole undo stack; the message under the row names
    the reviewer's other decisions Ctrl+Z cannot reach and how to take them back (curator undo --decision)."""
    from curator.core.review import decisions

    ids, chunks = _seed(sample_project_path)
    win = MainWindow(sample_project_path, settings=settings, reviewer="alice")
    qtbot.addWidget(win)
    view = win.review_view
    qtbot.keyClick(view, Qt.Key_A)
    qtbot.keyClick(view, Qt.Key_A)
    first, second = win.db.execute("SELECT id, query_id FROM decisions WHERE reviewer = 'alice' ORDER BY id").fetchall()
    decisions.decide(win.db, second[1], "reject", "bob")
    qtbot.keyClick(view, Qt.Key_Z, Qt.ControlModifier)
    text = view.message.text()
    assert "cannot undo alice's approve" in text and "bob's reject" in text
    assert f"#{first[0]} approve {first[1]}" in text and "--decision" in text
    assert get_query(win.db, first[1])["status"] == "approved"
    win.close()
