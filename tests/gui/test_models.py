"""Every Qt item model of the app passes pytest-qt's qtmodeltester on a populated real project.

QAbstractItemModelTester stays attached after ``check``, so the changes made afterwards
(resets, inserts, dataChanged, sorting, filtering) are checked too.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from curator.core.generation.runs import rejected_candidates
from curator.core.generation.backends import FakeBackend
from curator.core.evaluation.evaluate import evaluate
from curator.core.export.writers import export
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.queries.rows import list_queries
from curator.core.review.decisions import decide
from curator.gui.evaluate_view import MANIFEST_COLUMNS, manifest_rows, metric_columns, slice_rows
from curator.gui.generate_view import REJECT_COLUMNS, ROW_COLUMNS
from curator.gui.models import QueryFilterProxy, QueryTableModel, RecordTableModel
from scripted import every_nth_bad

_REPLY = every_nth_bad(4, "not in the expected format <b>at all</b>")


@pytest.fixture
def populated(sample_db, tmp_path):
    """Generated rows (some rejected), decisions, an export and an eval run: a real project."""
    generate(sample_db, GenerationConfig(count=12, mix={"factoid": 1.0}, seed=3), backend=FakeBackend(_REPLY))
    rows = list_queries(sample_db)
    for q in rows[:6]:
        decide(sample_db, q["id"], "approve", "ana")
    decide(sample_db, rows[6]["id"], "reject", "ana")
    manifest = export(sample_db, tmp_path / "gold.jsonl")
    result = evaluate(sample_db, ks=(1, 5))
    return sample_db, manifest, result


def test_query_table_model_and_proxy(qtmodeltester, populated):
    db, _, _ = populated
    rows = list_queries(db)
    model = QueryTableModel(rows)
    qtmodeltester.check(model)
    assert model.rowCount() == len(rows) >= 12
    model.update_row({**rows[0], "status": "approved", "reviewer": "bob"})
    assert model.cell(0, 5) == "bob"
    model.sort(3, Qt.DescendingOrder)
    model.set_rows(rows[:5])
    qtmodeltester.check(model)
    proxy = QueryFilterProxy()
    proxy.setSourceModel(QueryTableModel(rows))
    qtmodeltester.check(proxy)
    proxy.set_column_filter(3, "approved")
    assert proxy.rowCount() == 6
    qtmodeltester.check(proxy)
    proxy.set_text("what about")
    proxy.set_ids({rows[0]["id"], rows[1]["id"]})
    qtmodeltester.check(proxy)
    proxy.sort(0, Qt.AscendingOrder)
    proxy.set_ids(None)


def test_generate_view_models(qtmodeltester, populated):
    db, _, _ = populated
    made = RecordTableModel(ROW_COLUMNS)
    qtmodeltester.check(made)  # empty
    queries = list_queries(db)
    made.append_rows(queries[:3])
    made.append_rows(queries[3:])
    made.append_rows([])
    qtmodeltester.check(made)
    assert made.rowCount() == len(queries)
    rejected = RecordTableModel(REJECT_COLUMNS)
    rejected.set_rows(rejected_candidates(db))
    qtmodeltester.check(rejected)
    assert rejected.rowCount() > 0 and rejected.text(0, 2)


def test_evaluate_view_models(qtmodeltester, populated):
    _, manifest, result = populated
    table = RecordTableModel(MANIFEST_COLUMNS)
    table.set_rows(manifest_rows(manifest))
    qtmodeltester.check(table)
    assert table.text(0, 2) == str(manifest["rows"])
    metrics = RecordTableModel(metric_columns([1, 3]))
    qtmodeltester.check(metrics)
    metrics.set_rows(slice_rows(result), columns=metric_columns(result["ks"]))  # columns change in one reset
    qtmodeltester.check(metrics)
    assert metrics.columnCount() == len(metric_columns([1, 5]))
    assert metrics.text(0, 0) == "overall"


def test_the_window_models(qtmodeltester, qtbot, populated, tmp_path):
    """The models as the real tabs hold them."""
    from PySide6.QtCore import QSettings

    from curator.gui.window import MainWindow

    db, _, _ = populated
    path = db.conn.execute("PRAGMA database_list").fetchone()[2]
    win = MainWindow(path, settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat), reviewer="t")
    qtbot.addWidget(win)
    for model in (win.queries_view.model, win.queries_view.proxy, win.generate_view.rows_model,
                  win.generate_view.rejected_model, win.evaluate_view.manifest_model, win.evaluate_view.metrics_model):
        qtmodeltester.check(model)
    assert win.evaluate_view.metrics_model.rowCount() > 0  # the last eval run, loaded on open
    assert win.generate_view.rejected_model.rowCount() > 0
    win.close()
