"""Tooltips show untrusted text as it is, never as rich text (issue 20: 9)."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextDocument
from PySide6 import QtGui
from PySide6.QtWidgets import QApplication, QToolTip

from curator.core.corpus.ingest import ingest
from curator.gui.corpus_view import CorpusView
from curator.gui.generate_view import RecordTableModel
from curator.gui.models import QueryTableModel

HOSTILE = '<b>x</b> <img src="http://example.invalid/p.png"> a & b\nsecond line'


def shown_as(tip: str) -> str:
    """The text a user sees: Qt renders a tooltip as rich text when mightBeRichText says so."""
    doc = QTextDocument()
    doc.setHtml(tip) if QtGui.Qt.mightBeRichText(tip) else doc.setPlainText(tip)
    return doc.toPlainText()


def test_model_tooltips_show_markup_literally(qapp):
    queries = QueryTableModel([{"id": "q1", "text": HOSTILE, "query_type": "factoid", "source": "log",
                                "status": "pending", "cluster": None, "reviewer": None}])
    records = RecordTableModel((("text", "Text"),))
    records.set_rows([{"text": HOSTILE}])
    for model in (queries, records):
        assert shown_as(model.data(model.index(0, 0), Qt.ToolTipRole)) == HOSTILE
        assert model.data(model.index(0, 0), Qt.DisplayRole) == HOSTILE


def test_chunk_tooltip_in_the_corpus_view_shows_the_tags(qtbot, empty_db, tmp_path):
    (tmp_path / "hostile.txt").write_text("Title\n\n<b>x</b> bold tags that must show as typed.\n")
    ingest(empty_db, [tmp_path / "hostile.txt"])
    view = CorpusView(empty_db)
    qtbot.addWidget(view)
    view.show()
    tip = view.chunk_list.item(0).toolTip()
    assert shown_as(tip) == "<b>x</b> bold tags that must show as typed."
    QToolTip.showText(view.mapToGlobal(QPoint(10, 10)), tip, view)
    qtbot.waitUntil(lambda: any(w.inherits("QTipLabel") for w in QApplication.topLevelWidgets() if w.isVisible()))
    label = next(w for w in QApplication.topLevelWidgets() if w.inherits("QTipLabel") and w.isVisible())
    label.grab().save("/tmp/s5i20-tooltip.png")
    assert shown_as(label.text()) == "<b>x</b> bold tags that must show as typed."
    QToolTip.hideText()
