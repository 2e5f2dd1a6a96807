"""Undo and redo with several reviewers on one row (issue 43, item 1): undo takes back only the fields
its decision changed, and refuses, naming the later decision, when a decision still in force depends on
them; redo likewise. The journal and the rows stay consistent through any interleaving (the replay
invariant, checked on random runs at the end)."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from typing import Optional

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core import store
from curator.core.errors import InputError
from curator.core.queries.rows import add_query, get_query, normalize_text
from curator.core.diagnosis.faithfulness import correct_verdict, supported_share, update_score
from curator.core.diagnosis.traces import import_traces
from curator.core.review import adjudicate, decisions, pool
from curator.core.store import open_project
from curator.core.store.gold import WIDEN_REVIEWER, broken_gold_ids, chunks_holding, widen_gold


def _chunks(db, n=4) -> list[str]:
    return [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT ?", [n])]


def _new_row(db, text="How are access tokens rotated?", gold=None) -> str:
    with db.conn:
        return add_query(db, text, "manual", gold_chunk_ids=gold or [])


def _journal(db) -> list[tuple]:
    return db.execute("SELECT id, query_id, reviewer, at, action, before, after, state FROM decisions "
                      "ORDER BY id").fetchall()


def _ana_then_bob(db) -> tuple[str, list[str]]:
    """Ana approves with one gold chunk; Bob then approves with two, a reference answer and a note."""
    c = _chunks(db)
    qid = _new_row(db)
    decisions.decide(db, qid, "approve", "ana", gold=[c[0]])
    decisions.decide(db, qid, "approve", "bob", gold=[c[0], c[1]], reference="Weekly, by the rotate job.",
                     note="checked against the ops guide")
    return qid, c


def test_undo_by_ana_does_not_wipe_bobs_later_approval(sample_db):
    qid, c = _ana_then_bob(sample_db)
    row, journal = decisions.snapshot(sample_db, qid), _journal(sample_db)
    with pytest.raises(InputError, match=r"cannot undo ana's approve .*bob's approve .*still in force") as info:
        decisions.undo(sample_db, "ana")
    assert "gold chunks" in str(info.value) and "nothing was changed" in str(info.value)
    assert decisions.snapshot(sample_db, qid) == row  # Bob's decision is whole
    assert row["gold_chunk_ids"] == [c[0], c[1]] and row["reviewer"] == "bob" and row["note"]
    assert _journal(sample_db) == journal  # nothing marked undone
    assert decisions.redo(sample_db, "ana") is None


def test_the_cli_undo_refuses_with_the_reason_and_exits_non_zero(sample_project_path):
    db = open_project(sample_project_path)
    qid, c = _ana_then_bob(db)
    db.close()
    out = CliRunner().invoke(cli, ["undo", str(sample_project_path), "--reviewer", "ana"])
    assert out.exit_code == 1, out.output
    assert out.output.startswith("Error: cannot undo ana's approve") and len(out.output.splitlines()) == 1
    assert "bob's approve" in out.output
    db = open_project(sample_project_path)
    q = get_query(db, qid)
    assert (q["status"], q["gold_chunk_ids"], q["reviewer"]) == ("approved", [c[0], c[1]], "bob")
    assert q["reference"] == "Weekly, by the rotate job." and q["note"] == "checked against the ops guide"
    assert db.execute("SELECT COUNT(*) FROM decisions WHERE state = 'done'").fetchone()[0] == 2
    db.close()


def test_undo_takes_back_only_the_fields_its_decision_changed(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db)
    decisions.decide(sample_db, qid, "approve", "ana", gold=[c[0]])
    decisions.decide(sample_db, qid, "note", "bob", note="ask the ops team")
    assert decisions.undo(sample_db, "ana") == qid  # Bob's note does not depend on Ana's approval
    q = get_query(sample_db, qid)
    assert (q["status"], q["gold_chunk_ids"], q["note"]) == ("pending", [], "ask the ops team")
    assert q["reviewer"] == "bob"  # the newest decision in force on the row is Bob's
    assert decisions.undo(sample_db, "bob") == qid
    q = get_query(sample_db, qid)
    assert (q["note"], q["reviewer"], q["reviewed_at"]) == (None, None, None)  # the row as it was made
    assert decisions.redo(sample_db, "ana") == qid
    q = get_query(sample_db, qid)
    assert (q["status"], q["gold_chunk_ids"], q["note"], q["reviewer"]) == ("approved", [c[0]], None, "ana")


def test_an_edit_by_another_reviewer_survives_the_undo_and_redo_of_an_approval(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db)
    decisions.decide(sample_db, qid, "approve", "ana", gold=[c[0]])
    decisions.decide(sample_db, qid, "edit", "bob", text="How often are access tokens rotated?")
    decisions.undo(sample_db, "ana")
    q = get_query(sample_db, qid)
    assert (q["status"], q["text"], q["reviewer"]) == ("pending", "How often are access tokens rotated?", "bob")
    assert q["text_norm"] == normalize_text(q["text"])
    decisions.redo(sample_db, "ana")  # the journal order again: Ana approved, then Bob edited the approved row
    q = get_query(sample_db, qid)
    assert (q["status"], q["gold_chunk_ids"], q["text"], q["reviewer"]) == (
        "approved", [c[0]], "How often are access tokens rotated?", "bob")
    decisions.undo(sample_db, "ana")
    decisions.decide(sample_db, qid, "edit", "bob", text="Who rotates access tokens?")  # on the pending row
    with pytest.raises(InputError, match=r"cannot redo ana's approve .*question no longer hold.*bob's edit"):
        decisions.redo(sample_db, "ana")  # nobody approved this question
    assert get_query(sample_db, qid)["status"] == "pending"


def test_redo_refuses_when_an_earlier_decision_it_built_on_was_undone(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db, gold=[c[0]])
    decisions.decide(sample_db, qid, "gold", "ana", gold=[c[1]])
    decisions.decide(sample_db, qid, "gold", "bob", gold=[c[2]])  # bob changes ana's gold
    decisions.undo(sample_db, "bob")
    decisions.undo(sample_db, "ana")  # nothing in force depends on ana's now
    assert get_query(sample_db, qid)["gold_chunk_ids"] == [c[0]]
    with pytest.raises(InputError, match=r"cannot redo bob's gold .*gold chunks, gold grades no longer hold what "
                                         r"they held then \(ana's gold \(decision \d+, .*\), undone\)"):
        decisions.redo(sample_db, "bob")
    assert decisions.redo(sample_db, "ana") == qid and decisions.redo(sample_db, "bob") == qid
    assert get_query(sample_db, qid)["gold_chunk_ids"] == [c[2]]


def test_redo_refuses_when_a_later_decision_changed_the_row(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db)
    decisions.decide(sample_db, qid, "approve", "ana", gold=[c[0]])
    decisions.undo(sample_db, "ana")
    decisions.decide(sample_db, qid, "approve", "bob", gold=[c[2]])
    row, journal = decisions.snapshot(sample_db, qid), _journal(sample_db)
    with pytest.raises(InputError, match=r"cannot redo ana's approve .*bob's approve"):
        decisions.redo(sample_db, "ana")
    assert decisions.snapshot(sample_db, qid) == row and _journal(sample_db) == journal


def test_an_earlier_gold_change_an_approval_stands_on_cannot_be_undone(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db)
    decisions.decide(sample_db, qid, "gold", "ana", gold=[c[0]])
    decisions.decide(sample_db, qid, "approve", "bob")  # approves the gold Ana chose
    with pytest.raises(InputError, match="bob's approve"):
        decisions.undo(sample_db, "ana")
    assert broken_gold_ids(sample_db) == set()
    assert get_query(sample_db, qid)["gold_chunk_ids"] == [c[0]]


def test_undo_and_redo_never_leave_an_approved_row_on_a_retired_chunk(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db)
    decisions.decide(sample_db, qid, "approve", "ana", gold=[c[0]])
    decisions.decide(sample_db, qid, "gold", "ana", gold=[c[1]])
    with sample_db.conn:  # a re-ingest retired the first gold chunk
        sample_db.execute("UPDATE chunks SET active = 0 WHERE id = ?", [c[0]])
    with pytest.raises(InputError, match=f"cannot undo ana's gold .*{c[0]}"):
        decisions.undo(sample_db, "ana")
    assert get_query(sample_db, qid)["gold_chunk_ids"] == [c[1]]
    decisions.decide(sample_db, qid, "reject", "ana")
    with sample_db.conn:
        sample_db.execute("UPDATE chunks SET active = 0 WHERE id = ?", [c[1]])
    with pytest.raises(InputError, match=f"cannot undo ana's reject .*{c[1]}"):
        decisions.undo(sample_db, "ana")  # it would approve the row on a retired chunk again
    assert get_query(sample_db, qid)["status"] == "rejected" and broken_gold_ids(sample_db) == set()
    other = _new_row(sample_db, "Where are backups kept?")
    decisions.decide(sample_db, other, "approve", "bob", gold=[c[2]])
    decisions.undo(sample_db, "bob")
    with sample_db.conn:
        sample_db.execute("UPDATE chunks SET active = 0 WHERE id = ?", [c[2]])
    with pytest.raises(InputError, match=f"cannot redo bob's approve .*{c[2]}"):
        decisions.redo(sample_db, "bob")
    assert get_query(sample_db, other)["status"] == "pending" and broken_gold_ids(sample_db) == set()


def test_an_adjudication_in_force_blocks_the_undo_of_what_it_settled(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db)
    decisions.decide(sample_db, qid, "approve", "ana", gold=[c[0]])
    decisions.decide(sample_db, qid, "reject", "bob")
    adjudicate.resolve(sample_db, qid, "carol", pick="ana")
    with pytest.raises(InputError, match="carol's adjudicate"):
        decisions.undo(sample_db, "bob")
    assert decisions.undo(sample_db, "carol") == qid  # the judge takes it back: Bob's rejection stands
    assert get_query(sample_db, qid)["status"] == "rejected"
    assert decisions.undo(sample_db, "bob") == qid
    assert get_query(sample_db, qid)["status"] == "approved"


def test_a_refused_redo_stays_on_the_stack(sample_db):
    c = _chunks(sample_db)
    qid = _new_row(sample_db)
    decisions.decide(sample_db, qid, "approve", "ana", gold=[c[0]])
    decisions.undo(sample_db, "ana")
    decisions.decide(sample_db, qid, "reject", "bob")
    with pytest.raises(InputError):
        decisions.redo(sample_db, "ana")
    decisions.undo(sample_db, "bob")
    assert decisions.redo(sample_db, "ana") == qid  # once Bob's rejection is taken back it applies
    assert get_query(sample_db, qid)["status"] == "approved"


# -- the replay invariant on random runs ------------------------------------------------------------
# After every step, each row's reviewable fields equal the replay of its journal: start from the row as
# its first journaled decision found it, then apply, in journal order, each decision in force (state
# 'done') by setting the fields it changed to the values it wrote (reviewer and reviewed_at as one pair:
# a redo puts a decision back in its place in the journal, before decisions made while it was undone,
# whose reviewer may equal the one they found). A refused undo or redo changes
# neither the rows nor the journal; no step leaves an approved row without usable gold.

WHO = {"reviewer", "reviewed_at"}


def _replay(db, query_id: str) -> dict:
    rows = db.execute(f"""SELECT before, after, state FROM decisions WHERE query_id = ? AND state != 'merged'
                          AND {decisions.QUERY_DECISIONS} ORDER BY id""", [query_id]).fetchall()
    state = None
    for before_json, after_json, journal_state in rows:
        before, after = store.loads(before_json), store.loads(after_json)
        state = state or {f: before[f] for f in decisions.REVIEW_FIELDS}
        changed = {f for f in decisions.REVIEW_FIELDS if before[f] != after[f]}
        if changed & WHO:  # who and when go together: both are of one decision
            changed |= WHO
        if journal_state == "done":
            state.update({f: after[f] for f in changed})
    return state


def _random_step(db, rnd: random.Random, rows: list[str], chunks: list[str]) -> Optional[str]:
    """One random decision, undo or redo; returns "undo" or "redo" when one took effect."""
    who, qid = rnd.choice(["ana", "bob"]), rnd.choice(rows)
    kind = rnd.choice(["approve", "gold", "edit", "note", "reject", "unanswerable", "pending", "adjudicate",
                       *["undo"] * 5, *["redo"] * 5])  # a decision discards its reviewer's redo stack
    gold = rnd.sample(chunks, rnd.randint(1, 2))
    if kind in ("undo", "redo"):  # the judge's adjudications are undone and redone too
        return kind if getattr(decisions, kind)(db, rnd.choice([who, who, "carol"])) else None
    elif kind == "adjudicate":
        adjudicate.resolve(db, qid, "carol", status=rnd.choice(["approved", "rejected"]), gold=gold)
    elif kind == "edit":
        decisions.decide(db, qid, "edit", who, text=rnd.choice(["Where are keys kept?", "Who rotates keys?"]),
                         reference=rnd.choice([None, "In the vault."]))
    elif kind == "note":
        decisions.decide(db, qid, "note", who, note=rnd.choice(["check", "ask ops"]))
    else:
        decisions.decide(db, qid, kind, who, gold=gold if kind in ("approve", "gold") and rnd.random() < 0.7 else None)
    return None


def _check_consistent(db, rows: list[str]) -> None:
    for qid in rows:
        if db.execute("SELECT 1 FROM decisions WHERE query_id = ?", [qid]).fetchone():
            assert decisions.snapshot(db, qid) == _replay(db, qid), qid
        q = get_query(db, qid)
        assert q["text_norm"] == normalize_text(q["text"])
    assert broken_gold_ids(db) == set()


@pytest.mark.parametrize("seed", range(8))
def test_random_interleavings_keep_rows_equal_to_the_replay_of_the_journal(sample_db, seed):
    rnd = random.Random(seed)
    chunks = _chunks(sample_db)
    rows = [_new_row(sample_db, f"Question {i} about keys?", gold=[chunks[i]]) for i in range(3)]
    outcomes: Counter = Counter()
    for _ in range(120):
        before = [decisions.snapshot(sample_db, q) for q in rows], _journal(sample_db)
        try:
            outcomes[_random_step(sample_db, rnd, rows, chunks)] += 1
        except InputError:
            outcomes["refused"] += 1
            assert ([decisions.snapshot(sample_db, q) for q in rows], _journal(sample_db)) == before
        _check_consistent(sample_db, rows)
    # the runs reach refusals (so the unchanged-on-refusal check ran) and undos and redos that apply
    assert min(outcomes["refused"], outcomes["undo"], outcomes["redo"]) > 0, outcomes


# -- the same on richer runs: widen-gold, pool grades, retired chunks and claim verdicts ----------------
# Besides the invariant above: no step but a re-ingest's retirement makes a row break the gold rule (an
# undo may leave a row already broken as it was), and every trace's faithfulness is the share of supported
# claims among the verdicts in force, whoever's verdict was undone or redone.

def _widenable(db) -> tuple[str, list[str]]:
    """A sentence of the corpus held by two chunks or more (widen-gold adds the others), and those chunks."""
    for chunk_id, text in db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id"):
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            holders = chunks_holding(db, sentence) if len(sentence.split()) >= 9 else []
            if len(holders) >= 2:
                return sentence, holders
    pytest.skip("no sentence held by two chunks in the sample corpus")


def _judged_trace(db, tmp_path, qid: str, text: str, chunk: str) -> str:
    """A trace of row ``qid`` with three claims, all called supported by the judge."""
    path = tmp_path / f"{qid}.jsonl"
    path.write_text(json.dumps({"user_input": text, "retrieved_context_ids": [chunk], "response": "A. B. C."}) + "\n")
    import_traces(db, path)
    trace_id = db.execute("SELECT id FROM traces WHERE query_id = ?", [qid]).fetchone()[0]
    with db.conn:
        for n in range(3):
            claim = db.execute("INSERT INTO claims (trace_id, ord, text) VALUES (?, ?, 'x')", [trace_id, n]).lastrowid
            db.execute("INSERT INTO judgements (claim_id, verdict, judge, at) VALUES (?, 'supported', 'j', 't')", [claim])
    update_score(db, trace_id)
    return trace_id


def _rich_step(db, rnd: random.Random, rows: list[str], chunks: list[str], reference: str) -> Optional[str]:
    who, qid = rnd.choice(["ana", "bob"]), rnd.choice(rows)
    kind = rnd.choice(["widen", "widen", "grade", "verdict", "verdict", "verdict", "retire", "restore", "refer", "approve", "gold", "reject",
                       "adjudicate", *["undo"] * 4, *["redo"] * 4])
    if kind in ("undo", "redo"):
        return kind if getattr(decisions, kind)(db, rnd.choice([who, who, "carol", WIDEN_REVIEWER])) else None
    if kind == "widen":
        widen_gold(db, [qid], source="manual")
    elif kind == "grade":
        pool.grade(db, qid, rnd.choice(chunks), rnd.choice([0, 1, 2]), who)
    elif kind == "verdict":
        claim = rnd.choice([r[0] for r in db.execute("SELECT id FROM claims")])
        correct_verdict(db, claim, rnd.choice(["supported", "not supported"]), who)
    elif kind in ("retire", "restore"):  # as a re-ingest retires a chunk, or brings its text back
        with db.conn:
            db.execute("UPDATE chunks SET active = ? WHERE id = ?", [int(kind == "restore"), rnd.choice(chunks)])
    elif kind == "refer":  # the answer sentence widen-gold looks for
        decisions.decide(db, qid, "edit", who, reference=rnd.choice([reference, reference, reference, "In the vault."]))
    elif kind == "adjudicate":
        adjudicate.resolve(db, qid, "carol", status=rnd.choice(["approved", "rejected"]), gold=rnd.sample(chunks, 1))
    else:
        decisions.decide(db, qid, kind, who, gold=rnd.sample(chunks, rnd.randint(1, 2)) if rnd.random() < 0.6 else None)
    return kind


def _project_state(db, rows: list[str]) -> tuple:
    return ([decisions.snapshot(db, q) for q in rows], _journal(db),
            db.execute("SELECT * FROM judgements ORDER BY id").fetchall(),
            db.execute("SELECT id, faithfulness FROM traces ORDER BY id").fetchall())


@pytest.mark.parametrize("seed", range(6))
def test_random_runs_with_widening_grades_retirements_and_verdicts_keep_the_journal_and_scores(sample_db, tmp_path,
                                                                                                seed):
    rnd = random.Random(seed)
    reference, holders = _widenable(sample_db)
    chunks = list(dict.fromkeys([*holders[:1], *_chunks(sample_db, 3)]))
    rows = [_new_row(sample_db, f"Question {i} about keys?", gold=[chunks[i]]) for i in range(3)]
    with sample_db.conn:  # the first row's answer is the sentence its gold chunk shares with another
        sample_db.execute("UPDATE queries SET reference = ? WHERE id = ?", [reference, rows[0]])
    traces = [_judged_trace(sample_db, tmp_path, q, f"Question {i} about keys?", chunks[i]) for i, q in enumerate(rows[:2])]
    outcomes: Counter = Counter()
    for _ in range(200):
        before, broken = _project_state(sample_db, rows), broken_gold_ids(sample_db)
        try:
            kind = _rich_step(sample_db, rnd, rows, chunks, reference)
        except InputError:
            outcomes["refused"] += 1
            assert _project_state(sample_db, rows) == before
            continue
        outcomes[kind] += 1
        for qid in rows:
            if sample_db.execute(f"SELECT 1 FROM decisions WHERE query_id = ? AND {decisions.QUERY_DECISIONS}",
                                 [qid]).fetchone():
                assert decisions.snapshot(sample_db, qid) == _replay(sample_db, qid), (qid, kind)
        if kind != "retire":
            assert broken_gold_ids(sample_db) <= broken, kind
        for trace_id in traces:
            stored = sample_db.execute("SELECT faithfulness FROM traces WHERE id = ?", [trace_id]).fetchone()[0]
            assert stored == supported_share(sample_db, trace_id, "response"), kind
    widened = sample_db.execute(f"SELECT COUNT(*) FROM decisions WHERE reviewer = '{WIDEN_REVIEWER}'").fetchone()[0]
    assert min(outcomes["refused"], outcomes["undo"], outcomes["redo"], outcomes["verdict"], widened) > 0, outcomes
