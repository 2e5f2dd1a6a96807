"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Qt must never look for a real screen in tests or CI.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.resources import bundled_model_path, sample_corpus_dir  # noqa: E402
from curator.core.store import open_project  # noqa: E402


@pytest.fixture(scope="session")
def sample_corpus() -> Path:
    return sample_corpus_dir()


@pytest.fixture(scope="session")
def bundled_model() -> Path:
    return bundled_model_path()


@pytest.fixture(scope="session")
def _ingested_template(tmp_path_factory, sample_corpus) -> Path:
    path = tmp_path_factory.mktemp("template") / "sample.curator"
    db = open_project(path, create=True)
    ingest(db, [sample_corpus])
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path


@pytest.fixture
def sample_project_path(tmp_path, _ingested_template) -> Path:
    """A fresh copy of a project holding the ingested sample corpus."""
    path = tmp_path / "sample.curator"
    shutil.copy(_ingested_template, path)
    return path


@pytest.fixture
def sample_db(sample_project_path):
    db = open_project(sample_project_path)
    yield db
    db.close()


@pytest.fixture
def empty_db(tmp_path):
    db = open_project(tmp_path / "empty.curator", create=True)
    yield db
    db.close()
