"""A static embedder distilled once, locally, from the bundled MiniLM (model2vec, then Tokenlearn).

Why: MiniLM through llama.cpp runs near what two cores can do (10,000 queries ~84 s), and clustering
a real log waits minutes. A static model keeps one vector per vocabulary token; a text is the mean of
its tokens' vectors, so embedding costs a tokenizer pass and one sparse product: 10,000 queries in
about 0.4 CPU seconds (bench/embed.py). It is much coarser than MiniLM (docs/clustering.md,
docs/benchmarks.md), so it is opt-in, never a default.

Two steps, each cached on its own:
1. The plain table (format 1; model2vec, MinishLab): every WordPiece token of MiniLM's vocabulary
   is run through MiniLM as its own sequence ``[CLS] token [SEP]`` (mean pooled, as MiniLM pools
   sentences), the 30,522 x 384 table is reduced with PCA to ``dim`` components, and each row is
   weighted by ``sif / (sif + p(token))`` with ``p`` from Zipf's law over the token's rank.
2. Tokenlearn (format 2, tokenlearn.py; the step the published potion models gain most from): the
   table is fitted so that a text's weighted token mean regresses onto MiniLM's vector of that text,
   over TRAIN_TEXTS sentences of the standard library's docstrings and language reference (texts
   every Python install has; neither benchmark corpus is among them), weights by SIF over those
   texts' token frequencies, then PCA back to ``dim``. On the Python FAQ it lifts dense hit@5 from
   0.39 to 0.55 and suggestion hit@5 from 0.52 to 0.64; clustering barely moves.

The tables are written to the cache as ``.npy`` (via a pid-named part renamed into place, with a
sha256 sidecar, cachefiles), named by the MiniLM GGUF's hash and the format; the embedder's id carries
the table's own hash, so vectors from another or a damaged table are never reused. Inference is numpy
and ``tokenizers`` (already used for MiniLM) rather than the model2vec package: it is a dozen lines,
needs no new dependency, and reads the tokenizer straight from the MiniLM package.

The teacher runs on one llama.cpp thread while fitting: on a busy machine (load 12 on 2 cores) two
threads embedded 512 sentences in 150-230 s, one thread in 14 s.
"""

from __future__ import annotations

import logging
import os
import time
import zipfile
from pathlib import Path
from typing import Optional

import numpy as np

from curator.core import cachefiles
from curator.core.embedding.base import Embedder, l2_normalise
from curator.core.embedding.minilm import minilm_zip

LOG = logging.getLogger("curator")
STATIC_FORMAT = 2  # bump when the distillation changes: the cache name includes it (1: the plain table)
TRAIN_TEXTS = 8192  # Tokenlearn texts (training_texts); set from the figures in docs/clustering.md
TRAIN_SIF = 1e-3  # SIF coefficient of the fit's token weights, over the training texts' frequencies
TRAIN_LAMBDA = 0.03  # ridge pull towards the prior table (tokenlearn.fit_table)
STATIC_DIM = 256
SIF = 1e-4  # model2vec's default SIF coefficient
MAX_TOKENS = 512  # longer texts are cut (model2vec's default); a static model has no position limit


def load_tokenizer():
    """MiniLM's WordPiece tokenizer from the package's zip, without padding (the file pads to 128)."""
    from tokenizers import Tokenizer

    with zipfile.ZipFile(minilm_zip()) as zf:
        tok = Tokenizer.from_str(zf.read("tokenizer.json").decode("utf-8"))
    tok.no_padding()
    tok.enable_truncation(MAX_TOKENS)
    return tok


def token_vectors(teacher, vocab_size: int, cls: int, sep: int, batch: int = 4096) -> np.ndarray:
    """MiniLM's mean-pooled vector of each token id alone (``[CLS] id [SEP]``), unnormalised rows."""
    out = np.zeros((vocab_size, 384), np.float32)
    if teacher._llm is None:
        teacher._load()
    for start in range(0, vocab_size, batch):
        ids = list(range(start, min(start + batch, vocab_size)))
        lists = [[cls, i, sep] for i in ids]
        for pack in teacher._packs([3] * len(lists), np.arange(len(lists))):
            out[[ids[i] for i in pack]] = teacher._decode([lists[i] for i in pack])
    return out


def reduce_and_weight(table: np.ndarray, dim: int = STATIC_DIM, sif: Optional[float] = SIF) -> np.ndarray:
    """PCA to ``dim`` components, then Zipf-rank SIF weights (model2vec's post-processing; none
    when ``sif`` is None)."""
    from sklearn.decomposition import PCA

    dim = min(dim, table.shape[1])
    reduced = PCA(n_components=dim, svd_solver="full", random_state=0).fit_transform(table)
    if sif is None:
        return reduced.astype(np.float32)
    return (reduced * zipf_weights(table.shape[0], sif)[:, None]).astype(np.float32)


def zipf_weights(vocab_size: int, sif: float = SIF) -> np.ndarray:
    """``sif / (sif + p)`` with ``p`` from Zipf's law over the token's rank (format 1's weights)."""
    inv_rank = 1.0 / np.arange(2, vocab_size + 2)
    return (sif / (sif + inv_rank / inv_rank.sum())).astype(np.float32)


def plain_table(out_path: Path, teacher=None, dim: int = STATIC_DIM) -> None:
    """Write the plain distilled table (format 1: token pass, PCA, Zipf weights) to ``out_path``."""
    from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder

    started = time.perf_counter()
    LOG.warning("curator: distilling the static embedder from MiniLM, once per machine (about 220 CPU seconds)...")
    teacher = teacher or MiniLMLlamaEmbedder()
    tok = load_tokenizer()
    vocab = tok.get_vocab()
    table = token_vectors(teacher, len(vocab), vocab["[CLS]"], vocab["[SEP]"])
    model = reduce_and_weight(table, dim)
    save_table(out_path, zero_specials(model, vocab))
    LOG.warning("curator: static token pass done in %.1f s: %s", time.perf_counter() - started, out_path)


def zero_specials(model: np.ndarray, vocab: dict) -> np.ndarray:
    for special in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"):
        model[vocab[special]] = 0.0  # never part of a text's mean (special tokens are not added; UNK is noise)
    return model


def save_table(out_path: Path, model: np.ndarray) -> None:
    """``model`` as .npy at ``out_path``, through a pid-named part renamed into place."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = cachefiles.new_part(out_path)
    try:
        with open(tmp, "wb") as fh:
            np.save(fh, model)  # a file handle: np.save would append ".npy" to a part's name
        cachefiles.publish_part(tmp, out_path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def training_texts(limit: int = TRAIN_TEXTS) -> list[str]:
    """The Tokenlearn texts: stdlib docstring and language-reference sentences (tokenlearn.py),
    shuffled with a fixed seed so the first ``limit`` are a sample of all of them."""
    import random

    from curator.core.embedding.tokenlearn import stdlib_texts

    texts = stdlib_texts()
    random.Random(0).shuffle(texts)
    return texts[:limit]


def teacher_vectors(teacher, texts: list[str], batch: int = 512) -> np.ndarray:
    """MiniLM's vectors of ``texts``, logged as they come (minutes on a busy machine)."""
    out = []
    for start in range(0, len(texts), batch):
        out.append(teacher.embed_batch(texts[start:start + batch]))
        LOG.info("curator: static embedder, teacher vectors %d/%d", min(start + batch, len(texts)), len(texts))
    return np.vstack(out)


def distil(out_path: Path, teacher=None, dim: int = STATIC_DIM, texts: Optional[list[str]] = None) -> None:
    """Write the static table (format 2) to ``out_path`` (atomically); logs the time.

    The plain table (format 1, cached on its own) is the prior; Tokenlearn (tokenlearn.py) then fits
    it to MiniLM's vectors of ``texts`` (default: training_texts()), weighted by SIF over the texts'
    token frequencies, and the result is reduced to ``dim`` components by PCA."""
    from curator.core.embedding import tokenlearn
    from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder

    started = time.perf_counter()
    prior = np.load(static_model_path(dim, fmt=1), allow_pickle=False)
    teacher = teacher or MiniLMLlamaEmbedder(n_threads=1)  # one thread: see the module notes
    texts = training_texts() if texts is None else texts
    LOG.warning("curator: fitting the static embedder to MiniLM on %d texts, once per machine...", len(texts))
    tok = load_tokenizer()
    vocab = tok.get_vocab()
    token_ids = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    targets = teacher_vectors(teacher, texts)
    weights = tokenlearn.sif_weights(token_ids, len(vocab), TRAIN_SIF)
    unweighted_prior = prior / zipf_weights(len(vocab))[:, None]
    table = tokenlearn.fit_table(unweighted_prior, token_ids, targets, weights, TRAIN_LAMBDA)
    model = table if table.shape[1] <= dim else reduce_and_weight(table, dim, sif=None)
    save_table(out_path, zero_specials(model, vocab))
    LOG.warning("curator: static embedder fitted in %.1f s: %s", time.perf_counter() - started, out_path)


def static_name(gguf_sha: str, dim: int = STATIC_DIM, fmt: int = STATIC_FORMAT) -> str:
    return f"minilm-static.{gguf_sha[:16]}.d{dim}.v{fmt}.npy"


def static_model_path(dim: int = STATIC_DIM, fmt: int = STATIC_FORMAT) -> Path:
    """The cached static table of the installed MiniLM: distilled on first use, checked against its
    sidecar on every later one, distilled again when it does not match or MiniLM changed. ``fmt=1``
    is the plain table (the prior of format 2, kept in the cache next to it)."""
    from curator.core.embedding.minilm_gguf import minilm_gguf_path

    gguf_sha = cachefiles.file_sha256(minilm_gguf_path())
    out = cachefiles.cache_file("models", static_name(gguf_sha, dim, fmt), gguf_sha)
    build = plain_table if fmt == 1 else distil
    return cachefiles.ensure(out, gguf_sha, lambda path: build(path, dim=dim))


class StaticEmbedder(Embedder):
    """Mean of distilled MiniLM token vectors (special tokens left out), L2-normalised."""

    def __init__(self, dim: int = STATIC_DIM, model_path: Optional[Path] = None) -> None:
        self.dim = dim
        self._path = model_path
        self._table: Optional[np.ndarray] = None
        self._tok = None
        self._id: Optional[str] = None

    def model_path(self) -> Path:
        if self._path is None:
            self._path = static_model_path(self.dim)
        return self._path

    @property
    def id(self) -> str:
        """Keyed by the table file's hash: another distillation (or a damaged file) is another space."""
        if self._id is None:
            sha = cachefiles.file_sha256(self.model_path())
            self._id = f"static:minilm-L6-v2:d{self.dim}:{sha[:16]}"
        return self._id

    def _load(self) -> None:
        self._table = np.load(self.model_path(), allow_pickle=False)
        self._tok = load_tokenizer()

    def embed_batch(self, texts: list[str]) -> np.ndarray:
        from scipy.sparse import csr_matrix

        if self._table is None:
            self._load()
        if not texts:
            return np.zeros((0, self._table.shape[1]), np.float32)
        encodings = self._tok.encode_batch([t or "" for t in texts], add_special_tokens=False)
        ids = [e.ids for e in encodings]
        lengths = np.fromiter((len(x) for x in ids), np.int64, len(ids))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        flat = np.fromiter((i for x in ids for i in x), np.int64, int(indptr[-1]))
        counts = csr_matrix((np.ones(len(flat), np.float32), flat, indptr),
                            shape=(len(texts), self._table.shape[0]))
        return l2_normalise(counts @ self._table)  # the mean's direction: the division cancels out
