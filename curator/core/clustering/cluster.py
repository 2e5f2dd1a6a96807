"""Cluster a project's queries: embed → UMAP (5-D) → KMeans, plus a 2-D UMAP map and c-TF-IDF labels.

The 2-D map is, by default (``layout="free"``), the embeddings' own unsupervised 2-D UMAP: where
queries sit near each other there, they are near in embedding space, so a region of real queries
with no synthetic row near it shows as such (issue 28). ``layout="clusters"`` lays the map out from
the cluster fit instead (KMeans runs on the 5-D space inside the UMAP job and the 2-D UMAP is
supervised by its labels, ``y=labels``): each cluster is drawn as one tight region, which reads
well as clusters but hides the structure and gaps inside them. ``bench/cluster_map.py`` prints the
2-D silhouette by cluster label of both.

UMAP runs in a worker process (spawn context) because it holds the GIL for long stretches.
``cluster_project`` runs the whole step (embedding, UMAP, KMeans, storing) in that worker: the GUI
uses it, so its own process only waits and its GUI thread is never starved of the GIL (the TF-IDF
embedding alone held it for over 2 s on 10k queries). ``warm_up()`` pre-compiles numba's JIT there.

Reproducibility: by default (``fast=False``) UMAP gets ``random_state=seed``, which makes runs
repeatable but forces UMAP to one thread (1.6-2x slower). ``fast=True`` drops random_state for
UMAP (KMeans stays seeded), so cluster membership may vary slightly between runs. Seeded stays
the default: with the 10k target met seeded (~22 s warm) and two shared cores, multi-threading
buys little here, and a gold set should be reproducible.

Speed (bench/cluster.py, 10k queries, warm: 48 s → 22 s): the 2-D map reuses the cluster fit's
nearest neighbours (``precomputed_knn``) instead of a second NN-descent, and large sets get 200
(cluster space) / 120 (map) epochs instead of UMAP's 500 for up to 10k points.

Small sets: fewer than 3 queries → InputError; fewer than ``UMAP_MIN`` queries → UMAP is skipped and
KMeans runs on PCA-reduced vectors (2-D map from the same PCA).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import queue
import time
import uuid
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from curator.core import processes, store
from curator.core.embedding.embed import Embedder, embed_texts, get_embedder
from curator.core.errors import InputError
from curator.core.clustering.labels import ctfidf_labels
from curator.core.progress import CancelToken, report

UMAP_MIN = 30
LAYOUTS = ("free", "clusters")  # the 2-D map: the unsupervised UMAP (default), or laid out from the cluster fit
_POOL: Optional[cf.ProcessPoolExecutor] = None
_PROGRESS = None  # a spawn-context Queue of the worker's reports: (job, done, total, message)
_IN_WORKER = False  # True inside the worker process: UMAP then runs inline
_LAST_UMAP_SECONDS: list[float] = []  # seconds of the last run's 5-D and 2-D fits (for timings)


def _use_numba_disk_cache() -> None:
    """Point numba's on-disk cache at the user's cache folder (before numba is first imported).

    UMAP and pynndescent mark their kernels ``cache=True``; numba then stores the compiled code next
    to the package, which fails silently when site-packages is read-only (a system or bundled
    install), so every fresh CLI process would compile again. The spawned worker inherits this.
    The folder is checked first (cachefiles.numba_cache_dir): an empty or cut-short cache file made
    numba raise EOFError in the worker, which the CLI printed as a bare "Aborted!".
    """
    from curator.core.cachefiles import clear_broken_numba_files, numba_cache_dir

    if "NUMBA_CACHE_DIR" in os.environ:
        clear_broken_numba_files(Path(os.environ["NUMBA_CACHE_DIR"]))
    else:
        os.environ["NUMBA_CACHE_DIR"] = str(numba_cache_dir())


def _pool() -> cf.ProcessPoolExecutor:
    """One long-lived spawn worker, so numba's JIT is paid once per session.

    The worker dies with this process (curator.core.processes): it is started here, from the
    thread that lasts as long as the process, rather than by the first submit in whatever thread
    (a GUI task's) makes it."""
    global _POOL, _PROGRESS
    if _POOL is None:
        _use_numba_disk_cache()
        context = multiprocessing.get_context("spawn")
        _PROGRESS = context.Queue()
        _POOL = cf.ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_init_worker,
                                       initargs=(_PROGRESS, os.getpid()))
        processes.in_lasting_thread(_POOL._adjust_process_count)  # no public way to start the worker now
    return _POOL


def _init_worker(progress, parent_pid: int) -> None:
    global _PROGRESS, _IN_WORKER
    processes.die_with_parent(parent_pid)  # a window ended by SIGTERM must not leave it running
    _PROGRESS, _IN_WORKER = progress, True


def shutdown_worker() -> None:
    """Stop the worker now, even in the middle of a fit (cancel, tests, app exit).

    ``shutdown()`` alone waits for a running job to end, so the process is terminated first; a
    job it kills has written nothing, since a cluster run is stored in one transaction at its end.
    """
    global _POOL, _PROGRESS
    if _POOL is not None:
        for process in list((_POOL._processes or {}).values()):  # no public way to stop a running job
            process.terminate()
        _POOL.shutdown(wait=True, cancel_futures=True)
        _POOL = None
    if _PROGRESS is not None:
        _PROGRESS.close()  # its semaphore would otherwise be reported as leaked at exit
        _PROGRESS.join_thread()
        _PROGRESS = None


def _wait(future: cf.Future, cancel: Optional[CancelToken], on_progress=None, job: Optional[str] = None):
    """The future's result, relaying job ``job``'s progress and honouring a cancel within 0.2 s."""
    while True:
        _relay_progress(on_progress, job)
        if cancel is not None and cancel.cancelled:  # checked before waiting: a cancel asked for while
            future.cancel()                         # progress was relayed stops the job at once
            shutdown_worker()
            cancel.check()
        try:
            result = future.result(timeout=0.2)
        except cf.TimeoutError:
            continue
        if job is not None:  # reports travel on another pipe than the result: wait for the last one
            _relay_progress(on_progress, job, until_end=True)
        return result


def _relay_progress(on_progress, job: Optional[str], until_end: bool = False) -> None:
    deadline = time.monotonic() + 2.0
    while _PROGRESS is not None:
        try:
            item = _PROGRESS.get(timeout=0.05) if until_end else _PROGRESS.get_nowait()
        except (queue.Empty, OSError, ValueError):
            if until_end and time.monotonic() < deadline:
                continue
            return
        sender, done, total, message = item
        if sender != job:
            continue  # left over from a job that was cancelled
        if done is None:
            return  # the job's end marker
        report(on_progress, done, total, message)


def _epochs(n: int, dim: int) -> Optional[int]:
    """Optimisation epochs: UMAP's default (500 up to 10k points) is more than KMeans or a map needs.

    The cluster space converges in ~200 epochs on large sets; the 2-D map is for the eye only and starts
    from the same neighbour graph, so 120 is plenty. Small sets keep UMAP's default (cheap anyway).
    """
    if n < 2000:
        return None
    return 200 if dim > 2 else 120


def _umap_job(vectors: np.ndarray, dims: tuple[int, ...], seed: Optional[int], n_neighbors: int,
              force_approx: bool = False, k=None, kmeans_seed: int = 0) -> tuple[list[np.ndarray], list[float], Optional[tuple]]:
    """Runs in the worker: one UMAP fit per output dimension, sharing one nearest-neighbour search.

    The k-NN search (NN-descent) is a large part of a fit; the second fit reuses the first one's
    neighbours through ``precomputed_knn``. With ``k`` (a number or "auto") KMeans runs on the
    first (cluster-space) fit and the 2-D map is laid out from that fit: a supervised UMAP with
    the cluster labels as its target, so each cluster is drawn as one region (an unsupervised map
    scattered the colours). Returns the embeddings, the seconds per fit and (labels, k, silhouette).
    """
    with one_thread():  # BLAS in the spectral start; numba's own threads are set by n_jobs
        return _umap_fits(vectors, dims, seed, n_neighbors, force_approx, k, kmeans_seed)


def _umap_fits(vectors, dims, seed, n_neighbors, force_approx, k, kmeans_seed):
    import warnings

    import umap

    out, secs, knn, fitted = [], [], (None, None, None), None
    for dim in dims:
        t = time.perf_counter()
        reducer = umap.UMAP(n_components=dim, n_neighbors=n_neighbors, min_dist=0.0 if dim > 2 else 0.1,
                            metric="cosine", random_state=seed, force_approximation_algorithm=force_approx,
                            n_jobs=1 if seed is not None else -1, n_epochs=_epochs(len(vectors), dim),
                            low_memory=True, precomputed_knn=knn)
        target = fitted[0] if fitted is not None and dim == 2 else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(reducer.fit_transform(vectors, y=target).astype(np.float32))
        if knn[0] is None and getattr(reducer, "_knn_indices", None) is not None and (force_approx or len(vectors) >= 4096):
            # Only the approximate (NN-descent) path leaves reusable neighbours with a search index.
            knn = (reducer._knn_indices, reducer._knn_dists, getattr(reducer, "_knn_search_index", None))
        secs.append(time.perf_counter() - t)
        if k is not None and fitted is None and dim > 2:
            fitted = choose_k(out[-1], k, kmeans_seed)
    return out, secs, fitted


def warm_up() -> float:
    """Compile UMAP's numba code in the worker with a small fit; returns seconds taken."""
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    data = rng.normal(size=(300, 16)).astype(np.float32)
    # Two paths to compile: sets under 4096 points use exact distances, larger ones NN-descent
    # (forced here on a small set) plus the shared precomputed-knn fit for the 2-D map.
    _pool().submit(_umap_job, data, (5, 2), 0, 15, True, 3).result()  # a supervised map: y= compiles too
    _pool().submit(_umap_job, data, (5, 2), 0, 15, False, 3).result()
    return time.perf_counter() - start


def run_umap(vectors: np.ndarray, seed: Optional[int], cancel: Optional[CancelToken] = None, k=None,
             kmeans_seed: int = 0) -> tuple[np.ndarray, np.ndarray, Optional[tuple]]:
    """5-D clustering space and 2-D map coordinates, computed in the worker process; with ``k``,
    also the KMeans fit (labels, k, silhouette) that the map is then laid out from."""
    n_neighbors = max(2, min(15, len(vectors) - 1))
    job = (_umap_job, vectors, (5, 2), seed, n_neighbors, False, k, kmeans_seed)
    if _IN_WORKER:
        (low, flat), secs, fitted = job[0](*job[1:])
    else:
        (low, flat), secs, fitted = _wait(_pool().submit(*job), cancel)
    _LAST_UMAP_SECONDS[:] = secs
    return low, flat, fitted


def pca(vectors: np.ndarray, dim: int) -> np.ndarray:
    """Plain PCA via SVD (small-set fallback)."""
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    proj = u[:, :dim] * s[:dim]
    if proj.shape[1] < dim:
        proj = np.hstack([proj, np.zeros((len(vectors), dim - proj.shape[1]), np.float32)])
    return proj.astype(np.float32)


def one_thread():
    """BLAS and OpenMP pools held to one thread for the block.

    Why: on a machine whose cores are busy (other processes, or llama.cpp's threads), OpenMP's
    threads wait for each other at every step: 40 KMeans fits (k = 2..11, 4 inits) on 10k points took
    38-44 s with sklearn's two OpenMP threads at load 13 and 1.5 s with one; in `curator cluster` on
    10k queries the k search went from 46.0 s to 7.8 s at load 8 (bench/cluster_cli.py,
    docs/clustering.md). On an idle machine one thread costs little here: the fits are small.
    threadpoolctl limits only the libraries loaded when it is called, so sklearn's (and with it
    its OpenMP runtime) is imported first.
    """
    import sklearn.cluster  # noqa: F401  (loads libgomp, so the limit reaches it)
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def choose_k(space: np.ndarray, k, seed: int) -> tuple[np.ndarray, int, Optional[float]]:
    """KMeans labels; ``k="auto"`` picks k in 2..min(30, n/5) by silhouette (one thread: one_thread)."""
    with one_thread():
        return _choose_k(space, k, seed)


def _choose_k(space: np.ndarray, k, seed: int) -> tuple[np.ndarray, int, Optional[float]]:
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    n = len(space)
    if k != "auto":
        k = max(1, min(int(k), n))
        labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(space)
        sil = float(silhouette_score(space, labels)) if 1 < k < n else None
        return labels, k, sil
    top = max(2, min(30, n // 5))
    best = None
    for cand in range(2, top + 1):
        labels = KMeans(n_clusters=cand, n_init=4, random_state=seed).fit_predict(space)
        if len(set(labels)) < 2:
            continue
        sil = float(silhouette_score(space, labels, sample_size=min(n, 3000), random_state=seed))
        if best is None or sil > best[2] + 1e-9:
            best = (labels, cand, sil)
    if best is None:
        return np.zeros(n, dtype=int), 1, None
    return best


def _store_run(db, embedder_id: str, params: dict, ids: list[str], labels: np.ndarray, xy: np.ndarray,
               names: dict[int, tuple[str, list[str]]], k: int, sil: Optional[float]) -> int:
    """Write the run as one transaction and make it the active one."""
    with db.conn:
        db.execute("UPDATE cluster_runs SET active=0")
        cur = db.execute("INSERT INTO cluster_runs (created_at, embedder, params, k, silhouette, active) VALUES (?,?,?,?,?,1)",
                         [store.now(), embedder_id, store.dumps(params), k, sil])
        run_id = cur.lastrowid
        sizes = np.bincount(labels, minlength=k)
        db.conn.executemany("INSERT INTO clusters (run_id, cluster, label, terms, size) VALUES (?,?,?,?,?)",
                            [(run_id, c, names[c][0], store.dumps(names[c][1]), int(sizes[c])) for c in range(k)])
        db.conn.executemany("INSERT INTO query_clusters (run_id, query_id, cluster, x, y) VALUES (?,?,?,?,?)",
                            [(run_id, q, int(c), float(p[0]), float(p[1])) for q, c, p in zip(ids, labels, xy)])
    return run_id


def _reduce_and_fit(vectors: np.ndarray, k, seed: int, fast: bool, layout: str, cancel, timings: dict):
    """(method, 2-D map, labels, k used, silhouette): UMAP (or PCA for small sets) and KMeans.

    ``layout="clusters"`` lays the map out from the cluster fit (supervised by its labels);
    ``"free"`` is the unsupervised map of the embeddings, kept for comparison (bench/cluster_map.py).
    """
    t = time.perf_counter()
    if len(vectors) < UMAP_MIN:
        space, xy = pca(vectors, min(5, vectors.shape[1])), pca(vectors, 2)
        timings["reduce"] = time.perf_counter() - t
        t = time.perf_counter()
        labels, k_used, sil = choose_k(space, k, seed)
        timings["kmeans"] = time.perf_counter() - t
        return "pca", xy, labels, k_used, sil
    space, xy, fitted = run_umap(vectors, None if fast else seed, cancel, k if layout == "clusters" else None, seed)
    if len(_LAST_UMAP_SECONDS) == 2:
        timings["umap_nd"], timings["umap_2d"] = _LAST_UMAP_SECONDS
    timings["reduce"] = time.perf_counter() - t
    t = time.perf_counter()
    labels, k_used, sil = fitted if fitted is not None else choose_k(space, k, seed)
    timings["kmeans"] = time.perf_counter() - t  # with layout="clusters" KMeans ran in the worker: inside "reduce"
    return "umap", xy, labels, k_used, sil


def cluster_queries(db, embedder="default", k="auto", seed: int = 0, fast: bool = False,
                    on_progress: Optional[Callable[[int, int, str], None]] = None,
                    cancel: Optional[CancelToken] = None, layout: str = "free") -> dict:
    """Cluster all queries of the project; returns run_id, k, sizes, labels, silhouette, seconds, timings."""
    start = time.perf_counter()
    timings: dict[str, float] = {}
    qrows = store.rows(db, "SELECT id, text FROM queries ORDER BY id")
    if len(qrows) < 3:
        raise InputError(f"need at least 3 queries to cluster, the project has {len(qrows)}")
    if k != "auto" and int(k) < 1:
        raise InputError("k must be 'auto' or a positive number")
    if layout not in LAYOUTS:
        raise InputError(f"unknown map layout {layout!r}; use {' or '.join(LAYOUTS)}")
    ids, texts = [r["id"] for r in qrows], [r["text"] for r in qrows]
    report(on_progress, 0, 4, "embedding")
    t = time.perf_counter()
    emb: Embedder = get_embedder(embedder, db) if isinstance(embedder, str) else embedder
    vectors = embed_texts(db, emb, texts)
    timings["embed"] = time.perf_counter() - t
    if cancel:
        cancel.check()
    report(on_progress, 1, 4, "reducing and clustering")
    method, xy, labels, k_used, sil = _reduce_and_fit(vectors, k, seed, fast, layout, cancel, timings)
    if cancel:
        cancel.check()
    report(on_progress, 3, 4, "labelling")
    t = time.perf_counter()
    names = ctfidf_labels(texts, labels, k_used)
    timings["labels"] = time.perf_counter() - t
    params = {"k": k, "seed": seed, "fast": fast, "method": method, "n": len(ids), "layout": layout}
    run_id = _store_run(db, emb.id, params, ids, np.asarray(labels), xy, names, k_used, sil)
    report(on_progress, 4, 4, "done")
    sizes = np.bincount(labels, minlength=k_used).tolist()
    return {"run_id": run_id, "k": k_used, "sizes": sizes, "labels": [names[c][0] for c in range(k_used)],
            "silhouette": sil, "method": method, "embedder": emb.id, "layout": layout,
            "map_silhouette": map_silhouette(xy, labels),
            "seconds": round(time.perf_counter() - start, 3), "timings": {a: round(b, 3) for a, b in timings.items()}}


def map_silhouette(xy: np.ndarray, labels) -> Optional[float]:
    """Silhouette of the 2-D map by cluster label: how much the map reads as clusters (-1..1)."""
    from sklearn.metrics import silhouette_score

    labels = np.asarray(labels)
    if not 1 < len(set(labels.tolist())) < len(labels):
        return None
    return round(float(silhouette_score(xy, labels, sample_size=min(len(labels), 3000), random_state=0)), 4)


def _cluster_job(project_path: str, options: dict, job: str) -> dict:
    """Runs in the worker: the whole clustering step on its own connection to the project."""
    db = store.open_project(project_path)
    try:
        return cluster_queries(db, on_progress=lambda done, total, message: _PROGRESS.put((job, done, total, message)),
                               **options)
    finally:
        db.close()
        _PROGRESS.put((job, None, None, None))


def cluster_project(project_path, embedder: str = "default", k="auto", seed: int = 0, fast: bool = False,
                    on_progress: Optional[Callable[[int, int, str], None]] = None,
                    cancel: Optional[CancelToken] = None, layout: str = "free") -> dict:
    """``cluster_queries`` on a project file, run in the worker process (see the module notes)."""
    options = {"embedder": embedder, "k": k, "seed": seed, "fast": fast, "layout": layout}
    job = uuid.uuid4().hex
    return _wait(_pool().submit(_cluster_job, str(project_path), options, job), cancel, on_progress, job)
