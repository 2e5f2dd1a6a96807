"""curator import-traces / diagnose / trace / trace-mark / claim-verdict, run as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.core.store import open_project


def run(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "curator", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def test_import_diagnose_mark_and_correct(sample_project_path, tmp_path):
    db = open_project(sample_project_path)
    chunks = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id LIMIT 3")]
    with db.conn:
        qid = add_query(db, "How are tokens rotated?", "manual", gold_chunk_ids=chunks[:2])
    decide(db, qid, "approve", "ana")
    db.close()
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps({"user_input": "How are tokens rotated?", "retrieved_context_ids": chunks[2:],
                                  "response": "Tokens are rotated weekly."}) + "\n{broken\n", encoding="utf-8")
    out = run("import-traces", str(sample_project_path), str(traces))
    assert out.returncode == 0, out.stderr
    assert "imported 1" in out.stdout and f"{traces}:2:" in out.stdout and "by text 1" in out.stdout
    again = run("import-traces", str(sample_project_path), str(traces), "--json")
    assert json.loads(again.stdout)["unchanged"] == 1
    report = run("diagnose", str(sample_project_path), "--no-judge", "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["counts"] == {"unscored": 1} and data["traces"][0]["context_recall"] == 0.0
    trace_id = data["traces"][0]["id"]
    db = open_project(sample_project_path)
    with db.conn:  # a claim as the judge would have split it, so claim-verdict has one to correct
        db.execute("INSERT INTO claims (trace_id, ord, text) VALUES (?, 0, 'Tokens are rotated weekly.')", [trace_id])
    db.close()
    corrected = run("claim-verdict", str(sample_project_path), "1", "supported", "--reviewer", "ana")
    assert corrected.returncode == 0 and "faithfulness 1.00, context recall 0.00" in corrected.stdout
    as_json = json.loads(run("claim-verdict", str(sample_project_path), "1", "supported", "--reviewer", "ana",
                             "--json").stdout)
    assert (as_json["kind"], as_json["faithfulness"], as_json["context_recall"]) == ("response", 1.0, 0.0)
    text = run("diagnose", str(sample_project_path), "--no-judge").stdout
    assert "retrieval failure: faithful to bad context" in text
    assert "biggest failure slice: cluster '(no cluster)': 1 of 1 wrong answers are retrieval failures" in text
    mark = run("trace-mark", str(sample_project_path), trace_id, "wrong", "--reviewer", "ana")
    assert mark.returncode == 0 and "marked wrong" in mark.stdout
    shown = run("trace", str(sample_project_path), trace_id)
    assert "supported: Tokens are rotated weekly." in shown.stdout


def test_failures_exit_1_with_one_line(sample_project_path, tmp_path):
    missing = run("import-traces", str(sample_project_path), str(tmp_path / "none.jsonl"))
    assert missing.returncode == 1 and missing.stderr.startswith("Error:") and len(missing.stderr.splitlines()) == 1
    bad = run("trace-mark", str(sample_project_path), "t_nope", "wrong")
    assert bad.returncode == 1 and "no trace" in bad.stderr
    usage = run("diagnose", str(sample_project_path), "--recall-threshold", "7")
    assert usage.returncode == 2
