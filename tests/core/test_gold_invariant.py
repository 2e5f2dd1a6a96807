"""The gold invariant: an approved, answerable row has an active gold chunk. decide refuses
otherwise, migration m003 repairs old projects, export and evaluate never see a broken row."""

from __future__ import annotations

import json

import pytest

from curator.core.evaluation.evaluate import gold_rows
from curator.core.export.writers import select_rows
from curator.core.queries.rows import add_query, get_query
from curator.core.review import decisions
from curator.core.store import open_project
from curator.core.store.gold import GoldMissing, broken_gold_ids
from curator.core.store.stats import project_stats


@pytest.fixture
def db_ids(sample_project_path):
    db = open_project(sample_project_path)
    ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT 2")]
    yield db, sample_project_path, ids
    db.close()


def test_approve_without_gold_is_refused_and_nothing_is_written(db_ids):
    db, _, _ = db_ids
    with db.conn:
        qid = add_query(db, "why is the sky blue", "log")
    with pytest.raises(GoldMissing, match=rf"{qid} has no gold chunk: add one with --gold c_\.\.\., or label it unanswerable"):
        decisions.decide(db, qid, "approve", "ann")
    assert get_query(db, qid)["status"] == "pending"
    assert db.execute("SELECT COUNT(*) FROM decisions WHERE query_id = ?", [qid]).fetchone()[0] == 0


def test_approve_with_gold_or_as_unanswerable_is_allowed(db_ids):
    db, _, ids = db_ids
    with db.conn:
        q1 = add_query(db, "how do backups work", "log")
        q2 = add_query(db, "what is the cafeteria menu", "log")
    assert decisions.decide(db, q1, "approve", "ann", gold=[ids[0]])["status"] == "approved"
    decisions.decide(db, q2, "unanswerable", "ann")
    assert get_query(db, q2)["status"] == "unanswerable"


def test_removing_the_last_gold_chunk_of_an_approved_row_is_refused(db_ids):
    db, _, ids = db_ids
    with db.conn:
        qid = add_query(db, "how do backups work", "log", gold_chunk_ids=[ids[0]])
    decisions.decide(db, qid, "approve", "ann")
    with pytest.raises(GoldMissing):
        decisions.decide(db, qid, "gold", "ann", gold=[])
    assert get_query(db, qid)["gold_chunk_ids"] == [ids[0]]


def test_approving_with_a_retired_gold_chunk_is_refused(db_ids):
    db, _, ids = db_ids
    with db.conn:
        qid = add_query(db, "how do backups work", "log", gold_chunk_ids=[ids[0]])
        db.execute("UPDATE chunks SET active = 0 WHERE id = ?", [ids[0]])
    with pytest.raises(GoldMissing, match="retired or unknown gold chunk"):
        decisions.decide(db, qid, "approve", "ann")


def _break_rows(db, ids):
    """Rows approved before the invariant existed: one without gold, one on a retired chunk."""
    with db.conn:
        no_gold = add_query(db, "an approved query with no gold", "log")
        retired = add_query(db, "an approved query on a retired chunk", "log", gold_chunk_ids=[ids[1]])
        good = add_query(db, "a fine approved query", "log", gold_chunk_ids=[ids[0]])
        db.execute("UPDATE queries SET status = 'approved', reviewer = 'old' WHERE id IN (?, ?, ?)",
                   [no_gold, retired, good])
        db.execute("UPDATE chunks SET active = 0 WHERE id = ?", [ids[1]])
    return no_gold, retired, good


def test_export_evaluate_and_stats_keep_broken_rows_out(db_ids):
    db, _, ids = db_ids
    no_gold, retired, good = _break_rows(db, ids)
    assert broken_gold_ids(db) == {no_gold, retired}
    assert [q["id"] for q in select_rows(db)] == [good]
    assert [q["id"] for q in gold_rows(db)] == [good]
    assert project_stats(db)["needs_attention"]["approved_without_gold"] == 2


def test_stats_tells_a_retired_chunk_beside_a_live_one_from_no_gold(db_ids):
    """Issue 43, item 11: a row that keeps a live gold chunk beside a retired one was counted as
    'approved without gold'; it is kept out of export all the same, and counted as what it is."""
    db, _, ids = db_ids
    with db.conn:
        partly = add_query(db, "an approved query on a live and a retired chunk", "log", gold_chunk_ids=ids)
    decisions.decide(db, partly, "approve", "ann")
    with db.conn:
        db.execute("UPDATE chunks SET active = 0 WHERE id = ?", [ids[1]])
    assert broken_gold_ids(db) == {partly}
    attention = project_stats(db)["needs_attention"]
    assert (attention["approved_without_gold"], attention["approved_with_retired_gold"]) == (0, 1)


def test_migration_sets_broken_rows_back_to_pending_and_journals_it(db_ids):
    db, path, ids = db_ids
    no_gold, retired, good = _break_rows(db, ids)
    with db.conn:  # pretend the project predates m003
        db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm003_gold_invariant'")
    db.close()

    db = open_project(path)
    for qid in (no_gold, retired):
        q = get_query(db, qid)
        assert q["status"] == "pending" and "set back to pending by curator" in q["note"]
        entry = db.execute("SELECT reviewer, action, before, after FROM decisions WHERE query_id = ?", [qid]).fetchone()
        assert entry[:2] == ("curator-migration", "pending")
        assert json.loads(entry[2])["status"] == "approved" and json.loads(entry[3])["status"] == "pending"
    assert "no gold chunk" in get_query(db, no_gold)["note"]
    assert "retired" in get_query(db, retired)["note"]
    assert get_query(db, good)["status"] == "approved"
    assert broken_gold_ids(db) == set()
    assert project_stats(db)["needs_attention"] == {"approved_without_gold": 0, "approved_with_retired_gold": 0,
                                                    "set_back_to_pending": 2}
    db.close()
