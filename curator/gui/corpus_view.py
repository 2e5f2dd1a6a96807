"""The Corpus tab: add files and folders (dialogs or drag and drop), documents, chunks, search.

Ingest is core's own ``ingest`` (the CLI's), run in a worker through ``TaskView``: progress,
cancel (files stored before the cancel are kept), then the skipped-files report, each file
with its reason, so a bad file is named and the rest of the batch goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import sqlite_utils
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLineEdit, QListWidget, QListWidgetItem,
                               QPlainTextEdit, QPushButton, QSplitter, QVBoxLayout, QWidget)

from curator.core.corpus import documents
from curator.core.corpus import search
from curator.core.corpus.ingest import IngestReport, corpus_sources, ingest, reingest
from curator.core.corpus.loaders import SUPPORTED_SUFFIXES
from curator.gui.empty_state import EmptyStack, EmptyState
from curator.gui.models import plain_tooltip
from curator.gui.task_view import TaskView
from curator.gui.widgets import plain_label, plural, project_file

FORMATS = " ".join(sorted(SUPPORTED_SUFFIXES))
FORMATS_LINE = f"Formats: {FORMATS} (a BEIR corpus.jsonl keeps its ids; other files are skipped)"
FILE_FILTER = f"Documents ({' '.join('*' + s for s in sorted(SUPPORTED_SUFFIXES))});;All files (*)"
EMPTY_TEXT = ("No documents yet. Add the folder of documents you want questions about, "
              "or drop files and folders here.\n" + FORMATS_LINE)


def summary(result: IngestReport) -> str:
    """One line a user can act on: what was stored, what was skipped, what the project holds now.
    The counts that appear only when non-zero say what `curator ingest` says."""
    changes = [f"{result.chunks_retired} retired" if result.chunks_retired else "",
               f"changed in place {result.chunks_changed}" if result.chunks_changed else ""]
    parts = [f"Ingested {plural(result.files_ingested, 'file')} ({plural(result.chunks_added, 'new chunk')}"
             + "".join(f", {c}" for c in changes if c) + ")",
             f"{result.files_unchanged} unchanged"]
    if result.ids_refused:  # each refused record is also a file:line warning in the list below
        parts.append(f"records refused for a taken id {result.ids_refused}")
    if result.skipped or result.line_errors:
        parts.append(f"{plural(len(result.skipped), 'file')} skipped, {plural(len(result.line_errors), 'bad line')} "
                     "(listed below)")
    if result.queries_stale:
        # a gold chunk retired, or a passage edited under its id since the query was labelled
        parts.append(f"{result.queries_stale} queries with stale gold labels: review them again")
    return "; ".join(parts) + f". The project holds {result.total_documents} documents, {result.total_chunks} chunks."


def dropped_paths(mime) -> list[str]:
    """Local files and folders in a drag; anything else (a web link, text) gives none."""
    if not mime.hasUrls():
        return []
    urls = mime.urls()
    return [url.toLocalFile() for url in urls] if all(url.isLocalFile() for url in urls) else []


class CorpusView(TaskView, QWidget):
    project_changed = Signal()  # documents were added or changed: other views re-read
    task_finished = Signal(object)  # core's IngestReport
    task_failed = Signal(str, str)
    failure_title = "Ingest failed"
    cancel_message = "Cancelling: files already stored are kept…"

    def __init__(self, db: sqlite_utils.Database, project_path: Optional[str | Path] = None, parent=None) -> None:
        super().__init__(parent)
        self.db = db
        self.project_path = Path(project_path) if project_path else project_file(db)
        self.init_tasks()
        self.last_report: Optional[IngestReport] = None
        self.setAcceptDrops(True)
        self._build()
        self.reload()

    # -- layout ----------------------------------------------------------------------------
    def _build(self) -> None:
        self.stack = EmptyStack(self._content(), EmptyState(EMPTY_TEXT, [("Add folder…", self.add_folder),
                                                                         ("Add files…", self.add_files)]))
        layout = QVBoxLayout(self)
        layout.addLayout(self._ingest_bar())
        layout.addWidget(self.task_bar)
        layout.addWidget(self.skipped_label)
        layout.addWidget(self.skipped_list)
        layout.addWidget(self.stack, 1)

    def _ingest_bar(self) -> QHBoxLayout:
        self.add_files_button = QPushButton("Add files…")
        self.add_files_button.clicked.connect(self.add_files)
        self.add_folder_button = QPushButton("Add folder…")
        self.add_folder_button.clicked.connect(self.add_folder)
        self.reingest_button = QPushButton("Re-ingest")
        self.reingest_button.setToolTip("Read every folder and file added so far again: changed files update "
                                        "their chunks, unchanged ones are skipped.")
        self.reingest_button.clicked.connect(self.reingest)
        self.formats = plain_label(FORMATS_LINE)
        self.skipped_label = plain_label(bold=True)
        self.skipped_list = QListWidget()
        self.skipped_list.setMaximumHeight(120)
        self._show_skipped(None)
        bar = QHBoxLayout()
        for button in (self.add_files_button, self.add_folder_button, self.reingest_button):
            bar.addWidget(button)
        bar.addWidget(self.formats, 1)
        return bar

    def _content(self) -> QWidget:
        self.search_box = QLineEdit(placeholderText="Search all chunks (full text)…")
        self.search_box.textChanged.connect(self.run_search)
        self.documents = QListWidget()
        self.documents.currentItemChanged.connect(self._doc_changed)
        self.chunk_list = QListWidget()
        self.chunk_list.currentItemChanged.connect(self._chunk_changed)
        self.heading = plain_label(bold=True)
        self.viewer = QPlainTextEdit()
        self.viewer.setReadOnly(True)
        right = QWidget()
        col = QVBoxLayout(right)
        col.addWidget(self.heading)
        col.addWidget(self.viewer)
        split = QSplitter()
        split.addWidget(self.documents)
        split.addWidget(self.chunk_list)
        split.addWidget(right)
        split.setSizes([260, 320, 520])
        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.search_box)
        layout.addWidget(split)
        return content

    # -- adding documents --------------------------------------------------------------------
    def add_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Add files to the corpus", "", FILE_FILTER)
        if paths:
            self.ingest_paths(paths)

    def add_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Add a folder of documents")
        if path:
            self.ingest_paths([path])

    def ingest_paths(self, paths: list[str]):
        """Ingest these files and folders in a worker; None if a task is already running."""
        names = ", ".join(Path(p).name for p in paths[:3]) + (" …" if len(paths) > 3 else "")
        return self.run_task(ingest, list(paths), message=f"Ingesting {names}…", finished=self._finished,
                             cancelled=self._cancelled)

    def reingest(self):
        return self.run_task(reingest, message="Re-ingesting the corpus…", finished=self._finished,
                             cancelled=self._cancelled)

    def dragEnterEvent(self, event) -> None:
        if dropped_paths(event.mimeData()) and not self.busy():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        paths = dropped_paths(event.mimeData())
        if paths and self.ingest_paths(paths) is not None:
            event.acceptProposedAction()

    # -- task outcome --------------------------------------------------------------------------
    def set_busy(self, busy: bool, message: str = "") -> None:
        for button in (self.add_files_button, self.add_folder_button, *self.stack.empty.buttons):
            button.setEnabled(not busy)
        self.reingest_button.setEnabled(not busy and bool(corpus_sources(self.db)))
        super().set_busy(busy, message)

    def show_task_progress(self, done: int, total: int, message: str) -> None:
        super().show_task_progress(done, total, message)
        if message and message != "done":
            self.status.setText(f"Ingesting {done} of {total}: {message}")

    def _finished(self, result: IngestReport) -> tuple:
        self.last_report = result
        self.status.setText(summary(result))
        self._show_skipped(result)
        self._after_change()
        return (result,)

    def _cancelled(self) -> None:
        self.status.setText("Cancelled: the files stored before the cancel are kept; Re-ingest picks up the rest.")
        self._after_change()

    def _after_change(self) -> None:
        self.reload()
        self.project_changed.emit()

    def _show_skipped(self, result: Optional[IngestReport]) -> None:
        self.skipped_list.clear()
        skipped = result.skipped if result else []
        lines = result.line_errors if result else []
        for entry in skipped:
            self.skipped_list.addItem(QListWidgetItem(f"{entry['path']} — {entry['reason']}"))
        for line in lines:
            self.skipped_list.addItem(QListWidgetItem(line))
        self.skipped_label.setText(f"Skipped: {plural(len(skipped), 'file')}, {plural(len(lines), 'bad line')}")
        self.skipped_label.setVisible(bool(skipped or lines))
        self.skipped_list.setVisible(bool(skipped or lines))

    # -- documents and chunks ------------------------------------------------------------------
    def reload(self) -> None:
        self.documents.clear()
        for doc in documents.list_documents(self.db):
            item = QListWidgetItem(f"{doc['path']}  ({doc['chunks']})")
            item.setData(Qt.UserRole, doc["path"])
            self.documents.addItem(item)
        if self.documents.count():
            self.documents.setCurrentRow(0)
        self.stack.show_empty(self.documents.count() == 0)
        self.reingest_button.setEnabled(not self.busy() and bool(corpus_sources(self.db)))

    def _fill_chunks(self, rows: list[dict]) -> None:
        self.chunk_list.clear()
        for chunk in rows:
            item = QListWidgetItem(f"{chunk['title'] or chunk['id']}")
            item.setToolTip(plain_tooltip(chunk["text"][:300]))
            item.setData(Qt.UserRole, chunk)
            self.chunk_list.addItem(item)
        if self.chunk_list.count():
            self.chunk_list.setCurrentRow(0)

    def _doc_changed(self, item, _previous=None) -> None:
        if item is not None:
            self._fill_chunks(documents.list_chunks(self.db, item.data(Qt.UserRole)))

    def run_search(self, text: str) -> None:
        if text.strip():
            self._fill_chunks(search.search_chunks(self.db, text, limit=50))
        else:
            self._doc_changed(self.documents.currentItem())

    def _chunk_changed(self, item, _previous=None) -> None:
        if item is None:
            return
        chunk = item.data(Qt.UserRole)
        self.heading.setText(f"{chunk['doc_path']}  ›  {chunk['title'] or ''}   ({chunk['id']})")
        self.viewer.setPlainText(chunk["text"])
