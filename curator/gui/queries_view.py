"""The Queries tab: every query in a table model + filter proxy, smooth with 100k rows."""

from __future__ import annotations

import sqlite_utils
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QHeaderView, QLineEdit, QTableView, QVBoxLayout, QWidget

from curator.core.queries.rows import get_query, list_queries
from curator.gui.models import COLUMNS, HEADERS, ID_ROLE, QueryFilterProxy, QueryTableModel

FILTER_COLUMNS = (1, 2, 3, 4, 5)  # every column except the text, which has the search box
ROW_HEIGHT = 24


class QueriesView(QWidget):
    open_query = Signal(str)  # double-click: review this row

    def __init__(self, db: sqlite_utils.Database, parent=None) -> None:
        super().__init__(parent)
        self.db = db
        self.model = QueryTableModel()
        self.proxy = QueryFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.search = QLineEdit(placeholderText="Filter by text…")
        self.search.textChanged.connect(self.proxy.set_text)
        self.combos: dict[int, QComboBox] = {}
        bar = QHBoxLayout()
        bar.addWidget(self.search, 2)
        for col in FILTER_COLUMNS:
            combo = QComboBox()
            combo.setMinimumWidth(110)
            combo.currentIndexChanged.connect(lambda _i, c=col: self._combo_changed(c))
            self.combos[col] = combo
            bar.addWidget(combo)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableView.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        vh = self.table.verticalHeader()
        vh.setSectionResizeMode(QHeaderView.Fixed)  # never size every row: 42 s at 100k rows
        vh.setDefaultSectionSize(ROW_HEIGHT)
        vh.hide()
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(0, QHeaderView.Stretch)
        for col in range(1, len(COLUMNS)):
            hh.setSectionResizeMode(col, QHeaderView.Interactive)
            hh.resizeSection(col, 110)
        self.table.doubleClicked.connect(lambda idx: self.open_query.emit(idx.data(ID_ROLE)))
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.table)
        self.reload()

    def reload(self) -> None:
        self.set_rows(list_queries(self.db))

    def set_rows(self, rows: list[dict]) -> None:
        self.model.set_rows(rows)
        for col, combo in self.combos.items():
            current = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItem(f"All {HEADERS[col].lower()}", None)
            for value in self.model.distinct(col):
                combo.addItem(value or "(none)", value)
            found = combo.findText(current)
            combo.setCurrentIndex(max(found, 0))
            combo.blockSignals(False)

    def _combo_changed(self, col: int) -> None:
        combo = self.combos[col]
        value = combo.currentData()
        self.proxy.set_column_filter(col, value if combo.currentIndex() > 0 else None)

    def update_query(self, query_id: str) -> None:
        row = get_query(self.db, query_id)
        if row:
            self.model.update_row(row)

    def filter_ids(self, ids: set[str] | None) -> None:
        """Show only these queries (a region chosen on the cluster map); None shows all."""
        self.proxy.set_ids(ids)

    def visible_count(self) -> int:
        return self.proxy.rowCount()
