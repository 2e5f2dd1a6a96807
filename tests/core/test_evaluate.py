"""evaluate(): built-in retrievers on a real project, TREC run and BEIR round trips, routing and AUROC."""

from __future__ import annotations

import csv
import json

import pytest

from curator.core.evaluation import metrics
from curator.core.errors import InputError
from curator.core.evaluation.evaluate import _auroc, evaluate, read_trec_run
from curator.core.export.writers import export
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.core.corpus.search import search_chunks


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


@pytest.mark.parametrize("name", ["bm25", "tfidf", "dense", "hybrid"])
def test_every_built_in_retriever_is_scored_and_stored(gold_db, name):
    result = evaluate(gold_db, retriever=name, ks=(1, 10))
    overall = result["slices"]["overall"]
    assert result["retriever"] == name and overall["queries"] == 3
    assert 0.0 < overall["mrr"] <= 1.0 and overall["recall@10"] >= overall["recall@1"]
    params = json.loads(gold_db.execute("SELECT params FROM eval_runs WHERE id = ?", [result["eval_run"]]).fetchone()[0])
    assert params["retriever"] == name and params["ks"] == [1, 10]
    if name in ("dense", "hybrid"):
        assert params["embedder"].startswith("minilm:")  # the default embedder (its weights are a test dependency)


def test_unknown_retriever_is_refused_before_any_work(gold_db):
    with pytest.raises(InputError, match="unknown retriever"):
        evaluate(gold_db, retriever="bm26")
    assert gold_db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] == 0


def _beir_qrels(folder) -> metrics.Qrels:
    """qrels/test.tsv read the way BEIR's GenericDataLoader reads it (header skipped, int scores)."""
    qrels: metrics.Qrels = {}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t")
        next(reader)
        for qid, doc, score in reader:
            qrels.setdefault(qid, {})[doc] = int(score)
    return qrels


@pytest.mark.parametrize("name", ["bm25", "hybrid"])
def test_exported_beir_qrels_and_saved_run_rescore_identically(gold_db, tmp_path, name):
    ks = (1, 3, 5, 10, 20)
    result = evaluate(gold_db, retriever=name, ks=ks, save_run=str(tmp_path / "run.trec"))
    export(gold_db, tmp_path / "beir", "beir")
    errors: list[str] = []
    rescored = metrics.per_query(read_trec_run(tmp_path / "run.trec", errors), _beir_qrels(tmp_path / "beir"), ks)
    stored = json.loads(gold_db.execute("SELECT per_query FROM eval_runs WHERE id = ?", [result["eval_run"]]).fetchone()[0])
    assert errors == [] and rescored == stored
    overall = {k: v for k, v in result["slices"]["overall"].items() if k not in ("queries", "routing")}
    assert metrics.mean(list(rescored.values())) == overall


def test_auroc_counts_ties_as_half_and_matches_the_pairwise_definition():
    positive, negative = [3.0, 2.0, 2.0, float("-inf")], [2.0, 1.0, float("-inf")]
    pairs = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative) / (len(positive) * len(negative))
    assert _auroc(positive, negative) == pytest.approx(pairs) == (3 + 2.5 + 2.5 + 0.5) / 12
    assert _auroc([], negative) is None


def test_cluster_slices_are_keyed_by_cluster_id_with_the_label_as_a_field(gold_db):
    """Issue 17: labels repeat and change; a script reads clusters by id."""
    from curator.core.clustering.cluster import cluster_queries

    run = cluster_queries(gold_db, embedder="tfidf", k=2, seed=0)
    result = evaluate(gold_db, "bm25")
    clusters = {name: s for name, s in result["slices"].items() if name.startswith("cluster:")}
    stored = dict(gold_db.execute("SELECT cluster, label FROM clusters WHERE run_id = ?", [run["run_id"]]).fetchall())
    assert clusters and {int(name.split(":")[1]) for name in clusters} <= set(stored)
    for name, s in clusters.items():
        assert s["label"] == stored[int(name.split(":")[1])]
    assert sum(s["queries"] for s in clusters.values()) == result["slices"]["overall"]["queries"]
    assert all("label" not in s for name, s in result["slices"].items() if not name.startswith("cluster:"))


def test_before_clustering_every_row_is_in_the_unclustered_slice(gold_db):
    result = evaluate(gold_db, "bm25")
    assert result["slices"]["cluster:unclustered"]["label"] == "unclustered"
    assert result["slices"]["cluster:unclustered"]["queries"] == result["slices"]["overall"]["queries"]
