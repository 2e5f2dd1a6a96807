"""Curator's metrics agree with trec_eval (pytrec_eval-terrier) to 1e-9, ties and grades included."""

from __future__ import annotations

import random

import pytest

from curator.core import metrics

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
