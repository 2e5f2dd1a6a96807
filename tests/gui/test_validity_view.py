"""The Validity tab on a real project: the worker's report equals core's, the chart is drawn
beside its details (never under them), the empty state counts this project's approved rows."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect

import validity_kit as kit
from curator.core.evaluation.validity import validate
from curator.core.queries.rows import list_queries
from curator.core.review.decisions import decide
from curator.core.store import open_project
from curator.gui.validity_view import SOURCE_COLOURS, ValidityView, before_check_text, source_bars


@pytest.fixture
def project(sample_project_path, tmp_path):
    db = open_project(sample_project_path)
    kit.add_slices(db, tmp_path)
    db.close()
    return sample_project_path


@pytest.fixture
def make_view(qtbot):
    made = []

    def make(path, size=(1260, 700)):
        db = open_project(path)
        view = ValidityView(db, path)
        qtbot.addWidget(view)
        view.resize(*size)
        view.show()
        made.append((view, db))
        return view

    yield make
    for view, db in made:
        qtbot.waitUntil(lambda: not view.busy(), timeout=120000)
        view.close()
        db.close()


def _colours(image) -> set[int]:
    return {image.pixel(x, y) for x in range(0, image.width(), 3) for y in range(0, image.height(), 3)}


def _area(widget, ancestor) -> QRect:
    return QRect(widget.mapTo(ancestor, widget.rect().topLeft()), widget.size())


def test_the_tab_runs_validate_and_draws_bars_per_source(qtbot, project, make_view, tmp_path):
    view = make_view(project)
    per = kit.PER_SLICE
    assert view.verdict.text() == (f"Press Check validity to compare the retrievers on {per} approved synthetic "
                                   f"and {per} approved log rows.")
    view.retrievers.setText("bm25,tfidf,fts5")  # dense loads MiniLM: minutes on a busy machine
    with qtbot.waitSignal(view.task_finished, timeout=120000) as done:
        assert view.run() is not None
        assert not view.button.isEnabled() and view.progress.isVisible()
    qtbot.waitUntil(lambda: not view.busy(), timeout=10000)
    db = open_project(project)
    expected = validate(db, ["bm25", "tfidf", "fts5"], {}, "recall@5")
    db.close()
    assert done.args[0] == expected
    assert view.verdict.text() == expected["verdict"]["text"] and view.button.isEnabled()
    assert "Synthetic:" in view.details.toPlainText() and "tau" in view.details.toPlainText()
    names, sources, bars = source_bars(expected)
    assert names == ["bm25", "tfidf", "fts5"] and sources == ["synthetic", "log"] and len(bars) == 6
    colours = _colours(view.chart.grab().toImage())
    assert len(colours) > 10  # not blank
    assert {SOURCE_COLOURS["synthetic"].rgb(), SOURCE_COLOURS["log"].rgb()} <= colours  # both sources' bars
    assert view.grab().save(str(tmp_path / "validity.png"))
    synthetic_row = next(q for q in list_queries(view.db, status="approved") if q["source"] == "synthetic")
    decide(view.db, synthetic_row["id"], "reject", "ana")  # a change in Review after the check
    view.hide()
    view.show()
    assert view.status.text() == "The approved rows changed since this check: press Check validity again."


@pytest.mark.parametrize("size", [(1260, 690), (1346, 660)])  # the tab's room in 1280x800 and 1366x768 windows
def test_nothing_overlaps_and_the_chart_gets_the_room(qtbot, project, make_view, size):
    view = make_view(project, size)
    view.retrievers.setText("bm25,tfidf")
    with qtbot.waitSignal(view.task_finished, timeout=120000):
        view.run()
    qtbot.waitUntil(lambda: not view.busy(), timeout=10000)
    qtbot.wait(20)
    verdict, chart, details = (_area(w, view) for w in (view.verdict, view.chart, view.details))
    assert not verdict.intersects(chart) and not chart.intersects(details) and not verdict.intersects(details)
    assert verdict.height() >= view.verdict.heightForWidth(verdict.width())  # the whole verdict shows
    assert chart.height() >= 0.6 * size[1] and chart.width() >= 0.5 * size[0], chart


def test_failure_is_shown_not_raised(qtbot, sample_project_path, make_view):
    view = make_view(sample_project_path)  # no approved rows
    assert view.verdict.text().startswith("No approved rows yet")
    with qtbot.waitSignal(view.task_failed, timeout=60000) as failed:
        view.run()
    qtbot.waitUntil(lambda: not view.busy(), timeout=10000)
    assert "approve some rows" in failed.args[0] and view.status.text().startswith("Failed:")
    assert view.button.isEnabled() and view._dialog.isVisible()
    view._dialog.close()


def test_the_empty_state_names_the_missing_source():
    assert "import a query log" in before_check_text({"synthetic": 12})
    assert "generate some" in before_check_text({"log": 3})
    assert before_check_text({}).startswith("No approved rows yet")
    assert before_check_text({"synthetic": 2, "log": 1, "manual": 4}).endswith("on 2 approved synthetic and 1 approved log rows.")
