"""Exit codes: a failure exits 1 with one line on stderr, a usage error exits 2 (click's convention)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.core.store import open_project


@pytest.fixture
def gold_project(sample_project_path):
    """The sample project with one approved row, so eval gets past 'approve some rows first'."""
    db = open_project(sample_project_path)
    chunk = db.execute("SELECT id FROM chunks WHERE active = 1 ORDER BY id LIMIT 1").fetchone()[0]
    with db.conn:
        qid = add_query(db, "how are webhooks retried", "manual")
    decide(db, qid, "approve", "ann", gold=[chunk])
    db.close()
    return str(sample_project_path)


def _run(args):
    return CliRunner().invoke(cli, args)


def _one_line_error(result, code: int, *words: str) -> None:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:"), result.stderr
    for word in words:
        assert word in lines[0]


def test_ingest_of_a_missing_path_fails_without_creating_a_project(tmp_path):
    project = tmp_path / "p.curator"
    _one_line_error(_run(["ingest", str(project), str(tmp_path / "nope")]), 1, "no such file or folder", "nope")
    assert not project.exists()


def test_ingest_goes_on_past_a_missing_path_and_still_fails(tmp_path, sample_corpus):
    project = tmp_path / "p.curator"
    result = _run(["ingest", str(project), str(sample_corpus), str(tmp_path / "nope"), "--create"])
    _one_line_error(result, 1, "nope", "the other paths were ingested")
    db = open_project(project)
    assert db.execute("SELECT COUNT(*) FROM documents").fetchone()[0] > 0
    db.close()


def test_export_with_an_unknown_status_is_a_usage_error(gold_project, tmp_path):
    out = tmp_path / "gold.jsonl"
    _one_line_error(_run(["export", gold_project, str(out), "--status", "aproved"]), 2, "--status", "'aproved'")
    assert not out.exists()


def test_eval_of_a_run_file_without_a_valid_line_fails(gold_project, tmp_path):
    run = tmp_path / "run.trec"
    run.write_text("not a trec line\nnor this\n")
    _one_line_error(_run(["eval", gold_project, "--run", str(run)]), 1, "no valid TREC run line", "run.trec:1")


def test_chunks_of_an_unknown_document_fails(gold_project):
    _one_line_error(_run(["chunks", gold_project, "--doc", "no/such.md"]), 1, "no document with path 'no/such.md'")


def test_gui_on_a_missing_file_without_a_display_fails(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    missing = tmp_path / "missing.curator"
    done = subprocess.run([sys.executable, "-m", "curator", "gui", str(missing)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"Error: no such project file: {missing}; create it with 'curator ingest {missing} DOCS/'"]


@pytest.mark.parametrize("args, option", [
    (["generate", "{p}", "--count", "1", "--mix", "bogus=1"], "--mix"),
    (["export", "{p}", "{out}", "--split", "dev=0.3,test=0.3"], "--split"),
    (["eval", "{p}", "--retriever", "dense", "--embedder", "foo"], "--embedder"),
])
def test_bad_option_values_are_usage_errors(gold_project, tmp_path, args, option):
    args = [a.format(p=gold_project, out=tmp_path / "gold.jsonl") for a in args]
    _one_line_error(_run(args), 2, f"Invalid value for '{option}'")


def test_generate_on_an_empty_project_fails_and_says_ingest_first(tmp_path):
    project = tmp_path / "empty.curator"
    assert _run(["init", str(project)]).exit_code == 0
    _one_line_error(_run(["generate", str(project), "--count", "3"]), 1, "no chunks: ingest a corpus first")


def test_generate_that_makes_no_row_exits_1_with_the_reason(sample_project_path, monkeypatch):
    """A run that judged candidates but kept none printed its summary and exited 0; now it fails."""
    from curator.core.generation import engine
    from curator.core.generation.backends import FakeBackend

    always_bad = FakeBackend(lambda messages: "Sure! Here is a question about the passage.")
    monkeypatch.setattr(engine, "open_engine", lambda *args, **kwargs: always_bad)
    result = _run(["generate", str(sample_project_path), "--count", "2", "--mix", "factoid=1"])
    _one_line_error(result, 1, "run 1 made no rows", "stopped at 0 rows")
    assert "run 1 exhausted: accepted 0" in result.stdout  # the summary is still printed
