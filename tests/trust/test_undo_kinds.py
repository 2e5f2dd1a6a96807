"""Undo takes back the latest decision whatever its kind: a claim verdict is journaled with the
review decisions, so `undo` right after `claim-verdict` takes back the verdict, never an older
gold approval (issue 32: it skipped the verdict and reverted the approval)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.diagnosis.faithfulness import claim_verdicts, correct_verdict, update_score
from curator.core.diagnosis.traces import import_traces
from curator.core.errors import InputError
from curator.core.queries.rows import add_query
from curator.core.review import adjudicate, decisions
from curator.core.store import open_project


def _approved_row_with_a_judged_trace(db, tmp_path) -> tuple[str, str, int]:
    """A query approved by ana, a trace of it, and one claim the judge called supported."""
    chunks = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id LIMIT 3")]
    with db.conn:
        qid = add_query(db, "How are tokens rotated?", "manual", gold_chunk_ids=chunks[:2])
    decisions.decide(db, qid, "approve", "ana")
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"user_input": "How are tokens rotated?", "retrieved_context_ids": chunks[:1],
                                  "response": "Tokens are rotated weekly."}) + "\n", encoding="utf-8")
    import_traces(db, traces)
    trace_id = db.execute("SELECT id FROM traces").fetchone()[0]
    with db.conn:
        claim_id = db.execute("INSERT INTO claims (trace_id, ord, text) VALUES (?, 0, 'Tokens are rotated weekly.')",
                              [trace_id]).lastrowid
        db.execute("INSERT INTO judgements (claim_id, verdict, judge, at) VALUES (?, 'supported', 'llama-cpp:x', 't')",
                   [claim_id])
    update_score(db, trace_id)  # as judge_traces does after judging
    return qid, trace_id, claim_id


def _state(db, qid, trace_id):
    status = db.execute("SELECT status FROM queries WHERE id = ?", [qid]).fetchone()[0]
    faith = db.execute("SELECT faithfulness FROM traces WHERE id = ?", [trace_id]).fetchone()[0]
    return status, [c["verdict"] for c in claim_verdicts(db, trace_id)], faith


def test_undo_after_a_verdict_takes_back_the_verdict_not_the_approval(sample_db, tmp_path):
    qid, tid, claim = _approved_row_with_a_judged_trace(sample_db, tmp_path)
    correct_verdict(sample_db, claim, "not supported", "ana")
    assert _state(sample_db, qid, tid) == ("approved", ["not supported"], 0.0)
    assert decisions.undo(sample_db, "ana") == qid
    assert _state(sample_db, qid, tid) == ("approved", ["supported"], 1.0)  # the judge's verdict is back
    assert decisions.redo(sample_db, "ana") == qid
    assert _state(sample_db, qid, tid) == ("approved", ["not supported"], 0.0)
    decisions.undo(sample_db, "ana")
    decisions.undo(sample_db, "ana")  # the next undo reaches the approval
    assert _state(sample_db, qid, tid) == ("pending", ["supported"], 1.0)
    assert decisions.undo(sample_db, "ana") is None


def test_a_verdict_on_an_unjudged_claim_is_undone_to_no_verdict(sample_db, tmp_path):
    qid, tid, claim = _approved_row_with_a_judged_trace(sample_db, tmp_path)
    with sample_db.conn:
        sample_db.execute("DELETE FROM judgements")
    update_score(sample_db, tid)  # the claim as split, not judged yet
    correct_verdict(sample_db, claim, "supported", "bo")
    decisions.undo(sample_db, "bo")
    assert _state(sample_db, qid, tid) == ("approved", [None], None)
    assert decisions.undo(sample_db, "bo") is None  # bo made no other decision; ana's approval stands


def test_a_new_verdict_discards_the_redo_stack_like_any_decision(sample_db, tmp_path):
    qid, tid, claim = _approved_row_with_a_judged_trace(sample_db, tmp_path)
    decisions.undo(sample_db, "ana")  # the approval
    correct_verdict(sample_db, claim, "not supported", "ana")
    assert decisions.redo(sample_db, "ana") is None
    assert _state(sample_db, qid, tid) == ("pending", ["not supported"], 0.0)


def test_verdicts_are_not_review_decisions_for_agreement_and_merge(sample_db, tmp_path):
    qid, _tid, claim = _approved_row_with_a_judged_trace(sample_db, tmp_path)
    correct_verdict(sample_db, claim, "not supported", "ana")
    standing = adjudicate.standing_decisions(sample_db)[qid]["reviewers"]
    assert standing["ana"]["status"] == "approved"  # the verdict row did not erase ana's approval


def test_the_cli_undo_after_claim_verdict(sample_project_path, tmp_path):
    db = open_project(sample_project_path)
    qid, tid, claim = _approved_row_with_a_judged_trace(db, tmp_path)
    db.close()
    runner = CliRunner()
    out = runner.invoke(cli, ["claim-verdict", str(sample_project_path), str(claim), "not-supported", "--reviewer", "ana"])
    assert out.exit_code == 0, out.output
    out = runner.invoke(cli, ["undo", str(sample_project_path), "--reviewer", "ana"])
    assert out.exit_code == 0, out.output
    db = open_project(sample_project_path)
    assert _state(db, qid, tid) == ("approved", ["supported"], 1.0)
    db.close()


def test_claim_ids_beyond_sqlite_integers_are_a_one_line_error(sample_project_path):
    for claim in (str(2**63), str(2**64 + 5), "0"):
        out = CliRunner().invoke(cli, ["claim-verdict", str(sample_project_path), claim, "supported"])
        assert out.exit_code == 1, (claim, out.output)
        assert out.output.startswith(f"Error: no claim with id {claim}") and len(out.output.splitlines()) == 1
        assert out.exception is None or isinstance(out.exception, SystemExit)


def _two_claims(db, tmp_path) -> tuple[str, str, list[int]]:
    """The approved row's trace with two claims, both called supported by the judge (faithfulness 1.0)."""
    qid, tid, first = _approved_row_with_a_judged_trace(db, tmp_path)
    with db.conn:
        second = db.execute("INSERT INTO claims (trace_id, ord, text) VALUES (?, 1, 'Keys too.')", [tid]).lastrowid
        db.execute("INSERT INTO judgements (claim_id, verdict, judge, at) VALUES (?, 'supported', 'llama-cpp:x', 't')",
                   [second])
    update_score(db, tid)
    return qid, tid, [first, second]


def test_undoing_a_verdict_keeps_another_reviewers_verdict_in_the_score(sample_db, tmp_path):
    qid, tid, claims = _two_claims(sample_db, tmp_path)
    correct_verdict(sample_db, claims[0], "not supported", "ana")
    correct_verdict(sample_db, claims[1], "not supported", "bob")
    assert _state(sample_db, qid, tid)[2] == 0.0
    assert decisions.undo(sample_db, "ana") == qid
    assert _state(sample_db, qid, tid)[1:] == (["supported", "not supported"], 0.5)  # Bob's verdict still counts
    assert decisions.undo(sample_db, "bob") == qid
    assert _state(sample_db, qid, tid)[1:] == (["supported", "supported"], 1.0)
    assert decisions.redo(sample_db, "ana") == qid  # redo too scores from the verdicts in force
    assert _state(sample_db, qid, tid)[1:] == (["not supported", "supported"], 0.5)


def test_redo_of_a_verdict_refuses_to_override_a_later_verdict_on_the_claim(sample_db, tmp_path):
    qid, tid, claim = _approved_row_with_a_judged_trace(sample_db, tmp_path)
    correct_verdict(sample_db, claim, "not supported", "ana")
    decisions.undo(sample_db, "ana")
    correct_verdict(sample_db, claim, "supported", "bob")  # under the id Ana's undo freed
    with pytest.raises(InputError, match=r"cannot redo ana's verdict .*bob's verdict .* is in force"):
        decisions.redo(sample_db, "ana")
    assert _state(sample_db, qid, tid) == ("approved", ["supported"], 1.0)
    decisions.undo(sample_db, "bob")
    assert decisions.redo(sample_db, "ana") == qid  # nothing newer now
    assert _state(sample_db, qid, tid) == ("approved", ["not supported"], 0.0)
