"""The adjudication tab: side by side, pick A / pick B / edit by key, undo, plain text only."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from curator.core.review import adjudicate
from curator.core.review import decisions
from curator.core.queries.rows import add_query, get_query
from curator.core.store import open_project
from curator.gui.adjudication_view import AdjudicationView


@pytest.fixture
def overlap(sample_project_path):
    """Three queries ann and bob decided differently, one they agree on."""
    db = open_project(sample_project_path)
    chunks = [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT 4")]
    with db.conn:
        qids = [add_query(db, f"<b>question {i}</b> about <i>setup</i>?", "manual", gold_chunk_ids=[chunks[i]])
                for i in range(4)]
    for qid, ann, bob in zip(qids, ["approve", "reject", "approve", "approve"],
                             ["reject", "unanswerable", "unanswerable", "approve"]):
        decisions.decide(db, qid, ann, "ann", reference=f"ann says <script>{qid}</script>")
        decisions.decide(db, qid, bob, "bob")
    yield db, sample_project_path, qids, chunks
    db.close()


def test_pick_a_pick_b_edit_and_undo_by_keys(qtbot, overlap):
    db, path, qids, chunks = overlap
    view = AdjudicationView(db, path, reviewer="carol")
    qtbot.addWidget(view)
    view.show()
    assert [c["query_id"] for c in view.conflicts] == sorted(qids[:3])
    first = view.current
    assert view.left.header.text().startswith("A: ann") and view.right.header.text().startswith("B: bob")
    assert view.left.answer.toPlainText() == f"ann says <script>{first['query_id']}</script>"  # shown literally

    qtbot.keyClick(view, Qt.Key_A)  # ann's decision wins
    q = get_query(db, first["query_id"])
    assert (q["status"], q["reviewer"]) == (first["decisions"][0]["status"], "carol")
    assert len(view.conflicts) == 2

    second = view.current
    qtbot.keyClick(view, Qt.Key_B)  # bob's decision wins
    assert get_query(db, second["query_id"])["status"] == second["decisions"][1]["status"]
    assert len(view.conflicts) == 1

    third = view.current["query_id"]
    qtbot.keyClick(view, Qt.Key_E)
    assert view.editing and view.editor.isVisible()
    qtbot.keyClicks(view.edit_question, "ab")  # typing A and B while editing picks nothing
    assert len(view.conflicts) == 1 and view.editing
    view.edit_question.setPlainText("The final question?")
    view.edit_status.setCurrentText("approved")
    view.edit_gold.setText(chunks[3])
    qtbot.keyClick(view.edit_question, Qt.Key_Return, Qt.ControlModifier)
    assert not view.editing
    q = get_query(db, third)
    assert (q["status"], q["text"], q["gold_chunk_ids"]) == ("approved", "The final question?", [chunks[3]])
    assert view.conflicts == [] and "No open conflicts" in view.status_label.text()

    actions = [r[0] for r in db.execute("SELECT action FROM decisions WHERE reviewer = 'carol' ORDER BY id")]
    assert actions == ["adjudicate"] * 3  # journaled like every decision
    qtbot.keyClick(view, Qt.Key_Z, Qt.ControlModifier)
    assert [c["query_id"] for c in view.conflicts] == [third]


def test_ctrl_z_refused_because_a_reviewer_decided_since_shows_why(qtbot, overlap):
    db, path, qids, _ = overlap
    view = AdjudicationView(db, path, reviewer="carol")
    qtbot.addWidget(view)
    first = view.current["query_id"]
    qtbot.keyClick(view, Qt.Key_A)
    decisions.decide(db, first, "pending", "bob")  # bob takes the row back to pending after the verdict
    before = db.execute("SELECT id, state FROM decisions ORDER BY id").fetchall()
    qtbot.keyClick(view, Qt.Key_Z, Qt.ControlModifier)
    assert "cannot undo carol's adjudicate" in view.status_label.text() and "bob's pending" in view.status_label.text()
    assert db.execute("SELECT id, state FROM decisions ORDER BY id").fetchall() == before
    assert get_query(db, first)["status"] == "pending"


def test_bad_edit_is_refused_with_a_message_and_nothing_written(qtbot, overlap):
    db, path, _, _ = overlap
    view = AdjudicationView(db, path, reviewer="carol")
    qtbot.addWidget(view)
    before = db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
    view.start_edit()
    view.edit_status.setCurrentText("approved")
    view.edit_gold.setText("c_not_in_this_corpus")
    view.save_edit()
    assert "Not saved" in view.status_label.text() and "c_not_in_this_corpus" in view.status_label.text()
    assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == before
    assert len(view.conflicts) == 3


def test_navigation_and_plain_text_labels(qtbot, overlap):
    db, path, qids, _ = overlap
    view = AdjudicationView(db, path, reviewer="carol")
    qtbot.addWidget(view)
    start = view.current["query_id"]
    qtbot.keyClick(view, Qt.Key_Space)
    assert view.current["query_id"] != start
    view.listing.setCurrentRow(0)
    assert view.current["query_id"] == start
    assert view.question_label.text().startswith("<b>question")
    assert all(label.textFormat() == Qt.PlainText for label in view.findChildren(QLabel))


def test_empty_project_shows_a_hint(qtbot, empty_db, tmp_path):
    view = AdjudicationView(empty_db, tmp_path / "empty.curator", reviewer="carol")
    qtbot.addWidget(view)
    assert "No open conflicts" in view.status_label.text()
    qtbot.keyClick(view, Qt.Key_A)  # nothing to pick: no error
    assert adjudicate.conflicts(empty_db) == []
