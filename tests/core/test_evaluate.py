"""evaluate(): built-in bm25 on a real project, TREC run round trip, routing and AUROC."""

from __future__ import annotations

import pytest

from curator.core.errors import InputError
from curator.core.evaluate import evaluate, read_trec_run
from curator.core.queries import add_query
from curator.core.review import decide
from curator.core.search import search_chunks


@pytest.fixture
def gold_db(sample_db):
    """Queries whose gold chunk is the top bm25 hit of its own title, plus one unanswerable."""
    for text in ("rotate encryption keys", "webhook signature verification", "refund within 14 days"):
        gold = search_chunks(sample_db, text, limit=1)[0]["id"]
        with sample_db.conn:
            qid = add_query(sample_db, text, "manual", gold_chunk_ids=[gold])
        decide(sample_db, qid, "approve", "ana")
    with sample_db.conn:
        qid = add_query(sample_db, "zebra quasar migration", "manual", answerable=False)
    decide(sample_db, qid, "unanswerable", "ana")
    return sample_db


def test_bm25_finds_its_own_gold_and_round_trips_through_a_run_file(gold_db, tmp_path):
    result = evaluate(gold_db, ks=(1, 5), save_run=str(tmp_path / "run.trec"))
    overall = result["slices"]["overall"]
    assert overall["queries"] == 3 and overall["recall@1"] == 1.0 and overall["mrr"] == 1.0
    assert overall["routing"] == "healthy"
    assert result["unanswerable_queries"] == 1 and result["unanswerable_auroc"] == 1.0
    again = evaluate(gold_db, run_file=str(tmp_path / "run.trec"), ks=(1, 5))
    assert again["slices"]["overall"] == overall
    assert gold_db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] == 2


def test_bad_run_lines_are_reported_and_skipped(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 d1 1 2.5 x\nbroken line\nq1 Q0 d2 2 nope x\n")
    errors = []
    assert read_trec_run(path, errors) == {"q1": {"d1": 2.5}}
    assert errors[0].startswith(f"{path}:2:") and errors[1].startswith(f"{path}:3:")


def test_no_gold_set_is_a_clear_error(sample_db):
    with pytest.raises(InputError, match="approve some rows"):
        evaluate(sample_db)
