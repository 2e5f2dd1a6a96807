"""Coverage: where the real (log) queries are and whether synthetic rows are there too.

Per cluster of the active run: real queries, synthetic rows, approved rows, real queries with
negative feedback, and how many real queries have no synthetic row among their ``k`` nearest
neighbours in the run's embedding space (a gap inside a cluster that holds synthetic rows
elsewhere). A cluster is under-covered when it holds real queries and either no synthetic row or
a ``GAP_SHARE`` of its real queries without a synthetic neighbour.

Queries added after the run (rows generated since, a log imported since) are placed in the
cluster of their nearest clustered query, so coverage can be measured again after generating
without re-clustering (a new run would move every cluster and the figures would not compare).
For the map they get a position too (``placed_points``): the mean map position of their nearest
clustered queries of that cluster in embedding space. That is an estimate, not a UMAP fit (the
map draws them hollow and says so); a new cluster run fits them properly.

``target_chunks`` turns the under-covered clusters into an ordered list of chunk ids for
``generate --target coverage``: the suggested gold chunks of their real queries, interleaved in
proportion to each query's traffic (its frequency, weighted up for negative feedback by the review
queue's own ``draw_weight``). A chunk whose own text belongs to another cluster (``chunk_homes``) is
left out, unless none of a cluster's suggested chunks is at home: that cluster keeps them all.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import sqlite_utils

from curator.core import store
from curator.core.clustering.reads import active_cluster_run
from curator.core.errors import InputError, ModelFileError

K_NEIGHBOURS = 5
GAP_SHARE = 0.5  # a cluster whose real queries lack a synthetic neighbour this often is under-covered
_BLOCK = 512  # real queries per block of the neighbour search (a block x all queries of similarities)


@dataclass
class Measure:
    """Per-query facts behind the coverage report (the map draws ``gap`` points highlighted)."""

    run: dict
    rows: list[dict]  # id, text, source, status, frequency, negative_count, cluster (-1 = unplaced), placed, x, y
    gap: np.ndarray  # bool per row: a real query with no synthetic row among its k nearest neighbours
    k: int
    labels: dict[int, str] = field(default_factory=dict)
    # the unit vectors of the rows that have one in the run's space, one line per True in ``have``
    # (kept so chunk_homes does not read them again)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), np.float32))
    have: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    def gap_ids(self) -> set[str]:
        return {r["id"] for r, g in zip(self.rows, self.gap) if g}


def _rows(db: sqlite_utils.Database, run_id: int) -> list[dict]:
    return store.rows(db, """SELECT q.id, q.text, q.source, q.status, q.frequency, q.negative_count,
            COALESCE(qc.cluster, -1) AS cluster, qc.query_id IS NOT NULL AS clustered, qc.x, qc.y
        FROM queries q LEFT JOIN query_clusters qc ON qc.run_id = ? AND qc.query_id = q.id ORDER BY q.id""", [run_id])


def _cached_vectors(db, embedder_id: str, texts: list[str]) -> list[Optional[np.ndarray]]:
    from curator.core.embedding.base import text_hash

    found = {}
    hashes = [text_hash(t) for t in texts]
    unique = list(dict.fromkeys(hashes))
    for start in range(0, len(unique), 500):
        part = unique[start:start + 500]
        sql = f"SELECT text_hash, vector FROM embeddings WHERE embedder = ? AND text_hash IN ({','.join('?' * len(part))})"
        for h, blob in db.execute(sql, [embedder_id, *part]):
            found[h] = np.frombuffer(blob, dtype=np.float32)
    return [found.get(h) for h in hashes]


def _spec_for(embedder_id: str) -> Optional[str]:
    """The embedder spec that makes vectors under ``embedder_id``, when it can be told from the id
    alone and needs no server (a user's GGUF or an endpoint: their queries added since stay unplaced)."""
    from curator.core.embedding.embed import spec_of_id

    spec = spec_of_id(embedder_id)
    return None if spec is None or spec.startswith("endpoint:") else spec


def _embed_missing(db, embedder_id: str, texts: list[str], cancel=None) -> Optional[np.ndarray]:
    """Vectors of texts the run never embedded, from the embedder that made the run (None when
    it cannot be rebuilt: a tfidf space refitted on a grown project is another space). ``cancel``
    (a CancelToken) is checked between batches; each batch stored stays cached."""
    from curator.core.embedding.embed import embed_texts, get_embedder

    spec = _spec_for(embedder_id)
    try:
        embedder = get_embedder(spec, db) if spec else None
        if embedder is not None and embedder.id == embedder_id:  # same model file, same fitted space
            return embed_texts(db, embedder, texts, cancel=cancel)
    except (ModelFileError, InputError, OSError, ValueError):
        pass
    return None


def _lookup(db, embedder_id: str, texts: list[str], embed_new: bool,
            cancel=None) -> tuple[list[Optional[np.ndarray]], int]:
    """Each text's vector in the run's space (None when it has none): the cache first, then, with
    ``embed_new``, the run's embedder for the rest (built only when some are missing). Returns the
    vectors and how many were embedded now."""
    vectors = _cached_vectors(db, embedder_id, texts)
    missing = [i for i, v in enumerate(vectors) if v is None]
    if not missing or not embed_new:
        return vectors, 0
    more = _embed_missing(db, embedder_id, [texts[i] for i in missing], cancel)
    if more is None:
        return vectors, 0
    for i, v in zip(missing, more):
        vectors[i] = v
    return vectors, len(missing)


def _vectors(db, run: dict, rows: list[dict], embed_new: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors of the rows that have one in the run's space, and the mask of those rows."""
    vectors, _ = _lookup(db, run["embedder"], [r["text"] for r in rows], embed_new)
    have = np.array([v is not None for v in vectors], bool)
    if not have.any():
        return np.zeros((0, 1), np.float32), have
    matrix = np.vstack([v for v in vectors if v is not None]).astype(np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return matrix, have


def _nearest(matrix: np.ndarray, rows: np.ndarray, k: int, among: Optional[np.ndarray] = None) -> np.ndarray:
    """Indices (into ``matrix``) of the k nearest neighbours by cosine of each row in ``rows``,
    itself excluded; ``among`` limits the candidates (a boolean mask)."""
    k = max(1, min(k, len(matrix) - 1))
    out = np.zeros((len(rows), k), int)
    for start in range(0, len(rows), _BLOCK):
        part = rows[start:start + _BLOCK]
        sims = matrix[part] @ matrix.T
        sims[np.arange(len(part)), part] = -np.inf
        if among is not None:
            sims[:, ~among] = -np.inf
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1, kind="stable")
        out[start:start + len(part)] = np.take_along_axis(top, order, axis=1)
    return out


def _place_new(rows: list[dict], matrix: np.ndarray, have: np.ndarray, k: int = K_NEIGHBOURS) -> None:
    """Put each query the run never saw into the cluster of its nearest clustered query, and on the
    map at the mean position of those of its ``k`` nearest clustered queries that share that cluster
    (the nearest one always does): averaging across clusters could drop a point between two islands."""
    index = np.flatnonzero(have)  # row number of each matrix line
    clustered = np.array([bool(rows[i]["clustered"]) for i in index], bool)
    new = np.array([j for j, i in enumerate(index) if not rows[i]["clustered"]], int)
    if len(new) == 0 or not clustered.any():
        return
    nearest = _nearest(matrix, new, min(k, int(clustered.sum())), among=clustered)
    for j, near in zip(new, nearest):
        row, first = rows[index[j]], rows[index[near[0]]]
        same = [rows[index[n]] for n in near if rows[index[n]]["cluster"] == first["cluster"]]
        row["cluster"], row["placed"] = first["cluster"], True
        row["x"] = float(np.mean([r["x"] for r in same]))
        row["y"] = float(np.mean([r["y"] for r in same]))


def _gaps(rows: list[dict], matrix: np.ndarray, have: np.ndarray, k: int) -> np.ndarray:
    """Real queries with no synthetic row among their k nearest neighbours (all queries)."""
    gap = np.zeros(len(rows), bool)
    index = np.flatnonzero(have)
    if len(index) < 2:
        return gap
    synthetic = np.array([rows[i]["source"] == "synthetic" for i in index], bool)
    real = np.array([j for j, i in enumerate(index) if rows[i]["source"] == "log"], int)
    if len(real) == 0:
        return gap
    neighbours = _nearest(matrix, real, k)
    gap[index[real]] = ~synthetic[neighbours].any(axis=1)
    return gap


def measure(db: sqlite_utils.Database, k: int = K_NEIGHBOURS, embed_new: bool = True) -> Measure:
    """The active run's queries with their cluster (new ones placed) and their gap flags.
    ``embed_new=False`` uses cached vectors only (the GUI thread must not load a model): a query
    never embedded in the run's space then stays unplaced and out of the neighbour search."""
    run = active_cluster_run(db)
    if run is None:
        raise InputError("no cluster run yet: run 'curator cluster PROJECT' first, then coverage")
    if k < 1:
        raise InputError("--neighbours must be at least 1")
    rows = _rows(db, run["id"])
    for row in rows:
        row["placed"] = False
    matrix, have = _vectors(db, run, rows, embed_new)
    if len(matrix):
        _place_new(rows, matrix, have)
    gap = _gaps(rows, matrix, have, k) if len(matrix) else np.zeros(len(rows), bool)
    labels = {c: label for c, label in db.execute("SELECT cluster, label FROM clusters WHERE run_id = ?", [run["id"]])}
    return Measure(run, rows, gap, k, labels, matrix, have)


def _traffic(row: dict) -> float:
    """A real query's weight: how often it was asked, weighted up for negative feedback as the
    review queue weighs it (review.sample.draw_weight)."""
    from curator.core.review.sample import draw_weight

    return max(1, row["frequency"] or 1) * draw_weight(row)


def _cluster_rows(m: Measure) -> list[dict]:
    out: dict[int, dict] = {}
    for row, gap in zip(m.rows, m.gap):
        c = out.setdefault(row["cluster"], {"cluster": row["cluster"], "label": m.labels.get(row["cluster"], "unplaced"),
                                            "size": 0, "real": 0, "synthetic": 0, "approved": 0, "negative": 0,
                                            "traffic": 0.0, "real_without_synthetic_neighbour": 0})
        c["size"] += 1
        c["synthetic"] += row["source"] == "synthetic"
        c["approved"] += row["status"] == "approved"
        if row["source"] == "log":
            c["real"] += 1
            c["negative"] += (row["negative_count"] or 0) > 0
            c["traffic"] += _traffic(row)
            c["real_without_synthetic_neighbour"] += bool(gap)
    for c in out.values():
        c["gap_share"] = round(c["real_without_synthetic_neighbour"] / c["real"], 4) if c["real"] else None
        c["under_covered"] = bool(c["cluster"] >= 0 and c["real"] and (c["synthetic"] == 0 or c["gap_share"] >= GAP_SHARE))
    return [out[c] for c in sorted(out)]


def _share(part: int, whole: int) -> Optional[float]:
    return round(part / whole, 4) if whole else None


def report(m: Measure) -> dict:
    """The coverage summary and per-cluster table (``curator cluster --coverage --json``)."""
    clusters = _cluster_rows(m)
    real = sum(c["real"] for c in clusters)
    bare = sum(c["real"] for c in clusters if c["cluster"] >= 0 and c["synthetic"] == 0)
    gaps = int(m.gap.sum())
    return {"run_id": m.run["id"], "embedder": m.run["embedder"], "neighbours": m.k, "gap_share_threshold": GAP_SHARE,
            "queries": len(m.rows), "real": real, "synthetic": sum(c["synthetic"] for c in clusters),
            "approved": sum(c["approved"] for c in clusters),
            "placed_since_run": sum(bool(r["placed"]) for r in m.rows),
            "unplaced": sum(r["cluster"] < 0 for r in m.rows),
            "real_in_clusters_without_synthetic": bare, "share_real_in_clusters_without_synthetic": _share(bare, real),
            "real_without_synthetic_neighbour": gaps, "share_real_without_synthetic_neighbour": _share(gaps, real),
            "under_covered": [c["cluster"] for c in clusters if c["under_covered"]], "clusters": clusters}


def coverage(db: sqlite_utils.Database, k: int = K_NEIGHBOURS) -> dict:
    """``report(measure(db, k))``."""
    return report(measure(db, k))


def placed_points(m: Measure) -> list[dict]:
    """The queries added since the run that ``_place_new`` placed, as map points (``placed`` True;
    keys as ``reads.cluster_points`` gives): the map draws the run's own points from the run."""
    return [{"query_id": r["id"], "cluster": r["cluster"], "x": r["x"], "y": r["y"], "text": r["text"],
             "source": r["source"], "status": r["status"], "placed": True}
            for r in m.rows if r["placed"]]


def embed_unplaced(db: sqlite_utils.Database, cancel=None) -> int:
    """Embed, in the active run's space, the queries it never saw and whose vector is not cached yet,
    so that a later ``measure(db, embed_new=False)`` (the GUI thread's) places them. Returns how many
    were embedded (0 when the run's embedder cannot be rebuilt: they stay unplaced). ``cancel`` stops
    it between batches (raising Cancelled): the project is being left."""
    run = active_cluster_run(db)
    if run is None:
        return 0
    new = [r["text"] for r in _rows(db, run["id"]) if not r["clustered"]]
    return _lookup(db, run["embedder"], new, embed_new=True, cancel=cancel)[1] if new else 0


def _suggested(db, query_ids: list[str]) -> dict[str, list[str]]:
    """Suggested gold chunks of these queries (best first), computing those never suggested."""
    from curator.core.retrieval.suggest import suggest, suggested_ids

    have = suggested_ids(db, query_ids)
    missing = [q for q in query_ids if q not in have]
    if missing:
        suggest(db, missing)
        have = suggested_ids(db, query_ids)
    return have


def weighted_interleave(lists: dict[str, list[str]], weights: dict[str, float]) -> list[str]:
    """One ordered list of distinct items: each key's items in turn, a key coming up as often as its
    weight says (weighted fair queueing), so any stretch of the list keeps the proportions."""
    return [item for item, _ in _interleave_with_keys(lists, weights)]


def _interleave_with_keys(lists: dict[str, list[str]], weights: dict[str, float]) -> list[tuple[str, str]]:
    """``weighted_interleave``'s items, each with the key whose turn brought it."""
    heap = [(1.0 / weights[key], key, 0) for key in sorted(lists) if lists[key] and weights.get(key, 0) > 0]
    heapq.heapify(heap)
    out, seen = [], set()
    while heap:
        finish, key, taken = heapq.heappop(heap)
        items = lists[key]
        while taken < len(items) and items[taken] in seen:
            taken += 1
        if taken == len(items):
            continue
        out.append((items[taken], key))
        seen.add(items[taken])
        heapq.heappush(heap, (finish + 1.0 / weights[key], key, taken + 1))
    return out


def chunk_homes(db: sqlite_utils.Database, m: Measure, chunk_ids: list[str], k: int = K_NEIGHBOURS) -> dict[str, int]:
    """The cluster each chunk's own text would be placed in: the most common cluster among its ``k``
    nearest clustered queries in the run's embedding space (ties to the nearer). The clustered
    queries' vectors are those ``measure`` loaded; a chunk's comes from the cache, else from the run's
    embedder. A chunk with neither (the embedder cannot be rebuilt: a user's GGUF, an endpoint, a
    refitted tfidf space) gets no home.

    Why: a question written from a chunk lands near what the chunk is about. On the Debian FAQ
    (12 clusters, bench/coverage.py) only 54% of the chunks suggested for under-covered clusters'
    real queries were, by this rule, about those clusters, and the rule agreed with where the
    generated rows were placed for 8 of 12 aimed rows (docs/benchmarks.md, 2026-12-05 late)."""
    lines = np.array([bool(m.rows[i]["clustered"]) for i in np.flatnonzero(m.have)], bool)  # per matrix line
    if not chunk_ids or not lines.any():
        return {}
    matrix = m.matrix[lines]
    clusters = np.array([m.rows[i]["cluster"] for i in np.flatnonzero(m.have)], int)[lines]
    texts = dict(db.execute(f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(chunk_ids))})", chunk_ids).fetchall())
    ids = [c for c in chunk_ids if c in texts]
    vectors, have = _vectors(db, m.run, [{"text": texts[c]} for c in ids], embed_new=True)
    if not have.any():
        return {}
    homes = {}
    for chunk, sims in zip([c for c, h in zip(ids, have) if h], vectors @ matrix.T):
        near = clusters[np.argsort(-sims, kind="stable")[:k]]
        counts = {c: int((near == c).sum()) for c in near}
        homes[chunk] = int(max(near, key=lambda c: counts[c]))  # max keeps the first (nearest) of a tie
    return homes


def target_chunks(db: sqlite_utils.Database, k: int = K_NEIGHBOURS) -> dict:
    """Chunk ids for coverage-aimed generation, in the order to ask about them, and why.

    The real queries of under-covered clusters each bring their suggested chunks; a query comes up
    in proportion to its traffic, so a cluster gets rows in proportion to its real traffic. A
    suggested chunk whose own text belongs to another cluster (``chunk_homes``) is left out: a row
    written from it would more likely be about that other cluster. A cluster none of whose
    suggested chunks is at home keeps them all (it would get no rows otherwise).

    Measured (``bench/coverage.py --seeds 0,1,2``, 12 rows a run, docs/benchmarks.md 2026-12-05 late
    night): of the 36 aimed rows on the Debian FAQ, 17 were placed in the cluster aimed at with this
    rule and 15 with the chunks as suggested (21 of 36 on the Python FAQ with this rule): the bundled
    model's questions drift from their chunk, so this rule cannot steer a row more than loosely."""
    m = measure(db, k)
    clusters = {c["cluster"]: c for c in _cluster_rows(m) if c["under_covered"]}
    real = [r for r in m.rows if r["source"] == "log" and r["cluster"] in clusters]
    if not real:
        raise InputError("no under-covered cluster: every cluster with real queries has synthetic rows near them "
                         "('curator cluster PROJECT --coverage' shows the figures); generate without --target coverage")
    suggested = _suggested(db, [r["id"] for r in real])
    weights = {r["id"]: _traffic(r) for r in real}
    cluster_of = {r["id"]: r["cluster"] for r in real}
    homes = chunk_homes(db, m, sorted({c for chunks in suggested.values() for c in chunks}), k)

    def is_home(chunk: str, query: str) -> bool:  # a chunk without a home (no vector) counts as at home
        return homes.get(chunk, cluster_of[query]) == cluster_of[query]

    at_home = {q: [c for c in chunks if is_home(c, q)] for q, chunks in suggested.items()}
    homeless = {cluster_of[q] for q in at_home} - {cluster_of[q] for q, chunks in at_home.items() if chunks}
    kept = {q: suggested[q] if cluster_of[q] in homeless else chunks for q, chunks in at_home.items()}
    order = _interleave_with_keys(kept, weights)
    total = sum(c["traffic"] for c in clusters.values())
    return {"chunk_ids": [chunk for chunk, _ in order], "queries": len(real), "queries_with_suggestions": len(suggested),
            "at_home": sum(is_home(chunk, query) for chunk, query in order),
            # why each chunk is on the list: the real query whose turn brought it, and that query's cluster
            "aimed": {chunk: {"query": query, "cluster": cluster_of[query]} for chunk, query in order},
            "clusters": [{"cluster": c["cluster"], "label": c["label"], "real": c["real"],
                          "traffic": c["traffic"], "share": round(c["traffic"] / total, 4)}
                         for c in clusters.values()]}
