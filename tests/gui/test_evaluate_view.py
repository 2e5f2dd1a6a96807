"""The Export / Evaluate tab on a real project: exports on disk, manifest counts, metrics = core's."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from curator.core.evaluation.evaluate import evaluate
from curator.core.queries.rows import add_query, list_queries
from curator.core.review.decisions import decide
from curator.core.corpus.search import search_chunks
from curator.core.store import open_project
from curator.gui.evaluate_view import RECALL_COLOUR, MRR_COLOUR, EvaluateView, cluster_bars, parse_ks
from curator.gui.models import RAW_ROLE

APPROVED = ("rotate encryption keys", "webhook signature verification", "refund within 14 days",
            "single sign-on setup", "export audit log")


def _gold_project(path) -> None:
    """Approved rows whose gold is bm25's top hit for a *different* phrasing (so scores vary)."""
    db = open_project(path)
    for i, text in enumerate(APPROVED):
        hits = search_chunks(db, text, limit=3)
        gold = hits[i % len(hits)]["id"]  # not always the top hit: recall@1 < 1 somewhere
        with db.conn:
            qid = add_query(db, f"{text} <i>please</i>", "manual", gold_chunk_ids=[gold])
        decide(db, qid, "approve", "ana")
    with db.conn:
        qid = add_query(db, "zebra quasar migration", "manual", answerable=False)
        add_query(db, "still pending row", "manual")
    decide(db, qid, "unanswerable", "ana")
    db.close()


@pytest.fixture
def project(sample_project_path):
    _gold_project(sample_project_path)
    return sample_project_path


@pytest.fixture
def view(qtbot, project):
    db = open_project(project)
    v = EvaluateView(db, project)
    qtbot.addWidget(v)
    v.resize(1200, 700)
    v.show()
    yield v
    qtbot.waitUntil(lambda: not v.busy(), timeout=30000)
    v.close()
    db.close()


def _run(qtbot, view, start):
    outcomes = []
    view.task_finished.connect(lambda kind, result: outcomes.append(("finished", result)))
    view.task_failed.connect(lambda *args: outcomes.append(("failed", args)))
    assert start() is not None
    qtbot.waitUntil(lambda: bool(outcomes) and not view.busy(), timeout=60000)
    kind, payload = outcomes[0]
    assert kind == "finished", payload
    return payload


def _manifest_table(view) -> dict:
    m = view.manifest_model
    return {(m.text(r, 0), m.text(r, 1)): int(m.text(r, 2)) for r in range(m.rowCount())}


@pytest.mark.parametrize("fmt,files", [
    ("jsonl", ["gold.jsonl", "gold.jsonl.manifest.json"]),
    ("beir", ["beir/corpus.jsonl", "beir/queries.jsonl", "beir/qrels/test.tsv", "beir/manifest.json"]),
    ("trec", ["gold.qrels", "gold.qrels.manifest.json"]),
])
def test_export_writes_files_and_shows_manifest_counts(view, qtbot, tmp_path, fmt, files):
    out = tmp_path / "out"
    view.out_dir.setText(str(out))
    view.format.setCurrentText(fmt)
    manifest = _run(qtbot, view, view.run_export)
    for name in files:
        assert (out / name).is_file(), name
    assert manifest["rows"] == len(APPROVED) + 1
    table = _manifest_table(view)
    assert table[("total", fmt)] == manifest["rows"]
    assert table[("status", "approved")] == len(APPROVED) and table[("status", "unanswerable")] == 1
    if fmt == "jsonl":
        lines = [json.loads(line) for line in (out / "gold.jsonl").read_text().splitlines()]
        assert len(lines) == len(APPROVED) + 1 and all("user_input" in r for r in lines)
    if fmt == "beir":
        assert (out / "beir/qrels/test.tsv").read_text().startswith("query-id\tcorpus-id\tscore")
    # reopening the tab shows the last export's counts from its manifest file
    again = EvaluateView(view.db, view.project_path)
    qtbot.addWidget(again)
    assert _manifest_table(again) == table and fmt in again.status.text()


def test_status_filter_and_split(view, qtbot, tmp_path):
    view.out_dir.setText(str(tmp_path / "o"))
    view.status_checks["unanswerable"].setChecked(False)
    view.split.setText("dev=0.4,test=0.6")
    manifest = _run(qtbot, view, view.run_export)
    assert manifest["by_status"] == {"approved": len(APPROVED)}
    assert (tmp_path / "o" / "gold.dev.jsonl").is_file() and (tmp_path / "o" / "gold.test.jsonl").is_file()
    table = _manifest_table(view)
    assert table[("split", "dev")] + table[("split", "test")] == len(APPROVED)


def test_metrics_table_matches_core_evaluate(view, qtbot, project):
    view.ks.setText("1, 3,5")
    result = _run(qtbot, view, view.run_evaluate)
    core = evaluate(view.db, ks=(1, 3, 5))
    truth = core["slices"]
    overall = view.overall()
    assert overall["slice"] == "overall"
    for key in ("queries", "mrr", "recall@1", "recall@3", "recall@5", "ndcg@5", "routing"):
        assert overall[key] == pytest.approx(truth["overall"][key]) if key != "routing" else overall[key] == truth["overall"][key]
    assert 0 < truth["overall"]["recall@1"] < 1  # the fixture makes the numbers non-trivial
    m = view.metrics_model
    headers = [m.headerData(c, Qt.Horizontal) for c in range(m.columnCount())]
    assert headers == ["Slice", "Queries", "MRR", "Recall@1", "Recall@3", "Recall@5", "nDCG@5", "Routing"]
    assert m.text(0, 2) == f"{truth['overall']['mrr']:.3f}"
    assert m.data(m.index(0, 3), RAW_ROLE) == pytest.approx(truth["overall"]["recall@1"])
    shown = {m.text(r, 0) for r in range(m.rowCount())}
    assert shown == set(truth) and "type:manual" in shown
    assert view.chart.bars == cluster_bars(result, 5) and view.chart.bars[0][0] == "unclustered"
    # a reopened tab shows the last eval run stored in the project
    again = EvaluateView(view.db, project)
    qtbot.addWidget(again)
    assert again.overall() == overall
    assert f"Eval run {core['eval_run']}" in again.summary.text()  # the newest stored run


def test_run_file_is_scored_instead_of_the_retriever(view, qtbot, tmp_path):
    run_path = tmp_path / "mine.trec"
    evaluate(view.db, ks=(5,), save_run=str(run_path))  # core writes bm25's run as a TREC file
    view.run_file.setText(str(run_path))
    view.ks.setText("5")
    result = _run(qtbot, view, view.run_evaluate)
    assert result["retriever"] == "run:mine.trec" and "run:mine.trec" in view.summary.text()
    assert view.overall()["recall@5"] == pytest.approx(evaluate(view.db, ks=(5,))["slices"]["overall"]["recall@5"])


def test_chart_draws_both_series(view, qtbot):
    _run(qtbot, view, view.run_evaluate)
    view.chart.resize(500, 300)
    image = view.chart.grab().toImage()
    found = {image.pixelColor(x, y).name() for x in range(0, image.width(), 2) for y in range(0, image.height(), 2)}
    assert RECALL_COLOUR.name() in found and MRR_COLOUR.name() in found
    view.chart_k.setCurrentText("1")
    assert view.chart.k == 1 and view.chart.bars == cluster_bars(view.result, 1)


def test_empty_states_say_what_is_true_of_this_project(view, qtbot):
    """Approved rows and no evaluation: the table says to press Evaluate (not to approve rows), and
    the chart names the step this project lacks for per-cluster bars."""
    assert view.result is None
    assert view.summary.text() == (f"No evaluation yet. Press Evaluate to score the chosen retriever on the "
                                   f"{len(APPROVED)} approved rows (Recall@k, MRR and nDCG, overall and per slice).")
    assert "run clustering" in view.chart.empty_text
    pending = list_queries(view.db, status="pending")[0]
    decide(view.db, pending["id"], "approve", "ana", gold=[search_chunks(view.db, "refund", limit=1)[0]["id"]])
    view.hide()
    view.show()  # the tab shown again re-reads what is true now
    assert f"on the {len(APPROVED) + 1} approved rows" in view.summary.text()


def test_errors_reach_a_dialog(qtbot, sample_project_path, tmp_path):
    db = open_project(sample_project_path)  # nothing approved yet
    v = EvaluateView(db, sample_project_path)
    qtbot.addWidget(v)
    assert v.summary.text() == "No evaluation yet: approve some rows in Review, then press Evaluate."
    assert v.chart.bars == []
    with qtbot.waitSignal(v.task_failed, timeout=30000) as blocker:
        v.run_evaluate()
    assert "approve some rows" in blocker.args[0]
    assert v._dialog.isVisible() and v._dialog.textFormat() == Qt.PlainText
    qtbot.waitUntil(lambda: not v.busy(), timeout=10000)
    v.ks.setText("1,x")
    assert v.run_evaluate() is None and "whole numbers" in v.last_error[0]
    v.split.setText("dev=0.5")
    assert v.run_export() is None and "sum to" in v.last_error[0]
    v.split.setText("")
    for check in v.status_checks.values():
        check.setChecked(False)
    assert v.run_export() is None and "No status" in v.last_error[0]
    v._dialog.close()
    v.close()
    db.close()


def test_parse_ks():
    assert parse_ks("5, 1,1") == (1, 5)
    for bad in ("", "0", "a"):
        with pytest.raises(ValueError):
            parse_ks(bad)
