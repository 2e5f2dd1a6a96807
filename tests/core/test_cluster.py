"""Clustering: real UMAP in a worker process (clustered once per module), fallback, stored rows."""

import json
from pathlib import Path

import pytest

from curator.core import store
from curator.core.clustering.cluster import cluster_project, cluster_queries, shutdown_worker
from curator.core.errors import InputError
from curator.core.queries.rows import add_query
from curator.core.store import open_project

# Three clearly different support topics, shared with the other clustering tests.
TOPICS = json.loads((Path(__file__).parents[1] / "data" / "topic_queries.json").read_text())


def _grouped_project(path):
    db = open_project(path, create=True)
    truth = []
    with db.conn:
        for area, base in TOPICS.items():
            for i in range(22):
                add_query(db, f"{base[i % len(base)]} {['please', 'help', 'today', 'now', 'again', 'urgent'][i % 6]} {i}", "manual")
                truth.append(area)
    return db


@pytest.fixture(scope="module")
def clustered(tmp_path_factory):
    path = tmp_path_factory.mktemp("cl") / "p.curator"
    db = _grouped_project(path)
    first = cluster_queries(db, k="auto", seed=0)
    progress = []
    # the second run goes whole through the worker process, as the GUI runs it
    second = cluster_project(path, k="auto", seed=0, on_progress=lambda *a: progress.append(a))
    assert [p[2] for p in progress][-1] == "done" and "embedding" in [p[2] for p in progress]
    yield db, first, second
    db.close()
    shutdown_worker()


def test_auto_k_recovers_groups(clustered):
    from sklearn.metrics import adjusted_rand_score

    db, first, _ = clustered
    rows = store.rows(db, "SELECT q.text, qc.cluster FROM query_clusters qc JOIN queries q ON q.id=qc.query_id "
                          "WHERE qc.run_id=?", [first["run_id"]])
    truth = [next(a for a, b in TOPICS.items() if any(r["text"].startswith(t) for t in b)) for r in rows]
    assert first["method"] == "umap"
    # auto k may split a topic into real sub-topics (e.g. "two factor" inside login), so ARI is not ~1.
    assert 3 <= first["k"] <= 6
    assert adjusted_rand_score(truth, [r["cluster"] for r in rows]) > 0.5


def test_fixed_seed_is_stable(clustered):
    _, first, second = clustered
    assert first["labels"] == second["labels"] and first["sizes"] == second["sizes"]


def test_stored_rows_and_active_flag(clustered):
    db, first, second = clustered
    runs = store.rows(db, "SELECT id, active, k FROM cluster_runs ORDER BY id")
    assert [r["active"] for r in runs] == [0, 1]
    assert store.rows(db, "SELECT SUM(size) AS n FROM clusters WHERE run_id=?", [second["run_id"]])[0]["n"] == 66
    xy = store.rows(db, "SELECT x, y FROM query_clusters WHERE run_id=?", [second["run_id"]])
    assert len(xy) == 66 and all(r["x"] is not None for r in xy)
    assert any("·" in lab for lab in second["labels"])


def test_small_set_fallback(empty_db):
    with empty_db.conn:
        for t in ["sync conflict", "sync offline", "invoice refund", "invoice payment", "password reset", "password login"]:
            add_query(empty_db, t, "manual")
    out = cluster_queries(empty_db, k=3, seed=0)
    assert out["method"] == "pca" and out["k"] == 3 and sum(out["sizes"]) == 6


def test_too_few_queries(empty_db):
    add_query(empty_db, "only one", "manual")
    with pytest.raises(InputError):
        cluster_queries(empty_db)


def test_cancel_stops_the_worker_mid_run_and_stores_nothing(tmp_path):
    from curator.core.progress import CancelToken, Cancelled

    path = tmp_path / "c.curator"
    db = _grouped_project(path)
    with db.conn:  # enough queries that the run outlasts one progress poll (0.2 s) on a fast machine
        for i in range(900):
            add_query(db, f"{TOPICS[list(TOPICS)[i % 3]][i % 5]} variant {i}", "manual")
    db.close()
    token = CancelToken()
    seen = []

    def cancel_on_first_report(done, total, message):
        seen.append(message)
        token.cancel()

    with pytest.raises(Cancelled):
        cluster_project(path, k=3, seed=0, on_progress=cancel_on_first_report, cancel=token)
    assert seen and seen[-1] != "done"
    db = open_project(path)
    assert db.execute("SELECT COUNT(*) FROM cluster_runs").fetchone()[0] == 0
    again = cluster_project(path, k=3, seed=0)  # a fresh worker takes over
    assert again["k"] == 3 and sum(again["sizes"]) == 966
    db.close()


def test_the_map_is_laid_out_from_the_cluster_fit(tmp_path):
    """Issue 17: the unsupervised 2-D map scattered a cluster's colour; laid out from the cluster
    fit, the same clusters (same labels) form regions: a higher 2-D silhouette by label."""
    import re

    from pydoc_data.topics import topics

    db = open_project(tmp_path / "p.curator", create=True)
    with db.conn:
        for area in ("exceptions", "import", "lambda", "numbers", "string-methods", "with"):
            parts = [s for s in re.split(r"(?<=[.:])\s+", " ".join(topics[area].split())) if 20 < len(s) < 200]
            for i, sentence in enumerate(parts[:12]):
                add_query(db, f"{sentence} {i}", "manual")
    runs = {layout: cluster_queries(db, embedder="tfidf", k=6, seed=0, layout=layout) for layout in ("free", "clusters")}
    labels = {layout: [r[0] for r in db.execute("SELECT cluster FROM query_clusters WHERE run_id = ? ORDER BY query_id",
                                                [run["run_id"]])] for layout, run in runs.items()}
    assert runs["clusters"]["method"] == "umap" and labels["free"] == labels["clusters"]
    assert runs["clusters"]["map_silhouette"] > runs["free"]["map_silhouette"] + 0.1, runs
    db.close()
