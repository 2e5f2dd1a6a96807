"""Undo and redo refuse what would be wrong, and only that (issue 43 item 1, second review): a redo never
approves a row nobody approved; the gold rule refuses only the step that breaks it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.corpus.ingest import ingest
from curator.core.errors import InputError
from curator.core.queries.rows import add_query, get_query
from curator.core.review import adjudicate, decisions
from curator.core.store import open_project


def _chunks(db, n=4) -> list[str]:
    return [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT ?", [n])]


def _new_row(db, text="How are access tokens rotated?", gold=None, reference=None) -> str:
    with db.conn:
        return add_query(db, text, "synthetic", gold_chunk_ids=gold or [], reference=reference)


def _retire(db, chunk_id: str) -> None:
    with db.conn:  # as a re-ingest does when the passage's file changed
        db.execute("UPDATE chunks SET active = 0 WHERE id = ?", [chunk_id])


def test_redo_of_an_approval_refuses_a_row_changed_while_it_was_undone(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db, gold=[c[0]], reference="Weekly.")
    decisions.decide(sample_db, qid, "approve", "ana")
    decisions.undo(sample_db, "ana")
    decisions.decide(sample_db, qid, "gold", "bob", gold=[c[3]])
    decisions.decide(sample_db, qid, "edit", "bob", reference="Never.")
    row = decisions.snapshot(sample_db, qid)
    with pytest.raises(InputError, match=r"cannot redo ana's approve .*reference answer, gold chunks.* no longer hold"):
        decisions.redo(sample_db, "ana")  # Ana approved c0 and "Weekly.", not c3 and "Never."
    assert decisions.snapshot(sample_db, qid) == row and row["status"] == "pending"
    decisions.undo(sample_db, "bob")
    decisions.undo(sample_db, "bob")
    assert decisions.redo(sample_db, "ana") == qid  # the row she approved again: the redo applies
    q = get_query(sample_db, qid)
    assert (q["status"], q["gold_chunk_ids"], q["reference"], q["reviewer"]) == ("approved", [c[0]], "Weekly.", "ana")


def test_redo_of_an_adjudication_to_approved_refuses_a_changed_row(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db, gold=[c[0]])
    adjudicate.resolve(sample_db, qid, "carol", status="approved", gold=[c[0]])
    decisions.undo(sample_db, "carol")
    decisions.decide(sample_db, qid, "gold", "bob", gold=[c[1]])
    with pytest.raises(InputError, match=r"cannot redo carol's adjudicate .*gold chunks.* no longer hold"):
        decisions.redo(sample_db, "carol")
    assert get_query(sample_db, qid)["status"] == "pending"


def test_undo_of_a_note_is_not_refused_for_gold_retired_under_it(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db)
    decisions.decide(sample_db, qid, "approve", "ana", gold=[c[0]])
    decisions.decide(sample_db, qid, "note", "ana", note="typo")
    _retire(sample_db, c[0])
    assert decisions.undo(sample_db, "ana") == qid  # the note was not what broke the row
    assert get_query(sample_db, qid)["note"] is None
    assert decisions.undo(sample_db, "ana") == qid  # and the undo that mends it is reachable
    assert get_query(sample_db, qid)["status"] == "pending"


def test_undo_that_would_itself_break_the_gold_rule_is_still_refused(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db)
    decisions.decide(sample_db, qid, "approve", "ana", gold=[c[0]])
    decisions.decide(sample_db, qid, "note", "bob", note="fine")
    decisions.decide(sample_db, qid, "gold", "ana", gold=[c[1]])
    _retire(sample_db, c[0])
    with pytest.raises(InputError, match="without usable gold"):
        decisions.undo(sample_db, "ana")  # it would bring back the retired c0
    assert get_query(sample_db, qid)["gold_chunk_ids"] == [c[1]]


def test_redo_keeps_the_stale_mark_of_a_passage_edited_again_while_the_approval_was_undone(empty_db, tmp_path):
    """Redo clears a pending change only while the chunk holds the text the approval read."""
    corpus = tmp_path / "corpus.jsonl"

    def edit(word: str) -> None:
        corpus.write_text(json.dumps({"_id": "p1", "text": f"Access tokens are rotated every {word}."}) + "\n",
                          encoding="utf-8")
        ingest(empty_db, [corpus])

    edit("week")
    qid = _new_row(empty_db, "How often are tokens rotated?")
    decisions.decide(empty_db, qid, "approve", "ana", gold=["p1"])
    edit("month")
    decisions.decide(empty_db, qid, "approve", "ana")  # read the month text: current again
    assert get_query(empty_db, qid)["stale"] == 0
    decisions.undo(empty_db, "ana")
    edit("year")
    assert decisions.redo(empty_db, "ana") == qid
    assert get_query(empty_db, qid)["stale"] == 1  # the passage says "year" now; Ana read "month"
    decisions.undo(empty_db, "ana")
    edit("month")  # the text she read is back: her redo makes the row current
    assert decisions.redo(empty_db, "ana") == qid
    assert get_query(empty_db, qid)["stale"] == 0


def _two_rows_one_blocked(db) -> tuple[str, str, list[str]]:
    """Ana approves q1, then q2; Bob then changes q2's gold, so Ana's latest decision cannot be undone."""
    c = _chunks(db)
    q1, q2 = _new_row(db, "How are access tokens rotated?"), _new_row(db, "Where are keys kept?")
    decisions.decide(db, q1, "approve", "ana", gold=[c[0]])
    decisions.decide(db, q2, "approve", "ana", gold=[c[1]])
    decisions.decide(db, q2, "gold", "bob", gold=[c[1], c[2]])
    return q1, q2, c


def _decision_of(db, qid: str, reviewer: str) -> int:
    return db.execute("SELECT id FROM decisions WHERE query_id = ? AND reviewer = ?", [qid, reviewer]).fetchone()[0]


def test_a_refused_undo_names_the_reviewers_other_decisions_that_can_be_undone(sample_db):
    q1, q2, _ = _two_rows_one_blocked(sample_db)
    first = _decision_of(sample_db, q1, "ana")
    with pytest.raises(InputError) as info:
        decisions.undo(sample_db, "ana")
    assert "bob's gold" in str(info.value)
    assert f"Other decisions of yours you can undo: #{first} approve {q1}" in str(info.value)
    assert "--decision ID" in str(info.value)
    assert get_query(sample_db, q1)["status"] == "approved"  # the listing tried the undo and rolled it back
    assert sample_db.execute("SELECT COUNT(*) FROM decisions WHERE state = 'done'").fetchone()[0] == 3


def test_undo_and_redo_of_a_named_decision(sample_db):
    q1, q2, c = _two_rows_one_blocked(sample_db)
    first = _decision_of(sample_db, q1, "ana")
    assert decisions.undo(sample_db, "ana", first) == q1
    assert (get_query(sample_db, q1)["status"], get_query(sample_db, q2)["gold_chunk_ids"]) == ("pending", [c[1], c[2]])
    with pytest.raises(InputError, match=rf"decision {first} is not one of ana's decisions to undo"):
        decisions.undo(sample_db, "ana", first)  # already undone
    with pytest.raises(InputError, match="is not one of bob's decisions to redo"):
        decisions.redo(sample_db, "bob", first)  # not Bob's
    assert decisions.redo(sample_db, "ana", first) == q1
    assert get_query(sample_db, q1)["status"] == "approved"


def test_the_cli_undo_decision_option(sample_project_path):
    db = open_project(sample_project_path)
    q1, _, _ = _two_rows_one_blocked(db)
    first = _decision_of(db, q1, "ana")
    db.close()
    runner = CliRunner()
    out = runner.invoke(cli, ["undo", str(sample_project_path), "--reviewer", "ana"])
    assert out.exit_code == 1 and f"#{first} approve {q1}" in out.output and len(out.output.splitlines()) == 1
    out = runner.invoke(cli, ["undo", str(sample_project_path), "--reviewer", "ana", "--decision", str(first), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == {"query_id": q1}
    out = runner.invoke(cli, ["redo", str(sample_project_path), "--reviewer", "ana", "--decision", str(2**70)])
    assert out.exit_code == 1 and out.output.startswith(f"Error: decision {2**70} is not one of ana's decisions to redo")
