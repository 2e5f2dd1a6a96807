"""The Queries tab: every query in a table model + filter proxy, smooth with 100k rows; Import log.

Import log runs core's ``detect_fields`` and then ``import_log`` in workers (``TaskView``); in
between, ``ImportLogDialog`` shows the detected field mapping for the user to check or change.
Bad lines come back as file:line messages and are listed; the rest of the log is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import sqlite_utils
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QComboBox, QFileDialog, QHBoxLayout, QHeaderView, QLineEdit, QListWidget, QPushButton,
                               QTableView, QVBoxLayout, QWidget)

from curator.core.queries.logs import detect_fields, import_log
from curator.core.queries.rows import get_query, list_queries
from curator.gui import workers
from curator.gui.empty_state import EmptyStack, EmptyState
from curator.gui.import_log_dialog import ImportLogDialog
from curator.gui.models import COLUMNS, HEADERS, ID_ROLE, QueryFilterProxy, QueryTableModel
from curator.gui.task_view import TaskView
from curator.gui.widgets import ROW_HEIGHT, plain_label, plural, project_file

FILTER_COLUMNS = (1, 2, 3, 4, 5)  # every column except the text, which has the search box
LOG_FILTER = "Query logs (*.jsonl *.csv *.tsv *.json *.txt);;All files (*)"
EMPTY_TEXT = ("No queries yet. Import a production query log (CSV or JSONL, with feedback if you have it), "
              "or generate synthetic queries from the corpus.")


def detect_task(db, path: str, *, on_progress=None, cancel=None) -> dict:
    """Core's field detection as a task (it reads the whole file once, so not on the GUI thread)."""
    return workers.one_step("reading the log's fields", lambda: detect_fields(path), on_progress, cancel)


def import_summary(result: dict) -> str:
    name = Path(result["file"]).name
    if result.get("already_imported"):
        return f"{name} was already imported ({result.get('first_imported_at') or 'earlier'}); nothing changed."
    skipped = f"; {plural(result['skipped'], 'line')} skipped (listed below)" if result["skipped"] else ""
    if result["warnings"]:
        skipped += f"; {plural(len(result['warnings']), 'line')} imported with a warning (listed below)"
    return (f"Imported {plural(result['imported'], 'query', 'queries')} from {name} "
            f"({result['merged']} repeats merged, "
            f"{result['negative']} with negative feedback){skipped}.")


class QueriesView(TaskView, QWidget):
    open_query = Signal(str)  # double-click: review this row
    project_changed = Signal()  # a log import added queries
    filter_cleared = Signal()  # "Show all": the map selection that filtered this tab is dropped
    generate_requested = Signal()  # the empty state's "Generate…" button
    task_finished = Signal(object)
    task_failed = Signal(str, str)
    failure_title = "Log import failed"
    cancel_message = "Cancelling: the rows already committed are kept…"

    def __init__(self, db: sqlite_utils.Database, project_path: Optional[str | Path] = None, parent=None) -> None:
        super().__init__(parent)
        self.db = db
        self.project_path = Path(project_path) if project_path else project_file(db)
        self.init_tasks()
        self.import_dialog: Optional[ImportLogDialog] = None
        self._detected: Optional[dict] = None
        self.task_finished.connect(self._task_announced)
        self.last_import: Optional[dict] = None
        self.model = QueryTableModel()
        self.proxy = QueryFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        empty = EmptyState(EMPTY_TEXT, [("Import log…", self.choose_log), ("Generate…", self.generate_requested.emit)])
        self.stack = EmptyStack(self._table_page(), empty)
        layout = QVBoxLayout(self)
        layout.addLayout(self._import_bar())
        layout.addWidget(self.errors)
        layout.addWidget(self.stack, 1)
        self.reload()

    def _import_bar(self) -> QHBoxLayout:
        self.import_button = QPushButton("Import log…")
        self.import_button.clicked.connect(self.choose_log)
        self.errors = QListWidget()
        self.errors.setMaximumHeight(100)
        self.errors.hide()
        bar = QHBoxLayout()
        bar.addWidget(self.import_button)
        bar.addWidget(self.task_bar, 1)
        return bar

    def _filter_bar(self) -> QWidget:
        """Shown while a map selection filters the table, with the way back to every query."""
        self.filter_bar = QWidget()
        self.filter_bar.setObjectName("focusBar")
        row = QHBoxLayout(self.filter_bar)
        row.setContentsMargins(0, 0, 0, 0)
        self.filter_label = plain_label()
        show_all = QPushButton("Show all queries")
        show_all.clicked.connect(self.clear_filter)
        row.addWidget(self.filter_label, 1)
        row.addWidget(show_all)
        self.filter_bar.hide()
        return self.filter_bar

    def _table_page(self) -> QWidget:
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
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._filter_bar())
        layout.addLayout(bar)
        layout.addWidget(self.table)
        return page

    def reload(self) -> None:
        self.set_rows(list_queries(self.db))

    def set_rows(self, rows: list[dict]) -> None:
        self.model.set_rows(rows)
        self.stack.show_empty(not rows)
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
        self.filter_bar.setVisible(bool(ids))
        if ids:
            self.filter_label.setText(f"Showing the {len(ids)} queries selected on the cluster map.")

    def clear_filter(self) -> None:
        self.filter_ids(None)
        self.filter_cleared.emit()

    def visible_count(self) -> int:
        return self.proxy.rowCount()

    # -- import log ----------------------------------------------------------------------------
    def choose_log(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import a query log", "", LOG_FILTER)
        if path:
            self.import_path(path)

    def import_path(self, path: str):
        """Detect the log's fields in a worker, then show the mapping dialog; the import starts on OK."""
        return self.run_task(detect_task, str(path), message=f"Reading {Path(path).name}…",
                             finished=self._fields_detected, cancelled=lambda: self.status.setText("Cancelled."))

    def _fields_detected(self, detected: dict) -> tuple:
        self._detected = detected  # the dialog opens once the view is idle, so its OK can start the import
        return (detected,)

    def _task_announced(self, _result) -> None:
        detected, self._detected = self._detected, None
        if detected is None:
            return
        self.import_dialog = ImportLogDialog(detected, self)
        self.import_dialog.accepted.connect(lambda: self.start_import(detected["file"], **self.import_dialog.choices()))
        self.import_dialog.open()  # not exec(): the event loop (and a test) goes on

    def start_import(self, path: str, **choices):
        return self.run_task(import_log, path, message=f"Importing {Path(path).name}…", finished=self._imported,
                             cancelled=self._import_cancelled, **choices)

    def _imported(self, result: dict) -> tuple:
        self.last_import = result
        self.status.setText(import_summary(result))
        self.errors.clear()
        self.errors.addItems(result["errors"] + result["warnings"])
        self.errors.setVisible(bool(result["errors"] or result["warnings"]))
        self.reload()
        self.project_changed.emit()
        return (result,)

    def _import_cancelled(self) -> None:
        self.status.setText("Cancelled: the rows committed so far are kept; import the file again to continue.")
        self.reload()
        self.project_changed.emit()

    def set_busy(self, busy: bool, message: str = "") -> None:
        self.import_button.setEnabled(not busy)
        for button in self.stack.empty.buttons:
            button.setEnabled(not busy)
        super().set_busy(busy, message)
