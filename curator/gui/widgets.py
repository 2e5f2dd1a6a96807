"""Small widgets and helpers every view uses: plain-text labels, read-only record tables, a path
field with its Choose… button, the edit-box keys, and the wording helpers for counts.

Views import these from here, never from another view (tests/test_layering.py holds the rule),
so a view can be changed or removed without breaking its neighbours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import sqlite_utils
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton, QTableView, QVBoxLayout, QWidget

from curator.gui.models import RecordTableModel

ROW_HEIGHT = 24  # every table row the same height: sizing each row took 42 s at 100k rows


def plain_label(text: str = "", *, bold: bool = False, hint: bool = False) -> QLabel:
    """A word-wrapped, selectable QLabel that never interprets user text as rich text;
    ``hint`` gives it the style sheet's quieter look."""
    label = QLabel(text)
    label.setTextFormat(Qt.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextSelectableByMouse)
    if bold:
        font = label.font()
        font.setBold(True)
        label.setFont(font)
    if hint:
        label.setObjectName("hint")
    return label


def record_table(model: RecordTableModel, stretch: Sequence[int] = (1,)) -> QTableView:
    """A read-only table of a RecordTableModel with fixed row heights (never size every row)."""
    table = QTableView()
    table.setModel(model)
    table.setSelectionBehavior(QTableView.SelectRows)
    table.setEditTriggers(QTableView.NoEditTriggers)
    table.setAlternatingRowColors(True)
    table.setWordWrap(False)
    vh = table.verticalHeader()
    vh.setSectionResizeMode(QHeaderView.Fixed)
    vh.setDefaultSectionSize(ROW_HEIGHT)
    vh.hide()
    hh = table.horizontalHeader()
    hh.setSectionResizeMode(QHeaderView.ResizeToContents)
    for column in stretch:
        if 0 <= column < model.columnCount():
            hh.setSectionResizeMode(column, QHeaderView.Stretch)
    hh.setMinimumSectionSize(readable_width(hh, model))
    return table


def readable_width(header: QHeaderView, model: RecordTableModel) -> int:
    """The narrowest a column may get: its widest header title in full. A stretched column in a
    narrow table otherwise shrank to a sliver ("andidat"); now the table scrolls sideways."""
    titles = [str(model.headerData(c, Qt.Horizontal) or "") for c in range(model.columnCount())]
    return max([header.fontMetrics().horizontalAdvance(t) for t in titles] + [40]) + 24


def path_row(edit: QLineEdit, choose: QPushButton, on_choose: Callable[[], None]) -> QHBoxLayout:
    """A path field with its "Choose…" button beside it, the button opening ``on_choose``."""
    choose.clicked.connect(on_choose)
    row = QHBoxLayout()
    row.addWidget(edit, 1)
    row.addWidget(choose)
    return row


def titled(header: QWidget, body: QWidget) -> QWidget:
    """``header`` above ``body`` (which takes the spare height), without margins: a splitter pane."""
    pane = QWidget()
    col = QVBoxLayout(pane)
    col.setContentsMargins(0, 0, 0, 0)
    col.addWidget(header)
    col.addWidget(body, 1)
    return pane


class EditKeys(QObject):
    """Ctrl+Enter saves and Esc cancels while an edit box has focus (install as an event filter)."""

    def __init__(self, save: Callable[[], None], cancel: Callable[[], None]) -> None:
        super().__init__()
        self.save, self.cancel = save, cancel

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 (Qt's naming)
        if event.type() == QEvent.KeyPress:
            if event.key() in (Qt.Key_Return, Qt.Key_Enter) and event.modifiers() & Qt.ControlModifier:
                self.save()
                return True
            if event.key() == Qt.Key_Escape:
                self.cancel()
                return True
        return False


def plural(n: int, word: str, many: str = "") -> str:
    """``n`` with ``word``, or with its plural (``many``, else ``word`` + "s") when n is not 1."""
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def project_file(db: sqlite_utils.Database) -> Path:
    """The file a connection has open (a worker opens its own connection on it)."""
    return Path(db.execute("PRAGMA database_list").fetchone()[2])
