"""The one-row-at-a-time review loop: one key per decision, auto-advance, unlimited undo.

Keys are handled in ``keyPressEvent`` of the view; the display widgets take no focus, and
while an edit box has focus it consumes typed keys, so decisions never fire while typing.
Every decision goes through ``curator.core.review.decisions.decide`` and is committed at once.
"""

from __future__ import annotations

import re
from typing import Callable, Collection, Optional

import sqlite_utils
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFrame, QHBoxLayout, QLabel, QLineEdit, QListWidget,
                               QListWidgetItem, QPlainTextEdit, QPushButton, QSpinBox, QSplitter, QTextEdit,
                               QVBoxLayout, QWidget)

from curator.core.review.navigation import get_cursor, get_guidelines, next_pending, progress_by_cluster, review_order, set_cursor, set_guidelines
from curator.core.corpus import documents
from curator.core.review import decisions
from curator.core.generation import quality
from curator.core.corpus import search
from curator.core.queries.rows import get_query

KEYS = [
    ("A", "approve"), ("X", "reject"), ("U", "unanswerable"), ("E", "edit question and answer"),
    ("Ctrl+Enter", "save the edit"), ("Esc", "cancel the edit / close this help"),
    ("Space / S", "skip"), ("G", "change or add gold chunks"), ("N", "note"),
    ("Ctrl+Z", "undo"), ("Ctrl+Shift+Z", "redo"), ("?", "this help"),
]
_STOP = set("the a an and or of to in on for is are be with by it this that from as at can your you".split())
_WORD = re.compile(r"\w{3,}", re.UNICODE)


def plain_label(text: str = "", *, bold: bool = False) -> QLabel:
    """A QLabel that never interprets user text as rich text."""
    label = QLabel(text)
    label.setTextFormat(Qt.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextSelectableByMouse)
    if bold:
        font = label.font()
        font.setBold(True)
        label.setFont(font)
    return label


def quality_note(q: dict) -> str:
    """' · quality 0.62 (BM25 finds the gold chunk at rank 1; ...)' for generated rows, else ''."""
    if q.get("quality") is None:
        return ""
    return f" · quality {q['quality']:.2f} ({quality.explain(q.get('quality_signals'))})"


def answer_words(reference: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(reference or "") if w.lower() not in _STOP}


def highlight(edit: QTextEdit, start: int, end: int, words: set[str]) -> int:
    """Give every answer word in [start, end) of the plain-text document a highlight format."""
    fmt = QTextCharFormat()
    fmt.setBackground(QColor("#fde68a"))
    fmt.setFontWeight(QFont.Bold)
    text = edit.toPlainText()[start:end]
    count = 0
    for match in _WORD.finditer(text):
        if match.group().lower() in words:
            cursor = QTextCursor(edit.document())
            cursor.setPosition(start + match.start())
            cursor.setPosition(start + match.end(), QTextCursor.KeepAnchor)
            cursor.mergeCharFormat(fmt)
            count += 1
    return count


class HelpOverlay(QFrame):
    """A translucent panel over the view listing every key; any key closes it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("helpOverlay")
        self.setFocusPolicy(Qt.StrongFocus)
        layout = QVBoxLayout(self)
        layout.addWidget(plain_label("Keyboard", bold=True))
        for key, what in KEYS:
            layout.addWidget(plain_label(f"{key:<14} {what}"))
        layout.addStretch(1)
        self.hide()

    def show_over(self) -> None:
        self.setGeometry(self.parentWidget().rect().adjusted(60, 40, -60, -40))
        self.raise_()
        self.show()
        self.setFocus()

    def keyPressEvent(self, event) -> None:
        self.hide()
        self.parentWidget().setFocus()


class GoldDialog(QDialog):
    """Search the corpus and pick one or more gold chunks, each with a grade 1-3."""

    def __init__(self, db: sqlite_utils.Database, current: list[str], grades: dict, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Gold chunks")
        self.db = db
        self.search_box = QLineEdit(placeholderText="Search the corpus…")
        self.results = QListWidget()
        self.chosen = QListWidget()
        self.grade = QSpinBox(minimum=1, maximum=3, value=1)
        add, remove = QPushButton("Add →"), QPushButton("Remove")
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        layout = QVBoxLayout(self)
        layout.addWidget(self.search_box)
        row = QHBoxLayout()
        row.addWidget(self.results, 2)
        side = QVBoxLayout()
        side.addWidget(add)
        side.addWidget(plain_label("Grade"))
        side.addWidget(self.grade)
        side.addWidget(remove)
        side.addStretch(1)
        row.addLayout(side)
        row.addWidget(self.chosen, 2)
        layout.addLayout(row)
        layout.addWidget(buttons)
        self.search_box.textChanged.connect(self.run_search)
        add.clicked.connect(self.add_selected)
        remove.clicked.connect(lambda: self.chosen.takeItem(self.chosen.currentRow()))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        for chunk in documents.get_chunks(db, current):
            self._add(chunk["id"], f"{chunk['doc_path']} — {chunk['title'] or ''}", int(grades.get(chunk["id"], 1)))
        self.resize(900, 420)

    def run_search(self, text: str) -> None:
        self.results.clear()
        for hit in search.search_chunks(self.db, text, limit=30):
            item = QListWidgetItem(f"{hit['doc_path']} — {hit['title'] or ''}\n{hit['text'][:160]}")
            item.setData(Qt.UserRole, hit["id"])
            self.results.addItem(item)
        if self.results.count():
            self.results.setCurrentRow(0)

    def _add(self, chunk_id: str, label: str, grade: int) -> None:
        if chunk_id in self.chunk_ids():
            return
        item = QListWidgetItem(f"[{grade}] {label}")
        item.setData(Qt.UserRole, chunk_id)
        item.setData(Qt.UserRole + 1, grade)
        self.chosen.addItem(item)

    def add_selected(self) -> None:
        for item in self.results.selectedItems() or ([self.results.currentItem()] if self.results.currentItem() else []):
            self._add(item.data(Qt.UserRole), item.text().split("\n")[0], self.grade.value())

    def chunk_ids(self) -> list[str]:
        return [self.chosen.item(i).data(Qt.UserRole) for i in range(self.chosen.count())]

    def grades(self) -> dict[str, int]:
        return {self.chosen.item(i).data(Qt.UserRole): int(self.chosen.item(i).data(Qt.UserRole + 1))
                for i in range(self.chosen.count())}


class NoteDialog(QDialog):
    def __init__(self, note: str, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Note")
        self.edit = QPlainTextEdit(note or "")
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.edit)
        layout.addWidget(buttons)


class EditKeys(QObject):
    """Ctrl+Enter saves and Esc cancels while an edit box has focus."""

    def __init__(self, save: Callable[[], None], cancel: Callable[[], None]) -> None:
        super().__init__()
        self.save, self.cancel = save, cancel

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.KeyPress:
            if event.key() in (Qt.Key_Return, Qt.Key_Enter) and event.modifiers() & Qt.ControlModifier:
                self.save()
                return True
            if event.key() == Qt.Key_Escape:
                self.cancel()
                return True
        return False


class ReviewView(QWidget):
    """The review tab. ``decided`` is emitted with the query id after every change."""

    decided = Signal(str)

    def __init__(self, db: sqlite_utils.Database, reviewer: str, parent=None) -> None:
        super().__init__(parent)
        self.db, self.reviewer = db, reviewer
        self.current: Optional[dict] = None
        self.editing = False
        self.skipped: set[str] = set()
        self.focus: Optional[set[str]] = None  # a map selection the reviewer works through, or None
        self.focus_reason = ""
        self.gold_dialog: Optional[GoldDialog] = None
        self.note_dialog: Optional[NoteDialog] = None
        self.setFocusPolicy(Qt.StrongFocus)
        self._build()
        self.help = HelpOverlay(self)
        self.load_initial()

    # -- layout ----------------------------------------------------------------------------
    def _build(self) -> None:
        self.focus_bar = QWidget()
        self.focus_bar.setObjectName("focusBar")
        bar = QHBoxLayout(self.focus_bar)
        bar.setContentsMargins(0, 0, 0, 0)
        self.focus_label = plain_label()
        clear = QPushButton("Whole queue")
        clear.setFocusPolicy(Qt.NoFocus)
        clear.clicked.connect(lambda: self.set_focus(None))
        bar.addWidget(self.focus_label, 1)
        bar.addWidget(clear)
        self.focus_bar.hide()
        self.status_label = plain_label()
        self.status_label.setObjectName("reviewStatus")
        self.progress_label = plain_label()
        self.question = QPlainTextEdit()
        self.question.setObjectName("question")
        self.question.setMaximumHeight(90)
        self.reference = QPlainTextEdit()
        self.reference.setMaximumHeight(110)
        self.chunks = QTextEdit()
        self.chunks.setReadOnly(True)
        self.chunks.setAcceptRichText(False)
        for edit in (self.question, self.reference, self.chunks):
            edit.setFocusPolicy(Qt.NoFocus)
        self.question.setReadOnly(True)
        self.reference.setReadOnly(True)
        self._edit_keys = EditKeys(self.save_edit, self.cancel_edit)
        self.question.installEventFilter(self._edit_keys)
        self.reference.installEventFilter(self._edit_keys)
        self.keys_hint = plain_label("A approve · X reject · U unanswerable · E edit · Space skip · "
                                     "G gold · N note · Ctrl+Z undo · ? help")
        self.keys_hint.setObjectName("hint")
        main = QWidget()
        col = QVBoxLayout(main)
        col.addWidget(self.focus_bar)
        col.addWidget(self.status_label)
        col.addWidget(plain_label("Question", bold=True))
        col.addWidget(self.question)
        col.addWidget(plain_label("Reference answer", bold=True))
        col.addWidget(self.reference)
        col.addWidget(plain_label("Gold chunk(s) with surrounding text", bold=True))
        col.addWidget(self.chunks, 1)
        col.addWidget(self.keys_hint)
        side = QWidget()
        scol = QVBoxLayout(side)
        scol.addWidget(plain_label("Progress", bold=True))
        scol.addWidget(self.progress_label)
        scol.addWidget(plain_label("Last ten decisions", bold=True))
        self.history = QListWidget()
        self.history.setFocusPolicy(Qt.NoFocus)
        scol.addWidget(self.history, 1)
        scol.addWidget(plain_label("Guidelines", bold=True))
        self.guidelines = QPlainTextEdit(get_guidelines(self.db))
        scol.addWidget(self.guidelines, 1)
        save = QPushButton("Save guidelines")
        save.setFocusPolicy(Qt.NoFocus)
        save.clicked.connect(self.save_guidelines)
        scol.addWidget(save)
        splitter = QSplitter()
        splitter.addWidget(main)
        splitter.addWidget(side)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(splitter)

    # -- navigation ------------------------------------------------------------------------
    def load_initial(self) -> None:
        """Resume at this reviewer's saved row, else the first pending row."""
        saved = get_cursor(self.db, self.reviewer)
        if saved and get_query(self.db, saved):
            self.show_query(saved)
        else:
            self.show_query(next_pending(self.db))

    def show_query(self, query_id: Optional[str]) -> None:
        self.current = get_query(self.db, query_id) if query_id else None
        if self.current:
            set_cursor(self.db, self.reviewer, query_id)
        self._render()

    def advance(self) -> None:
        after = self.current["id"] if self.current else None
        nxt = next_pending(self.db, after, self.skipped, self.focus)
        if nxt is None and self.skipped:  # only skipped rows are left: go round again
            self.skipped.clear()
            nxt = next_pending(self.db, after, within=self.focus)
        self.show_query(nxt)

    def set_focus(self, query_ids: Optional[Collection[str]], why: str = "selected on the map") -> None:
        """Review only these queries (a map selection, or this reviewer's share of an overlap plan);
        None or empty: the whole queue."""
        self.focus = set(query_ids) if query_ids else None
        self.focus_reason = why
        self.skipped.clear()
        self._update_focus_bar()
        if self.focus is not None and (self.current is None or self.current["id"] not in self.focus
                                       or self.current["status"] != "pending"):
            self.show_query(next_pending(self.db, within=self.focus))
        elif self.current is None:
            self.show_query(next_pending(self.db))

    def _update_focus_bar(self) -> None:
        if self.focus is None:
            self.focus_bar.hide()
            return
        pending = sum(1 for r in review_order(self.db, self.focus) if r["status"] == "pending")
        self.focus_label.setText(f"Reviewing the {len(self.focus)} queries {self.focus_reason} ({pending} pending).")
        self.focus_bar.show()

    # -- rendering -------------------------------------------------------------------------
    def _render(self) -> None:
        q = self.current
        if self.focus is not None:
            self._update_focus_bar()
        if q is None:
            self.status_label.setText(
                "Nothing left to review. Build a queue in the Clusters tab or generate more queries." if self.focus is None
                else "Every selected query is reviewed. 'Whole queue' goes back to the rest.")
            self.question.setPlainText("")
            self.reference.setPlainText("")
            self.chunks.setPlainText("")
        else:
            who = f" · by {q['reviewer']}" if q.get("reviewer") else ""
            note = f" · note: {q['note']}" if q.get("note") else ""
            self.status_label.setText(f"{q['status'].upper()} · {q['query_type']} · {q['source']} · "
                                      f"cluster {q.get('cluster') if q.get('cluster') is not None else '-'}{who}{note}"
                                      f"{quality_note(q)}")
            self.question.setPlainText(q["text"])
            self.reference.setPlainText(q.get("reference") or "")
            self._render_chunks(q)
        self._render_side()

    def _render_chunks(self, q: dict) -> None:
        """Plain text only; highlighting is applied as character formats, never HTML."""
        self.chunks.setPlainText("")
        gold = documents.get_chunks(self.db, q["gold_chunk_ids"])
        if not gold:
            self.chunks.setPlainText("(no gold chunk — press G to add one, or U if the corpus cannot answer this)")
            return
        words = answer_words(q.get("reference") or "")
        cursor = QTextCursor(self.chunks.document())
        dim = QTextCharFormat()
        dim.setForeground(QColor("#6b7280"))
        head = QTextCharFormat()
        head.setFontWeight(QFont.Bold)
        head.setForeground(QColor("#1d4ed8"))
        normal = QTextCharFormat()
        spans = []
        for chunk in gold:
            near = documents.neighbours(self.db, chunk["id"])
            grade = q["gold_grades"].get(chunk["id"], 1)
            cursor.insertText(f"{chunk['doc_path']}  ›  {chunk['title'] or ''}   [grade {grade}]\n", head)
            if near["previous"]:
                cursor.insertText("… " + near["previous"]["text"][-300:] + "\n", dim)
            start = cursor.position()
            cursor.insertText(chunk["text"] + "\n", normal)
            spans.append((start, cursor.position()))
            if near["next"]:
                cursor.insertText(near["next"]["text"][:300] + " …\n", dim)
            cursor.insertText("\n", normal)
        self.highlighted = sum(highlight(self.chunks, s, e, words) for s, e in spans)
        self.chunks.moveCursor(QTextCursor.Start)

    def _render_side(self) -> None:
        prog = decisions.progress(self.db)
        lines = [f"Reviewed {prog['reviewed']} of {prog['queued']} queued"]
        for row in progress_by_cluster(self.db):
            name = "-" if row["cluster"] is None else row["cluster"]
            lines.append(f"  cluster {name}: {row['reviewed'] or 0} / {row['queued']}")
        self.progress_label.setText("\n".join(lines))
        self.history.clear()
        for entry in decisions.history(self.db, self.reviewer, limit=10):
            mark = {"done": "", "merged": " (merged)"}.get(entry["state"], " (undone)")
            self.history.addItem(f"{entry['action']}{mark}: {entry['text'][:60]}")

    # -- decisions -------------------------------------------------------------------------
    def decide(self, action: str, advance: bool = True, **changes) -> None:
        if self.current is None:
            return
        qid = self.current["id"]
        decisions.decide(self.db, qid, action, self.reviewer, **changes)
        self.skipped.discard(qid)
        self.decided.emit(qid)
        if advance:
            self.advance()
        else:
            self.show_query(qid)

    def undo(self) -> None:
        qid = decisions.undo(self.db, self.reviewer)
        if qid:
            self.decided.emit(qid)
            self.show_query(qid)

    def redo(self) -> None:
        qid = decisions.redo(self.db, self.reviewer)
        if qid:
            self.decided.emit(qid)
            self.show_query(qid)

    def skip(self) -> None:
        if self.current:
            self.skipped.add(self.current["id"])
        self.advance()

    # -- edit ------------------------------------------------------------------------------
    def start_edit(self) -> None:
        if self.current is None:
            return
        self.editing = True
        for edit in (self.question, self.reference):
            edit.setReadOnly(False)
            edit.setFocusPolicy(Qt.StrongFocus)
        self.question.setFocus()
        self.status_label.setText("Editing: Ctrl+Enter saves, Esc cancels")

    def _end_edit(self) -> None:
        self.editing = False
        for edit in (self.question, self.reference):
            edit.setReadOnly(True)
            edit.setFocusPolicy(Qt.NoFocus)
        self.setFocus()

    def save_edit(self) -> None:
        text, ref = self.question.toPlainText().strip(), self.reference.toPlainText().strip()
        self._end_edit()
        if self.current and (text != self.current["text"] or ref != (self.current.get("reference") or "")):
            try:
                self.decide("edit", advance=False, text=text, reference=ref)
            except Exception as exc:  # e.g. empty question: say so, keep the row
                self.status_label.setText(f"Not saved: {exc}")
                return
        self._render()

    def cancel_edit(self) -> None:
        self._end_edit()
        self._render()

    # -- gold and note ---------------------------------------------------------------------
    def open_gold_dialog(self) -> GoldDialog:
        q = self.current
        self.gold_dialog = GoldDialog(self.db, q["gold_chunk_ids"], q["gold_grades"], self)
        self.gold_dialog.search_box.setText(q["text"])
        self.gold_dialog.accepted.connect(self._apply_gold)
        self.gold_dialog.open()
        return self.gold_dialog

    def _apply_gold(self) -> None:
        dialog = self.gold_dialog
        self.decide("gold", advance=False, gold=dialog.chunk_ids(), grades=dialog.grades())
        self.setFocus()

    def open_note_dialog(self) -> NoteDialog:
        self.note_dialog = NoteDialog(self.current.get("note") or "", self)
        self.note_dialog.accepted.connect(lambda: self.decide("note", advance=False,
                                                              note=self.note_dialog.edit.toPlainText()))
        self.note_dialog.open()
        return self.note_dialog

    def save_guidelines(self) -> None:
        set_guidelines(self.db, self.guidelines.toPlainText())

    # -- keys ------------------------------------------------------------------------------
    def keyPressEvent(self, event) -> None:
        if self.editing or not self.help.isHidden():
            return super().keyPressEvent(event)
        key, mods = event.key(), event.modifiers()
        ctrl, shift = bool(mods & Qt.ControlModifier), bool(mods & Qt.ShiftModifier)
        if ctrl and key == Qt.Key_Z:
            self.redo() if shift else self.undo()
        elif ctrl:
            return super().keyPressEvent(event)
        elif key == Qt.Key_Question or event.text() == "?":
            self.help.show_over()
        elif self.current is None:
            return super().keyPressEvent(event)
        elif key == Qt.Key_A:
            self.decide("approve")
        elif key == Qt.Key_X:
            self.decide("reject")
        elif key == Qt.Key_U:
            self.decide("unanswerable")
        elif key == Qt.Key_E:
            self.start_edit()
        elif key in (Qt.Key_Space, Qt.Key_S):
            self.skip()
        elif key == Qt.Key_G:
            self.open_gold_dialog()
        elif key == Qt.Key_N:
            self.open_note_dialog()
        else:
            return super().keyPressEvent(event)
        event.accept()

    def refresh(self) -> None:
        """Re-read the current row (another tab may have changed it)."""
        self.show_query(self.current["id"] if self.current else next_pending(self.db))
