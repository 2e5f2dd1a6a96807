"""The real MainWindow on a real clustered project: every tab renders (a PNG per tab, not blank)."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import QSettings

from curator.core.generation.backends import FakeBackend
from curator.core.clustering.cluster import cluster_queries, shutdown_worker
from curator.core.evaluation.evaluate import evaluate
from curator.core.export.writers import export
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.queries.rows import list_queries
from curator.core.review.decisions import decide
from curator.core.review.sample import build_queue
from curator.core.store import open_project
from curator.gui.window import MainWindow
from scripted import every_nth_bad

_REPLY = every_nth_bad(5)

TABS = ("Corpus", "Queries", "Review", "Generate", "Clusters", "Export / Evaluate", "Validity", "Adjudicate", "Diagnose")


def build_project(path, out_dir) -> None:
    """Generated rows of every type, clusters, a queue, decisions, an export and an eval run."""
    db = open_project(path)
    generate(db, GenerationConfig(count=30, seed=4), backend=FakeBackend(_REPLY))
    cluster_queries(db, k=4, seed=0)
    build_queue(db, size=20)
    for i, q in enumerate(r for r in list_queries(db) if r["queued"]):
        if i < 10:
            decide(db, q["id"], "unanswerable" if q["query_type"] == "unanswerable" else "approve", "ana")
    export(db, out_dir / "gold.jsonl")
    evaluate(db)
    db.close()


@pytest.fixture(scope="module")
def project_template(tmp_path_factory, _ingested_template):
    folder = tmp_path_factory.mktemp("every_view")
    path = folder / "project.curator"
    shutil.copy(_ingested_template, path)
    build_project(path, folder)
    yield path
    shutdown_worker()


def distinct_colours(image, step: int = 4) -> int:
    return len({image.pixel(x, y) for x in range(0, image.width(), step) for y in range(0, image.height(), step)})


def test_every_tab_renders_not_blank(qtbot, project_template, tmp_path):
    path = tmp_path / "p.curator"
    shutil.copy(project_template, path)
    win = MainWindow(path, settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat), reviewer="ana")
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    qtbot.waitExposed(win)
    assert tuple(win.tabs.tabText(i) for i in range(win.tabs.count())) == TABS
    for i, name in enumerate(TABS):
        win.tabs.setCurrentIndex(i)
        qtbot.wait(50)
        image = win.grab().toImage()
        png = tmp_path / f"{name.lower().replace(' / ', '_')}.png"
        assert image.save(str(png)) and png.stat().st_size > 5000, name
        assert distinct_colours(image) > 12, name
        # the tab's own area, not only the menu and tab bar, has something drawn on it
        assert distinct_colours(win.tabs.currentWidget().grab().toImage()) > 8, name
    # the content the screenshots are meant to show is there
    assert win.generate_view.rejected_model.rowCount() > 0
    assert len(win.clusters_view.map.ids) == win.queries_view.model.rowCount()
    assert win.evaluate_view.metrics_model.rowCount() > 1 and len(win.evaluate_view.chart.bars) >= 2
    assert win.evaluate_view.manifest_model.rowCount() > 1
    win.close()


def test_generation_from_the_window_refreshes_the_queries_tab(qtbot, project_template, tmp_path):
    path = tmp_path / "p.curator"
    shutil.copy(project_template, path)
    win = MainWindow(path, settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat), reviewer="ana")
    qtbot.addWidget(win)
    before = win.queries_view.model.rowCount()
    view = win.generate_view
    view.backend_factory = lambda config: FakeBackend(_REPLY)
    view.count.setValue(3)
    with qtbot.waitSignal(view.task_finished, timeout=60000):
        view.start()
    qtbot.waitUntil(lambda: not view.busy(), timeout=10000)
    assert win.queries_view.model.rowCount() == before + 3
    win.close()


def test_a_1024x640_window_shows_several_metrics_rows_and_no_collapsed_column(qtbot, project_template, tmp_path):
    from curator.gui.evaluate_view import MIN_AUROC_ROWS, auroc_note

    path = tmp_path / "p.curator"
    shutil.copy(project_template, path)
    win = MainWindow(path, settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat), reviewer="ana")
    qtbot.addWidget(win)
    win.resize(1024, 640)
    win.show()
    qtbot.waitExposed(win)
    assert win.height() <= 640, win.minimumSizeHint()  # no tab forces a taller window
    win.tabs.setCurrentWidget(win.evaluate_view)
    qtbot.wait(50)
    table = win.evaluate_view.metrics_table
    shown = [r for r in range(table.model().rowCount())
             if table.visualRect(table.model().index(r, 0)).bottom() <= table.viewport().height()]
    assert len(shown) >= 3, len(shown)  # the overall row and slices, not the overall row alone
    win.tabs.setCurrentWidget(win.generate_view)
    qtbot.wait(50)
    for table in (win.generate_view.rejected_table, win.generate_view.rows_table):
        header = table.horizontalHeader()
        titles = [table.model().headerData(c, 1) for c in range(table.model().columnCount())]
        for column, title in enumerate(titles):  # every header title fits its column
            assert header.sectionSize(column) >= header.fontMetrics().horizontalAdvance(title), title
    # two unanswerable rows make no AUROC worth showing; enough rows of both kinds do
    few = {"unanswerable_auroc": 0.69, "unanswerable_queries": 2, "answerable_queries": 8}
    assert "needs" in auroc_note(few) and "0.69" not in auroc_note(few)
    enough = {**few, "unanswerable_queries": MIN_AUROC_ROWS, "answerable_queries": MIN_AUROC_ROWS}
    assert auroc_note(enough) == " · unanswerable AUROC 0.69"
    win.close()
