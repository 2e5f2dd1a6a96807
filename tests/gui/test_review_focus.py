"""A selection on the cluster map becomes the review view's focus: only those rows, then back."""

from __future__ import annotations

from PySide6.QtCore import Qt

from curator.core.review.navigation import next_pending
from curator.core.corpus import documents
from curator.core.queries.rows import add_query, get_query
from curator.core.store import open_project
from curator.gui.review_view import ReviewView


def _project(path, n=6):
    db = open_project(path)
    chunk = documents.list_chunks(db)[0]["id"]
    with db.conn:
        ids = [add_query(db, f"question {i}", "synthetic", query_type="factoid", gold_chunk_ids=[chunk])
               for i in range(n)]
    return db, ids


def test_next_pending_within_a_selection(sample_project_path):
    db, ids = _project(sample_project_path)
    chosen = {ids[4], ids[1]}
    assert next_pending(db, within=chosen) == ids[1]
    assert next_pending(db, ids[1], within=chosen) == ids[4]
    assert next_pending(db, ids[4], within={ids[4]}) is None
    db.close()


def test_review_view_works_through_the_selection_then_the_whole_queue(qtbot, sample_project_path):
    db, ids = _project(sample_project_path)
    view = ReviewView(db, "ann")
    qtbot.addWidget(view)
    view.show()
    assert view.current["id"] == ids[0]
    view.set_focus([ids[3], ids[5]])
    assert view.current["id"] == ids[3] and view.focus_bar.isVisible()
    assert "2 queries selected" in view.focus_label.text() and "(2 pending)" in view.focus_label.text()
    qtbot.keyClick(view, Qt.Key_A)
    assert view.current["id"] == ids[5] and "(1 pending)" in view.focus_label.text()
    qtbot.keyClick(view, Qt.Key_X)
    assert view.current is None and "Every selected query is reviewed" in view.status_label.text()
    assert get_query(db, ids[3])["status"] == "approved" and get_query(db, ids[5])["status"] == "rejected"
    view.set_focus(None)  # "Whole queue"
    assert not view.focus_bar.isVisible() and view.current["id"] == ids[0]
    view.close()
    db.close()


def test_window_opens_a_reviewer_on_their_overlap_share(qtbot, sample_project_path, tmp_path):
    from PySide6.QtCore import QSettings

    from curator.core.review import merge
    from curator.core.review.sample import build_queue
    from curator.gui.window import MainWindow

    db, ids = _project(sample_project_path, n=10)
    build_queue(db, size=10, seed=0)
    merge.assign_overlap(db, ["ann", "bob"], share=0.2, seed=0)
    share = merge.assigned(db, "ann")
    db.close()
    assert 0 < len(share) < 10
    win = MainWindow(sample_project_path, settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat),
                     reviewer="ann")
    qtbot.addWidget(win)
    assert win.review_view.focus == set(share) and win.review_view.current["id"] in share
    assert "assigned to ann" in win.review_view.focus_label.text()
    win.close()
