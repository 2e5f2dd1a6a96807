"""Fair gold by pooled review (review.pool): every retriever's top-k stored per row, offered without
the row's gold and judged chunks, graded as journaled decisions that reach eval and the exports."""

from __future__ import annotations

import json

import pytest

from curator.core.errors import InputError
from curator.core.evaluation.evaluate import evaluate, write_trec_run
from curator.core.export.writers import export
from curator.core.queries.rows import add_query, get_query
from curator.core.review import decisions, pool
from curator.core.review.sample import build_queue
from curator.core.store import open_project


LEXICAL = ("bm25", "tfidf")  # fast: dense (MiniLM over every chunk) is pooled in the two tests that need it


@pytest.fixture
def pooled_db(sample_project_path):
    """A synthetic row whose source chunk is its only gold, asked in the chunk's own words, queued."""
    db = open_project(sample_project_path)
    chunk_id, text = db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1 OFFSET 7").fetchone()
    with db.conn:
        qid = add_query(db, " ".join(text.split()[:12]), "synthetic", gold_chunk_ids=[chunk_id],
                        source_chunk_ids=[chunk_id])
    build_queue(db, size=10)
    yield db, qid, chunk_id
    db.close()


def test_pool_stores_each_retrievers_top_k_and_offers_the_non_gold(pooled_db):
    db, qid, gold = pooled_db
    result = pool.compute(db, [qid], k=5, run_files=[])
    assert result["retrievers"] == ["bm25", "tfidf", "dense", "hybrid"] and result["queries"] == 1
    per_retriever = db.execute("SELECT retriever, COUNT(*) FROM pool_hits WHERE query_id = ? GROUP BY retriever",
                               [qid]).fetchall()
    assert dict(per_retriever) == {"bm25": 5, "tfidf": 5, "dense": 5, "hybrid": 5}
    offered = pool.pooled(db, qid)
    ids = [e["chunk_id"] for e in offered]
    assert gold not in ids and len(ids) == len(set(ids)) and 1 <= len(ids) <= 16  # the gold chunk is not offered
    assert [e["position"] for e in offered] == list(range(1, len(offered) + 1))
    first = offered[0]
    assert first["found_by"] and all(1 <= f["rank"] <= 5 for f in first["found_by"])
    assert pool.found_by_text(first).count("#") == len(first["found_by"])
    assert gold in [e["chunk_id"] for e in pool.pooled(db, qid, include_judged=True)]


def test_grade_makes_gold_not_relevant_is_not_offered_again_and_undo_restores(pooled_db):
    db, qid, gold = pooled_db
    pool.compute(db, [qid], retrievers=LEXICAL, run_files=[])
    first, second = [e["chunk_id"] for e in pool.pooled(db, qid)[:2]]
    pool.grade(db, qid, first, 2, "ana")
    pool.grade(db, qid, second, 0, "ana")
    row = get_query(db, qid)
    assert row["gold_chunk_ids"] == [gold, first] and row["gold_grades"] == {gold: 1, first: 2, second: 0}
    offered = [e["chunk_id"] for e in pool.pooled(db, qid)]
    assert first not in offered and second not in offered
    assert [d["action"] for d in decisions.history(db, "ana")] == ["gold", "gold"]
    assert decisions.undo(db, "ana") == qid  # the "not relevant" is taken back: offered again
    assert second in [e["chunk_id"] for e in pool.pooled(db, qid)]
    decisions.undo(db, "ana")
    assert get_query(db, qid)["gold_chunk_ids"] == [gold]


def test_not_relevant_survives_a_gold_change_without_grades(pooled_db):
    db, qid, gold = pooled_db
    pool.compute(db, [qid], retrievers=LEXICAL, run_files=[])
    other = pool.pooled(db, qid)[0]["chunk_id"]
    pool.grade(db, qid, other, 0, "ana")
    decisions.decide(db, qid, "approve", "ana", gold=[gold])  # curator label --gold: no grades given
    assert get_query(db, qid)["gold_grades"] == {gold: 1, other: 0}
    assert other not in [e["chunk_id"] for e in pool.pooled(db, qid)]


def test_grade_refuses_bad_input(pooled_db):
    db, qid, _ = pooled_db
    with pytest.raises(InputError, match="grade 3"):
        pool.grade(db, qid, db.execute("SELECT id FROM chunks LIMIT 1").fetchone()[0], 3, "ana")
    with pytest.raises(InputError, match="c_nope"):
        pool.grade(db, qid, "c_nope", 1, "ana")
    with pytest.raises(InputError, match="depth"):
        pool.compute(db, [qid], k=0)


def test_grading_the_only_gold_not_relevant_on_an_approved_row_is_refused(pooled_db):
    db, qid, gold = pooled_db
    decisions.decide(db, qid, "approve", "ana")
    with pytest.raises(InputError, match="no gold chunk"):
        pool.grade(db, qid, gold, 0, "ana")
    assert get_query(db, qid)["gold_chunk_ids"] == [gold]


def _a_run_finding_only_the_first_pooled(db, qid: str, tmp_path) -> tuple:
    """The row approved and pooled; a TREC run file whose one hit is its first pooled chunk."""
    decisions.decide(db, qid, "approve", "ana")
    pool.compute(db, [qid], retrievers=LEXICAL, run_files=[])
    other = pool.pooled(db, qid)[0]["chunk_id"]
    run_file = tmp_path / "other.run"
    write_trec_run(run_file, {qid: {other: 1.0}}, "only-other")
    return other, run_file


def test_pooled_grade_counts_in_eval_and_reaches_the_qrels_level(pooled_db, tmp_path):
    """Eval scores the graded chunk as gold: a retriever whose only hit is that chunk goes from
    recall 0 to 1; the TREC qrels carry its level."""
    db, qid, gold = pooled_db
    other, run_file = _a_run_finding_only_the_first_pooled(db, qid, tmp_path)
    before = evaluate(db, run_file=str(run_file), ks=(5,))["slices"]["overall"]["recall@5"]
    pool.grade(db, qid, other, 2, "ana")
    after = evaluate(db, run_file=str(run_file), ks=(5,))["slices"]["overall"]["recall@5"]
    assert (before, after) == (0.0, 0.5)
    qrels = tmp_path / "qrels.txt"
    export(db, qrels, format="trec")
    lines = {tuple(line.split()) for line in qrels.read_text().splitlines()}
    assert (qid, "0", other, "2") in lines and (qid, "0", gold, "1") in lines
    judged_out = pool.pooled(db, qid)[0]["chunk_id"]
    pool.grade(db, qid, judged_out, 0, "ana")  # judged not relevant: a level-0 line, still not gold
    export(db, qrels, format="trec")
    lines = {tuple(line.split()) for line in qrels.read_text().splitlines()}
    assert (qid, "0", judged_out, "0") in lines
    assert evaluate(db, run_file=str(run_file), ks=(5,))["slices"]["overall"]["recall@5"] == 0.5


def test_saved_eval_run_files_join_the_pool(pooled_db, tmp_path):
    db, qid, gold = pooled_db
    decisions.decide(db, qid, "approve", "ana")
    far = db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id DESC LIMIT 1").fetchone()[0]
    run_file = tmp_path / "system.run"
    write_trec_run(run_file, {qid: {far: 3.0, gold: 2.0}}, "system")
    evaluate(db, run_file=str(run_file), ks=(5,))  # a saved eval run with its file
    result = pool.compute(db, [qid], retrievers=["bm25"])
    assert result["retrievers"] == ["bm25", "run:system.run"]
    entry = next(e for e in pool.pooled(db, qid) if e["chunk_id"] == far)
    assert {"retriever": "run:system.run", "rank": 1} in entry["found_by"]


def test_fill_missing_pools_the_queue_once_and_summary_counts(pooled_db):
    db, qid, _ = pooled_db
    assert qid in pool.lacking_pool(db)
    assert pool.fill_missing(db)["queries"] >= 1
    assert pool.lacking_pool(db) == [] and pool.is_computed(db, qid)
    assert pool.fill_missing(db)["queries"] == 0
    counted = pool.summary(db, [qid])
    offered = len(pool.pooled(db, qid))
    pool.grade(db, qid, pool.pooled(db, qid)[0]["chunk_id"], 1, "ana")
    after = pool.summary(db, [qid])
    assert counted["offered"] == offered and after["offered"] == offered - 1
    assert (counted["graded_relevant"], after["graded_relevant"]) == (0, 1)
    assert json.dumps(after)  # plain data for --json


def test_validate_scores_against_pooled_grades(pooled_db, tmp_path):
    """validate's score matrix (the figures of curator validate) reads the graded chunk as gold."""
    from curator.core.evaluation.validity import score_matrix

    db, qid, gold = pooled_db
    other, run_file = _a_run_finding_only_the_first_pooled(db, qid, tmp_path)
    values = lambda: score_matrix(db, [], {"other": str(run_file)}, "hit@5")[2].tolist()  # noqa: E731
    assert values() == [[0.0]]
    pool.grade(db, qid, other, 1, "ana")
    assert values() == [[1.0]]


def test_saved_runs_with_one_name_both_pool_and_an_unreadable_one_is_left_out(pooled_db, tmp_path, monkeypatch):
    """Two saved runs named run.trec in two folders kept only one; a saved file since overwritten with
    something else stopped every pool; a run saved from another folder is found (stored resolved)."""
    db, qid, gold = pooled_db
    decisions.decide(db, qid, "approve", "ana")
    ids = [r[0] for r in db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id DESC LIMIT 2")]
    for folder, chunk in zip(("a", "b"), ids):
        (tmp_path / folder).mkdir()
        write_trec_run(tmp_path / folder / "run.trec", {qid: {chunk: 1.0}}, folder)
        monkeypatch.chdir(tmp_path / folder)
        evaluate(db, run_file="run.trec", ks=(5,))  # a relative name, as typed
    monkeypatch.chdir(tmp_path)
    result = pool.compute(db, [qid], retrievers=["bm25"])
    assert {"run:a/run.trec", "run:b/run.trec"} <= set(result["retrievers"]) and not result["warnings"]
    (tmp_path / "b" / "run.trec").write_text("not a run at all\n")
    result = pool.compute(db, [qid], retrievers=["bm25"])
    assert "run:run.trec" in result["retrievers"]  # a's, alone under its name now
    assert any("left out of the pool" in w for w in result["warnings"]) and "bm25" in result["retrievers"]
