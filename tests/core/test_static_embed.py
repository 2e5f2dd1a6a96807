"""The static embedder distilled from MiniLM: the method's steps, the cached table, and its vectors.

The real table is distilled once per machine into the user's cache (about 220 CPU seconds) and
checked against its sidecar afterwards; these tests use that file as a user's run would.
"""

import numpy as np
import pytest

from curator.core import cachefiles
from curator.core.embedding.embed import embed_texts, get_embedder
from curator.core.embedding.static import SIF, StaticEmbedder, reduce_and_weight, static_model_path, token_vectors


def test_reduce_and_weight_pca_then_zipf_weights():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(500, 32)).astype(np.float32)
    out = reduce_and_weight(table, dim=8)
    assert out.shape == (500, 8) and out.dtype == np.float32
    unweighted = reduce_and_weight(table, dim=8, sif=1e9)  # weights -> 1: the PCA alone
    ratio = np.linalg.norm(out, axis=1) / np.linalg.norm(unweighted, axis=1)
    # frequent (low rank) tokens weigh least, and the weights rise with rank toward 1
    assert ratio[0] < ratio[10] < ratio[499] <= 1.0 + 1e-6
    p0 = (1 / 2) / np.sum(1 / np.arange(2, 502))
    assert ratio[0] == pytest.approx(SIF / (SIF + p0), rel=1e-4)


class TinyTeacher:
    """Stands in for MiniLM in the token pass: a token's vector is a function of its id alone."""

    _llm = object()

    def _packs(self, lengths, order):
        return [list(order[i:i + 7]) for i in range(0, len(order), 7)]

    def _decode(self, token_lists):
        return np.array([[t[1] % 5, t[1] % 3, 1.0] + [0.0] * 381 for t in token_lists], np.float32)


def test_token_vectors_runs_each_token_alone_between_cls_and_sep():
    table = token_vectors(TinyTeacher(), 40, cls=101, sep=102, batch=16)
    assert table.shape == (40, 384)
    assert [tuple(table[i, :3]) for i in (0, 7, 39)] == [(0, 0, 1), (2, 1, 1), (4, 0, 1)]


@pytest.fixture(scope="module")
def static():
    return StaticEmbedder()


def test_table_is_cached_with_sidecar_named_by_the_minilm_gguf(static):
    from curator.core.embedding.minilm_gguf import minilm_gguf_path

    path = static_model_path()
    gguf_sha = cachefiles.file_sha256(minilm_gguf_path())
    assert gguf_sha[:16] in path.name and path.suffix == ".npy"
    assert cachefiles.problem(path, gguf_sha) is None  # sidecar present and matching
    table = np.load(path)
    assert table.shape == (30522, 256) and table.dtype == np.float32
    assert static.id.startswith("static:minilm-L6-v2:d256:") and cachefiles.file_sha256(path)[:16] in static.id


def test_vectors_normalised_and_meaningful(static):
    texts = ["How do I read a file in Python?", "How can I open and read a text file?",
             "What is the capital of France?", ""]
    v = static.embed_batch(texts)
    assert v.shape == (4, 256) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v[:3], axis=1), 1.0, rtol=1e-5)
    assert not v[3].any()  # an empty text has no tokens: a zero row, as tfidf gives
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    np.testing.assert_array_equal(static.embed_batch(texts[:2]), v[:2])  # batch-independent


def test_static_finds_paraphrase_partners():
    """Five pairs of one question in two wordings: each text's nearest other text should be its
    partner. MiniLM finds 10 of 10 here, the plain table (format 1) 7, the Tokenlearn table
    (format 2) 10 (chance is about 1 in 9): a floor of 9."""
    texts = ["How do I install a package with pip?", "pip install fails with permission denied",
             "How do I sort a list of dictionaries by a key?", "sorting a list of dicts by value",
             "Why is my floating point sum wrong?", "0.1 + 0.2 does not equal 0.3",
             "How do I run code in a separate thread?", "threading example with a worker",
             "How do I read a CSV file?", "parse comma separated values from a file"]
    v = StaticEmbedder().embed_batch(texts)
    nearest = (v @ v.T - 2 * np.eye(len(texts))).argmax(axis=1)
    assert (nearest == np.arange(len(texts)) ^ 1).sum() >= 9


def test_get_embedder_static_and_the_project_cache(empty_db, static):
    emb = get_embedder("static", empty_db)
    assert emb.id == static.id
    first = embed_texts(empty_db, emb, ["a query", "another query"])
    stored = empty_db.execute("SELECT COUNT(*) FROM embeddings WHERE embedder = ?", [emb.id]).fetchone()[0]
    assert stored == 2 and first.shape == (2, 256)


def test_damaged_or_missing_table_is_distilled_again(tmp_path, monkeypatch):
    """static_model_path: distils into the cache when missing, reuses a whole table, distils again
    when its bytes no longer match the sidecar (here with a stub distiller in a temporary cache)."""
    import curator.core.embedding.minilm_gguf as minilm_gguf
    import curator.core.embedding.static as static_mod

    gguf = minilm_gguf.minilm_gguf_path()
    monkeypatch.setattr(minilm_gguf, "minilm_gguf_path", lambda: gguf)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = []

    def fake_distil(path, dim=256):
        built.append(path)
        with open(path, "wb") as fh:
            np.save(fh, np.full((3, 2), len(built), np.float32))

    monkeypatch.setattr(static_mod, "distil", fake_distil)
    monkeypatch.setattr(static_mod, "plain_table", fake_distil)
    path = static_mod.static_model_path()
    assert path.is_relative_to(tmp_path) and len(built) == 1
    assert static_mod.static_model_path() == path and len(built) == 1  # whole: reused
    path.write_bytes(path.read_bytes()[:-4] + b"\0\0\0\0")
    assert static_mod.static_model_path() == path and len(built) == 2  # damaged: distilled again
    assert np.load(path)[0, 0] == 2


def test_stored_ids_reopen_their_embedder():
    """Dense retrieval reopens the active cluster run's embedder from its stored id (a static run
    was read as tfidf before)."""
    from curator.core.embedding.embed import spec_of_id

    assert spec_of_id("static:minilm-L6-v2:d256:200dea5a7fc0de67") == "static"
    assert spec_of_id("minilm:all-MiniLM-L6-v2:t256:gguf-0872f5d7d0e806c4") == "minilm"
    # the numpy reference names the weights zip: its vectors are reopened by the same engine
    assert spec_of_id("minilm:all-MiniLM-L6-v2:t256:zip-0872f5d7d0e806c4") == "minilm-numpy"
    assert spec_of_id("tfidf:d128:r0:i5:abc") == "tfidf"
    assert spec_of_id("endpoint:http://127.0.0.1:8080/v1#minilm:d384:4f4a3c50") == "endpoint:http://127.0.0.1:8080/v1#minilm"
    assert spec_of_id("gguf:nomic.gguf:0123") is None


def test_dense_retrieval_after_a_static_cluster_run_uses_minilm(sample_db):
    """Clustering with static is a speed choice; dense and hybrid keep MiniLM (far better at retrieval)."""
    from curator.core.retrieval import retrievers

    with sample_db.conn:
        sample_db.execute("INSERT INTO cluster_runs (embedder, k, active) VALUES ('static:minilm-L6-v2:d256:ab', 2, 1)")
    assert retrievers.project_embedder_spec(sample_db) == "minilm"
    with sample_db.conn:
        sample_db.execute("UPDATE cluster_runs SET active = 0")
        sample_db.execute("INSERT INTO cluster_runs (embedder, k, active) VALUES ('endpoint:http://h/v1#m:d8:ff', 2, 1)")
    assert retrievers.project_embedder_spec(sample_db) == "endpoint:http://h/v1#m"


class NoisyTeacher:
    """Stands in for MiniLM's sentence vectors in the Tokenlearn step: a fixed vector per text."""

    def embed_batch(self, texts):
        rng = np.random.default_rng(len(texts))
        return rng.normal(size=(len(texts), 384)).astype(np.float32)


def test_distil_fits_the_plain_table_to_the_teacher_and_keeps_its_shape(tmp_path):
    """Format 2 from the cached plain table (the prior) and a teacher's vectors of a few texts:
    the vocabulary and width of the plain table, special tokens zero, and the rows of the tokens
    in the texts moved (the others stay close to the prior mapped into the teacher's space)."""
    from curator.core.embedding.static import distil, load_tokenizer

    texts = ["Return the number of items in a container.", "Raise an exception when the file is missing."]
    out = tmp_path / "table.npy"
    distil(out, teacher=NoisyTeacher(), texts=texts)
    table = np.load(out)
    assert table.shape == (30522, 256) and table.dtype == np.float32
    vocab = load_tokenizer().get_vocab()
    assert not table[[vocab["[CLS]"], vocab["[SEP]"], vocab["[PAD]"]]].any()
    assert np.isfinite(table).all() and np.linalg.norm(table[vocab["exception"]]) > 0


def test_the_cached_table_is_format_2_and_beside_its_prior():
    """The shipped table is the Tokenlearn one (its name says v2) and differs from the plain table
    it was fitted from, which stays cached as its prior."""
    v2, v1 = static_model_path(), static_model_path(fmt=1)
    assert v2.name.endswith(".d256.v2.npy") and v1.name.endswith(".d256.v1.npy")
    assert cachefiles.file_sha256(v2) != cachefiles.file_sha256(v1)
