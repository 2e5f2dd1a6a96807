"""The one-row-at-a-time review loop: one key per decision, auto-advance, unlimited undo.

Keys are handled in ``keyPressEvent`` of the view; the display widgets take no focus, and
while an edit box has focus it consumes typed keys, so decisions never fire while typing.
Every decision goes through ``curator.core.review.decisions.decide`` and is committed at once.
"""

from __future__ import annotations

from typing import Callable, Collection, Optional

import sqlite_utils
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFrame, QHBoxLayout, QLabel, QListWidget, QPlainTextEdit,
                               QPushButton, QSplitter, QTextEdit, QVBoxLayout, QWidget)

from curator.core.review.navigation import get_cursor, get_guidelines, next_pending, progress_by_cluster, review_order, set_cursor, set_guidelines
from curator.core.corpus import documents
from curator.core.review import decisions
from curator.core.errors import InputError
from curator.core.generation import quality
from curator.core.queries.rows import get_query
from curator.core.retrieval.suggest import suggestions
from curator.core.review.sample import queue_entry
from curator.core.clustering.reads import cluster_table
from curator.core.store.gold import GoldMissing
from curator.gui.gold_dialog import GoldDialog
from curator.gui.highlight import content_words, highlight
from curator.gui.suggestions_panel import SuggestionsPanel

KEYS = [
    ("A", "approve"), ("X", "reject"), ("U", "unanswerable"), ("E", "edit question and answer"),
    ("Ctrl+Enter", "save the edit"), ("Esc", "cancel the edit / close this help"),
    ("Space / S", "skip"), ("1-5", "toggle a suggestion as gold"), ("Shift+1-5", "cycle its grade 1-3"),
    ("G", "search for gold chunks"), ("N", "note"),
    ("Ctrl+Z", "undo"), ("Ctrl+Shift+Z", "redo"), ("?", "this help"),
]
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


# Shift+1..5 arrive as these keys on a US layout; offscreen tests send Key_1..5 with Shift.
_SHIFTED_DIGITS = {Qt.Key_Exclam: 1, Qt.Key_At: 2, Qt.Key_NumberSign: 3, Qt.Key_Dollar: 4, Qt.Key_Percent: 5}
BUTTONS = [("Approve (A)", "approve"), ("Reject (X)", "reject"), ("Unanswerable (U)", "unanswerable"),
           ("Skip (Space)", "skip"), ("Gold… (G)", "gold")]


def suggestion_key(key: int, shift: bool) -> Optional[tuple[int, bool]]:
    """(suggestion number 1-5, whether to cycle its grade) for a key press, or None."""
    if Qt.Key_1 <= key <= Qt.Key_5:
        return key - Qt.Key_0, shift
    return (_SHIFTED_DIGITS[key], True) if key in _SHIFTED_DIGITS else None


def why_queued(q: dict, entry: Optional[dict]) -> str:
    """One line on why the row is in the queue: how often it was asked, the negative feedback
    signals, its cluster and the draw that picked it."""
    parts = []
    if q["source"] == "log":
        parts.append(f"asked {q['frequency']}×")
        signals = sorted(set((q.get("metadata") or {}).get("signals") or []))
        if q["negative_count"]:
            parts.append(f"negative feedback {q['negative_count']}×" + (f" ({', '.join(signals)})" if signals else ""))
    if q.get("cluster_label"):
        parts.append(f"cluster “{q['cluster_label']}”")
    if entry is not None:
        reason = entry["reason"]
        parts.append(f"drawn from stratum {entry['stratum']} ({reason.get('allocation', '?')}, quota {reason.get('quota', '?')})"
                     + ("; boosted for negative feedback" if reason.get("negative") else ""))
    return ("Why in the queue: " + " · ".join(parts)) if parts else ""


def quality_note(q: dict) -> str:
    """' · quality 0.62 (BM25 finds the gold chunk at rank 1; ...)' for generated rows, else ''."""
    if q.get("quality") is None:
        return ""
    return f" · quality {q['quality']:.2f} ({quality.explain(q.get('quality_signals'))})"


def answer_words(reference: str) -> set[str]:
    return content_words(reference)


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
    whole_queue = Signal()  # "Whole queue" pressed: the map selection is dropped everywhere
    next_step = Signal(str)  # the empty state's button: "corpus", "generate" or "clusters"

    def __init__(self, db: sqlite_utils.Database, reviewer: str, parent=None) -> None:
        super().__init__(parent)
        self.db, self.reviewer = db, reviewer
        self.current: Optional[dict] = None
        self.editing = False
        self.skipped: set[str] = set()
        self.focus: Optional[set[str]] = None  # a map selection the reviewer works through, or None
        self.focus_reason = ""
        self.gold_dialog: Optional[GoldDialog] = None
        self._labels: Optional[dict] = None
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
        clear.clicked.connect(self._whole_queue)
        bar.addWidget(self.focus_label, 1)
        bar.addWidget(clear)
        self.focus_bar.hide()
        self.status_label = plain_label()
        self.status_label.setObjectName("reviewStatus")
        self.progress_label = plain_label()
        self.question = QPlainTextEdit()
        self.question.setObjectName("question")
        self.question.setMaximumHeight(90)
        self.why_label = plain_label()
        self.why_label.setObjectName("hint")
        self.suggestions_label = plain_label("Suggested gold chunks — 1-5 toggle as gold · Shift+1-5 grade · G search",
                                             bold=True)
        self.suggestions_panel = SuggestionsPanel()
        self.suggestion_rows: list[dict] = []
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
        self.message = plain_label()
        self.message.setObjectName("reviewMessage")
        self.message.setStyleSheet("color: #b3261e; font-weight: bold;")
        self.message.setWordWrap(True)
        self.message.hide()
        main = QWidget()
        col = QVBoxLayout(main)
        col.addWidget(self.focus_bar)
        col.addWidget(self.status_label)
        col.addLayout(self._next_step_row())
        col.addWidget(plain_label("Question", bold=True))
        col.addWidget(self.question)
        col.addWidget(self.why_label)
        col.addWidget(self.suggestions_label)
        col.addWidget(self.suggestions_panel, 1)
        col.addWidget(plain_label("Reference answer", bold=True))
        col.addWidget(self.reference)
        col.addWidget(plain_label("Gold chunk(s) with surrounding text", bold=True))
        col.addWidget(self.chunks, 1)
        col.addWidget(self.message)
        col.addLayout(self._decision_buttons())
        col.addWidget(self.keys_hint)
        side = QWidget()
        scol = QVBoxLayout(side)
        scol.addWidget(plain_label("Progress", bold=True))
        scol.addWidget(self.progress_label)
        self.history_label = plain_label(bold=True)
        scol.addWidget(self.history_label)
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

    def _next_step_row(self) -> QHBoxLayout:
        """The empty queue's way on: one button to the tab that makes the next stage."""
        self.next_step_button = QPushButton()
        self.next_step_button.setFocusPolicy(Qt.NoFocus)
        self.next_step_button.clicked.connect(lambda: self.next_step.emit(self._next_step()[2]))
        self.next_step_button.hide()
        row = QHBoxLayout()
        row.addWidget(self.next_step_button)
        row.addStretch(1)
        return row

    def _decision_buttons(self) -> QHBoxLayout:
        """The decisions as buttons for mouse users, each naming its key; they never take focus."""
        row = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for text, action in BUTTONS:
            button = QPushButton(text)
            button.setFocusPolicy(Qt.NoFocus)
            button.clicked.connect(lambda _=False, a=action: self._button(a))
            self.buttons[action] = button
            row.addWidget(button)
        row.addStretch(1)
        return row

    def _button(self, action: str) -> None:
        if self.current is None:
            return
        if action == "skip":
            self.skip()
        elif action == "gold":
            self.open_gold_dialog()
        else:
            self.decide(action)

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

    def _whole_queue(self) -> None:
        self.set_focus(None)
        self.whole_queue.emit()

    def set_reviewer(self, name: str) -> None:
        """Decide, undo and list history as another reviewer from now on (Review > Change reviewer)."""
        self.reviewer = name
        self.load_initial()

    def _next_step(self) -> tuple[str, str, str]:
        """(what is missing, button caption, tab) for an empty queue: the earliest stage not done."""
        if not self.db.execute("SELECT 1 FROM chunks WHERE active = 1 LIMIT 1").fetchone():
            return "Nothing to review yet: the project has no documents.", "Add documents in the Corpus tab…", "corpus"
        if not self.db.execute("SELECT 1 FROM queries LIMIT 1").fetchone():
            return ("Nothing to review yet: the project has no queries.", "Generate queries from the corpus…",
                    "generate")
        return ("Nothing left to review in the queue.", "Cluster the queries and build a review queue…", "clusters")

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
        self.next_step_button.setVisible(q is None and self.focus is None)
        if q is None and self.focus is None:
            missing, caption, _tab = self._next_step()
            self.status_label.setText(missing)
            self.next_step_button.setText(caption)
        if q is None:
            if self.focus is not None:
                self.status_label.setText("Every selected query is reviewed. 'Whole queue' goes back to the rest.")
            self.question.setPlainText("")
            self.why_label.setText("")
            self.reference.setPlainText("")
            self.chunks.setPlainText("")
        else:
            self.status_label.setText(self._header(q))
            self.question.setPlainText(q["text"])
            self.why_label.setText(why_queued(q, queue_entry(self.db, q["id"])))
            self.reference.setPlainText(q.get("reference") or "")
            self._render_chunks(q)
        self._render_suggestions(q)
        self._render_side()

    def _header(self, q: dict) -> str:
        """STATUS · type · source · cluster label · by whom · note, each word once (a log
        query's type and source are both "log")."""
        parts = [q["status"].upper(), *dict.fromkeys([q["query_type"], q["source"]])]
        if q.get("cluster") is not None:
            label = self._cluster_labels().get(q["cluster"])
            parts.append(f"cluster {q['cluster']}: {label}" if label else f"cluster {q['cluster']}")
        if q.get("reviewer"):
            parts.append(f"by {q['reviewer']}")
        if q.get("note"):
            parts.append(f"note: {q['note']}")
        return " · ".join(parts) + quality_note(q)

    def _cluster_labels(self) -> dict:
        """Cluster number -> label of the active run, read once until the next refresh."""
        if self._labels is None:
            self._labels = {row["cluster"]: row["label"] for row in cluster_table(self.db)}
        return self._labels

    def _render_chunks(self, q: dict) -> None:
        """Plain text only; highlighting is applied as character formats, never HTML."""
        self.chunks.setPlainText("")
        gold = documents.get_chunks(self.db, q["gold_chunk_ids"])
        if not gold:
            self.chunks.setPlainText("(no gold chunk — press 1-5 to take a suggestion, G to search, "
                                     "or U if the corpus cannot answer this)")
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

    def _render_suggestions(self, q: Optional[dict]) -> None:
        self.suggestion_rows = suggestions(self.db, q["id"]) if q else []
        self.suggestions_label.setVisible(bool(self.suggestion_rows))
        self.suggestions_panel.setVisible(bool(self.suggestion_rows))
        if self.suggestion_rows:
            gold = {cid: int(q["gold_grades"].get(cid, 1)) for cid in q["gold_chunk_ids"]}
            self.suggestions_panel.show_suggestions(self.suggestion_rows, gold, q["text"])

    def _render_side(self) -> None:
        prog = decisions.progress(self.db)
        lines = [f"Reviewed {prog['reviewed']} of {prog['queued']} queued"]
        for row in progress_by_cluster(self.db):
            name = "-" if row["cluster"] is None else row["cluster"]
            lines.append(f"  cluster {name}: {row['reviewed'] or 0} / {row['queued']}")
        self.progress_label.setText("\n".join(lines))
        self.history.clear()
        self.history_label.setText(f"Last ten decisions by {self.reviewer}")
        for entry in decisions.history(self.db, self.reviewer, limit=10):
            mark = {"done": "", "merged": " (merged)"}.get(entry["state"], " (undone)")
            self.history.addItem(f"{entry['action']}{mark}: {entry['text'][:60]}")

    # -- decisions -------------------------------------------------------------------------
    def decide(self, action: str, advance: bool = True, **changes) -> None:
        if self.current is None:
            return
        qid = self.current["id"]
        try:
            decisions.decide(self.db, qid, action, self.reviewer, **changes)
        except GoldMissing as exc:  # core refused: say what to do, stay on the row
            self.say(self._gold_missing_text(exc))
            return
        except InputError as exc:
            self.say(str(exc))
            return
        self.say("")
        self.skipped.discard(qid)
        self.decided.emit(qid)
        if advance:
            self.advance()
        else:
            self.show_query(qid)

    def say(self, text: str) -> None:
        """One line under the row for what the last key did or why it was refused."""
        self.message.setText(text)
        self.message.setVisible(bool(text))

    @staticmethod
    def _gold_missing_text(exc: GoldMissing) -> str:
        what = (f"its gold chunk(s) {', '.join(exc.unusable)} are retired" if exc.unusable
                else "it has no gold chunk")
        return (f"Not approved: {what}. Press 1-5 to take a suggestion as gold, G to search for one, "
                "or U to label it unanswerable.")

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
        suggested = [{**row, "id": row["chunk_id"], "doc_path": row["path"]} for row in self.suggestion_rows]
        self.gold_dialog = GoldDialog(self.db, q["gold_chunk_ids"], q["gold_grades"], self, suggested=suggested,
                                      question=q["text"])
        self.gold_dialog.accepted.connect(self._apply_gold)
        self.gold_dialog.open()
        return self.gold_dialog

    def _apply_gold(self) -> None:
        dialog = self.gold_dialog
        self.decide("gold", advance=False, gold=dialog.chunk_ids(), grades=dialog.grades())
        self.setFocus()

    def toggle_suggestion(self, number: int, cycle_grade: bool = False) -> None:
        """Key 1-5: the suggestion becomes gold (grade 1) or stops being gold; with Shift its grade
        goes 1 -> 2 -> 3 -> 1 (a suggestion not yet gold becomes gold with grade 2)."""
        if number > len(self.suggestion_rows):
            self.say(f"No suggestion {number} for this query." if self.suggestion_rows
                     else "No suggestions for this query: press G to search for gold chunks.")
            return
        chunk_id = self.suggestion_rows[number - 1]["chunk_id"]
        gold = list(self.current["gold_chunk_ids"])
        grades = {cid: int(self.current["gold_grades"].get(cid, 1)) for cid in gold}
        if cycle_grade:
            grades[chunk_id] = grades[chunk_id] % 3 + 1 if chunk_id in grades else 2
            gold += [] if chunk_id in gold else [chunk_id]
        elif chunk_id in gold:
            gold.remove(chunk_id)
            del grades[chunk_id]
        else:
            gold.append(chunk_id)
            grades[chunk_id] = 1
        self.decide("gold", advance=False, gold=gold, grades=grades)

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
        elif suggestion_key(key, shift) is not None:
            self.toggle_suggestion(*suggestion_key(key, shift))
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
        self._labels = None  # a new clustering run may have renamed the clusters
        current = self.current["id"] if self.current else None
        if current is not None and self.focus is None and not self._in_review_order(current):
            current = None  # a queue was built since this row was shown: start on the queue
        self.show_query(current or next_pending(self.db))

    def _in_review_order(self, query_id: str) -> bool:
        return any(row["query_id"] == query_id for row in review_order(self.db))
