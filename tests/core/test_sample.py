"""Stratified sampling: quotas sum, determinism, no re-sampling, top-up, negative boost."""

from __future__ import annotations

from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.core.review.sample import allocate, build_queue, coverage


def _clustered(db, per_cluster=(30, 10), negative_every=3):
    """Queries written straight into an active cluster run (no dependency on UMAP here)."""
    with db.conn:
        run = db.execute("INSERT INTO cluster_runs (created_at, embedder, k, active) VALUES ('t', 'test', 2, 1)").lastrowid
        for cluster, n in enumerate(per_cluster):
            db.execute("INSERT INTO clusters (run_id, cluster, label, size) VALUES (?,?,?,?)", [run, cluster, f"c{cluster}", n])
            for i in range(n):
                qid = add_query(db, f"cluster {cluster} question number {i}", "log",
                                negative_count=int(i % negative_every == 0))
                db.execute("INSERT INTO query_clusters (run_id, query_id, cluster, x, y) VALUES (?,?,?,0,0)",
                           [run, qid, cluster])


def test_allocation_sums_and_respects_minimum():
    assert allocate({"a": 30, "b": 10}, 8, "proportional", 1) == {"a": 6, "b": 2}
    assert allocate({"a": 30, "b": 10}, 8, "equal", 1) == {"a": 4, "b": 4}
    assert sum(allocate({"a": 3, "b": 1, "c": 50}, 100, "proportional", 1).values()) == 54


def test_queue_is_deterministic_never_resamples_and_tops_up(empty_db, tmp_path):
    _clustered(empty_db)
    first = build_queue(empty_db, 8, seed=5)
    assert first["queued"] == 8 and first["by_stratum"] == {"0": 6, "1": 2}
    ids = [r[0] for r in empty_db.execute("SELECT query_id FROM review_queue ORDER BY position")]
    second = build_queue(empty_db, 8, seed=5)
    all_ids = [r[0] for r in empty_db.execute("SELECT query_id FROM review_queue ORDER BY position")]
    assert second["queued"] == 8 and len(set(all_ids)) == 16 and all_ids[:8] == ids
    (tmp_path / "a.md").write_text("# Answers\n\nThe answer to the first question is here.\n")
    from curator.core.corpus.ingest import ingest

    ingest(empty_db, [tmp_path / "a.md"])  # an approval needs a gold chunk
    chunk = empty_db.execute("SELECT id FROM chunks").fetchone()[0]
    decide(empty_db, all_ids[0], "approve", "ana", gold=[chunk])
    row = {r["label"]: r for r in coverage(empty_db)}["c0"]
    assert row["population"] == 30 and row["queued"] == 12 and row["reviewed"] == 1 and row["approved"] == 1


def test_same_seed_same_sample(tmp_path):
    from curator.core.store import open_project

    picks = []
    for name in ("a", "b"):
        db = open_project(tmp_path / f"{name}.curator", create=True)
        _clustered(db)
        build_queue(db, 10, seed=9)
        picks.append([r[0] for r in db.execute("SELECT query_id FROM review_queue ORDER BY position")])
        db.close()
    assert picks[0] == picks[1]


def test_negative_boost_over_samples_negative_feedback(tmp_path):
    from curator.core.store import open_project

    counts = {}
    for boost in (1.0, 8.0):
        db = open_project(tmp_path / f"boost{boost}.curator", create=True)
        _clustered(db, per_cluster=(300,), negative_every=10)  # 10% negative
        build_queue(db, 60, negative_boost=boost, unanswerable_share=0, seed=1)
        counts[boost] = db.execute("""SELECT SUM(q.negative_count > 0) FROM review_queue r
                                      JOIN queries q ON q.id = r.query_id""").fetchone()[0]
        db.close()
    assert counts[8.0] >= 2 * counts[1.0] and counts[8.0] >= 12


def test_unclustered_project_uses_one_stratum(sample_db):
    with sample_db.conn:
        for i in range(5):
            add_query(sample_db, f"plain question {i}", "manual")
    result = build_queue(sample_db, 3)
    assert result == {"queued": 3, "by_stratum": {"all": 3}, "clustered": False, "queue_size": 3}
