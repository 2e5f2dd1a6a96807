"""Fair gold (store.gold): every chunk holding a row's reference sentence is gold, graded like its source,
at generation and by widen-gold; the grades reach the exports and evaluate."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.corpus.ingest import ingest
from curator.core.evaluation.evaluate import gold_qrels, gold_rows
from curator.core.export.writers import export
from curator.core.generation.backends import FakeBackend
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.queries.rows import add_query, get_query
from curator.core.errors import InputError
from curator.core.review.decisions import decide, redo, undo
from curator.core.store import gold as gold_store
from curator.core.store import open_project

SENTENCE = "Hold the reset button for ten seconds until the status light blinks amber twice."


def _corpus(tmp_path):
    """Three documents: two repeat the answer sentence (an FAQ and a manual), one does not."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "faq.md").write_text("# Router FAQ\n\nIt keeps its settings after a power cut. "
                                   f"{SENTENCE} After that the router starts with factory settings again.\n")
    (folder / "manual.md").write_text("# Manual\n\nPlace the router away from metal shelves for a better signal. "
                                      f"To start over: {SENTENCE.lower()} Then set a new password.\n")
    (folder / "other.md").write_text("# Billing\n\nInvoices are sent on the first working day of every month by "
                                     "email, and receipts can be downloaded from the account page at any time.\n")
    return folder


@pytest.fixture
def db(tmp_path):
    project = open_project(tmp_path / "fair.curator", create=True)
    ingest(project, [_corpus(tmp_path)])
    yield project
    project.close()


def _chunk_of(db, path_part: str) -> str:
    return db.execute("SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.path LIKE ?",
                      [f"%{path_part}%"]).fetchone()[0]


def test_chunks_holding_finds_every_chunk_with_the_whole_sentence(db):
    found = gold_store.chunks_holding(db, SENTENCE)
    assert set(found) == {_chunk_of(db, "faq"), _chunk_of(db, "manual")}
    assert gold_store.chunks_holding(db, "Hold the reset button for ten minutes until the status light") == []
    assert gold_store.chunks_holding(db, "reset button") == []  # a phrase, not an answer sentence


def test_widen_gold_adds_them_at_the_source_grade_journaled_and_undoable(db):
    faq, manual = _chunk_of(db, "faq"), _chunk_of(db, "manual")
    with db.conn:
        qid = add_query(db, "How do I start my router over?", "synthetic", query_type="factoid", reference=SENTENCE,
                        source_chunk_ids=[faq], gold_chunk_ids=[faq])
    decide(db, qid, "approve", "ana", gold=[faq], grades={faq: 2})
    assert gold_store.widen_gold(db) == {"rows_checked": 1, "rows_widened": 1, "chunks_added": 1}
    row = get_query(db, qid)
    assert row["gold_chunk_ids"] == [faq, manual] and row["gold_grades"] == {faq: 2, manual: 2}
    assert row["status"] == "approved" and row["reviewer"] == "ana"  # who approved it stays on record
    assert gold_store.widen_gold(db)["rows_widened"] == 0  # idempotent
    assert gold_qrels(gold_rows(db, ("approved",)))[qid] == {faq: 2, manual: 2}
    undo(db, gold_store.WIDEN_REVIEWER)
    assert get_query(db, qid)["gold_chunk_ids"] == [faq]


def _widened_after(db, approve_gold: list[str] | None) -> tuple[str, str, str]:
    """A generated row (gold: its source chunk) approved by ana, then widened by widen-gold."""
    faq, manual = _chunk_of(db, "faq"), _chunk_of(db, "manual")
    with db.conn:
        qid = add_query(db, "How do I start my router over?", "synthetic", query_type="factoid", reference=SENTENCE,
                        source_chunk_ids=[faq], gold_chunk_ids=[faq] if approve_gold is None else [])
    decide(db, qid, "approve", "ana", gold=approve_gold)
    assert gold_store.widen_gold(db)["rows_widened"] == 1
    return qid, faq, manual


def _journal_states(db) -> list[tuple]:
    return db.execute("SELECT reviewer, state FROM decisions ORDER BY id").fetchall()


def test_undo_and_redo_of_an_approval_keep_the_widened_gold(db):
    """Issue 43: undo restored the row as the approval found it, dropping the widened chunk while the
    widening stayed 'done' in the journal. The approval changed the status only: undo takes back that."""
    qid, faq, manual = _widened_after(db, None)
    assert undo(db, "ana") == qid
    row = get_query(db, qid)
    assert (row["status"], row["gold_chunk_ids"]) == ("pending", [faq, manual])
    assert redo(db, "ana") == qid
    assert gold_qrels(gold_rows(db, ("approved",)))[qid] == {faq: 1, manual: 1}
    assert _journal_states(db) == [("ana", "done"), (gold_store.WIDEN_REVIEWER, "done")]


def test_undo_of_an_approval_whose_gold_was_widened_since_is_refused(db):
    """The approval chose the gold that the widening then changed: undoing it would drop the widened
    chunk, so it is refused, naming widen-gold's decision, and nothing changes."""
    faq = _chunk_of(db, "faq")
    qid, _, manual = _widened_after(db, [faq])
    with pytest.raises(InputError, match=f"cannot undo ana's approve .*{gold_store.WIDEN_REVIEWER}'s gold"):
        undo(db, "ana")
    assert redo(db, "ana") is None
    assert gold_qrels(gold_rows(db, ("approved",)))[qid] == {faq: 1, manual: 1}
    assert _journal_states(db) == [("ana", "done"), (gold_store.WIDEN_REVIEWER, "done")]
    undo(db, gold_store.WIDEN_REVIEWER)  # the widening taken back first, the approval can go
    assert undo(db, "ana") == qid and get_query(db, qid)["gold_chunk_ids"] == []


def test_the_cli_undo_and_redo_after_widen_gold_keep_the_export_widened(db, tmp_path):
    qid, faq, manual = _widened_after(db, None)
    path = db.conn.execute("PRAGMA database_list").fetchone()[2]
    runner = CliRunner()
    assert runner.invoke(cli, ["undo", path, "--reviewer", "ana"]).output.strip() == f"undo: {qid}"
    assert runner.invoke(cli, ["redo", path, "--reviewer", "ana"]).output.strip() == f"redo: {qid}"
    assert runner.invoke(cli, ["export", path, str(tmp_path / "qrels.txt"), "--format", "trec"]).exit_code == 0
    assert sorted(line.split()[2] for line in (tmp_path / "qrels.txt").read_text().splitlines()) == sorted([faq, manual])
    assert _journal_states(db) == [("ana", "done"), (gold_store.WIDEN_REVIEWER, "done")]


def test_widened_grades_reach_beir_and_trec_qrels(db, tmp_path):
    faq, manual = _chunk_of(db, "faq"), _chunk_of(db, "manual")
    with db.conn:
        qid = add_query(db, "How do I start my router over?", "synthetic", query_type="factoid", reference=SENTENCE,
                        source_chunk_ids=[faq], gold_chunk_ids=[faq])
    decide(db, qid, "approve", "ana", gold=[faq], grades={faq: 2})
    gold_store.widen_gold(db)
    export(db, tmp_path / "qrels.txt", "trec")
    assert {line.split()[2]: line.split()[3] for line in (tmp_path / "qrels.txt").read_text().splitlines()} == {
        faq: "2", manual: "2"}
    export(db, tmp_path / "beir", "beir")
    rows = (tmp_path / "beir" / "qrels" / "test.tsv").read_text().splitlines()[1:]
    assert sorted(r.split("\t")[1:] for r in rows) == sorted([[faq, "2"], [manual, "2"]])


def test_generation_makes_every_chunk_holding_the_answer_gold(db):
    faq, manual = _chunk_of(db, "faq"), _chunk_of(db, "manual")
    summary = generate(db, GenerationConfig(count=2, mix={"factoid": 1.0}, seed=1, retries=3),
                       backend=FakeBackend(["Question: How do I get my router back to how it came?\n"]
                                           + ["Question: What happens to my router after a blackout?\n"]))
    rows = [get_query(db, r[0]) for r in db.execute("SELECT id FROM queries WHERE source = 'synthetic'")]
    assert summary["accepted"] >= 1
    widened = [r for r in rows if r["reference"] == SENTENCE or r["reference"].lower().endswith(SENTENCE.lower())]
    assert widened  # the FAQ chunk's only answer sentence is the repeated one
    for row in widened:
        assert set(row["gold_chunk_ids"]) == {faq, manual} and row["source_chunk_ids"][0] in (faq, manual)
        assert set(row["gold_grades"].values()) == {1}
    for row in rows:
        if row not in widened:
            assert row["gold_chunk_ids"] == row["source_chunk_ids"]


def test_widen_gold_command_prints_counts_and_json(tmp_path, db):
    path = db.conn.execute("PRAGMA database_list").fetchone()[2]
    result = CliRunner().invoke(cli, ["widen-gold", path, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"rows_checked": 0, "rows_widened": 0, "chunks_added": 0}
    result = CliRunner().invoke(cli, ["widen-gold", path])
    assert "0 of 0 synthetic rows widened" in result.output


def test_widening_and_adjudication_keep_a_not_relevant_judgement(db, monkeypatch):
    """A chunk a reviewer graded 0 is neither made gold by widening nor dropped from the grades,
    and an adjudication that picks that reviewer keeps it (both lost it before)."""
    from curator.core.review.adjudicate import resolve

    monkeypatch.setattr(gold_store, "chunks_holding", lambda db, reference: ["c_a", "c_b", "c_c"])
    gold, grades = gold_store.widened(db, "ref", ["c_a"], {"c_a": 2, "c_b": 0, "c_z": 0})
    assert gold == ["c_a", "c_c"] and grades == {"c_a": 2, "c_b": 0, "c_z": 0, "c_c": 2}
    first, second = [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 LIMIT 2")]
    with db.conn:
        query_id = add_query(db, "how often do keys rotate?", "synthetic", gold_chunk_ids=[first])
    decide(db, query_id, "approve", "ann", gold=[first], grades={first: 2, second: 0})
    resolve(db, query_id, "judge", pick="ann")
    assert get_query(db, query_id)["gold_grades"] == {first: 2, second: 0}
