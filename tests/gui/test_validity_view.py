"""The Validity tab on a real project: the worker's report equals core's, the chart is drawn
beside the pairs, realism and details (never under them), the pairs and realism of the report
show after a check, the empty state counts this project's approved rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QRect, Qt

import validity_kit as kit
from curator.core.evaluation.validity import validate
from curator.core.queries.rows import list_queries
from curator.core.review.decisions import decide
from curator.core.store import open_project
from curator.gui.validity_view import (DISAGREE_COLOUR, SOURCE_COLOURS, ValidityView, before_check_text, pair_rows,
                                       source_bars)

SHOTS = Path("/tmp/shots")


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
    verdict, chart, details, pairs, realism, sentences = (_area(w, view) for w in (
        view.verdict, view.chart, view.details, view.pairs_table, view.realism_table, view.realism_text))
    assert not verdict.intersects(chart) and not chart.intersects(details) and not verdict.intersects(details)
    assert verdict.height() >= view.verdict.heightForWidth(verdict.width())  # the whole verdict shows
    assert chart.height() >= 0.6 * size[1] and chart.width() >= 0.5 * size[0], chart
    side = [details, pairs, realism, sentences]
    assert not any(verdict.intersects(a) or chart.intersects(a) for a in side)
    assert not any(a.intersects(b) for i, a in enumerate(side) for b in side[i + 1:])
    for table in (view.pairs_table, view.realism_table):  # every column and row in sight, no sideways scrolling
        assert not table.horizontalScrollBar().isVisible() and not table.verticalScrollBar().isVisible()


def _cells(model, row: int) -> list[str]:
    return [model.data(model.index(row, c)) for c in range(model.columnCount())]


def test_pairs_and_realism_show_after_a_check(qtbot, project, make_view):
    view = make_view(project, (1346, 660))  # the tab's room in a 1366x768 window
    assert view.pairs_model.rowCount() == 0 and view.realism_model.rowCount() == 0
    view.retrievers.setText("bm25,tfidf,fts5")
    with qtbot.waitSignal(view.task_finished, timeout=120000) as done:
        view.run()
    qtbot.waitUntil(lambda: not view.busy(), timeout=10000)
    report = done.args[0]
    assert len(report["pairs"]) == 3 and view.pairs_model.rowCount() == 3  # every pair of three retrievers
    shown = {_cells(view.pairs_model, r)[0]: r for r in range(3)}
    for pair in report["pairs"]:
        leader = pair["a"] if pair["real"]["gap"] >= 0 else pair["b"]  # written from the real leader's side
        row = shown[f"{leader} - {pair['b'] if leader == pair['a'] else pair['a']}"]
        name, real, synthetic, agrees = _cells(view.pairs_model, row)
        sign = 1 if leader == pair["a"] else -1
        assert real.startswith(f"{abs(pair['real']['gap']):+.2f} [")
        assert real.endswith(" clear") == pair["real"]["clear"]
        assert float(synthetic) == pytest.approx(sign * pair["synthetic"]["gap"], abs=0.006)
        assert agrees == {True: "agree", False: "disagree", None: "real tie"}[pair["agrees"]]
        index = view.pairs_model.index(row, 0)
        assert pair["text"] in view.pairs_model.data(index, Qt.ToolTipRole)
        bold = view.pairs_model.data(index, Qt.FontRole)
        assert (bold is not None and bold.bold()) == pair["real"]["clear"]
        red = view.pairs_model.data(index, Qt.ForegroundRole) == DISAGREE_COLOUR
        assert red == (pair["real"]["clear"] and pair["agrees"] is False)
    assert [view.pairs_model.rows()[r]["is_clear"] for r in range(3)] == sorted(
        (p["real"]["clear"] for p in report["pairs"]), reverse=True)  # clear pairs on top
    realism = report["realism"]
    assert realism["synthetic"] and set(realism["synthetic"]) == {"factoid"}
    assert view.realism_model.rowCount() == 1 + len(realism["synthetic"])
    assert _cells(view.realism_model, 0)[0] == f"real ({realism['reference']['rows']})"  # 20 log rows: the project's
    factoid = realism["synthetic"]["factoid"]
    assert _cells(view.realism_model, 1) == [
        f"factoid ({factoid['rows']})", f"{factoid['chunk_overlap']['median']:.0%}", f"{factoid['words']['median']:g}",
        f"{factoid['stopword_share']['median']:.0%}", f"{factoid['forms']['question']:.0%}"]
    text = view.realism_text.toPlainText()
    assert text.startswith(f"Compared with {realism['reference']['name']}.") and factoid["text"] in text


# Four retrievers, same winner, but the real rows clearly put gamma above beta and the synthetic rows
# put beta far above: the row that makes the verdict "disagrees" must stand out.
SWAPPED_PAIR = {"alpha": (0.95, 0.95), "beta": (0.7, 0.15), "gamma": (0.2, 0.75), "delta": (0.05, 0.05)}


@pytest.mark.parametrize("size", [(1260, 690), (1346, 660)])  # the tab's room in 1280x800 and 1366x768 windows
def test_a_clear_pair_in_the_wrong_order_stands_out_and_six_pairs_fit(qtbot, sample_project_path, make_view, tmp_path,
                                                                      size):
    db = open_project(sample_project_path)
    slices = kit.add_slices(db, tmp_path)
    report = validate(db, [], kit.write_runs(slices, SWAPPED_PAIR, tmp_path, kit.decoy_chunk(db)), "recall@5",
                      resamples=500)
    db.close()
    view = make_view(sample_project_path, size)
    view.show_report(report)
    qtbot.wait(20)
    model = view.pairs_model
    assert model.rowCount() == 6 and report["verdict"]["code"] == "disagrees"
    row = next(r for r in range(6) if _cells(model, r)[0] == "gamma - beta")
    assert _cells(model, row)[1:] == ["+0.60 [" + _cells(model, row)[1].split("[")[1], "-0.50", "disagree"]
    assert _cells(model, row)[1].endswith(" clear")
    index = model.index(row, 0)
    assert model.data(index, Qt.FontRole).bold() and model.data(index, Qt.ForegroundRole) == DISAGREE_COLOUR
    clear = [model.data(model.index(r, 0), Qt.FontRole) is not None for r in range(6)]
    assert clear == sorted(clear, reverse=True) and any(clear) and not all(clear)  # clear pairs on top
    table = view.pairs_table  # all six in sight: no scroll bar, and the pane does not clip it
    assert not table.verticalScrollBar().isVisible() and not table.horizontalScrollBar().isVisible()
    assert table.visibleRegion().boundingRect() == table.rect()
    assert table.visualRect(model.index(5, 3)).bottom() < table.viewport().height()
    realism = view.realism_table
    assert realism.visibleRegion().boundingRect() == realism.rect() and not realism.verticalScrollBar().isVisible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    name = "validity_pairs.png" if size == (1346, 660) else "validity_pairs_1280.png"
    assert view.grab().save(str(SHOTS / name))


def test_pair_rows_read_from_the_real_leader_and_put_clear_pairs_first():
    def gap(value, low, high):
        return {"gap": value, "ci95": [low, high], "clear": low > 0 or high < 0}

    report = {"pairs": [
        {"a": "bm25", "b": "tfidf", "real": gap(0.05, -0.1, 0.2), "synthetic": gap(0.1, 0.0, 0.2), "agrees": True,
         "text": "t1"},
        {"a": "bm25", "b": "dense", "real": gap(-0.3, -0.4, -0.2), "synthetic": gap(0.1, 0.0, 0.2), "agrees": False,
         "text": "t2"}]}
    first, second = pair_rows(report)
    assert (first["pair"], first["real"], first["synthetic"], first["agrees"]) == (
        "dense - bm25", "+0.30 [+0.20, +0.40] clear", "-0.10", "disagree")
    assert (second["pair"], second["real"], second["agrees"]) == ("bm25 - tfidf", "+0.05 [-0.10, +0.20]", "agree")
    assert pair_rows({"pairs": []}) == [] and pair_rows({}) == []


def test_realism_against_the_built_in_reference_says_so():
    from curator.core.queries.realism import BUILTIN_REFERENCE
    from curator.gui.validity_view import realism_rows, realism_text

    report = {"realism": {"reference": BUILTIN_REFERENCE, "reference_basis": "builtin", "real_rows": 3,
                          "synthetic": {}}}
    assert realism_rows(report)[0]["set"] == "built-in (167)"
    assert realism_text(report).startswith(f"Compared with the {BUILTIN_REFERENCE['name']} (this project has fewer")
    assert realism_text(report).endswith("No approved synthetic rows to measure.")
    assert realism_rows({}) == [] and realism_text({}) == ""


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
