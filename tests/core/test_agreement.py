"""Cohen's kappa against a hand computation and sklearn."""

import pytest

from curator.core.review.agreement import cohen_kappa


def test_kappa_hand_computed():
    # po = 5/6; pe = (3*2 + 3*4)/36 = 0.5 -> kappa = (5/6 - 1/2) / (1/2) = 2/3
    a = ["approved", "approved", "approved", "rejected", "rejected", "rejected"]
    b = ["approved", "approved", "rejected", "rejected", "rejected", "rejected"]
    assert cohen_kappa(a, b) == pytest.approx(2 / 3)


def test_kappa_matches_sklearn():
    sk = pytest.importorskip("sklearn.metrics")
    a = ["approved", "rejected", "unanswerable", "approved", "approved", "rejected", "unanswerable"]
    b = ["approved", "approved", "unanswerable", "approved", "rejected", "rejected", "approved"]
    assert cohen_kappa(a, b) == pytest.approx(sk.cohen_kappa_score(a, b))


def test_agreement_from_journal(empty_db):
    from curator.core.review import decisions
    from curator.core.review.agreement import agreement
    from curator.core.queries.rows import add_query

    # no chunks in this project: unanswerable-type rows can be approved without gold
    qids = [add_query(empty_db, f"question number {i}?", source="log", answerable=False) for i in range(4)]
    for q, act in zip(qids, ["approve", "approve", "reject", "reject"]):
        decisions.decide(empty_db, q, act, reviewer="ann")
    for q, act in zip(qids, ["approve", "reject", "reject", "reject"]):
        decisions.decide(empty_db, q, act, reviewer="bob")
    pair = agreement(empty_db)["pairs"][0]
    assert (pair["a"], pair["b"], pair["n"]) == ("ann", "bob", 4)
    assert pair["agreement"] == pytest.approx(0.75)
    assert pair["kappa"] == pytest.approx(cohen_kappa(["a", "a", "r", "r"], ["a", "r", "r", "r"]))
