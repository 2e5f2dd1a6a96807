"""What the Review tab shows, read through core without Qt: the row in context, the side panel, the
empty queue's missing stage, the lazy cursor, and why a row has no suggestion."""

from __future__ import annotations

from curator.core.corpus import documents
from curator.core.queries.rows import add_query
from curator.core.retrieval import suggest
from curator.core.retrieval.retrievers import BM25Retriever
from curator.core.review import decisions, screen
from curator.core.review.navigation import Cursor, get_cursor, resume_from, resume_row
from curator.core.review.sample import build_queue


def _rows(db, n=5):
    chunks = documents.list_chunks(db)
    with db.conn:
        ids = [add_query(db, f"question {i}", "synthetic", query_type="factoid", reference=chunks[i]["text"][:40],
                         gold_chunk_ids=[chunks[i]["id"]]) for i in range(n)]
    build_queue(db, size=n)
    return [r[0] for r in db.execute("SELECT query_id FROM review_queue ORDER BY position")], chunks


def test_missing_stage_names_the_earliest_stage_not_done(empty_db, sample_db):
    assert screen.missing_stage(empty_db) == "corpus"
    assert screen.missing_stage(sample_db) == "generate"
    _rows(sample_db, 1)
    assert screen.missing_stage(sample_db) == "clusters"


def test_review_row_and_gold_in_context(sample_db):
    order, chunks = _rows(sample_db, 3)
    row = screen.review_row(sample_db, order[0])
    assert row["id"] == order[0] and row["queue_entry"]["position"] is not None
    gold = screen.gold_in_context(sample_db, row)
    assert [g["id"] for g in gold] == row["gold_chunk_ids"] and gold[0]["grade"] == 1
    near = documents.neighbours(sample_db, gold[0]["id"])
    assert gold[0]["after"] == (near["next"]["text"][:screen.CONTEXT_CHARS] if near["next"] else None)
    assert screen.review_row(sample_db, None) is None and screen.review_row(sample_db, "q_nope") is None


def test_side_panel_and_selection_counts(sample_db):
    order, _ = _rows(sample_db, 4)
    decisions.decide(sample_db, order[0], "approve", "ann")
    side = screen.side_panel(sample_db, "ann")
    assert side["progress"] == {"queued": 4, "reviewed": 1}
    assert [h["query_id"] for h in side["history"]] == [order[0]]
    assert screen.pending_within(sample_db, order[:2]) == 1
    assert screen.in_review_order(sample_db, order[3]) and not screen.in_review_order(sample_db, "q_nope")


def test_the_cursor_is_written_only_when_reopening_would_not_find_the_row(sample_db):
    order, _ = _rows(sample_db, 5)
    cursor = Cursor(sample_db, "ann")
    assert resume_row(sample_db, "ann") == order[0]
    for here, nxt in zip(order[:2], order[1:3]):  # decide and auto-advance: nothing to store
        decisions.decide(sample_db, here, "approve", "ann")
        assert not cursor.moved_to(nxt)
    assert get_cursor(sample_db, "ann") is None and resume_row(sample_db, "ann") == order[2]
    assert cursor.moved_to(order[3])  # a skip: stored
    assert get_cursor(sample_db, "ann") == order[3] and resume_row(sample_db, "ann") == order[3]
    decisions.decide(sample_db, order[3], "reject", "ann")
    assert not cursor.moved_to(order[4]) and resume_row(sample_db, "ann") == order[4]
    assert cursor.close(order[2])  # closed while looking at a skipped row: stored
    assert resume_row(sample_db, "ann") == order[2] and cursor.writes == 2


def test_resume_from_a_decided_row_goes_on_to_the_next_pending_one(sample_db):
    order, _ = _rows(sample_db, 3)
    decisions.decide(sample_db, order[1], "approve", "ann")
    assert resume_from(sample_db, order[1]) == order[2]
    assert resume_from(sample_db, order[0]) == order[0]  # still pending: there
    assert resume_from(sample_db, "q_gone") == order[0]


def test_why_a_row_has_no_suggestion(sample_db, empty_db):
    with empty_db.conn:
        lonely = add_query(empty_db, "anything", "log")
    assert suggest.empty_reason(empty_db, lonely) == "no_corpus"
    order, _ = _rows(sample_db, 1)
    assert suggest.empty_reason(sample_db, order[0]) == "has_gold"
    with sample_db.conn:
        outside = add_query(sample_db, "how do I rotate the api keys", "log")
    assert suggest.empty_reason(sample_db, outside) == "not_queued"
    build_queue(sample_db, size=5)
    assert suggest.empty_reason(sample_db, outside) == "none_found"
    assert suggest.lacking_suggestions(sample_db) == [outside]
    suggest.suggest(sample_db, [outside], retriever=BM25Retriever().fit(sample_db))
    assert suggest.lacking_suggestions(sample_db) == [] and suggest.suggestions(sample_db, outside)


def test_needing_suggestions_beyond_the_queue(sample_db):
    _rows(sample_db, 1)
    with sample_db.conn:
        outside = add_query(sample_db, "a log query nobody queued", "log")
    assert outside not in [q for q, _ in suggest.needing_suggestions(sample_db)]
    assert outside in [q for q, _ in suggest.needing_suggestions(sample_db, queued_only=False)]
