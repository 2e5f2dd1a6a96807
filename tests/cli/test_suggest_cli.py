"""curator sample / suggest / queries --json carry suggested gold chunks."""

from __future__ import annotations

import json

from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.queries.rows import add_query
from curator.core.store import open_project


def test_sample_then_suggest_and_queries_json(sample_project_path):
    db = open_project(sample_project_path)
    text = db.execute("SELECT text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1 OFFSET 3").fetchone()[0]
    with db.conn:
        qid = add_query(db, " ".join(text.split()[:10]), "log")
    db.close()
    runner, p = CliRunner(), str(sample_project_path)
    result = runner.invoke(cli, ["sample", p, "--size", "5"])
    assert result.exit_code == 0, result.output
    assert "suggested gold for 1 without gold" in result.stdout
    listed = json.loads(runner.invoke(cli, ["queries", p, "--json"]).stdout)
    assert len(listed[0]["suggested_chunk_ids"]) == 5

    result = runner.invoke(cli, ["suggest", p, qid, "--k", "3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["queries"] == 1 and len(data["suggested"][qid]) == 3
    listed = json.loads(runner.invoke(cli, ["queries", p, "--json"]).stdout)
    assert listed[0]["suggested_chunk_ids"] == data["suggested"][qid]  # ranked, replaced by the re-run

    result = runner.invoke(cli, ["suggest", p, "q_missing"])
    assert result.exit_code == 1 and "q_missing" in result.stderr
    assert runner.invoke(cli, ["suggest", p, "--k", "0"]).exit_code == 2
