"""Built-in retrievers on the ingested sample corpus: self-retrieval, FTS5 parity, RRF by hand, ties, cache."""

from __future__ import annotations

import random

import numpy as np
import pytest

from curator.core.embedding import embed
from curator.core.evaluation import metrics
from curator.core.retrieval import retrievers
from curator.core.errors import InputError
from curator.core.retrieval.retrievers import BM25Retriever, HybridRetriever, Retriever, get_retriever, rrf


def _distinct_chunks(db, n: int = 8) -> list[dict]:
    """``n`` active chunks with unique texts, spread over the corpus."""
    chunks = retrievers.active_chunks(db)
    counts: dict[str, int] = {}
    for c in chunks:
        counts[c["text"]] = counts.get(c["text"], 0) + 1
    unique = [c for c in chunks if counts[c["text"]] == 1]
    return unique[:: max(1, len(unique) // n)][:n]


@pytest.mark.parametrize("name", ["bm25", "fts5", "tfidf", "dense", "hybrid"])
def test_a_chunk_copied_as_query_retrieves_itself_first(sample_db, name):
    chunks = _distinct_chunks(sample_db)
    run = get_retriever(name, sample_db).search({c["id"]: retrievers._chunk_text(c) for c in chunks}, 10)
    for c in chunks:
        assert metrics.ranked(run[c["id"]])[0] == c["id"], (name, c["id"])
        assert len(run[c["id"]]) == 10


def _queries(db) -> dict[str, str]:
    """Chunk openings, a stem collision (key/keys), an identifier FTS5 reads as a phrase, nonsense."""
    texts = [r[0] for r in db.execute("SELECT text FROM chunks ORDER BY id LIMIT 30")]
    found = {f"open{i}": " ".join(t.split()[:8]) for i, t in enumerate(texts)}
    found.update({"stems": "rotate key keys rotation", "phrase": "request_id next_cursor page_size",
                  "accents": "café CAFÉ", "nothing": "zzqx", "empty": "?!"})
    return found


def test_bm25_scores_equal_fts5_bm25_exactly(sample_db):
    # Retire a chunk: statistics still count its row (as FTS5 does), but it is never returned.
    retired = sample_db.execute("SELECT id FROM chunks ORDER BY id LIMIT 1 OFFSET 5").fetchone()[0]
    with sample_db.conn:
        sample_db.execute("UPDATE chunks SET active = 0 WHERE id = ?", [retired])
    queries = _queries(sample_db)
    ours = get_retriever("bm25", sample_db).search(queries, 500)
    reference = get_retriever("fts5", sample_db).search(queries, 500)
    assert reference["phrase"] and reference["stems"] and not reference["nothing"]
    for qid in queries:
        assert set(ours[qid]) == set(reference[qid]), qid
        for doc, score in reference[qid].items():
            assert ours[qid][doc] == pytest.approx(score, rel=1e-12, abs=1e-12), (qid, doc)
        assert retired not in ours[qid]


def test_rrf_by_hand():
    fused = rrf([{"a": 3.0, "b": 2.0, "c": 1.0}, {"c": 0.9, "d": 0.5}], k=60)
    assert fused == {"a": 1 / 61, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 62}
    # b and d tie: trec_eval's order puts the larger id first.
    assert metrics.ranked(fused) == ["c", "a", "d", "b"]


class _Fixed(Retriever):
    def __init__(self, run: dict[str, float]):
        self.run = run
        self.depths: list[int] = []

    def search_texts(self, texts, depth):
        self.depths.append(depth)
        return [dict(list(self.run.items())[:depth]) for _ in texts]


def test_hybrid_fuses_its_two_parts_by_reciprocal_rank():
    hybrid = HybridRetriever()
    hybrid.parts_ = [_Fixed({"x": 9.0, "y": 8.0, "z": 7.0}), _Fixed({"z": 0.8, "w": 0.7})]
    run = hybrid.search({"q": "anything"}, 2)
    assert run == {"q": {"z": 1 / 63 + 1 / 61, "x": 1 / 61}}
    assert [p.depths for p in hybrid.parts_] == [[retrievers.HYBRID_POOL]] * 2


def test_cut_off_keeps_trec_eval_order_through_ties():
    rng = random.Random(0)
    for _ in range(200):
        n, depth = rng.randint(1, 30), rng.randint(1, 10)
        ids = np.array(sorted(f"c{i:03d}" for i in rng.sample(range(999), n)), dtype=object)
        scores = np.array([rng.choice([0.5, 1.0, 2.0]) for _ in range(n)])
        hits = retrievers._hits(ids, scores, np.arange(n), depth)
        full = dict(zip(ids.tolist(), scores.tolist()))
        assert list(hits) == metrics.ranked(full)[:depth]


def test_dense_reuses_cached_chunk_and_query_vectors(sample_db, monkeypatch):
    first = get_retriever("dense", sample_db)
    expected = first.search({"q": "rotate encryption keys"}, 5)
    assert sample_db.execute("SELECT COUNT(*) FROM embeddings WHERE embedder = ?", [first.embedder_.id]).fetchone()[0] \
        >= len(first.ids_)

    def no_embedding(self, texts):
        raise AssertionError(f"embedded {len(texts)} texts again")

    monkeypatch.setattr(embed.TfidfEmbedder, "embed_batch", no_embedding)
    again = get_retriever("dense", sample_db)
    assert again.embedder_.id == first.embedder_.id
    assert again.search({"q": "rotate encryption keys"}, 5) == expected


def test_dense_follows_the_active_cluster_runs_embedder(sample_db):
    assert retrievers.project_embedder_spec(sample_db) == "minilm"  # no cluster run: the default
    with sample_db.conn:
        sample_db.execute("INSERT INTO cluster_runs (embedder, k, active) VALUES ('tfidf:abc', 2, 1)")
    assert retrievers.project_embedder_spec(sample_db) == "tfidf"
    with sample_db.conn:
        sample_db.execute("UPDATE cluster_runs SET active = 0")
        sample_db.execute("INSERT INTO cluster_runs (embedder, k, active) VALUES ('minilm:all-MiniLM-L6-v2:np1', 2, 1)")
    assert retrievers.project_embedder_spec(sample_db) == "minilm"


def test_bm25_on_an_empty_project_finds_nothing(empty_db):
    assert BM25Retriever().fit(empty_db).search({"q": "anything"}, 5) == {"q": {}}


def test_unknown_retriever_is_a_clear_error(sample_db):
    with pytest.raises(InputError, match="unknown retriever 'bm26'"):
        get_retriever("bm26", sample_db)
