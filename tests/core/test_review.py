"""The review journal: decide, undo, redo across a reopen; redo discarded; gold checks."""

from __future__ import annotations

import pytest

from curator.core.review import decisions
from curator.core.errors import InputError
from curator.core.queries.rows import add_query, get_query
from curator.core.store import open_project


@pytest.fixture
def setup(sample_project_path):
    db = open_project(sample_project_path)
    ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT 3")]
    with db.conn:
        q1 = add_query(db, "how do I rotate keys?", "manual", gold_chunk_ids=[ids[0]])
        q2 = add_query(db, "what is the backup policy?", "manual", gold_chunk_ids=[ids[1]])
    yield db, sample_project_path, ids, q1, q2
    db.close()


def test_decide_undo_redo_across_reopen(setup):
    db, path, ids, q1, _ = setup
    decisions.decide(db, q1, "edit", "ann", text="How do I rotate encryption keys?", gold=[ids[0], ids[2]])
    decisions.decide(db, q1, "approve", "ann", reference="Use the rotate command.")
    db.close()

    db = open_project(path)  # a restart: the journal lives in the file
    q = get_query(db, q1)
    assert (q["status"], q["reference"], q["gold_chunk_ids"]) == ("approved", "Use the rotate command.", [ids[0], ids[2]])
    assert decisions.undo(db, "ann") == q1
    q = get_query(db, q1)
    assert q["status"] == "pending" and q["reference"] is None and q["text"] == "How do I rotate encryption keys?"
    db.close()

    db = open_project(path)
    assert decisions.undo(db, "ann") == q1
    q = get_query(db, q1)
    assert q["text"] == "how do I rotate keys?" and q["text_norm"] == "how do i rotate keys"
    assert q["gold_chunk_ids"] == [ids[0]] and q["reviewer"] is None
    assert decisions.undo(db, "ann") is None  # nothing left
    assert decisions.redo(db, "ann") == q1
    assert get_query(db, q1)["text"] == "How do I rotate encryption keys?"
    db.close()

    db = open_project(path)
    assert decisions.redo(db, "ann") == q1
    assert get_query(db, q1)["status"] == "approved"
    assert decisions.redo(db, "ann") is None
    db.close()


def test_new_decision_discards_redo_stack(setup):
    db, _, _, q1, q2 = setup
    decisions.decide(db, q1, "approve", "ann")
    decisions.decide(db, q2, "reject", "ann")
    decisions.undo(db, "ann")
    decisions.undo(db, "ann")
    decisions.decide(db, q2, "approve", "ann")
    assert decisions.redo(db, "ann") is None
    states = [r[0] for r in db.execute("SELECT state FROM decisions ORDER BY id")]
    assert states == ["discarded", "discarded", "done"]
    assert get_query(db, q1)["status"] == "pending" and get_query(db, q2)["status"] == "approved"


def test_undo_is_per_reviewer(setup):
    db, _, _, q1, q2 = setup
    decisions.decide(db, q1, "approve", "ann")
    decisions.decide(db, q2, "reject", "bob")
    assert decisions.undo(db, "ann") == q1
    assert get_query(db, q2)["status"] == "rejected"
    assert [h["reviewer"] for h in decisions.history(db, "bob")] == ["bob"]


def test_unanswerable_clears_gold_and_undo_restores_it(setup):
    db, _, ids, q1, _ = setup
    result = decisions.decide(db, q1, "unanswerable", "ann")
    assert result["status"] == "unanswerable"
    q = get_query(db, q1)
    assert q["answerable"] == 0 and q["gold_chunk_ids"] == [] and q["gold_grades"] == {}
    decisions.undo(db, "ann")
    q = get_query(db, q1)
    assert q["answerable"] == 1 and q["gold_chunk_ids"] == [ids[0]] and q["gold_grades"] == {ids[0]: 1}


def test_unknown_gold_id_refused_and_nothing_written(setup):
    db, _, ids, q1, _ = setup
    with pytest.raises(InputError, match="c_doesnotexist"):
        decisions.decide(db, q1, "gold", "ann", gold=[ids[0], "c_doesnotexist"])
    assert get_query(db, q1)["gold_chunk_ids"] == [ids[0]]
    assert db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0] == 0


def test_gold_change_keeps_existing_grades(setup):
    db, _, ids, q1, _ = setup
    decisions.decide(db, q1, "gold", "ann", gold=[ids[0], ids[1]], grades={ids[0]: 2, ids[1]: 1})
    decisions.decide(db, q1, "gold", "ann", gold=[ids[0], ids[2]])
    assert get_query(db, q1)["gold_grades"] == {ids[0]: 2, ids[2]: 1}


@pytest.mark.parametrize("kwargs,match", [
    ({"action": "bless"}, "unknown action"),
    ({"action": "edit", "text": "   "}, "empty"),
    ({"action": "approve", "status": "great"}, "unknown status"),
])
def test_bad_input_refused(setup, kwargs, match):
    db, _, _, q1, _ = setup
    action = kwargs.pop("action")
    with pytest.raises(InputError, match=match):
        decisions.decide(db, q1, action, "ann", **kwargs)


def test_unknown_query_refused(setup):
    db = setup[0]
    with pytest.raises(InputError, match="no query"):
        decisions.decide(db, "q_nope", "approve", "ann")


def test_journal_records_before_and_after(setup):
    db, _, _, q1, _ = setup
    decisions.decide(db, q1, "approve", "ann")
    before, after, action, who = db.execute("SELECT before, after, action, reviewer FROM decisions").fetchone()
    assert '"status":"pending"' in before and '"status":"approved"' in after
    assert (action, who) == ("approve", "ann")
    hist = decisions.history(db)
    assert hist[0]["query_id"] == q1 and hist[0]["state"] == "done"


def test_queue_and_progress(setup):
    db, _, _, q1, q2 = setup
    with db.conn:
        for pos, qid in enumerate([q1, q2]):
            db.execute("INSERT INTO review_queue (query_id, position) VALUES (?, ?)", [qid, pos])
    decisions.decide(db, q1, "approve", "ann")
    assert decisions.progress(db) == {"queued": 2, "reviewed": 1}
    assert [r["query_id"] for r in decisions.queue(db, only_pending=True)] == [q2]
