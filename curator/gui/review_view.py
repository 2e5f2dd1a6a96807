"""The one-row-at-a-time review loop: one key per decision, auto-advance, unlimited undo.

Every key comes from the table in ``review_keys`` (dispatch, hint line, help overlay, buttons,
F1 page). The display widgets take no focus, and while an edit box has focus it consumes typed
keys, so decisions never fire while typing. Every decision goes through
``curator.core.review.decisions.decide`` and is committed at once; everything shown is read
through core (``review.screen``, ``review.navigation``, ``retrieval.suggest``).
"""

from __future__ import annotations

from typing import Collection, Optional

import sqlite_utils
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QHBoxLayout, QListWidget, QPlainTextEdit, QPushButton, QSplitter, QTextEdit, QVBoxLayout,
                               QWidget)

from curator.core.diagnosis import faithfulness  # noqa: F401 (registers how undoing a verdict rescores its trace)
from curator.core.errors import InputError
from curator.core.review import decisions, pool, screen
from curator.core.review.navigation import Cursor, get_guidelines, next_pending, resume_row, set_guidelines
from curator.core.store.gold import GoldMissing, RELEVANT, grade_name, judged_not_relevant, next_gold_grade
from curator.gui import review_keys
from curator.gui.gold_dialog import GoldDialog
from curator.gui.review_pool import PoolBox
from curator.gui.review_parts import NEXT_STEP, NoteDialog, gold_missing_text, header, render_gold, why_queued
from curator.gui.suggestions_panel import SuggestionsBox
from curator.gui.widgets import plain_label

def fit_to_text(edit: QTextEdit, most: int = 260) -> None:
    """Cap ``edit``'s height at its text's when that is short (``most`` px or less), so a short list
    gives its room to the lists beside it; a longer text keeps the height the layout gives it."""
    edit.document().setTextWidth(edit.viewport().width() or edit.width())
    needed = int(edit.document().size().height()) + 2 * edit.frameWidth() + 4
    edit.setMaximumHeight(needed if needed <= most else 16777215)


class ReviewView(QWidget):
    """The review tab. ``decided`` is emitted with the query id after every change."""

    decided = Signal(str)
    whole_queue = Signal()  # "Whole queue" pressed: the map selection is dropped everywhere
    next_step = Signal(str)  # the empty state's button: "corpus", "generate" or "clusters"

    def __init__(self, db: sqlite_utils.Database, reviewer: str, parent=None) -> None:
        super().__init__(parent)
        self.db, self.reviewer = db, reviewer
        self.cursor = Cursor(db, reviewer)
        self.current: Optional[dict] = None
        self.editing = False
        self.highlighted = 0
        self.skipped: set[str] = set()
        self.focus: Optional[set[str]] = None  # a map selection the reviewer works through, or None
        self.focus_reason = ""
        self.gold_dialog: Optional[GoldDialog] = None
        self.note_dialog: Optional[NoteDialog] = None
        self.pool_rows: list[dict] = []
        self.suggestion_rows: list[dict] = []
        self.setFocusPolicy(Qt.StrongFocus)
        self._build()
        self.help = review_keys.HelpOverlay(self)
        self.show_query(resume_row(db, reviewer))
        self.suggestions.fill_missing()  # queued log queries of a new project get theirs now
        self._fill_pools()

    # -- layout ----------------------------------------------------------------------------
    def _build(self) -> None:
        main = QWidget()
        self._column = col = QVBoxLayout(main)
        col.addWidget(self._focus_bar())
        self.status_label = plain_label()
        self.status_label.setObjectName("reviewStatus")
        col.addWidget(self.status_label)
        col.addLayout(self._next_step_row())
        self.question, self.reference = QPlainTextEdit(), QPlainTextEdit()
        self.question.setObjectName("question")
        self.question.setMaximumHeight(90)
        self.reference.setMaximumHeight(110)
        self.why_label = plain_label(hint=True)
        self.suggestions = SuggestionsBox(self.db, f"Suggested gold chunks — {review_keys.suggestions_hint()}")
        self.suggestions.computed.connect(lambda: self._show_suggestions(self.current))
        self.suggestions.computed.connect(self._fill_pools)  # one heavy worker at a time: pools after suggestions
        self.pool = PoolBox(self.db, f"Pooled results to grade — {review_keys.pool_hint()}")
        self.pool.computed.connect(self._pool_computed)
        self.chunks = QTextEdit()
        self.chunks.setReadOnly(True)
        self.chunks.setAcceptRichText(False)
        for edit in (self.question, self.reference, self.chunks):
            edit.setFocusPolicy(Qt.NoFocus)
        for edit in (self.question, self.reference):  # two lines at least (not Qt's 70 px): with the
            edit.setMinimumHeight(2 * edit.fontMetrics().lineSpacing() + 16)  # pool the tab fits a 640 px window
        self._edit_filter = review_keys.EditBoxKeys(self)  # the table's save/cancel keys while editing
        for edit in (self.question, self.reference):
            edit.setReadOnly(True)
            edit.installEventFilter(self._edit_filter)
        self.message = plain_label()
        self.message.setObjectName("reviewMessage")
        self.message.setStyleSheet("color: #b3261e; font-weight: bold;")
        self.message.hide()
        self.keys_hint = plain_label(review_keys.hint_line(), hint=True)
        for widget, stretch in ((plain_label("Question", bold=True), 0), (self.question, 0), (self.why_label, 0),
                                (self.suggestions, 1), (self.pool, 1), (plain_label("Reference answer", bold=True), 0),
                                (self.reference, 0), (plain_label("Gold chunk(s) with surrounding text", bold=True), 0),
                                (self.chunks, 1), (self.message, 0)):
            col.addWidget(widget, stretch)
        col.addLayout(self._decision_buttons())
        col.addWidget(self.keys_hint)
        splitter = QSplitter()
        splitter.addWidget(main)
        splitter.addWidget(self._side())
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(splitter)

    def _focus_bar(self) -> QWidget:
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
        return self.focus_bar

    def _side(self) -> QWidget:
        side = QWidget()
        scol = QVBoxLayout(side)
        scol.addWidget(plain_label("Progress", bold=True))
        self.progress_label = plain_label()
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
        return side

    def _next_step_row(self) -> QHBoxLayout:
        """The empty queue's way on: one button to the tab that makes the next stage."""
        self.next_step_button = QPushButton()
        self.next_step_button.setFocusPolicy(Qt.NoFocus)
        self.next_step_button.clicked.connect(lambda: self.next_step.emit(screen.missing_stage(self.db)))
        self.next_step_button.hide()
        row = QHBoxLayout()
        row.addWidget(self.next_step_button)
        row.addStretch(1)
        return row

    def _decision_buttons(self) -> QHBoxLayout:
        """The table's keys that have a caption, as buttons for mouse users; they never take focus."""
        row = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for key in review_keys.buttons():
            button = QPushButton(review_keys.button_caption(key))
            button.setFocusPolicy(Qt.NoFocus)
            button.clicked.connect(lambda _=False, k=key: self.current is not None and review_keys.call(self, k))
            self.buttons[key.button.rstrip("…").lower()] = button  # "approve", ..., "gold"
            row.addWidget(button)
        row.addStretch(1)
        return row

    # -- navigation ------------------------------------------------------------------------
    def show_query(self, query_id: Optional[str]) -> None:
        """Show a row. Leaving one for another stores the cursor only if reopening would not find
        the new row anyway (see navigation.Cursor); re-showing the same row writes nothing."""
        if self.current is not None and query_id != self.current["id"]:
            self.cursor.moved_to(query_id)
            self.say("")  # what the last key did concerns the row left behind
        self.current = screen.review_row(self.db, query_id)
        self._render()

    def save_cursor(self) -> None:
        """The window closes (or switches project): store where the reviewer is."""
        if self.current is not None:
            self.cursor.close(self.current["id"])

    def shutdown(self) -> None:
        self.save_cursor()
        self.suggestions.shutdown()
        self.pool.shutdown()

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
        self.save_cursor()
        self.reviewer, self.cursor, self.current = name, Cursor(self.db, name), None
        self.show_query(resume_row(self.db, name))

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
        pending = screen.pending_within(self.db, self.focus)
        self.focus_label.setText(f"Reviewing the {len(self.focus)} queries {self.focus_reason} ({pending} pending).")
        self.focus_bar.show()

    # -- rendering -------------------------------------------------------------------------
    def _render(self, keep_pool_place: bool = False) -> None:
        q = self.current
        if self.focus is not None:
            self._update_focus_bar()
        self.next_step_button.setVisible(q is None and self.focus is None)
        if q is None and self.focus is None:
            missing, caption = NEXT_STEP[screen.missing_stage(self.db)]
            self.status_label.setText(missing)
            self.next_step_button.setText(caption)
        elif q is None:
            self.status_label.setText("Every selected query is reviewed. 'Whole queue' goes back to the rest.")
        else:
            self.status_label.setText(header(q))
        self.question.setPlainText(q["text"] if q else "")
        self.why_label.setText(why_queued(q, q["queue_entry"]) if q else "")
        self.reference.setPlainText((q.get("reference") or "") if q else "")
        if q is None:
            self.chunks.setPlainText("")
        else:
            self.highlighted = render_gold(self.chunks, screen.gold_in_context(self.db, q), q.get("reference") or "")
        fit_to_text(self.chunks, most=80)  # "no gold chunk" is one line: the pool above gets the room
        self._show_pool(q, keep_pool_place)
        self._show_suggestions(q)
        self._render_side()

    def _show_suggestions(self, q: Optional[dict]) -> None:
        """The suggestions the pooled results do not offer: a chunk both list is the pool's to show."""
        offered = [e["chunk_id"] for e in self.pool_rows]
        self.suggestion_rows = self.suggestions.show_for(q, in_pool=offered)
        # a one-line reason takes its own height; the room goes to the gold chunks below
        self._column.setStretchFactor(self.suggestions, 1 if self.suggestions.shown else 0)
        fit_to_text(self.suggestions.panel)  # one or two left beside the pool: no empty box taking its room

    def _show_pool(self, q: Optional[dict], keep_place: bool = False) -> None:
        self.pool_rows = self.pool.show_for(q, keep_place, suggested=self.suggestions.numbers_for(q))
        self._column.setStretchFactor(self.pool, 2 if self.pool_rows else 0)  # the list to read gets the room

    def _pool_computed(self) -> None:
        """New pools: the list, and the suggestions beside it (what the pool now offers leaves them)."""
        self._show_pool(self.current)
        self._show_suggestions(self.current)

    def _fill_pools(self) -> None:
        if not self.suggestions.busy():
            self.pool.fill_missing()
            if self.pool.busy():  # the row's line now says its pool is being computed
                self._show_pool(self.current, keep_place=True)

    @property
    def suggestions_panel(self):
        return self.suggestions.panel

    def _render_side(self) -> None:
        side = screen.side_panel(self.db, self.reviewer)
        lines = [f"Reviewed {side['progress']['reviewed']} of {side['progress']['queued']} queued"]
        for row in side["by_cluster"]:
            name = "-" if row["cluster"] is None else row["cluster"]
            lines.append(f"  cluster {name}: {row['reviewed'] or 0} / {row['queued']}")
        self.progress_label.setText("\n".join(lines))
        self.history.clear()
        self.history_label.setText(f"Last ten decisions by {self.reviewer}")
        for entry in side["history"]:
            mark = {"done": "", "merged": " (merged)"}.get(entry["state"], " (undone)")
            self.history.addItem(f"{entry['action']}{mark}: {entry['text'][:60]}")

    # -- decisions -------------------------------------------------------------------------
    def decide(self, action: str, advance: bool = True, **changes) -> bool:
        """Record a decision on the row shown; core's refusals (no usable gold, an empty question)
        are shown under the row, which stays. True if it was recorded."""
        if self.current is None:
            return False
        qid = self.current["id"]
        try:
            decisions.decide(self.db, qid, action, self.reviewer, **changes)
        except GoldMissing as exc:  # core refused: say what to do, stay on the row
            self.say(gold_missing_text(exc))
            return False
        except InputError as exc:
            self.say(f"Not saved: {exc}")
            return False
        self.say("")
        self.skipped.discard(qid)
        self.decided.emit(qid)
        if advance:
            self.advance()
        else:
            self.show_query(qid)
        return True

    def say(self, text: str, refused: bool = True) -> None:
        """One line under the row for why the last key was refused (red), or what it did."""
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {'#b3261e' if refused else '#15803d'}; font-weight: bold;")
        self.message.setVisible(bool(text))

    def undo(self) -> None:
        self._undo_or_redo(decisions.undo)

    def redo(self) -> None:
        self._undo_or_redo(decisions.redo)

    def _undo_or_redo(self, step) -> None:
        """Ctrl+Z / Ctrl+Shift+Z; core's refusal (another reviewer's later decision depends on this one)
        is shown under the row, which stays as it is."""
        try:
            qid = step(self.db, self.reviewer)
        except InputError as exc:
            self.say(str(exc))
            return
        self.say("")
        if qid:
            self.decided.emit(qid)
            self.show_query(qid)

    def skip(self) -> None:
        if self.current:
            self.skipped.add(self.current["id"])
        self.advance()

    def show_help(self) -> None:
        self.help.show_over()

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
        """Ctrl+Enter: record the edit. Core's refusal (e.g. an empty question) is shown and the row
        keeps its text; any other error is a bug and propagates to the app's excepthook."""
        text, ref = self.question.toPlainText().strip(), self.reference.toPlainText().strip()
        self._end_edit()
        if self.current and (text != self.current["text"] or ref != (self.current.get("reference") or "")):
            if self.decide("edit", advance=False, text=text, reference=ref):
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
        gold = dialog.chunk_ids()
        self.decide("gold", advance=False, gold=gold, grades={**self._not_relevant(gold), **dialog.grades()})
        self.setFocus()

    def _not_relevant(self, gold: list[str]) -> dict[str, int]:
        """The row's chunks graded not relevant (0) and not made gold now: kept judged, so a gold
        change does not offer them for grading again."""
        return judged_not_relevant(self.current["gold_grades"], gold)

    def toggle_suggestion(self, number: int, cycle_grade: bool = False) -> None:
        """Key 1-5: the suggestion becomes gold (grade 1, relevant) or stops being gold; with Shift its
        grade cycles through the gold grades of store.gold.GRADES, 1 -> 2 -> 1 (a suggestion not yet
        gold becomes gold, highly relevant)."""
        if number > len(self.suggestion_rows):
            self.say(f"No suggestion {number} for this query." if self.suggestion_rows
                     else f"No suggestions for this query ({self.suggestions.reason.text()})")
            return
        chunk_id = self.suggestion_rows[number - 1]["chunk_id"]
        gold = list(self.current["gold_chunk_ids"])
        grades = {cid: int(self.current["gold_grades"].get(cid, RELEVANT)) for cid in gold}
        judged = self._not_relevant(gold + [chunk_id])
        if cycle_grade:
            grades[chunk_id] = next_gold_grade(grades.get(chunk_id))
            gold += [] if chunk_id in gold else [chunk_id]
        elif chunk_id in gold:
            gold.remove(chunk_id)
            del grades[chunk_id]
        else:
            gold.append(chunk_id)
            grades[chunk_id] = RELEVANT
        self.decide("gold", advance=False, gold=gold, grades={**judged, **grades})

    def move_pool(self, step: int) -> None:
        """J/K (or the arrows): mark the next or previous pooled result."""
        if self.pool.move(step, self.current) is None:
            self.say(f"No pooled results to grade for this row ({self.pool.reason.text()})")

    def grade_pooled(self, value: int) -> None:
        """R / H / 0: grade the marked pooled result 1, 2 or 0 (a journaled 'gold' decision); the
        marker stays at its place, which now shows the next result."""
        entry = self.pool.marked()
        if entry is None:
            self.say(f"No pooled result to grade for this row ({self.pool.reason.text()})")
            return
        qid = self.current["id"]
        try:
            pool.grade(self.db, qid, entry["chunk_id"], value, self.reviewer)
        except GoldMissing as exc:
            self.say(gold_missing_text(exc))
            return
        except InputError as exc:
            self.say(f"Not saved: {exc}")
            return
        self.say("")
        self.decided.emit(qid)
        self.current = screen.review_row(self.db, qid)
        self._render(keep_pool_place=True)
        self.say(f"Pooled result {entry['position']} graded {grade_name(value)} "
                 f"({entry['path']} › {entry['title'] or '(no heading)'}). Ctrl+Z undoes it.", refused=False)

    def open_note_dialog(self) -> NoteDialog:
        self.note_dialog = NoteDialog(self.current.get("note") or "", self)
        self.note_dialog.accepted.connect(lambda: self.decide("note", advance=False,
                                                              note=self.note_dialog.edit.toPlainText()))
        self.note_dialog.open()
        return self.note_dialog

    def save_guidelines(self) -> None:
        set_guidelines(self.db, self.guidelines.toPlainText())

    # -- keys ------------------------------------------------------------------------------
    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt's naming)
        if self.editing or not self.help.isHidden():
            return super().keyPressEvent(event)
        review_keys.dispatch(self, event, self.current is not None, super().keyPressEvent)

    def refresh(self) -> None:
        """Re-read the current row (another tab may have changed it) and compute the suggestions
        a new queue lacks."""
        current = self.current["id"] if self.current else None
        if current is not None and self.focus is None and not screen.in_review_order(self.db, current):
            current = None  # a queue was built since this row was shown: start on the queue
        self.show_query(current or next_pending(self.db))
        self.suggestions.fill_missing()
        self._fill_pools()
