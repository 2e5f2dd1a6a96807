"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# Qt must never look for a real screen in tests or CI.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import settings_guard  # noqa: E402
# Test tiers: slow tests marked at collection, and the watch that keeps `make test-fast` fast (tests/tiers.py).
from tiers import (  # noqa: E402,F401
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_report_collectionfinish,
    pytest_runtest_call,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    pytest_terminal_summary,
)

# Before anything makes a QSettings: the suite writes settings only under a temporary folder.
REAL_SETTINGS_DIRS, TEST_SETTINGS_DIR = settings_guard.isolate()
os.environ["XDG_STATE_HOME"] = str(TEST_SETTINGS_DIR / "state")  # the error log of a test's bug stays here too

from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.resources import bundled_model_path, sample_corpus_dir  # noqa: E402
from curator.core.store import open_project  # noqa: E402


@pytest.fixture(autouse=True)
def _real_settings_untouched():
    """Fails the test after which the user's real settings folder changed."""
    before = settings_guard.snapshot(REAL_SETTINGS_DIRS)
    yield
    touched = settings_guard.changes(before, settings_guard.snapshot(REAL_SETTINGS_DIRS))
    if touched:
        pytest.fail(f"this test wrote the user's real settings: {', '.join(touched)}")


@pytest.fixture(scope="session", autouse=True)
def _remove_test_settings():
    yield
    shutil.rmtree(TEST_SETTINGS_DIR, ignore_errors=True)


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


@pytest.fixture
def docs_project(tmp_path):
    """Make a project ingested from ``{file name: text}`` in ``tmp_path/NAME``; closed after the test."""
    opened = []

    def make(docs: dict, name: str = "docs"):
        folder = tmp_path / name
        folder.mkdir()
        for file_name, text in docs.items():
            (folder / file_name).write_text(text)
        db = open_project(tmp_path / f"{name}.curator", create=True)
        ingest(db, [folder])
        opened.append(db)
        return db

    yield make
    for db in opened:
        db.close()


@pytest.fixture(scope="module")
def grammar_accepts(bundled_model):
    """Whether the batch decoder's grammar check lets the bundled model's tokens spell a reply."""
    from curator.core.generation.backends import LlamaCppBackend
    from curator.core.generation.backends.llama_batch import BatchDecoder

    backend = LlamaCppBackend(bundled_model, n_threads=1)
    decoder = BatchDecoder(backend, 1)

    def accepts(grammar_text: str, reply: str) -> bool:
        grammar = decoder._grammar_sampler(grammar_text)
        for token in backend.llm.tokenize(reply.encode(), add_bos=False, special=False):
            if not decoder._grammar_allows(grammar, token):
                return False
            grammar.accept(token)
        return True

    return accepts
