"""The G dialog: search the corpus, preview a chunk with its neighbours, choose gold chunks with
grades. Keyboard only is enough: type to search, Down/Up walk the results (the preview follows),
Enter adds the selected result, Tab moves to the chosen list, 1-2 grade the selected gold chunk
(store.gold.GRADES: 1 relevant, 2 highly relevant), Delete removes it, Ctrl+Enter saves, Esc cancels."""

from __future__ import annotations

from typing import Optional

import sqlite_utils
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QLabel, QLineEdit, QListWidget, QListWidgetItem, QSplitter,
                               QTextEdit, QVBoxLayout, QWidget)

from curator.core.corpus import documents, search
from curator.core.store.gold import GOLD_GRADES, RELEVANT, grade_name
from curator.gui.highlight import content_words, highlight

_ID, _GRADE, _LABEL = Qt.UserRole, Qt.UserRole + 1, Qt.UserRole + 2
# Styling ::item switches the list to style-sheet painting, whose selection is a pale fill while the
# text keeps the palette's white "highlighted text": selected rows came out blank. So the selected
# colours are set together with the item style.
_LIST_STYLE = ("QListWidget::item { border-bottom: 1px solid #d1d5db; padding: 4px 2px; }"
               "QListWidget::item:selected { background: #bfdbfe; color: #111827; }"
               "QListWidget::item:selected:!active { background: #e5e7eb; color: #111827; }")


def _heading(text: str, buddy: Optional[QWidget] = None) -> QLabel:
    """A bold section label; with a buddy its &-mnemonic (Alt+letter) focuses that widget."""
    label = QLabel(text)
    label.setTextFormat(Qt.PlainText)
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    if buddy is not None:
        label.setBuddy(buddy)
    return label


def chunk_label(chunk: dict) -> str:
    return f"{chunk.get('doc_path') or chunk.get('path') or ''}  ›  {chunk.get('title') or '(no heading)'}"


class _ListKeys(QObject):
    """Enter on the results adds; the gold grades' digits (1, 2) and Delete on the chosen list grade and
    remove."""

    def __init__(self, dialog: "GoldDialog") -> None:
        super().__init__(dialog)
        self.dialog = dialog

    def eventFilter(self, obj, event) -> bool:
        if event.type() != QEvent.KeyPress or event.modifiers() & Qt.ControlModifier:
            return False
        key = event.key()
        if obj is self.dialog.results and key in (Qt.Key_Return, Qt.Key_Enter, Qt.Key_Insert):
            self.dialog.add_selected()
            return True
        if obj is self.dialog.chosen and key in (Qt.Key_Delete, Qt.Key_Backspace):
            self.dialog.remove_selected()
            return True
        if obj is self.dialog.chosen and Qt.Key_0 <= key <= Qt.Key_9:
            if key - Qt.Key_0 in GOLD_GRADES:
                self.dialog.set_grade(key - Qt.Key_0)
            return True  # another digit is no grade: swallowed, not a jump to an item named by it
        if obj is self.dialog.search_box and key == Qt.Key_Down:
            self.dialog.results.setFocus()
            return True
        return False


class GoldDialog(QDialog):
    """Search the corpus and pick one or more gold chunks, each with a gold grade (1 relevant, 2 highly
    relevant).

    ``suggested`` (chunk dicts, best first) fill the result list before anything is typed."""

    def __init__(self, db: sqlite_utils.Database, current: list[str], grades: dict, parent=None,
                 suggested: Optional[list[dict]] = None, question: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Gold chunks")
        self.db, self.suggested = db, suggested or []
        self._build()
        for chunk in documents.get_chunks(db, current):
            self._add(chunk["id"], chunk_label(chunk), int(grades.get(chunk["id"], RELEVANT)))
        self._show_results(self.suggested, "Suggested for this query" if self.suggested else "Results")
        if question and not self.suggested:  # nothing suggested: start from the question's own words
            self.search_box.setText(question)
        self.search_box.setFocus()
        self.resize(1200, 720)

    # -- layout ----------------------------------------------------------------------------
    def _build(self) -> None:
        self.search_box = QLineEdit(placeholderText="Search the corpus (words, \"a phrase\")…")
        self.results, self.chosen = QListWidget(), QListWidget()
        for view in (self.results, self.chosen):
            view.setStyleSheet(_LIST_STYLE)
            view.setWordWrap(True)
        self.preview = QTextEdit(readOnly=True)
        self.preview.setAcceptRichText(False)
        self.preview.setFocusPolicy(Qt.ClickFocus)
        self.results_label = _heading("&Results", self.results)
        buttons = QDialogButtonBox(QDialogButtonBox.Save | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        left = QWidget()
        lcol = QVBoxLayout(left)
        lcol.addWidget(_heading("&Search", self.search_box))
        lcol.addWidget(self.search_box)
        lcol.addWidget(self.results_label)
        lcol.addWidget(self.results, 1)
        middle = QWidget()
        mcol = QVBoxLayout(middle)
        mcol.addWidget(_heading("Preview (with the chunks before and after)"))
        mcol.addWidget(self.preview, 1)
        right = QWidget()
        rcol = QVBoxLayout(right)
        rcol.addWidget(_heading("&Gold chunks [" + ", ".join(grade_name(g) for g in GOLD_GRADES) + "]",
                                self.chosen))
        rcol.addWidget(self.chosen, 1)
        splitter = QSplitter()
        for part, stretch in ((left, 3), (middle, 4), (right, 2)):
            splitter.addWidget(part)
            splitter.setStretchFactor(splitter.count() - 1, stretch)
        grades = " · ".join(grade_name(g) for g in GOLD_GRADES)
        hint = QLabel(f"Type to search · ↓ to the results · Enter add · Tab to the gold list · {grades} · "
                      "Delete remove · Ctrl+Enter save · Esc cancel")
        hint.setObjectName("hint")
        layout = QVBoxLayout(self)
        layout.addWidget(splitter, 1)
        layout.addWidget(hint)
        layout.addWidget(buttons)
        keys = _ListKeys(self)
        for widget in (self.results, self.chosen, self.search_box):
            widget.installEventFilter(keys)
        self.search_box.textChanged.connect(self.run_search)
        self.search_box.returnPressed.connect(self.results.setFocus)
        self.results.currentItemChanged.connect(lambda item, _: self.show_preview(item))
        self.chosen.currentItemChanged.connect(lambda item, _: self.show_preview(item))
        self.results.itemDoubleClicked.connect(lambda _: self.add_selected())

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key_Return, Qt.Key_Enter) and event.modifiers() & Qt.ControlModifier:
            self.accept()
        elif event.key() in (Qt.Key_Return, Qt.Key_Enter):
            return  # plain Enter belongs to the lists, never closes the dialog by accident
        else:
            super().keyPressEvent(event)

    # -- results and preview ---------------------------------------------------------------
    def run_search(self, text: str) -> None:
        if not text.strip():
            return self._show_results(self.suggested, "Suggested for this query" if self.suggested else "Results")
        self._show_results(search.search_chunks(self.db, text, limit=50), "Results")

    def _show_results(self, hits: list[dict], title: str) -> None:
        self.results.clear()
        for hit in hits:
            item = QListWidgetItem(f"{chunk_label(hit)}\n{' '.join(hit['text'].split())[:180]}")
            item.setData(_ID, hit.get("id") or hit.get("chunk_id"))
            item.setData(_LABEL, chunk_label(hit))
            item.setToolTip(hit["text"][:600])
            self.results.addItem(item)
        self.results_label.setText(f"&{title} ({len(hits)})")
        if self.results.count():
            self.results.setCurrentRow(0)

    def show_preview(self, item: Optional[QListWidgetItem]) -> None:
        self.preview.setPlainText("")
        if item is None:
            return
        chunk = documents.get_chunks(self.db, [item.data(_ID)])
        if not chunk:
            return
        chunk, near = chunk[0], documents.neighbours(self.db, item.data(_ID))
        cursor = QTextCursor(self.preview.document())
        dim, head, normal = QTextCharFormat(), QTextCharFormat(), QTextCharFormat()
        dim.setForeground(QColor("#6b7280"))
        head.setFontWeight(QFont.Bold)
        head.setForeground(QColor("#1d4ed8"))
        cursor.insertText(chunk_label(chunk) + "\n\n", head)
        if near["previous"]:
            cursor.insertText("… " + near["previous"]["text"][-400:] + "\n\n", dim)
        start = cursor.position()
        cursor.insertText(chunk["text"] + "\n\n", normal)
        end = cursor.position()
        if near["next"]:
            cursor.insertText(near["next"]["text"][:400] + " …\n", dim)
        highlight(self.preview, start, end, content_words(self.search_box.text()))
        self.preview.moveCursor(QTextCursor.Start)

    # -- the chosen list -------------------------------------------------------------------
    def _add(self, chunk_id: str, label: str, grade: int) -> None:
        if chunk_id in self.chunk_ids():
            return
        item = QListWidgetItem()
        item.setData(_ID, chunk_id)
        item.setData(_LABEL, label)
        self.chosen.addItem(item)
        self._set_item_grade(item, grade)

    @staticmethod
    def _set_item_grade(item: QListWidgetItem, grade: int) -> None:
        item.setData(_GRADE, grade)
        item.setText(f"[{grade_name(grade)}] {item.data(_LABEL)}")

    def add_selected(self) -> None:
        item = self.results.currentItem()
        if item is not None:
            self._add(item.data(_ID), item.data(_LABEL), RELEVANT)
            self.chosen.setCurrentRow(self.chosen.count() - 1)

    def remove_selected(self) -> None:
        self.chosen.takeItem(self.chosen.currentRow())

    def set_grade(self, grade: int) -> None:
        if grade not in GOLD_GRADES:
            return
        item = self.chosen.currentItem()
        if item is not None:
            self._set_item_grade(item, grade)

    def chunk_ids(self) -> list[str]:
        return [self.chosen.item(i).data(_ID) for i in range(self.chosen.count())]

    def grades(self) -> dict[str, int]:
        return {self.chosen.item(i).data(_ID): int(self.chosen.item(i).data(_GRADE)) for i in range(self.chosen.count())}
