"""The Generate tab: model picker, type mix, count, start / cancel / resume, live rows.

Generation runs in a ``TaskWorker`` (a pool thread with its own SQLite connection). The task
adapter below wraps core's ``generate``: after each candidate is stored it reads that row
back through core and sends it on a ``RowFeed`` signal, so accepted rows and rejected
candidates (with their reasons) appear in the lists while the run goes on.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import sqlite_utils
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtWidgets import (QComboBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QMessageBox, QProgressBar, QPushButton, QSpinBox, QSplitter, QTableView,
                               QVBoxLayout, QWidget)

from curator.core.generation.runs import generation_runs, rejected_candidates
from curator.core.generation.backends import Backend
from curator.core.generation.generate import DEFAULT_MIX, QUERY_TYPES, GenerationConfig
from curator.gui import workers

RAW_ROLE = Qt.UserRole + 2  # the unformatted value of a cell (floats stay floats)
BUNDLED, GGUF, ENDPOINT = 0, 1, 2
MODEL_CHOICES = ("Bundled model (SmolLM2-135M)", "GGUF file on this computer", "OpenAI-compatible endpoint")
RESUMABLE = ("cancelled", "running")  # 'running' after a crash: the run never finished
ROW_COLUMNS = (("query_type", "Type"), ("text", "Question"), ("reference", "Reference answer"), ("quality", "Quality"))
REJECT_COLUMNS = (("query_type", "Type"), ("text", "Candidate"), ("reason", "Why rejected"))
NO_QUESTION = "(no question could be read from the model's reply)"
IDLE_FORMAT = "no run in progress"
ROW_HEIGHT = 24

BackendFactory = Callable[[GenerationConfig], Backend]


# -- a small table model shared by the Generate and Export / Evaluate tabs ----------------

class RecordTableModel(QAbstractTableModel):
    """Rows of dicts shown as a table of plain strings; ``columns`` is ((key, header), ...).

    Floats show with three decimals; ``RAW_ROLE`` gives a cell's value unformatted."""

    def __init__(self, columns: Sequence[tuple[str, str]], formats: Optional[dict] = None, parent=None) -> None:
        super().__init__(parent)
        self.keys = [key for key, _ in columns]
        self.headers = [header for _, header in columns]
        self.formats = formats or {}  # key -> callable(value) -> str
        self._rows: list[dict] = []

    def set_rows(self, rows: Sequence[dict], columns: Optional[Sequence[tuple[str, str]]] = None) -> None:
        """Replace every row (and optionally the columns) in one reset."""
        self.beginResetModel()
        if columns is not None:
            self.keys = [key for key, _ in columns]
            self.headers = [header for _, header in columns]
        self._rows = list(rows)
        self.endResetModel()

    def append_rows(self, rows: Sequence[dict]) -> None:
        if not rows:
            return
        first = len(self._rows)
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self._rows.extend(rows)
        self.endInsertRows()

    def rows(self) -> list[dict]:
        return list(self._rows)

    def text(self, row: int, column: int) -> str:
        value = self._rows[row].get(self.keys[column])
        if value is None:
            return ""
        fmt = self.formats.get(self.keys[column])
        if fmt is not None:
            return fmt(value)
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.keys)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.DisplayRole) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self._rows)):
            return None
        if role in (Qt.DisplayRole, Qt.ToolTipRole):
            return self.text(index.row(), index.column())
        if role == RAW_ROLE:
            return self._rows[index.row()].get(self.keys[index.column()])
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.DisplayRole) -> Any:
        if role != Qt.DisplayRole:
            return None
        if orientation == Qt.Horizontal:
            return self.headers[section] if 0 <= section < len(self.headers) else None
        return str(section + 1)


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
    return table


def show_error(parent: QWidget, what: str, todo: str, title: str = "Step failed") -> QMessageBox:
    """A non-blocking warning dialog: what happened (plain text), then what to do."""
    box = QMessageBox(QMessageBox.Warning, title, what, QMessageBox.Ok, parent)
    box.setTextFormat(Qt.PlainText)
    box.setInformativeText(todo)
    box.open()  # not exec(): never block the event loop (or a test) on a dialog
    return box


def plain(text: str = "", hint: bool = False) -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.PlainText)
    label.setWordWrap(True)
    if hint:
        label.setObjectName("hint")
    return label


# -- the task adapter (runs in the worker thread) -----------------------------------------

class RowFeed(QObject):
    """Created on the GUI thread; emitted from the worker, so delivery is queued to the GUI."""

    accepted = Signal(object)  # a query dict from core
    rejected = Signal(object)  # a rejected-candidate dict from core


class _Recording(Backend):
    """Delegates to a backend and keeps its last reply, so the adapter knows which row was made."""

    def __init__(self, inner: Backend) -> None:
        self.inner, self.id, self.last = inner, inner.id, ""

    def complete(self, messages, **params) -> str:
        self.last = self.inner.complete(messages, **params)
        return self.last

    def describe(self) -> dict:
        return self.inner.describe()


def _accepted_row(db: sqlite_utils.Database, raw: str) -> Optional[dict]:
    """The query just stored from ``raw``: its id is derived from the parsed text (stable ids)."""
    from curator.core.generation.prompts import parse_output
    from curator.core.queries.rows import get_query, make_query_id

    parsed = parse_output(raw)
    return get_query(db, make_query_id("synthetic", parsed[0])) if parsed else None


def _newest_rejected_id(db: sqlite_utils.Database) -> int:
    newest = rejected_candidates(db, limit=1)
    return int(newest[0]["id"]) if newest else 0


def _open_backend(config: GenerationConfig) -> Backend:
    from curator.core.generation.backends import open_backend

    return open_backend(config.model_path, config.endpoint, config.n_ctx, config.threads, config.seed)


def generate_task(db: sqlite_utils.Database, config: GenerationConfig, *, feed: Optional[RowFeed] = None,
                  backend_factory: Optional[BackendFactory] = None, on_progress=None, cancel=None) -> dict:
    """Run core's generate, feeding each stored row (accepted or rejected) back to the GUI."""
    from curator.core.generation.generate import generate

    backend = _Recording((backend_factory or _open_backend)(config))
    # Only rows stored from now on are fed: more accepted than before, or a newer rejected id.
    seen = {"accepted": 0, "rejected_id": _newest_rejected_id(db)}

    def progress(done: int, total: int, message: str) -> None:
        if feed is not None and done > seen["accepted"]:
            row = _accepted_row(db, backend.last)
            if row is not None:
                feed.accepted.emit(row)
        elif feed is not None:
            newest = rejected_candidates(db, limit=1)
            if newest and newest[0]["id"] > seen["rejected_id"]:
                seen["rejected_id"] = newest[0]["id"]
                feed.rejected.emit(newest[0])
        seen["accepted"] = done
        if on_progress is not None:
            on_progress(done, total, message)

    return generate(db, config, backend=backend, on_progress=progress, cancel=cancel)


# -- the view -------------------------------------------------------------------------------

def _last_run(db: sqlite_utils.Database) -> Optional[dict]:
    runs = generation_runs(db)
    if not runs:
        return None
    run = dict(runs[0])
    run["counts"] = json.loads(run["counts"]) if isinstance(run.get("counts"), str) else (run.get("counts") or {})
    return run


def _readable(candidate: dict) -> dict:
    """A rejected candidate whose reply had no question gets a placeholder instead of a blank cell."""
    return candidate if candidate.get("text") else {**candidate, "text": NO_QUESTION}


def describe_run(run: dict) -> str:
    counts = run.get("counts") or {}
    accepted = counts.get("accepted", 0)
    return (f"Last run {run['id']} ({run['backend']}): {run['status']}, {accepted} of {run['target']} rows accepted, "
            f"{counts.get('rejected', 0)} {'candidate' if counts.get('rejected', 0) == 1 else 'candidates'} rejected.")


class GenerateView(QWidget):
    project_changed = Signal()            # rows were added to the project
    task_finished = Signal(object)        # core's run summary
    task_failed = Signal(str, str)

    def __init__(self, db: sqlite_utils.Database, project_path: str | Path,
                 backend_factory: Optional[BackendFactory] = None, parent=None) -> None:
        super().__init__(parent)
        self.db, self.project_path = db, Path(project_path)
        self.backend_factory = backend_factory  # tests inject a scripted backend
        self.worker: Optional[workers.TaskWorker] = None
        self.feed: Optional[RowFeed] = None
        self.last_error: Optional[tuple[str, str]] = None
        self._dialog: Optional[QMessageBox] = None
        self._started = 0.0
        self._build()
        self.reload()

    # -- layout ----------------------------------------------------------------------------
    def _build(self) -> None:
        options = QHBoxLayout()
        options.addWidget(self._model_box(), 3)
        options.addWidget(self._mix_box(), 2)
        options.addWidget(self._run_box(), 2)
        self.rows_model = RecordTableModel(ROW_COLUMNS)
        self.rejected_model = RecordTableModel(REJECT_COLUMNS)
        self.rows_table = record_table(self.rows_model, stretch=(1, 2))
        self.rejected_table = record_table(self.rejected_model, stretch=(1,))
        self.rows_label = plain("New rows (this session)")
        self.rejected_label = plain("Rejected candidates")
        splitter = QSplitter()
        for label, table in ((self.rows_label, self.rows_table), (self.rejected_label, self.rejected_table)):
            pane = QWidget()
            col = QVBoxLayout(pane)
            col.setContentsMargins(0, 0, 0, 0)
            col.addWidget(label)
            col.addWidget(table, 1)
            splitter.addWidget(pane)
        splitter.setSizes([600, 500])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(options)
        layout.addLayout(self._progress_bar())
        layout.addWidget(splitter, 1)

    def _model_box(self) -> QGroupBox:
        box = QGroupBox("Model")
        self.model_choice = QComboBox()
        self.model_choice.addItems(list(MODEL_CHOICES))
        self.model_choice.currentIndexChanged.connect(self._model_changed)
        self.model_path = QLineEdit(placeholderText="path/to/model.gguf")
        self.browse_button = QPushButton("Choose…")
        self.browse_button.clicked.connect(self.choose_model)
        self.endpoint = QLineEdit(placeholderText="http://localhost:8080/v1")
        self.n_ctx = QSpinBox(minimum=512, maximum=32768, singleStep=512, value=2048)
        self.n_ctx.setToolTip("Context window in tokens (local models)")
        file_row = QHBoxLayout()
        file_row.addWidget(self.model_path, 1)
        file_row.addWidget(self.browse_button)
        form = QFormLayout(box)
        form.addRow("Backend", self.model_choice)
        form.addRow("GGUF file", file_row)
        form.addRow("Endpoint URL", self.endpoint)
        form.addRow("Context", self.n_ctx)
        self._model_changed(BUNDLED)
        return box

    def _mix_box(self) -> QGroupBox:
        box = QGroupBox("Type mix (weights, %)")
        form = QFormLayout(box)
        self.mix_spins: dict[str, QSpinBox] = {}
        for qtype in QUERY_TYPES:
            spin = QSpinBox(minimum=0, maximum=100, value=round(DEFAULT_MIX.get(qtype, 0) * 100))
            spin.setSuffix(" %")
            self.mix_spins[qtype] = spin
            form.addRow(qtype.replace("_", "-"), spin)
        return box

    def _run_box(self) -> QGroupBox:
        box = QGroupBox("Run")
        self.count = QSpinBox(minimum=1, maximum=100000, value=20)
        self.count.setToolTip("Accepted rows wanted")
        self.seed = QSpinBox(minimum=0, maximum=2**31 - 1, value=0)
        self.start_button = QPushButton("Start")
        self.start_button.clicked.connect(self.start)
        self.resume_button = QPushButton("Resume last run")
        self.resume_button.clicked.connect(self.resume)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setEnabled(False)
        self.run_status = plain(hint=True)
        form = QFormLayout(box)
        form.addRow("Rows", self.count)
        form.addRow("Seed", self.seed)
        buttons = QHBoxLayout()
        for button in (self.start_button, self.resume_button, self.cancel_button):
            buttons.addWidget(button)
        form.addRow(buttons)
        form.addRow(self.run_status)
        return box

    def _progress_bar(self) -> QVBoxLayout:
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat(IDLE_FORMAT)
        self.rate = plain()
        self.rate.setMinimumWidth(260)
        self.status = plain()
        bar = QHBoxLayout()
        bar.addWidget(self.progress, 2)
        bar.addWidget(self.rate)
        column = QVBoxLayout()
        column.addLayout(bar)
        column.addWidget(self.status)
        return column

    def _model_changed(self, index: int) -> None:
        for widget in (self.model_path, self.browse_button):
            widget.setEnabled(index == GGUF)
        self.endpoint.setEnabled(index == ENDPOINT)
        self.n_ctx.setEnabled(index != ENDPOINT)

    def choose_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a GGUF model", "", "GGUF models (*.gguf);;All files (*)")
        if path:
            self.model_path.setText(path)
            self.model_choice.setCurrentIndex(GGUF)

    # -- data ------------------------------------------------------------------------------
    def reload(self) -> None:
        """Show the last run and its rejected candidates; enable Resume if it did not finish."""
        run = _last_run(self.db)
        if run is None:
            self.run_status.setText("No generation run yet.")
            self.rejected_model.set_rows([])
        else:
            self.run_status.setText(describe_run(run))
            self.rejected_model.set_rows([_readable(r) for r in rejected_candidates(self.db, run_id=run["id"])])
        self._update_labels()
        self.resume_button.setEnabled(self.worker is None and self.can_resume())

    def can_resume(self) -> bool:
        run = _last_run(self.db)
        return run is not None and run["status"] in RESUMABLE

    def _update_labels(self) -> None:
        self.rows_label.setText(f"New rows made in this session: {self.rows_model.rowCount()} "
                                "(every query is in the Queries tab)")
        self.rejected_label.setText(f"Rejected candidates: {self.rejected_model.rowCount()}")

    def mix(self) -> dict[str, float]:
        return {t: spin.value() / 100 for t, spin in self.mix_spins.items() if spin.value() > 0}

    def config(self, resume: bool = False) -> Optional[GenerationConfig]:
        """The run's settings from the form, or None after telling the user what is missing."""
        mix = self.mix()
        if not mix and not resume:
            self._failed("Every query type has weight 0.", "Give at least one type a weight above 0 %.")
            return None
        choice = self.model_choice.currentIndex()
        model_path = self.model_path.text().strip() or None
        endpoint = self.endpoint.text().strip() or None
        if choice == GGUF and not model_path:
            self._failed("No GGUF file chosen.", "Choose a .gguf model file, or pick the bundled model.")
            return None
        if choice == ENDPOINT and not endpoint:
            self._failed("No endpoint URL given.", "Type the server's URL, e.g. http://localhost:8080/v1.")
            return None
        return GenerationConfig(count=self.count.value(), mix=mix, seed=self.seed.value(),
                                model_path=model_path if choice == GGUF else None,
                                endpoint=endpoint if choice == ENDPOINT else None,
                                n_ctx=self.n_ctx.value(), resume=resume)

    # -- tasks -----------------------------------------------------------------------------
    def start(self) -> Optional[workers.TaskWorker]:
        config = self.config()
        return self._start(config) if config else None

    def resume(self) -> Optional[workers.TaskWorker]:
        if not self.can_resume():
            self._failed("There is no unfinished generation run to resume.", "Start a new run instead.")
            return None
        config = self.config(resume=True)
        return self._start(config) if config else None

    def busy(self) -> bool:
        return self.worker is not None

    def _start(self, config: GenerationConfig) -> Optional[workers.TaskWorker]:
        if self.worker is not None:
            return None
        self.feed = RowFeed(self)
        self.feed.accepted.connect(self._row_accepted)
        self.feed.rejected.connect(self._row_rejected)
        if not config.resume:
            self.rejected_model.set_rows([])
        self._set_busy(True, "Resuming the last run…" if config.resume else "Loading the model…")
        self.worker = workers.launch(
            self.project_path, generate_task, config, feed=self.feed, backend_factory=self.backend_factory,
            progress=self._progress, finished=self._finished, failed=self._failed, cancelled=self._cancelled,
            done=self._done)
        return self.worker

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.status.setText("Cancelling after the row in flight…")

    def shutdown(self) -> None:
        """Ask a running generation to stop (the window is closing); rows made so far are kept."""
        self.cancel()

    def _set_busy(self, busy: bool, message: str = "") -> None:
        for widget in (self.start_button, self.count, self.seed, self.model_choice, *self.mix_spins.values()):
            widget.setEnabled(not busy)
        self.resume_button.setEnabled(not busy and self.can_resume())
        self.cancel_button.setEnabled(busy)
        if busy:
            self._started = time.monotonic()
            self.progress.setRange(0, 0)  # busy indicator until the first row
            self.rate.setText("")
            self.status.setText(message)

    def _progress(self, done: int, total: int, message: str) -> None:
        self.progress.setFormat("%v / %m rows")
        workers.show_progress(self.progress, done, total)
        minutes = max(time.monotonic() - self._started, 1e-6) / 60
        self.rate.setText(f"{done / minutes:.1f} rows/min")
        self.status.setText(message)

    def _row_accepted(self, row: dict) -> None:
        self.rows_model.append_rows([row])
        self._update_labels()
        self.rows_table.scrollToBottom()

    def _row_rejected(self, row: dict) -> None:
        self.rejected_model.append_rows([_readable(row)])
        self._update_labels()

    def _finished(self, summary: dict) -> None:
        if summary.get("status") == "cancelled":  # core returns a summary when cancelled
            self._cancelled(summary)
            self.task_finished.emit(summary)
            return
        self.status.setText(f"Run {summary['run_id']} {summary['status']}: {summary['accepted_this_session']} rows "
                            f"accepted this session, {summary['rejected']} rejected in all, "
                            f"{summary['seconds']:.1f} s ({summary['rows_per_min']:.1f} rows/min).")
        self.rate.setText(f"{summary['rows_per_min']:.1f} rows/min")  # core's figure for the whole run
        self.project_changed.emit()
        self.task_finished.emit(summary)

    def _cancelled(self, summary: Optional[dict] = None) -> None:
        made = f" {summary['accepted_this_session']} rows made this session are kept;" if summary else ""
        self.status.setText(f"Cancelled;{made or ' rows made so far are kept;'} Resume continues the run.")
        self.project_changed.emit()

    def _failed(self, what: str, todo: str) -> None:
        self.last_error = (what, todo)
        self.status.setText(f"Failed: {what}")
        self._dialog = show_error(self, what, todo, "Generation failed")
        self.task_failed.emit(what, todo)

    def _done(self) -> None:
        self.worker = None
        self._set_busy(False)
        if self.progress.maximum() == 0:  # ended before the first row
            self.progress.setRange(0, 1)
            self.progress.setValue(0)
            self.progress.setFormat(IDLE_FORMAT)
        self.reload()
