"""The Review tab's pooled results (review.pool) with real widgets offscreen: shown under the
question marked by retriever, graded by key (R relevant, H highly relevant, 0 not relevant), undone
by Ctrl+Z, the grade reaching the TREC qrels level, a not-relevant chunk not offered again; and the
worker that pools a queue opened without pools."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt

from curator.core.export.writers import export
from curator.core.queries.rows import add_query, get_query
from curator.core.review import pool
from curator.core.review.sample import build_queue
from curator.core.store import open_project
from curator.gui.review_view import ReviewView

SHOT_DIR = os.environ.get("CURATOR_SHOT_DIR")  # set to keep the screenshot (docs/screenshots/review_pool.png)


def _queued_row(path, pooled: bool = True) -> tuple[str, str]:
    """A queued synthetic row with only its source chunk as gold; pooled by bm25 and tfidf (fast)
    unless ``pooled`` is False."""
    db = open_project(path)
    chunk_id, text = db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1 OFFSET 7").fetchone()
    with db.conn:
        qid = add_query(db, "How do I " + " ".join(text.split()[2:10]) + "?", "synthetic",
                        gold_chunk_ids=[chunk_id], source_chunk_ids=[chunk_id])
    build_queue(db, size=10)
    if pooled:
        pool.compute(db, pool.lacking_pool(db), retrievers=("bm25", "tfidf"), run_files=[])
    db.close()
    return qid, chunk_id


@pytest.fixture
def pool_view(qtbot, sample_project_path):
    qid, gold = _queued_row(sample_project_path)
    db = open_project(sample_project_path)
    view = ReviewView(db, "kim")
    qtbot.addWidget(view)
    view.resize(1280, 1000)
    view.show()
    view.show_query(qid)
    view.setFocus()
    yield view, db, qid, gold
    view.shutdown()
    db.close()


def test_pool_is_shown_marked_by_retriever_with_question_words_highlighted(pool_view):
    view, db, qid, gold = pool_view
    assert not view.pool.busy()  # every queued row was pooled: no worker
    text = view.pool.panel.toPlainText()
    entries = pool.pooled(db, qid)
    assert view.pool_rows == entries and view.pool.panel.isVisibleTo(view)
    assert pool.found_by_text(entries[0]) in text and "bm25 #" in text and "tfidf #" in text
    assert text.startswith("▶ 1")  # the marker on the first result
    assert view.pool.panel.highlighted > 0
    assert "R relevant" in view.pool.title.text() and "0 not relevant" in view.pool.title.text()
    if SHOT_DIR:
        view.grab().save(os.path.join(SHOT_DIR, "review_pool.png"))


def test_keys_grade_the_marked_result_undo_and_qrels_level(pool_view, qtbot, tmp_path):
    view, db, qid, gold = pool_view
    first, second, third = (e["chunk_id"] for e in view.pool_rows[:3])
    qtbot.keyClick(view, Qt.Key_H)  # the first: highly relevant
    row = get_query(db, qid)
    assert row["gold_chunk_ids"] == [gold, first] and row["gold_grades"][first] == 2
    assert view.pool_rows[0]["chunk_id"] == second and "highly relevant" in view.message.text()
    qtbot.keyClick(view, Qt.Key_J)  # mark the next (third)
    assert view.pool.panel.toPlainText().split("\n")[3].startswith("▶")
    qtbot.keyClick(view, Qt.Key_0)  # not relevant
    assert get_query(db, qid)["gold_grades"][third] == 0
    offered = [e["chunk_id"] for e in view.pool_rows]
    assert third not in offered and first not in offered and second in offered
    qtbot.keyClick(view, Qt.Key_K)
    qtbot.keyClick(view, Qt.Key_R)  # the second: relevant
    assert get_query(db, qid)["gold_chunk_ids"] == [gold, first, second]
    assert view.message.text().startswith("Pooled result 1 graded 1 relevant (")  # said once, in the scale's words
    qtbot.keyClick(view, Qt.Key_Z, Qt.ControlModifier)  # undo the "relevant"
    assert get_query(db, qid)["gold_chunk_ids"] == [gold, first]
    assert second in [e["chunk_id"] for e in view.pool_rows]
    qtbot.keyClick(view, Qt.Key_A)  # approve with the graded chunk as gold
    out = tmp_path / "gold.qrels"
    export(db, out, format="trec")
    lines = out.read_text().splitlines()
    assert f"{qid} 0 {first} 2" in lines and f"{qid} 0 {gold} 1" in lines
    assert [line for line in lines if third in line] == [f"{qid} 0 {third} 0"]  # judged not relevant: level 0


def test_saving_the_gold_dialog_keeps_not_relevant_judged(pool_view, qtbot):
    view, db, qid, gold = pool_view
    judged = view.pool_rows[0]["chunk_id"]
    qtbot.keyClick(view, Qt.Key_0)
    dialog = view.open_gold_dialog()  # G, then save: the dialog lists gold chunks only
    dialog.accept()
    assert get_query(db, qid)["gold_grades"] == {gold: 1, judged: 0}
    assert judged not in [e["chunk_id"] for e in view.pool_rows]


def test_no_pool_says_why_and_grading_keys_say_so(qtbot, sample_project_path):
    db = open_project(sample_project_path)
    with db.conn:
        qid = add_query(db, "an unqueued question", "synthetic")  # not queued: no pool computed
    view = ReviewView(db, "kim")
    qtbot.addWidget(view)
    view.show_query(qid)
    assert not view.pool_rows and "No pooled results" in view.pool.reason.text()
    qtbot.keyClick(view, Qt.Key_R)
    assert "No pooled result to grade" in view.message.text()
    assert get_query(db, qid)["gold_chunk_ids"] == []
    view.shutdown()
    db.close()


def test_opening_a_queue_without_pools_pools_it_in_a_worker(qtbot, sample_project_path):
    """Every built-in retriever (dense included) pooled in a worker; the row shows them when done."""
    qid, gold = _queued_row(sample_project_path, pooled=False)
    db = open_project(sample_project_path)
    view = ReviewView(db, "kim")
    qtbot.addWidget(view)
    view.show_query(qid)
    box = view.pool
    assert box.busy() and "Pooling the retrievers' top results" in box.status.text()
    assert "Pooling" in box.reason.text() and not view.pool_rows
    qtbot.waitUntil(lambda: not box.busy(), timeout=600000)
    assert box.last_error is None and pool.lacking_pool(db) == []
    assert view.pool_rows and "dense #" in view.pool.panel.toPlainText()
    view.shutdown()
    db.close()


def _log_row_suggested_and_pooled(path) -> tuple[str, list[str]]:
    """A queued log row without gold, with BM25's five suggestions and a tfidf pool two deep: the two
    propose some chunks in common (a deeper or a bm25 pool holds all five suggestions)."""
    from curator.core.retrieval.retrievers import BM25Retriever
    from curator.core.retrieval.suggest import suggest, suggested_ids

    db = open_project(path)
    with db.conn:
        qid = add_query(db, "how do I rotate the api keys", "log")
    build_queue(db, size=5)
    suggest(db, [qid], retriever=BM25Retriever().fit(db))
    pool.compute(db, pool.lacking_pool(db), k=2, retrievers=("tfidf",), run_files=[])
    ranked = suggested_ids(db)[qid]
    db.close()
    return qid, ranked


def _chunks_listed(panel_text: str, db, ids) -> set[str]:
    """Which of ``ids`` a panel lists, by their path and heading line."""
    listed = set()
    for chunk_id in ids:
        path, title = db.execute("SELECT d.path, c.title FROM chunks c JOIN documents d ON d.id = c.doc_id "
                                 "WHERE c.id = ?", [chunk_id]).fetchone()
        if f"{path}  ›  {title or '(no heading)'}" in panel_text:
            listed.add(chunk_id)
    return listed


def test_a_chunk_both_panels_propose_is_shown_once_in_the_pool_and_its_key_still_takes_it(qtbot, sample_project_path):
    qid, ranked = _log_row_suggested_and_pooled(sample_project_path)
    db = open_project(sample_project_path)
    view = ReviewView(db, "kim")
    qtbot.addWidget(view)
    view.show_query(qid)
    pooled_ids = [e["chunk_id"] for e in view.pool_rows]
    both = [c for c in ranked if c in pooled_ids]
    assert both and len(both) < len(ranked), "the fixture must give the two panels some chunks in common"
    shown = [row["chunk_id"] for row in view.suggestions.shown]
    assert not set(shown) & set(pooled_ids)  # each chunk once: the pool owns the shared ones
    assert shown + both and set(shown) | set(both) == set(ranked)  # none lost
    moved = [str(ranked.index(c) + 1) for c in both]
    assert ", ".join(moved) in view.suggestions.reason.text() and "pooled results below" in view.suggestions.reason.text()
    numbers = [line.split()[0] for line in view.suggestions_panel.toPlainText().split("\n\n") if line.strip()]
    assert set(numbers).isdisjoint(moved)  # the listed ones keep their own numbers
    number = ranked.index(both[0]) + 1
    entry = next(e for e in view.pool_rows if e["chunk_id"] == both[0])
    assert f"{entry['position']}  suggestion {number} · " in view.pool.panel.toPlainText()  # the key it answers to
    qtbot.keyClick(view, Qt.Key_0 + number)  # the key of a suggestion listed in the pool takes that chunk
    assert get_query(db, qid)["gold_chunk_ids"] == [both[0]]
    assert both[0] not in [e["chunk_id"] for e in view.pool_rows]  # gold now: the pool no longer offers it
    assert both[0] in [row["chunk_id"] for row in view.suggestions.shown]  # back among the suggestions, ✓ gold
    view.shutdown()
    db.close()


def test_after_a_reingest_the_tab_says_the_pool_is_out_of_date_and_pools_it_again(qtbot, sample_project_path, tmp_path):
    """A re-ingest that adds chunks answering the row: the tab shows the pool is out of date, pools it
    again in its worker (every built-in retriever), offers the new chunk, keeps the grade given."""
    from curator.core.corpus.ingest import ingest

    qid, gold = _queued_row(sample_project_path)
    db = open_project(sample_project_path)
    graded = pool.pooled(db, qid)[0]["chunk_id"]
    pool.grade(db, qid, graded, 0, "kim")
    question = get_query(db, qid)["text"]
    extra = tmp_path / "added"
    extra.mkdir()
    (extra / "answer.md").write_text(f"# Added later\n\n{question} {question} This page answers it in full.\n")
    ingest(db, [extra])
    added = db.execute("SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path LIKE '%answer.md'"
                       ).fetchone()[0]
    assert pool.outdated(db) == [qid] and added not in [e["chunk_id"] for e in pool.pooled(db, qid)]
    view = ReviewView(db, "kim")
    qtbot.addWidget(view)
    view.show_query(qid)
    box = view.pool
    assert box.busy() and "out of date after a re-ingest" in box.status.text()
    assert "corpus changed since this row was pooled: pooling again" in box.reason.text()
    qtbot.waitUntil(lambda: not box.busy(), timeout=600000)
    assert box.last_error is None and pool.outdated(db) == []
    assert added in [e["chunk_id"] for e in view.pool_rows] and not box.reason.isVisibleTo(view)
    assert get_query(db, qid)["gold_grades"][graded] == 0 and graded not in [e["chunk_id"] for e in view.pool_rows]
    view.shutdown()
    db.close()
