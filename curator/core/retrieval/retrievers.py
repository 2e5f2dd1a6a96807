"""Built-in retrievers over a project's active chunks, behind one small interface.

A retriever is fitted on a project (``fit(db)`` indexes the chunks; learned state ends in
``_``) and has one primitive, ``search_texts(texts, depth)``: for each text the ``depth``
best chunks as ``{chunk id: score}``. The base class turns that into ``search(queries,
depth) -> ranking.Run`` for ``{query id: text}``.

- ``bm25``: Okapi BM25 with exactly SQLite FTS5's formula and tokens (k1=1.2, b=0.75,
  idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6, document length over title + text),
  computed as one sparse matrix product per batch of queries. The postings come from the
  project's own FTS5 index (``fts5vocab``), so the terms are FTS5's porter-stemmed tokens and
  the scores equal ``-bm25(chunks_fts)`` of ``curator search``. On 100k chunks it answers
  ~600 queries per CPU second against ~9 for one MATCH per query (bench/eval.py), because a
  MATCH scores every row that contains a common word one row at a time.
- ``fts5``: the same scores through one FTS5 MATCH per query (the reference; slow).
- ``tfidf``: scikit-learn TfidfVectorizer (sublinear tf, l2 rows) cosine, sparse products.
- ``dense``: an embedder from curator.core.embedding.embed (default: the family of the project's active
  cluster run, else MiniLM, or tfidf/LSA without the MiniLM package), exact cosine over all chunk
  vectors; vectors go through the project's embedding cache, so a second evaluation does not re-embed the chunks.
- ``hybrid``: reciprocal rank fusion of bm25 and dense, score(d) = sum 1 / (60 + rank(d)) over
  the two rankings (k=60 as in Cormack et al. 2009), each taken to ``max(depth, 100)``.

Cut-offs keep trec_eval's order (score descending, then chunk id descending), so a tie at the
``depth`` boundary is resolved the same way ranking.ranked resolves it.
"""

from __future__ import annotations

import re
from typing import Mapping, Optional, Union

import numpy as np
import sqlite_utils

from curator.core import store
from curator.core.retrieval import ranking
from curator.core.embedding.embed import Embedder, default_embedder_spec, embed_texts, get_embedder, spec_of_id
from curator.core.errors import InputError
from curator.core.progress import CancelToken
from curator.core.corpus.search import _WORD, search_chunks  # _WORD: the word split of fts_query, so both build one phrase set

EmbedderSpec = Optional[Union[str, Embedder]]

RETRIEVERS = ("bm25", "tfidf", "dense", "hybrid", "fts5")
BM25_K1, BM25_B = 1.2, 0.75  # FTS5's fixed constants
RRF_K = 60
HYBRID_POOL = 100
_BATCH_CELLS = 4_000_000  # scores held at once (queries x chunks): ~16-32 MB per batch


class Retriever:
    """Base: ``fit(db)`` builds the index, ``search_texts`` is the one primitive."""

    name = "base"

    def fit(self, db: sqlite_utils.Database) -> "Retriever":
        raise NotImplementedError

    def search_texts(self, texts: list[str], depth: int) -> list[dict[str, float]]:
        raise NotImplementedError

    def search(self, queries: Mapping[str, str], depth: int) -> ranking.Run:
        """``{query id: text}`` -> ``{query id: {chunk id: score}}`` with at most ``depth`` chunks each."""
        ids = list(queries)
        return dict(zip(ids, self.search_texts([queries[i] for i in ids], depth)))

    @property
    def params(self) -> dict:
        """What identifies this retriever's configuration (stored with an eval run)."""
        return {"retriever": self.name}


def active_chunks(db: sqlite_utils.Database, with_text: bool = True) -> list[dict]:
    """Active chunks (rowid, id[, title, text]) in chunk-id order, the column order of every index."""
    columns = "rowid, id, title, text" if with_text else "rowid, id"
    return store.rows(db, f"SELECT {columns} FROM chunks WHERE active = 1 ORDER BY id")


def _chunk_text(chunk: dict) -> str:
    return f"{chunk['title']}\n{chunk['text']}" if chunk["title"] else chunk["text"]


def _batch_rows(n_columns: int) -> int:
    return max(1, min(256, _BATCH_CELLS // max(1, n_columns)))


def _top(scores: np.ndarray, columns: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``depth`` best (score, column), ties at the cut going to the larger column (= larger id)."""
    if len(scores) <= depth:
        return scores, columns
    threshold = np.partition(scores, len(scores) - depth)[len(scores) - depth]
    above = scores > threshold
    tied = np.flatnonzero(scores == threshold)
    tied = tied[np.argsort(columns[tied])[::-1][: depth - int(above.sum())]]
    keep = np.concatenate([np.flatnonzero(above), tied])
    return scores[keep], columns[keep]


def _hits(ids: np.ndarray, scores: np.ndarray, columns: np.ndarray, depth: int) -> dict[str, float]:
    """``{chunk id: score}`` of the best ``depth``, in rank order (for people reading a run)."""
    scores, columns = _top(scores, columns, depth)
    order = np.lexsort((-columns, -scores))
    return dict(zip(ids[columns[order]].tolist(), scores[order].astype(float).tolist()))


def _sparse_search(matrix_t, query_matrix, ids: np.ndarray, depth: int) -> list[dict[str, float]]:
    """Rows of ``query_matrix @ matrix_t`` (terms x chunks) cut to ``depth``; zero scores are no match."""
    out: list[dict[str, float]] = []
    step = _batch_rows(matrix_t.shape[1])
    for start in range(0, query_matrix.shape[0], step):
        scores = (query_matrix[start:start + step] @ matrix_t).tocsr()
        for row in range(scores.shape[0]):
            a, b = scores.indptr[row], scores.indptr[row + 1]
            out.append(_hits(ids, scores.data[a:b], scores.indices[a:b], depth))
    return out


def _dense_search(vectors: np.ndarray, queries: np.ndarray, ids: np.ndarray, depth: int) -> list[dict[str, float]]:
    """Exact cosine (rows are unit length) of every query against every chunk, cut to ``depth``."""
    out: list[dict[str, float]] = []
    columns = np.arange(len(ids))
    step = _batch_rows(len(ids))
    for start in range(0, len(queries), step):
        scores = queries[start:start + step] @ vectors.T
        out.extend(_hits(ids, row, columns, depth) for row in scores)
    return out


def _fts_tokenize(db: sqlite_utils.Database) -> str:
    """The tokenize= argument of chunks_fts (sqlite-utils creates it as 'porter')."""
    sql = db.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()
    found = re.search(r"tokenize\s*=\s*'([^']*)'", sql[0] if sql else "")
    return found.group(1) if found else "unicode61"


class BM25Retriever(Retriever):
    """FTS5's BM25 as a sparse matrix: terms x chunks weights, one product per query batch.

    Statistics (N, document frequency, average length) cover every row of chunks_fts, active or
    not, as FTS5's own bm25() does; only active chunks are returned. Each query word is one term
    as in search.fts_query; a word FTS5 splits into several tokens (``foo_bar``) is a phrase, whose
    scores are taken from FTS5 (see ``_phrase_rows``).
    """

    name = "bm25"

    def fit(self, db: sqlite_utils.Database) -> "BM25Retriever":
        from scipy import sparse

        self.db_, self.tokenize_ = db, _fts_tokenize(db)
        chunks = active_chunks(db, with_text=False)  # the texts come tokenized from the FTS5 index
        self.ids_ = np.array([c["id"] for c in chunks], dtype=object)
        terms, term_ids, rowids = self._postings(db)
        self.vocab_ = {t: i for i, t in enumerate(terms)}
        n_rows = db.execute("SELECT COUNT(*) FROM chunks_fts").fetchone()[0]
        columns = np.array([c["rowid"] for c in chunks], dtype=np.int64)  # FTS rowid = chunks rowid
        size = int(max(rowids.max(initial=0), columns.max(initial=0))) + 1
        tf = sparse.csr_matrix((np.ones(len(rowids)), (term_ids, rowids)), shape=(len(terms), size))
        tf.sum_duplicates()  # repeated (term, row) instances add up to the term frequency
        self.matrix_t_ = self._weights(tf, n_rows)[:, columns].tocsr()
        self.column_of_ = {int(r): j for j, r in enumerate(columns)}
        return self

    @staticmethod
    def _postings(db) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Every token instance of the FTS5 index as (term list, term index, rowid) arrays.

        One group_concat row per term keeps the transfer from SQLite to a few thousand strings
        that numpy parses in C (5M instances: 0.8 s, against 4 s for one Python tuple each).
        """
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.curator_vocab USING fts5vocab(main, chunks_fts, 'instance')")
        try:
            rows = db.execute("SELECT term, group_concat(doc) FROM temp.curator_vocab GROUP BY term").fetchall()
        finally:
            db.execute("DROP TABLE IF EXISTS temp.curator_vocab")
        if not rows:
            return [], np.zeros(0, np.int64), np.zeros(0, np.int64)
        counts = np.array([r[1].count(",") + 1 for r in rows])
        rowids = np.fromstring(",".join(r[1] for r in rows), dtype=np.int64, sep=",")  # text mode: not deprecated
        return [r[0] for r in rows], np.repeat(np.arange(len(rows)), counts), rowids

    @staticmethod
    def _weights(tf, n_rows: int):
        """Per (term, row) BM25 weight: idf * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))."""
        from scipy import sparse

        n_rows = max(n_rows, 1)
        lengths = np.asarray(tf.sum(axis=0)).ravel()
        avgdl = lengths.sum() / n_rows or 1.0
        hits = np.diff(tf.indptr)
        idf = np.log((n_rows - hits + 0.5) / (hits + 0.5))
        idf[idf <= 0] = 1e-6  # FTS5 floors non-positive idf so that very common terms still count a little
        coo = tf.tocoo()
        norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[coo.col] / avgdl)
        weights = idf[coo.row] * coo.data * (BM25_K1 + 1) / (coo.data + norm)
        return sparse.csc_matrix((weights, (coo.row, coo.col)), shape=tf.shape)

    def _word_tokens(self, words: list[str]) -> dict[str, tuple[str, ...]]:
        """FTS5's own tokens of each word (porter stems, diacritics removed), via a temporary FTS5 table."""
        db = self.db_
        db.execute("DROP TABLE IF EXISTS temp.curator_qv")  # left over only if a search was interrupted
        db.execute("DROP TABLE IF EXISTS temp.curator_q")
        db.execute(f"CREATE VIRTUAL TABLE temp.curator_q USING fts5(text, tokenize='{self.tokenize_}')")
        db.execute("CREATE VIRTUAL TABLE temp.curator_qv USING fts5vocab(temp, curator_q, 'instance')")
        try:
            with db.conn:  # commit at once: an open transaction would pin the project's read snapshot
                db.conn.executemany("INSERT INTO temp.curator_q (rowid, text) VALUES (?, ?)",
                                    [(i + 1, w) for i, w in enumerate(words)])
            found: dict[int, list[tuple[int, str]]] = {}
            for term, doc, offset in db.execute("SELECT term, doc, offset FROM temp.curator_qv"):
                found.setdefault(doc, []).append((offset, term))
        finally:
            db.execute("DROP TABLE IF EXISTS temp.curator_qv")
            db.execute("DROP TABLE IF EXISTS temp.curator_q")
        return {w: tuple(t for _, t in sorted(found.get(i + 1, []))) for i, w in enumerate(words)}

    def _phrase_rows(self, phrases: list[str]):
        """Per-chunk scores of words FTS5 reads as multi-token phrases (``request_id``), from FTS5 itself.

        bm25() of a one-phrase MATCH is exactly that phrase's share of any query's score, and such
        words are rare, so one MATCH each keeps the scores equal to FTS5's without positions here.
        """
        from scipy import sparse

        rows, cols, scores = [], [], []
        for i, word in enumerate(phrases):
            for rowid, score in self.db_.execute(
                    "SELECT rowid, -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?", [f'"{word}"']):
                if rowid in self.column_of_:  # retired chunks are in the index but never returned
                    rows.append(i)
                    cols.append(self.column_of_[rowid])
                    scores.append(score)
        return sparse.csr_matrix((scores, (rows, cols)), shape=(len(phrases), len(self.ids_)))

    def _query_matrix(self, texts: list[str]):
        """Queries as counts over [index terms | phrases], and the phrases' rows to stack under the index.

        Words are the unique \\w+ words of each query, as search.fts_query builds its OR of phrases,
        so two words with one stem ("key", "keys") count twice there and here.
        """
        from scipy import sparse

        per_query = [list(dict.fromkeys(_WORD.findall(t.lower()))) for t in texts]
        tokens = self._word_tokens(sorted({w for words in per_query for w in words}))
        phrases: dict[str, int] = {}
        rows, cols = [], []
        for i, words in enumerate(per_query):
            for word in words:
                toks = tokens[word]
                if len(toks) == 1 and toks[0] in self.vocab_:
                    column = self.vocab_[toks[0]]
                elif len(toks) > 1:
                    column = len(self.vocab_) + phrases.setdefault(word, len(phrases))
                else:
                    continue  # a word the index has never seen scores 0 in FTS5 too
                rows.append(i)
                cols.append(column)
        queries = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(texts), len(self.vocab_) + len(phrases)))
        return queries, (self._phrase_rows(list(phrases)) if phrases else None)

    def search_texts(self, texts: list[str], depth: int) -> list[dict[str, float]]:
        from scipy import sparse

        if not texts:
            return []
        queries, extra = self._query_matrix(texts)
        matrix_t = self.matrix_t_ if extra is None else sparse.vstack([self.matrix_t_, extra]).tocsr()
        return _sparse_search(matrix_t, queries, self.ids_, depth)


class Fts5Retriever(Retriever):
    """One FTS5 MATCH per query (search.search_chunks): the reference the bm25 retriever must equal."""

    name = "fts5"

    def fit(self, db: sqlite_utils.Database) -> "Fts5Retriever":
        self.db_ = db
        return self

    def search_texts(self, texts: list[str], depth: int) -> list[dict[str, float]]:
        return [{hit["id"]: hit["score"] for hit in search_chunks(self.db_, t, limit=depth)} for t in texts]


class TfidfRetriever(Retriever):
    """TF-IDF cosine: word unigrams, sublinear tf, l2-normalised rows, so a dot product is the cosine."""

    name = "tfidf"

    def __init__(self, ngram_range: tuple[int, int] = (1, 1)) -> None:
        self.ngram_range = ngram_range

    def fit(self, db: sqlite_utils.Database) -> "TfidfRetriever":
        from sklearn.feature_extraction.text import TfidfVectorizer

        chunks = active_chunks(db)
        self.ids_ = np.array([c["id"] for c in chunks], dtype=object)
        self.vectorizer_ = TfidfVectorizer(sublinear_tf=True, ngram_range=self.ngram_range, dtype=np.float32)
        try:
            self.matrix_t_ = self.vectorizer_.fit_transform([_chunk_text(c) for c in chunks]).T.tocsr()
        except ValueError:  # scikit-learn's "empty vocabulary": no chunk, or no word in any chunk
            raise InputError("the tfidf retriever found no words in the project's chunks: ingest documents first") from None
        return self

    def search_texts(self, texts: list[str], depth: int) -> list[dict[str, float]]:
        if not texts:
            return []
        return _sparse_search(self.matrix_t_, self.vectorizer_.transform(texts), self.ids_, depth)


def project_embedder_spec(db: sqlite_utils.Database) -> str:
    """The embedder family of the active cluster run (minilm, tfidf, endpoint:URL); the default when
    there is none, or when the run used ``static``: clustering with it is a speed choice, and its dense
    hit@5 on the FAQ sets (0.39 / 0.46) is far below MiniLM's (0.90 / 0.80; docs/benchmarks.md).

    A gguf run's stored id keeps only the file name, so it cannot be reopened (tfidf): pass ``gguf:PATH``.
    """
    row = db.execute("SELECT embedder FROM cluster_runs WHERE active = 1 ORDER BY id DESC LIMIT 1").fetchone()
    spec = (spec_of_id(row[0]) or "tfidf") if row else None
    return default_embedder_spec() if spec in (None, "static") else spec


class DenseRetriever(Retriever):
    """Exact cosine over embedder vectors of every active chunk (title + text).

    ``embedder`` is a spec for embed.get_embedder (tfidf | minilm | gguf:PATH), an Embedder
    instance (already fitted, e.g. shared with another step), or None for project_embedder_spec.
    """

    name = "dense"

    def __init__(self, embedder: EmbedderSpec = None) -> None:
        self.embedder = embedder

    def fit(self, db: sqlite_utils.Database, cancel: Optional[CancelToken] = None) -> "DenseRetriever":
        """Embed every active chunk (from the cache where it can); ``cancel`` stops between batches,
        keeping the vectors stored so far (a first fit on a big corpus takes minutes)."""
        self.db_ = db
        spec = self.embedder or project_embedder_spec(db)
        self.embedder_ = get_embedder(spec, db) if isinstance(spec, str) else spec
        chunks = active_chunks(db)
        self.ids_ = np.array([c["id"] for c in chunks], dtype=object)
        self.vectors_ = (embed_texts(db, self.embedder_, [_chunk_text(c) for c in chunks], cancel=cancel)
                         if chunks else None)
        return self

    @property
    def params(self) -> dict:
        return {"retriever": self.name, "embedder": self.embedder_.id}

    def search_texts(self, texts: list[str], depth: int) -> list[dict[str, float]]:
        if not texts or self.vectors_ is None:
            return [{} for _ in texts]
        # Query vectors also go through the cache: re-running an evaluation embeds nothing new.
        return _dense_search(self.vectors_, embed_texts(self.db_, self.embedder_, texts), self.ids_, depth)


def rrf(runs: list[dict[str, float]], k: int = RRF_K, weights: Optional[list[float]] = None) -> dict[str, float]:
    """Reciprocal rank fusion of one query's rankings: sum over runs of w / (k + rank), rank from 1
    (w = 1 for every run unless ``weights`` says otherwise)."""
    fused: dict[str, float] = {}
    for scores, weight in zip(runs, weights or [1.0] * len(runs)):
        for rank, doc in enumerate(ranking.ranked(scores), 1):
            fused[doc] = fused.get(doc, 0.0) + weight / (k + rank)
    return fused


class HybridRetriever(Retriever):
    """BM25 and dense fused by reciprocal rank (k=60), each ranking taken to max(depth, 100)."""

    name = "hybrid"

    def __init__(self, embedder: EmbedderSpec = None, k: int = RRF_K, dense_weight: float = 1.0) -> None:
        self.embedder = embedder
        self.k = k
        self.dense_weight = dense_weight  # > 1 trusts the dense ranking more (suggested gold does)

    def fit(self, db: sqlite_utils.Database) -> "HybridRetriever":
        self.parts_ = [BM25Retriever().fit(db), DenseRetriever(self.embedder).fit(db)]
        return self

    @property
    def params(self) -> dict:
        params = {"retriever": self.name, "rrf_k": self.k, "pool": HYBRID_POOL, "embedder": self.parts_[1].params["embedder"]}
        return params if self.dense_weight == 1.0 else {**params, "dense_weight": self.dense_weight}

    def search_texts(self, texts: list[str], depth: int) -> list[dict[str, float]]:
        pool = max(depth, HYBRID_POOL)
        lists = [part.search_texts(texts, pool) for part in self.parts_]
        out = []
        for runs in zip(*lists):
            fused = rrf(list(runs), self.k, [1.0, self.dense_weight])
            out.append({doc: fused[doc] for doc in ranking.ranked(fused)[:depth]})
        return out


def get_retriever(name: str, db: sqlite_utils.Database, embedder: EmbedderSpec = None) -> Retriever:
    """A fitted retriever by name; ``embedder`` (tfidf | minilm | gguf:PATH, or an Embedder) applies to
    dense and hybrid."""
    makers = {"bm25": BM25Retriever, "fts5": Fts5Retriever, "tfidf": TfidfRetriever,
              "dense": lambda: DenseRetriever(embedder), "hybrid": lambda: HybridRetriever(embedder)}
    if name not in makers:
        raise InputError(f"unknown retriever {name!r}; use one of {', '.join(RETRIEVERS)}, or --run FILE")
    return makers[name]().fit(db)
