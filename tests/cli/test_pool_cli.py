"""curator pool / grade through click's runner: pool a row, grade two pooled chunks, the graded one
is gold in the qrels at its level, the not-relevant one is not listed again, undo takes a grade back."""

from __future__ import annotations

import json

from click.testing import CliRunner

from curator.cli.main import cli
from curator.core.queries.rows import add_query
from curator.core.store import open_project


def _seed(path) -> tuple[str, str]:
    db = open_project(path)
    chunk_id, text = db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1 OFFSET 3").fetchone()
    with db.conn:
        qid = add_query(db, " ".join(text.split()[:10]), "synthetic", gold_chunk_ids=[chunk_id])
    db.close()
    return qid, chunk_id


def test_pool_grade_undo_and_qrels(sample_project_path, tmp_path):
    runner = CliRunner()
    qid, gold = _seed(sample_project_path)
    p = str(sample_project_path)
    result = runner.invoke(cli, ["pool", p, qid, "--retrievers", "bm25,tfidf", "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert listed["retrievers"] == ["bm25", "tfidf"] and listed["k"] == 5
    entries = listed["pooled"][qid]
    assert entries and gold not in [e["chunk_id"] for e in entries]
    assert entries[0]["found_by_text"].startswith(("bm25 #", "tfidf #"))
    first, second = entries[0]["chunk_id"], entries[1]["chunk_id"]
    graded = runner.invoke(cli, ["grade", p, qid, first, "2", "--reviewer", "ana", "--json"])
    assert graded.exit_code == 0, graded.output
    assert json.loads(graded.stdout)["gold_chunk_ids"] == [gold, first]
    assert runner.invoke(cli, ["grade", p, qid, second, "0", "--reviewer", "ana"]).exit_code == 0
    assert runner.invoke(cli, ["grade", p, qid, second, "7"]).exit_code == 2  # not a grade: usage error
    again = json.loads(runner.invoke(cli, ["pool", p, qid, "--retrievers", "bm25,tfidf", "--json"]).stdout)
    assert {first, second}.isdisjoint(e["chunk_id"] for e in again["pooled"][qid])
    assert runner.invoke(cli, ["label", p, qid, "approve", "--reviewer", "ana"]).exit_code == 0
    out = tmp_path / "gold.qrels"
    assert runner.invoke(cli, ["export", p, str(out), "--format", "trec"]).exit_code == 0
    assert f"{qid} 0 {first} 2" in out.read_text().splitlines()
    for _ in range(2):  # the approval, then the "not relevant"
        runner.invoke(cli, ["undo", p, "--reviewer", "ana"])
    back = json.loads(runner.invoke(cli, ["pool", p, qid, "--retrievers", "bm25,tfidf", "--json"]).stdout)
    assert second in [e["chunk_id"] for e in back["pooled"][qid]]
    text = runner.invoke(cli, ["pool", p, qid, "--retrievers", "bm25"]).output
    assert f"{qid}: " in text and "to grade" in text


def test_stats_counts_pools_a_reingest_left_out_of_date_and_pool_computes_them_again(sample_project_path, tmp_path):
    """A re-ingest that adds a chunk: curator stats says the pool is out of date, curator pool (no ids)
    computes it again and says so, the grade given before is kept; curator grade takes only the scale."""
    runner = CliRunner()
    qid, gold = _seed(sample_project_path)
    p = str(sample_project_path)
    listed = json.loads(runner.invoke(cli, ["pool", p, qid, "--retrievers", "bm25", "--json"]).stdout)
    assert listed["refreshed"] == 0
    judged = listed["pooled"][qid][0]["chunk_id"]
    assert runner.invoke(cli, ["grade", p, qid, judged, "0", "--reviewer", "ana"]).exit_code == 0
    assert runner.invoke(cli, ["grade", p, qid, judged, "3", "--reviewer", "ana"]).exit_code == 2  # off the scale
    extra = tmp_path / "added"
    extra.mkdir()
    (extra / "more.md").write_text("# More\n\nA page added after the pools were computed.\n")
    assert runner.invoke(cli, ["ingest", p, str(extra)]).exit_code == 0
    stats = json.loads(runner.invoke(cli, ["stats", p, "--json"]).stdout)
    assert stats["pools"] == {"pooled": 1, "out_of_date": 1}
    assert "pooled 1, out_of_date 1" in runner.invoke(cli, ["stats", p]).output
    again = runner.invoke(cli, ["pool", p, "--retrievers", "bm25"])  # the queue is empty: only the out-of-date pool
    assert again.exit_code == 0, again.output
    assert "1 of them had a pool from before the last re-ingest: computed again" in again.output
    assert json.loads(runner.invoke(cli, ["stats", p, "--json"]).stdout)["pools"]["out_of_date"] == 0
    db = open_project(sample_project_path)
    assert db.execute("SELECT gold_grades FROM queries WHERE id = ?", [qid]).fetchone()[0] == json.dumps(
        {gold: 1, judged: 0}, sort_keys=True, separators=(",", ":"))
    db.close()


def test_pool_leaves_the_out_of_date_pool_of_a_rejected_row_alone(sample_project_path, tmp_path):
    """A row rejected since it was pooled has nothing left to grade: curator pool (no ids) does not
    compute its pool again after a re-ingest, and counts no refresh."""
    runner = CliRunner()
    qid, _ = _seed(sample_project_path)
    p = str(sample_project_path)
    assert runner.invoke(cli, ["pool", p, qid, "--retrievers", "bm25"]).exit_code == 0
    assert runner.invoke(cli, ["label", p, qid, "reject", "--reviewer", "ana"]).exit_code == 0
    extra = tmp_path / "added"
    extra.mkdir()
    (extra / "more.md").write_text("# More\n\nA page added after the pools were computed.\n")
    assert runner.invoke(cli, ["ingest", p, str(extra)]).exit_code == 0
    again = json.loads(runner.invoke(cli, ["pool", p, "--retrievers", "bm25", "--json"]).stdout)
    assert again["refreshed"] == 0 and qid not in again["pooled"]
    assert json.loads(runner.invoke(cli, ["stats", p, "--json"]).stdout)["pools"]["out_of_date"] == 1
