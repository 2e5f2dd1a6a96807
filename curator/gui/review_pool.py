"""The pooled results of the review row (review.pool): the top results of each retriever under
evaluation that are not gold and not graded yet, each marked with who found it at which rank
("bm25 #2, dense #1"), shown under the suggestions; and the worker that pools the queue's rows.

The reviewer moves a marker through them with the keyboard and grades the marked one with one key
(review_keys). Rendering is the suggestions panel's (plain text with character formats, the
question's words highlighted), so corpus text cannot inject markup."""

from __future__ import annotations

from typing import Optional

import sqlite_utils
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QTextEdit, QVBoxLayout, QWidget

from curator.core.review import pool
from curator.gui.suggestions_panel import render_chunks
from curator.gui.task_view import TaskView
from curator.gui.widgets import plain_label, project_file

EMPTY_TEXT = {
    "not_pooled": ("No pooled results: rows of the review queue get them (curator pool PROJECT QUERY_ID pools "
                   "any row)."),
    "computing": "Pooling the retrievers' top results for this row (progress below)…",
    "all_graded": "Every pooled result of this row is gold or graded.",
    "stopped": "Pooling was stopped before this row's results. curator pool PROJECT pools them.",
    "failed": "Pooled results could not be computed: {error}.",
}


class PoolPanel(QTextEdit):
    """Read-only, takes no focus: the review view's keys move the marker and grade."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setAcceptRichText(False)
        self.setFocusPolicy(Qt.NoFocus)
        self.highlighted = 0

    def show_pool(self, entries: list[dict], current: int, question: str) -> int:
        """Render core's pooled entries with the marker on ``current`` (0-based); scrolls to it."""
        rows = []
        for i, entry in enumerate(entries):
            marker = "▶ " if i == current else "   "
            rows.append(([(f"{marker}{entry['position']}  ", "head"), (f"{pool.found_by_text(entry)}   ", "found")],
                         entry))
        self.highlighted = render_chunks(self, rows, question, marked=current)
        self._scroll_to(current)
        return self.highlighted

    def _scroll_to(self, index: int) -> None:
        """Keep the marked entry in view: each entry is three blocks (head, snippet, blank)."""
        block = self.document().findBlockByNumber(index * 3)
        if block.isValid():
            cursor = QTextCursor(block)
            self.setTextCursor(cursor)
            self.ensureCursorVisible()


class PoolBox(TaskView, QWidget):
    """Title naming the keys, the marked list or one line saying why there is none, and the worker
    that pools the queued rows without a pool. ``computed`` is emitted after each run."""

    task_finished = Signal(object)
    task_failed = Signal(str, str)
    computed = Signal()
    failure_title = "Pooling failed"

    def __init__(self, db: sqlite_utils.Database, title: str, parent=None) -> None:
        QWidget.__init__(self, parent)
        self.init_tasks()
        self.db, self.project_path = db, project_file(db)
        self.computing: set[str] = set()
        self.stopped = False
        self.closed = False
        self.title = plain_label(title, bold=True)
        self.reason = plain_label(hint=True)
        self.reason.setObjectName("poolReason")
        self.panel = PoolPanel()
        self.entries: list[dict] = []
        self.current = 0
        self.task_bar.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget, stretch in ((self.title, 0), (self.reason, 0), (self.task_bar, 0), (self.panel, 1)):
            layout.addWidget(widget, stretch)

    def show_for(self, query: Optional[dict], keep_place: bool = False) -> list[dict]:
        """Show QUERY's pooled results, or why there is none. ``keep_place``: the same row again
        (after a grade), so the marker stays at its index, which is now the next result."""
        self.entries = pool.pooled(self.db, query["id"]) if query else []
        self.current = min(self.current, len(self.entries) - 1) if keep_place else 0
        self.current = max(self.current, 0)
        reason = self._reason(query) if query and not self.entries else ""
        self.reason.setText(EMPTY_TEXT[reason].format(error=(self.last_error or ("",))[0]) if reason else "")
        self.reason.setVisible(bool(reason))
        self.panel.setVisible(bool(self.entries))
        if self.entries:
            self.panel.show_pool(self.entries, self.current, query["text"])
        return self.entries

    def _reason(self, query: dict) -> str:
        if query["id"] in self.computing:
            return "computing"
        if pool.is_computed(self.db, query["id"]):
            return "all_graded"
        if self.last_error is not None:
            return "failed"
        return "stopped" if self.stopped else "not_pooled"

    def move(self, step: int, query: Optional[dict]) -> Optional[dict]:
        """Move the marker by ``step`` (clamped); returns the marked entry."""
        if not self.entries:
            return None
        self.current = max(0, min(len(self.entries) - 1, self.current + step))
        self.panel.show_pool(self.entries, self.current, query["text"] if query else "")
        return self.entries[self.current]

    def marked(self) -> Optional[dict]:
        return self.entries[self.current] if self.entries else None

    def fill_missing(self) -> None:
        """Pool, in a worker, the queued rows that have no pool yet."""
        if self.busy() or self.closed:
            return
        todo = pool.lacking_pool(self.db)
        if not todo:
            return
        self.computing = set(todo)
        self.last_error, self.stopped = None, False
        what = f"{len(todo)} queued {'row' if len(todo) == 1 else 'rows'}"
        self.run_task(pool.fill_missing, message=f"Pooling the retrievers' top results for {what}…",
                      finished=self._finished, cancelled=self._cancelled)

    def set_busy(self, busy: bool, message: str = "") -> None:
        if self.closed:
            return
        super().set_busy(busy, message)
        self.task_bar.setVisible(busy or self.last_error is not None)
        if not busy:
            self.computing = set()
            self.computed.emit()

    def fail(self, what: str, todo: str) -> None:
        if not self.closed:
            super().fail(what, todo)

    def _finished(self, result: dict) -> tuple:
        if not self.closed:
            n = result["queries"]
            self.status.setText(f"Pooled {', '.join(result['retrievers'])} for {n} {'row' if n == 1 else 'rows'}.")
        return (result,)

    def _cancelled(self) -> None:
        self.stopped = True
        if not self.closed:
            self.status.setText("Stopped: the pools computed so far are kept.")

    def shutdown(self) -> None:
        """The window closes: stop after the batch in flight; later signals change nothing."""
        self.closed = True
        self.cancel()
