"""The bundled-defaults main job: a project built from the sample corpus."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from curator.core.ingest import ingest
from curator.core.resources import sample_corpus_dir
from curator.core.stats import project_stats
from curator.core.store import open_project
from curator.core.tasks import ProgressCallback


def build_demo_project(path: str | Path, on_progress: Optional[ProgressCallback] = None) -> dict:
    """Ingest the sample corpus into ``path``; re-running reuses what is already there."""
    db = open_project(path, create=True)
    try:
        report = ingest(db, [sample_corpus_dir()], on_progress=on_progress)
        return {"project": str(path), "ingest": report.as_dict(), "stats": project_stats(db)}
    finally:
        db.close()
