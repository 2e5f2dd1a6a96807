"""compare: paired bootstrap checked by hand and by enumeration, wins/losses/ties, stored runs and run files."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from curator.core.evaluation import compare as compare_module
from curator.core.evaluation.compare import compare, compare_scores, paired_bootstrap
from curator.core.errors import InputError
from curator.core.evaluation.evaluate import evaluate, write_trec_run
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.core.corpus.search import search_chunks


def test_bootstrap_of_two_queries_by_hand():
    # Resampling [0, 1] gives a mean of 0, 0.5 or 1 with probability 1/4, 1/2, 1/4; with 10k
    # resamples over 2.5% of them are 0 and over 2.5% are 1, so the 95% interval is [0, 1].
    assert paired_bootstrap([0.0, 1.0]) == (0.0, 1.0)
    assert paired_bootstrap([0.25, 0.25, 0.25]) == (0.25, 0.25)


def test_bootstrap_matches_the_exact_resampling_distribution():
    diffs = [1.0, 2.0, 3.0, 4.0]
    # Every one of the 4^4 equally likely resamples, so the exact percentiles (support step 0.25).
    means = np.array([np.mean(c) for c in itertools.product(diffs, repeat=len(diffs))])
    exact_low, exact_high = np.percentile(means, [2.5, 97.5])
    low, high = paired_bootstrap(diffs)
    assert abs(low - exact_low) <= 0.25 and abs(high - exact_high) <= 0.25
    assert low < 2.5 < high


def test_bootstrap_is_seeded_and_blocks_do_not_change_it(monkeypatch):
    diffs = np.random.default_rng(5).normal(0.1, 0.3, 57)
    whole = paired_bootstrap(diffs, seed=3)
    assert paired_bootstrap(diffs, seed=3) == whole != paired_bootstrap(diffs, seed=4)
    monkeypatch.setattr(compare_module, "_CELLS", 7 * 57)  # 7 resamples per block instead of all at once
    assert paired_bootstrap(diffs, seed=3) == whole


def test_wins_losses_ties_and_unpaired_queries():
    a = {"q1": 1.0, "q2": 0.5, "q3": 0.0, "q4": 1 / 3, "qa": 1.0}
    b = {"q1": 0.5, "q2": 1.0, "q3": 1.0, "q4": 1 / 3 + 1e-15, "qb": 0.0}
    result = compare_scores(a, b)
    assert (result["queries"], result["b_wins"], result["a_wins"], result["ties"]) == (4, 2, 1, 1)
    assert result["mean_difference"] == pytest.approx((-0.5 + 0.5 + 1.0 + 0.0) / 4)
    assert result["only_in_a"] == 1 and result["only_in_b"] == 1
    assert result["per_query"]["q4"] == 0.0


def test_nothing_in_common_is_a_clear_error():
    with pytest.raises(InputError, match="nothing to compare"):
        compare_scores({"q1": 1.0}, {"q2": 1.0})


@pytest.fixture
def gold_db(sample_db):
    for text in ("rotate encryption keys", "webhook signature verification", "refund within 14 days",
                 "invite members to a workspace", "export notes as markdown"):
        hits = search_chunks(sample_db, text, limit=3)
        with sample_db.conn:
            qid = add_query(sample_db, text, "manual", gold_chunk_ids=[hits[-1]["id"]])
        decide(sample_db, qid, "approve", "ana")
    return sample_db


def test_identical_runs_differ_by_exactly_zero(gold_db):
    run_id = evaluate(gold_db, retriever="bm25", ks=(10,))["eval_run"]
    result = compare(gold_db, str(run_id), str(run_id), metric="ndcg@10")
    assert result["mean_difference"] == 0.0 and result["ci95"] == [0.0, 0.0]
    assert result["ties"] == result["queries"] == 5


def test_stored_run_against_its_own_run_file_and_another_retriever(gold_db, tmp_path):
    bm25 = evaluate(gold_db, retriever="bm25", save_run=str(tmp_path / "bm25.trec"))
    tfidf = evaluate(gold_db, retriever="tfidf")
    same = compare(gold_db, str(bm25["eval_run"]), str(tmp_path / "bm25.trec"))
    assert same["mean_difference"] == 0.0 and same["ci95"] == [0.0, 0.0] and same["b"] == "run file bm25.trec"
    other = compare(gold_db, str(bm25["eval_run"]), str(tfidf["eval_run"]))
    assert other["mean_a"] == pytest.approx(bm25["slices"]["overall"]["mrr"])
    assert other["mean_b"] == pytest.approx(tfidf["slices"]["overall"]["mrr"])
    assert other["mean_difference"] == pytest.approx(other["mean_b"] - other["mean_a"])
    assert other["ci95"][0] <= other["mean_difference"] <= other["ci95"][1]


def test_a_run_file_that_misses_queries_pairs_only_the_rest(gold_db, tmp_path):
    base = evaluate(gold_db, retriever="bm25")
    write_trec_run(tmp_path / "one.trec", {"q_unknown": {"c_x": 1.0}}, "t")
    result = compare(gold_db, str(base["eval_run"]), str(tmp_path / "one.trec"))
    # The file scores every gold query (a query it lacks scores 0), so all 5 are paired.
    assert result["queries"] == 5 and result["mean_b"] == 0.0 and result["a_wins"] >= 1


def test_bad_references_and_metrics(gold_db):
    run_id = str(evaluate(gold_db, retriever="bm25", ks=(1, 5))["eval_run"])
    with pytest.raises(InputError, match="no eval run 99"):
        compare(gold_db, "99", run_id)
    with pytest.raises(InputError, match="neither an eval run id"):
        compare(gold_db, run_id, "missing.trec")
    with pytest.raises(InputError, match="unknown metric"):
        compare(gold_db, run_id, run_id, metric="map")
    with pytest.raises(InputError, match="has no ndcg@10"):
        compare(gold_db, run_id, run_id, metric="ndcg@10")
