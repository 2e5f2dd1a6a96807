"""The validity panel on a real project: the worker's report equals core's, the chart is drawn, a screenshot."""

from __future__ import annotations


import pytest

import validity_kit as kit
from curator.core.evaluation.validity import validate
from curator.core.store import open_project
from curator.gui.evaluate_view import EvaluateView
from curator.gui.validity_view import SOURCE_COLOURS, ValidityPanel, source_bars



@pytest.fixture
def project(sample_project_path, tmp_path):
    db = open_project(sample_project_path)
    kit.add_slices(db, tmp_path)
    db.close()
    return sample_project_path


def _colours(image) -> set[int]:
    return {image.pixel(x, y) for x in range(0, image.width(), 3) for y in range(0, image.height(), 3)}


def test_panel_runs_validate_and_draws_bars_per_source(qtbot, project, tmp_path):
    panel = ValidityPanel(project)
    qtbot.addWidget(panel)
    panel.resize(900, 520)
    panel.show()
    panel.retrievers.setText("bm25,tfidf,dense")
    with qtbot.waitSignal(panel.finished, timeout=120000) as done:
        assert panel.run() is not None
    qtbot.waitUntil(lambda: panel.worker is None, timeout=10000)
    db = open_project(project)
    expected = validate(db, ["bm25", "tfidf", "dense"], {}, "recall@5")
    db.close()
    assert done.args[0] == expected
    assert panel.verdict.text() == expected["verdict"]["text"]
    names, sources, bars = source_bars(expected)
    assert names == ["bm25", "tfidf", "dense"] and sources == ["synthetic", "log"] and len(bars) == 6
    image = panel.chart.grab().toImage()
    colours = _colours(image)
    assert len(colours) > 10  # not blank
    assert {SOURCE_COLOURS["synthetic"].rgb(), SOURCE_COLOURS["log"].rgb()} <= colours  # both sources' bars
    assert panel.grab().save(str(tmp_path / "validity.png"))  # the README's screenshot comes from make screenshots


def test_failure_is_shown_not_raised(qtbot, sample_project_path):
    panel = ValidityPanel(sample_project_path)  # no approved rows
    qtbot.addWidget(panel)
    with qtbot.waitSignal(panel.failed, timeout=60000) as failed:
        panel.run()
    qtbot.waitUntil(lambda: panel.worker is None, timeout=10000)
    assert "approve some rows" in failed.args[0] and panel.verdict.text().startswith("Failed:")
    assert panel.button.isEnabled()


def test_evaluate_tab_embeds_the_panel(qtbot, project):
    db = open_project(project)
    view = EvaluateView(db, project)
    qtbot.addWidget(view)
    assert isinstance(view.validity, ValidityPanel) and view.validity.isAncestorOf(view.validity.chart)
    db.close()
