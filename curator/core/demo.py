"""The bundled-defaults main job: sample corpus -> chunks -> generated queries + sample log ->
clusters -> review queue -> suggested gold for the log queries, so every review feature shows on
first use."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from curator.core.clustering.cluster import cluster_queries
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.corpus.ingest import ingest
from curator.core.queries.logs import import_log
from curator.core.retrieval.suggest import lacking_suggestions, suggest
from curator.core.resources import resources_dir, sample_corpus_dir
from curator.core.review.sample import build_queue
from curator.core.store.stats import project_stats
from curator.core.store import open_project
from curator.core.progress import CancelToken, ProgressCallback

DEMO_QUERIES = 20


def build_demo_project(path: str | Path, on_progress: Optional[ProgressCallback] = None,
                       count: int = DEMO_QUERIES, cancel: Optional[CancelToken] = None) -> dict:
    """Ingest the sample corpus and generate queries; re-running tops up instead of repeating."""
    db = open_project(path, create=True)
    try:
        report = ingest(db, [sample_corpus_dir()], on_progress=on_progress)
        have = db.execute("SELECT COUNT(*) FROM queries WHERE source = 'synthetic'").fetchone()[0]
        generation = None
        if have < count:
            generation = generate(db, GenerationConfig(count=count - have), on_progress=on_progress, cancel=cancel)
        # Real queries beside synthetic ones, so the map shows where the two differ; a log
        # already imported is recognised by its content hash and changes nothing.
        log = import_log(db, resources_dir() / "sample_logs" / "queries.jsonl")
        clusters = _cluster_if_changed(db, on_progress, cancel)
        queue = build_queue(db, count) if count else None  # tops up; never re-queues a row
        suggested = _suggest_missing(db, on_progress, cancel)
        return {"project": str(path), "ingest": report.as_dict(), "generation": generation, "log": log,
                "clusters": clusters, "queue": queue, "suggested": suggested, "stats": project_stats(db)}
    finally:
        db.close()


def _cluster_if_changed(db, on_progress, cancel) -> Optional[dict]:
    """Cluster when the active run does not cover every query (a re-run with nothing new keeps it)."""
    queries = db.execute("SELECT COUNT(*) FROM queries").fetchone()[0]
    covered = db.execute("""SELECT COUNT(*) FROM query_clusters qc JOIN cluster_runs r ON r.id = qc.run_id
                            WHERE r.active = 1""").fetchone()[0]
    if queries < 3 or covered == queries:
        return None
    return cluster_queries(db, on_progress=on_progress, cancel=cancel)


def _suggest_missing(db, on_progress, cancel) -> int:
    """Suggested gold for every pending row without gold (the log queries), queued or not, so the
    Review tab's keys 1-5 work on the first log query and on any one opened from the Queries tab.
    Rows that already have suggestions keep them, so a re-run computes nothing."""
    todo = lacking_suggestions(db, queued_only=False)
    return suggest(db, todo, on_progress=on_progress, cancel=cancel)["queries"] if todo else 0
