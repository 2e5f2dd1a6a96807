"""Curator's metrics agree with trec_eval (pytrec_eval-terrier) to 1e-9, ties and grades included."""

from __future__ import annotations

import random

import pytest

from curator.core.evaluation import metrics

import pytrec_eval  # noqa: E402  (dev extra; plain pytrec_eval cannot build offline)


def _random_case(seed: int):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(30)]
    qrels, run = {}, {}
    for q in range(25):
        qid = f"q{q}"
        qrels[qid] = {d: rng.choice([1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 5))}
        if q % 7 == 3:
            run[qid] = {}  # a query with no retrieved documents
            continue
        # Scores from a small set so that ties are frequent.
        run[qid] = {d: float(rng.choice([0.5, 1.0, 1.5, 2.0])) for d in rng.sample(docs, rng.randint(3, 20))}
    return qrels, run


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_trec_eval(seed):
    qrels, run = _random_case(seed)
    ks = (1, 3, 5, 10)
    measures = {"recip_rank"} | {f"recall_{k}" for k in ks} | {f"ndcg_cut_{k}" for k in ks}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    reference = evaluator.evaluate({q: r for q, r in run.items() if r})
    ours = metrics.per_query(run, qrels, ks)
    for qid in qrels:
        theirs = reference.get(qid)
        if theirs is None:  # trec_eval leaves out queries with no retrieved documents
            assert ours[qid]["mrr"] == 0.0 and ours[qid]["recall@10"] == 0.0
            continue
        assert abs(ours[qid]["mrr"] - theirs["recip_rank"]) < 1e-9
        for k in ks:
            assert abs(ours[qid][f"recall@{k}"] - theirs[f"recall_{k}"]) < 1e-9, (qid, k)
            assert abs(ours[qid][f"ndcg@{k}"] - theirs[f"ndcg_cut_{k}"]) < 1e-9, (qid, k)


def test_seed_article_examples():
    ranking = ["doc3", "doc1", "doc7", "doc2", "doc5"]
    relevant = {"doc1": 1, "doc2": 1}
    assert metrics.recall_at(ranking, relevant, 3) == 0.5
    assert metrics.recall_at(ranking, relevant, 5) == 1.0
    assert metrics.reciprocal_rank(ranking, relevant) == 0.5


def _assert_agree(run, qrels, ks):
    """Every Curator metric against trec_eval's on the same run (queries with no hits left to ours)."""
    cut = ",".join(map(str, ks))
    measures = {"recip_rank", f"recall.{cut}", f"ndcg_cut.{cut}", f"success.{cut}"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate({q: r for q, r in run.items() if r})
    ours = metrics.per_query(run, qrels, ks)
    assert set(reference) <= set(ours)
    for qid, theirs in reference.items():
        assert abs(ours[qid]["mrr"] - theirs["recip_rank"]) < 1e-9
        for k in ks:
            for mine, name in (("recall", "recall"), ("ndcg", "ndcg_cut"), ("hit", "success")):
                assert abs(ours[qid][f"{mine}@{k}"] - theirs[f"{name}_{k}"]) < 1e-9, (qid, mine, k)


@pytest.mark.parametrize("seed", [0, 1])
def test_hit_rate_agrees_with_trec_eval_success(seed):
    qrels, run = _random_case(seed)
    _assert_agree(run, qrels, (1, 5, 10))


def test_agrees_with_trec_eval_on_a_real_hybrid_run(sample_db):
    """Reciprocal rank fusion gives many exactly tied scores: the tie order must still match."""
    from curator.core.retrieval.retrievers import get_retriever

    rng = random.Random(3)
    chunks = [r[0] for r in sample_db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id")]
    texts = [r[0] for r in sample_db.execute("SELECT text FROM chunks WHERE active = 1 ORDER BY id LIMIT 20")]
    queries = {f"q{i}": " ".join(t.split()[:6]) for i, t in enumerate(texts)}
    run = get_retriever("hybrid", sample_db).search(queries, 50)
    # Graded gold: two chunks from the run's top 10 (so the cut-offs matter) and one from anywhere.
    qrels = {q: {d: rng.choice([1, 2, 3]) for d in rng.sample(metrics.ranked(run[q])[:10], 2) + rng.sample(chunks, 1)}
             for q in queries}
    assert any(len(set(r.values())) < len(r) for r in run.values())  # ties are really there
    _assert_agree(run, qrels, (1, 3, 5, 10, 20))
