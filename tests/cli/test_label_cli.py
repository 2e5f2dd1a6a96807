"""curator label / undo / redo / export / generate / queries through click's runner."""

from __future__ import annotations

import json

from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.queries.rows import add_query
from curator.core.store import open_project


def _seed(path):
    db = open_project(path)
    chunk = db.execute("SELECT id FROM chunks ORDER BY id LIMIT 1").fetchone()[0]
    with db.conn:
        qid = add_query(db, "How do webhooks retry?", "manual", reference="with backoff")
    db.close()
    return qid, chunk


def test_label_undo_redo_and_export(sample_project_path, tmp_path):
    runner = CliRunner()
    qid, chunk = _seed(sample_project_path)
    p = str(sample_project_path)
    result = runner.invoke(cli, ["label", p, qid, "approve", "--gold", chunk, "--reviewer", "ana", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "approved"
    assert runner.invoke(cli, ["label", p, qid, "approve", "--gold", "c_nope", "--reviewer", "ana"]).exit_code == 1
    assert json.loads(runner.invoke(cli, ["undo", p, "--reviewer", "ana", "--json"]).stdout)["query_id"] == qid
    listed = json.loads(runner.invoke(cli, ["queries", p, "--json"]).stdout)
    assert listed[0]["status"] == "pending"
    assert listed[0]["answerable"] is True and listed[0]["stale"] is False  # flags as booleans, not 0/1
    runner.invoke(cli, ["redo", p, "--reviewer", "ana"])
    out = tmp_path / "gold.jsonl"
    result = runner.invoke(cli, ["export", p, str(out), "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["rows"] == 1
    row = json.loads(out.read_text())
    assert row["user_input"] == "How do webhooks retry?" and row["reference_context_ids"] == [chunk]


def test_generate_cli_refuses_a_bad_model_file(sample_project_path, tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_text("not a model")
    result = CliRunner().invoke(cli, ["generate", str(sample_project_path), "--model", str(bad), "--count", "1"])
    assert result.exit_code == 1 and "not a GGUF" in result.stderr


def test_label_approve_without_gold_exits_1_with_the_fix(sample_project_path):
    runner = CliRunner()
    qid, chunk = _seed(sample_project_path)
    p = str(sample_project_path)
    result = runner.invoke(cli, ["label", p, qid, "approve", "--reviewer", "ana"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: {qid} has no gold chunk: add one with --gold c_..., or label it unanswerable"]
    listed = json.loads(runner.invoke(cli, ["queries", p, "--json"]).stdout)
    assert listed[0]["status"] == "pending"
    assert runner.invoke(cli, ["label", p, qid, "approve", "--gold", chunk, "--reviewer", "ana"]).exit_code == 0
