"""The Corpus tab: documents, their chunks, full-text search and a chunk viewer."""

from __future__ import annotations

import sqlite_utils
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QLineEdit, QListWidget, QListWidgetItem, QPlainTextEdit, QSplitter,
                               QVBoxLayout, QWidget)

from curator.core.corpus import documents
from curator.core.corpus import search
from curator.gui.models import plain_tooltip
from curator.gui.review_view import plain_label


class CorpusView(QWidget):
    def __init__(self, db: sqlite_utils.Database, parent=None) -> None:
        super().__init__(parent)
        self.db = db
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
        layout = QVBoxLayout(self)
        layout.addWidget(self.search_box)
        layout.addWidget(split)
        self.reload()

    def reload(self) -> None:
        self.documents.clear()
        for doc in documents.list_documents(self.db):
            item = QListWidgetItem(f"{doc['path']}  ({doc['chunks']})")
            item.setData(Qt.UserRole, doc["path"])
            self.documents.addItem(item)
        if self.documents.count():
            self.documents.setCurrentRow(0)

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
