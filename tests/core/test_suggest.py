"""Suggested gold: the queued queries without gold get the top-k chunks of hybrid BM25 + MiniLM,
stored ranked; a query whose answer is in one document finds that document's chunk."""

from __future__ import annotations

import pytest

from curator.core.errors import InputError
from curator.core.queries.rows import add_query
from curator.core.retrieval import suggest
from curator.core.review.sample import build_queue
from curator.core.store import open_project


@pytest.fixture
def queued(sample_project_path):
    db = open_project(sample_project_path)
    chunk = db.execute("SELECT id, title, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1 OFFSET 7").fetchone()
    words = " ".join(chunk[2].split()[:12])
    with db.conn:
        asked = add_query(db, words, "log")
        labelled = add_query(db, "a synthetic question with gold", "synthetic", gold_chunk_ids=[chunk[0]])
    build_queue(db, size=10)
    yield db, chunk[0], asked, labelled
    db.close()


def test_suggest_stores_top_k_for_queued_queries_without_gold(queued):
    db, chunk_id, asked, labelled = queued
    assert [q for q, _ in suggest.needing_suggestions(db)] == [asked]
    result = suggest.suggest(db, k=5)
    assert result["queries"] == 1 and result["retriever"]["embedder"].startswith("minilm")
    ranked = suggest.suggested_ids(db)
    assert list(ranked) == [asked] and len(ranked[asked]) == 5
    assert ranked[asked][0] == chunk_id  # its own words: the chunk comes first
    rows = suggest.suggestions(db, asked)
    assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert rows[0]["path"] and rows[0]["text"]
    assert rows[0]["score"] >= rows[-1]["score"]


def test_suggest_named_queries_replaces_their_rows(queued):
    db, _, asked, labelled = queued
    suggest.suggest(db, [labelled], k=3)
    suggest.suggest(db, [labelled], k=2)  # recomputing replaces, never appends
    assert len(suggest.suggested_ids(db)[labelled]) == 2
    with pytest.raises(InputError, match="q_nope"):
        suggest.suggest(db, ["q_nope"])


def test_weighted_rrf_prefers_the_weighted_run():
    from curator.core.retrieval.retrievers import rrf

    bm25, dense = {"a": 2.0, "b": 1.0}, {"b": 0.9, "a": 0.1}
    assert rrf([bm25, dense])["a"] == pytest.approx(rrf([bm25, dense])["b"])
    fused = rrf([bm25, dense], weights=[1.0, 2.0])
    assert fused["b"] > fused["a"]
