"""Quality scores of generated rows: stored with their signals, --min-quality, review order, real model."""

from __future__ import annotations

import json

from curator.core.generation import quality
from curator.core.generation.backends import FakeBackend
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.queries.rows import add_query
from curator.core.review.sample import build_queue
from scripted import good_reply


def _scored(db):
    return [(t, q, json.loads(s or "{}")) for t, q, s in db.execute(
        "SELECT query_type, quality, quality_signals FROM queries WHERE source = 'synthetic'")]


def test_every_generated_row_has_a_score_with_its_signals_and_retriever(sample_db):
    generate(sample_db, GenerationConfig(count=10, seed=1), backend=FakeBackend(good_reply))
    rows = _scored(sample_db)
    assert len(rows) == 10
    for query_type, score, signals in rows:
        assert 0.0 <= score <= 1.0 and signals["margins"]
        if query_type == "unanswerable":
            assert 0.25 <= score <= 0.75 and signals["no_gold"]  # never above every answerable row
        else:
            assert signals["retriever"] == quality.ROUND_TRIP_RETRIEVER and "round_trip_rank" in signals
    # good_reply asks with the chunk's own distinctive words: BM25 finds most gold chunks at rank 1
    ranks = [s["round_trip_rank"] for t, _, s in rows if t != "unanswerable"]
    assert sum(r == 1 for r in ranks) >= len(ranks) // 2
    run = sample_db.execute("SELECT params FROM generation_runs").fetchone()[0]
    assert json.loads(run)["quality"] == quality.DEFINITION  # so the export manifest carries the definition


def _half_off_words(messages) -> str:
    """Every other question adds two words no chunk holds: it still passes the grounding filter (3 of
    5 content words are the chunk's) but barely, so its margin, and with it its score, is low."""
    reply = good_reply(messages)
    if len(messages[-1]["content"]) % 2:
        return reply.replace("What about", "What about zebra quasar", 1)
    return reply


def test_min_quality_rejects_rows_below_it_with_a_counted_reason(sample_db):
    config = GenerationConfig(count=4, seed=1, min_quality=0.9, mix={"factoid": 1.0}, answers="free")
    summary = generate(sample_db, config, backend=FakeBackend(_half_off_words))
    assert summary["accepted"] >= 1
    assert summary["rejected_by_reason"].get("quality below --min-quality", 0) >= 1
    assert all(score >= 0.9 for _, score, _ in _scored(sample_db))


def test_review_queue_meets_the_best_rows_first_within_a_cluster(empty_db):
    with empty_db.conn:
        for i, score in enumerate([0.2, 0.9, None, 0.5]):
            qid = add_query(empty_db, f"question number {i} about keys", "synthetic", query_type="factoid")
            empty_db.execute("UPDATE queries SET quality = ? WHERE id = ?", [score, qid])
    build_queue(empty_db, 4, unanswerable_share=0)
    order = [r[0] for r in empty_db.execute(
        "SELECT q.quality FROM review_queue r JOIN queries q ON q.id = r.query_id ORDER BY r.position")]
    assert order == [0.9, 0.5, 0.2, None]


def test_explain_names_the_round_trip_and_the_weakest_margin():
    text = quality.explain(json.dumps({"round_trip": 0.5, "round_trip_rank": 2, "k": 10,
                                       "margins": {"answer_grounding": 0.1, "repetition": 1.0}}))
    assert "rank 2" in text and "answer_grounding 0.10" in text
    assert "no quality score" in quality.explain(None)


def test_list_queries_gives_the_signals_as_an_object(sample_db):
    from curator.core.queries.rows import list_queries

    generate(sample_db, GenerationConfig(count=3, seed=1), backend=FakeBackend(good_reply))
    row = list_queries(sample_db, source="synthetic")[0]
    assert isinstance(row["quality_signals"], dict) and "margins" in row["quality_signals"]


def test_the_round_trip_is_shown_but_not_scored(sample_db, monkeypatch):
    """Scoring BM25's round trip made the top-scored rows a set on which BM25 wins (quality.py)."""
    chunk = {"id": "c_1", "text": "Rotate the signing keys every ninety days with the vault rotate command."}
    question, answer = "How often are signing keys rotated?", "Every ninety days, with the vault rotate command."
    scores = {}
    for trip in ((1.0, 1), (0.0, None)):
        monkeypatch.setattr(quality, "round_trip", lambda *args, trip=trip: trip)
        scores[trip[1]], signals = quality.score_row(sample_db, question, answer, "factoid", [chunk])
        assert signals["round_trip_rank"] == trip[1]  # still stored and explained
    assert scores[1] == scores[None] == quality.score_row(sample_db, question, answer, "factoid", [chunk])[0]
    assert quality.DEFINITION["version"] == 5 and "not scored" in quality.DEFINITION["round_trip"]
