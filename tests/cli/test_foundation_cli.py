"""The foundation commands through click's CliRunner: init, ingest, chunks, search, stats, demo."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from curator.cli.main import cli

DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def _run(runner, *args, code=0):
    result = runner.invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == code, result.output + result.stderr
    return result


def _json(runner, *args):
    return json.loads(_run(runner, *args, "--json").stdout)


@pytest.fixture
def project(tmp_path, runner) -> Path:
    path = tmp_path / "p.curator"
    _run(runner, "init", path)
    return path


def test_init_creates_project_and_is_repeatable(tmp_path, runner):
    path = tmp_path / "new.curator"
    out = _run(runner, "init", path)
    assert "Project created" in out.stdout and path.exists()
    assert _json(runner, "init", path) == {"project": str(path), "created": False}  # left as it was
    assert _json(runner, "init", tmp_path / "other.curator")["created"] is True


def test_ingest_json_fields(project, runner):
    data = _json(runner, "ingest", project, DATA)
    for field in ("files_seen", "files_ingested", "files_unchanged", "skipped", "line_errors", "documents",
                  "chunks_added", "chunks_retired", "total_documents", "total_chunks", "bytes", "seconds"):
        assert field in data, field
    assert data["files_ingested"] == 7 and data["total_chunks"] >= 7
    assert any(s["path"].endswith("binary.txt") for s in data["skipped"])
    assert len(data["line_errors"]) == 1
    again = _json(runner, "ingest", project, DATA)
    assert again["files_ingested"] == 0 and again["chunks_added"] == 0


def test_ingest_text_output_and_bad_overlap(project, runner):
    out = _run(runner, "ingest", project, DATA / "guide.md").stdout
    assert "files seen 1, ingested 1" in out
    bad = runner.invoke(cli, ["ingest", str(project), str(DATA), "--chunk-size", "32", "--overlap", "32"])
    assert bad.exit_code == 2 and "--overlap" in bad.output


def test_chunks_and_filter(project, runner):
    _run(runner, "ingest", project, DATA)
    rows = _json(runner, "chunks", project, "--doc", "data/guide.md")
    assert rows and {r["doc_path"] for r in rows} == {"data/guide.md"}
    assert {"id", "title", "text"} <= set(rows[0])
    table = _run(runner, "chunks", project).stdout
    assert table.splitlines()[0].split() == ["id", "doc_path", "title", "text"]


def test_search(project, runner):
    _run(runner, "ingest", project, DATA)
    hits = _json(runner, "search", project, "restore backup snapshot", "--limit", "3")
    assert hits[0]["doc_path"] == "data/page.html" and len(hits) <= 3
    assert _json(runner, "search", project, 'C++ AND "x') is not None
    assert "score" in _run(runner, "search", project, "backup").stdout


def test_stats(project, runner):
    _run(runner, "ingest", project, DATA)
    ingested = _json(runner, "chunks", project)
    data = _json(runner, "stats", project)
    # 7 files, but corpus.jsonl holds 3 documents: 6 + 3 = 9.
    assert data["documents"] == 9 and data["chunks"] == len(ingested)
    assert data["documents_by_format"] == {"html": 1, "jsonl": 3, "md": 1, "pdf": 1, "rst": 1, "txt": 2}
    assert data["queries"] == 0
    assert _run(runner, "stats", project).stdout.strip()


def test_demo_headless(tmp_path, runner):
    path = tmp_path / "demo.curator"
    out = _run(runner, "demo", "--headless", "--count", "2", "--project", path).stdout
    assert f"Demo project: {path}" in out and path.exists()
    data = _json(runner, "demo", "--headless", "--count", "0", "--project", path)
    assert data["ingest"]["files_ingested"] == 0 and data["ingest"]["files_unchanged"] > 0
    assert data["ingest"]["total_chunks"] > 0
    # The first run imported the sample log and clustered every query; the re-run has nothing new.
    assert data["log"]["already_imported"] is True and data["clusters"] is None
    assert data["stats"]["queries"] >= 30
    # its log queries come with suggested gold, so the Review tab's keys 1-5 work on first use
    logs = _json(runner, "queries", path, "--source", "log", "--status", "pending")
    assert logs and all(q["suggested_chunk_ids"] for q in logs)
    assert data["suggested"] == 0  # the re-run had nothing left to compute


@pytest.mark.parametrize("command", ["chunks", "search", "stats", "ingest"])
def test_non_project_file_is_one_line_error(tmp_path, runner, command):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    extra = {"search": ["x"], "ingest": [str(DATA / "guide.md")]}.get(command, [])
    result = runner.invoke(cli, [command, str(notes), *extra])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert "Traceback" not in result.output
    assert notes.read_text() == "hello\n"


def test_missing_project_is_one_line_error(tmp_path, runner):
    result = runner.invoke(cli, ["stats", str(tmp_path / "nope.curator")])
    assert result.exit_code == 1 and "curator init" in result.stderr


def _all_commands(group: click.Group, prefix=()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _all_commands(command, (*prefix, name))


def test_every_command_help_has_an_example(runner):
    commands = list(_all_commands(cli))
    assert {"init", "ingest", "chunks", "search", "stats", "demo", "gui"} <= {c[0][0] for c in commands}
    missing = []
    for path, _ in [((), cli)] + commands:
        result = runner.invoke(cli, [*path, "--help"])
        if result.exit_code != 0 or "Example" not in result.output:
            missing.append(" ".join(path) or "curator")
    assert missing == []


def test_foundation_commands_have_json_option(runner):
    for name in ("init", "ingest", "chunks", "search", "stats", "demo"):
        assert "--json" in runner.invoke(cli, [name, "--help"]).output, name


def test_ingest_help_names_the_tokenizer(runner):
    assert "punctuation mark is one token" in " ".join(runner.invoke(cli, ["ingest", "--help"]).output.split())
