"""The suggested gold chunks of the review row, shown inline under the question, and the worker
that computes the queue's missing ones.

Each suggestion shows its number (the key that toggles it), whether it is gold and its grade, the
document path and heading, and a snippet with the question's words highlighted. The text is
plain text with character formats, never HTML, so corpus text cannot inject markup."""

from __future__ import annotations

from typing import Collection, Optional

import sqlite_utils
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextEdit, QVBoxLayout, QWidget

from curator.core.retrieval import suggest
from curator.core.store.gold import RELEVANT, grade_name
from curator.gui.highlight import QUESTION_STOP, content_words, highlight
from curator.gui.task_view import TaskView
from curator.gui.widgets import plain_label, project_file

SNIPPET = 320


def _formats() -> dict[str, QTextCharFormat]:
    formats = {name: QTextCharFormat() for name in ("head", "gold", "path", "text", "found")}
    for name in ("head", "gold"):
        formats[name].setFontWeight(QFont.Bold)
    formats["gold"].setForeground(QColor("#15803d"))
    formats["path"].setForeground(QColor("#1d4ed8"))
    formats["found"].setForeground(QColor("#7c2d12"))
    return formats


def _marked(fmt: QTextCharFormat) -> QTextCharFormat:
    """``fmt`` on the marker's background: the whole head line of the marked entry stands out."""
    marked = QTextCharFormat(fmt)
    marked.setBackground(QColor("#bfdbfe"))  # blue: the yellow marks question words
    return marked


def render_chunks(edit: QTextEdit, entries: list[tuple[list[tuple[str, str]], dict]], question: str,
                  marked: int = -1) -> int:
    """Chunks as plain text with character formats: each entry is (its head line as (text, format
    name) pieces, the chunk row with path, title and text), then a snippet with the question's
    words highlighted; the head line of entry ``marked`` (0-based) on a marker background. Shared
    by the suggestions and the pooled results. Returns how many words were highlighted."""
    edit.setPlainText("")
    fmt, terms = _formats(), content_words(question, QUESTION_STOP)
    cursor = QTextCursor(edit.document())
    spans = []
    for i, (head, row) in enumerate(entries):
        style = (lambda name: _marked(fmt[name])) if i == marked else (lambda name: fmt[name])
        for text, name in head:
            cursor.insertText(text, style(name))
        cursor.insertText(f"{row['path']}  ›  {row['title'] or '(no heading)'}", style("path"))
        cursor.insertText("\n", fmt["text"])
        start = cursor.position()
        snippet = " ".join(row["text"].split())
        cursor.insertText((snippet[:SNIPPET] + ("…" if len(snippet) > SNIPPET else "")) + "\n\n", fmt["text"])
        spans.append((start, cursor.position()))
    count = sum(highlight(edit, s, e, terms) for s, e in spans)
    edit.moveCursor(QTextCursor.Start)
    return count


class ChunkListPanel(QTextEdit):
    """Read-only plain text that takes no focus: the review view's keys act on the list it shows.
    ``highlighted`` counts the question words marked in the last rendering."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setAcceptRichText(False)
        self.setFocusPolicy(Qt.NoFocus)
        self.highlighted = 0


class SuggestionsPanel(ChunkListPanel):
    """The suggestions; the review view's keys 1-5 act on it."""

    def show_suggestions(self, rows: list[tuple[int, dict]], gold: dict[str, int], question: str) -> int:
        """Render ``rows`` (core's suggestions, best first, the ones shown) each with its number, the
        key 1-5 that takes it; ``gold`` maps chunk id -> grade. Returns how many question words were
        highlighted."""
        entries = []
        for number, row in rows:
            grade = gold.get(row["chunk_id"])
            mark = f"  ✓ gold, grade {grade_name(grade)}" if grade is not None else ""
            entries.append(([(f"{number}", "head"), (f"{mark}  ", "gold")], row))
        self.highlighted = render_chunks(self, entries, question)
        return self.highlighted


# Why a row shows no suggestion, by core's ``suggest.empty_reason`` (and the box's own state).
EMPTY_TEXT = {
    "no_corpus": "No suggestions: the project has no documents to suggest from. Add them in the Corpus tab.",
    "has_gold": "No suggestions: this row has its gold chunk(s), shown below. G searches the corpus for others.",
    "not_queued": ("No suggestions: they are computed for the pending rows of the review queue, and this row is "
                   "not one. G searches the corpus."),
    "computing": "Suggested gold chunks for this query are being computed (progress below)…",
    "no_match": "No chunk matched this query. G searches the corpus; U marks it unanswerable.",
    "stopped": "Computing suggestions was stopped before this query's. G searches the corpus.",
    "failed": "Suggestions could not be computed: {error}. G searches the corpus.",
    "none_found": "No suggestions for this query yet.",
    "in_pool": ("Suggestions {numbers} are all among the pooled results below: grade them there (R / H / 0); "
                "their keys still take them as gold."),
}
# Above the suggestions when some of them are shown among the pooled results instead.
IN_POOL_TEXT = {
    1: "Suggestion {numbers} is among the pooled results below (key {numbers} still takes it).",
    2: "Suggestions {numbers} are among the pooled results below (their keys still take them).",
}


class ChunkListBox(TaskView, QWidget):
    """A list of chunks under the question, computed for the queue in the background: a title
    naming its keys, the list or one line saying why there is none, and the worker's progress bar.
    The suggestions and the pooled results are two of these. ``computed`` is emitted after each run.

    After the window closes (``shutdown``) a worker that ends later touches nothing: its last
    signals arrive after the project's connection is closed."""

    task_finished = Signal(object)
    task_failed = Signal(str, str)
    computed = Signal()
    kept_noun = "results"  # "Stopped: the <noun> computed so far are kept."

    def __init__(self, db: sqlite_utils.Database, title: str, panel: QTextEdit, reason_name: str,
                 parent=None) -> None:
        QWidget.__init__(self, parent)
        self.init_tasks()
        self.db, self.project_path = db, project_file(db)
        self.computing: set[str] = set()
        self.stopped = False
        self.closed = False
        self.title = plain_label(title, bold=True)
        self.reason = plain_label(hint=True)
        self.reason.setObjectName(reason_name)
        self.panel = panel
        self.task_bar.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget, stretch in ((self.title, 0), (self.reason, 0), (self.task_bar, 0), (self.panel, 1)):
            layout.addWidget(widget, stretch)

    def _start(self, fn, todo: list[str], message: str) -> None:
        """Run ``fn`` (a core fill_missing) in a worker for the ``todo`` rows."""
        self.computing = set(todo)
        self.last_error, self.stopped = None, False
        self.run_task(fn, message=message, finished=self._finished, cancelled=self._cancelled)

    def _finished(self, result: dict) -> tuple:
        if not self.closed:
            self.status.setText(self.finished_text(result))
        return (result,)

    def finished_text(self, result: dict) -> str:
        raise NotImplementedError

    def set_busy(self, busy: bool, message: str = "") -> None:
        if self.closed:
            return
        super().set_busy(busy, message)
        self.task_bar.setVisible(busy or self.last_error is not None)
        if not busy:
            self.computing = set()
            self.computed.emit()

    def fail(self, what: str, todo: str) -> None:
        if not self.closed:  # no dialog over a window that is gone
            super().fail(what, todo)

    def _cancelled(self) -> None:
        self.stopped = True
        if not self.closed:
            self.status.setText(f"Stopped: the {self.kept_noun} computed so far are kept.")

    def shutdown(self) -> None:
        """The window closes: stop after the batch in flight (its own connection commits it)."""
        self.closed = True
        self.cancel()


class SuggestionsBox(ChunkListBox):
    """The suggestions under the question, and the worker that computes the queued rows' missing
    ones (a project opened for the first time, a queue built from the command line)."""

    failure_title = "Suggestions failed"
    kept_noun = "suggestions"

    def __init__(self, db: sqlite_utils.Database, title: str, parent=None) -> None:
        super().__init__(db, title, SuggestionsPanel(), "suggestionsReason", parent)
        self.tried: set[str] = set()  # rows a run of this session was asked to compute
        self.rows: list[dict] = []  # every suggestion of the row, best first: key N takes rows[N - 1]
        self.shown: list[dict] = []  # the ones listed here (not among the pooled results)

    def show_for(self, query: Optional[dict], in_pool: Collection[str] = ()) -> list[dict]:
        """Show QUERY's suggestions (gold ones marked), or why it has none; returns them all.

        A chunk the row's pooled results offer (``in_pool``) is listed there, not here: each chunk is
        shown once, and the pool is where it can also be graded not relevant (a judged 0 in the
        qrels). The numbers stay those of the suggestions, so a key takes the same chunk whether the
        pool (computed after the suggestions) has arrived or not."""
        self.rows = suggest.suggestions(self.db, query["id"]) if query else []
        pooled = set(in_pool)
        numbered = [(n, row) for n, row in enumerate(self.rows, 1)]
        listed = [(n, row) for n, row in numbered if row["chunk_id"] not in pooled]
        moved = [str(n) for n, row in numbered if row["chunk_id"] in pooled]
        self.shown = [row for _, row in listed]
        self.title.setVisible(bool(self.shown))
        self.panel.setVisible(bool(self.shown))
        reason = ("in_pool" if self.rows else self._reason(query)) if query and not self.shown else ""
        if reason:
            text = EMPTY_TEXT[reason].format(error=(self.last_error or ("",))[0], numbers=", ".join(moved))
        elif moved:
            text = IN_POOL_TEXT[min(len(moved), 2)].format(numbers=", ".join(moved))
        else:
            text = ""
        self.reason.setText(text)
        self.reason.setVisible(bool(text))
        if self.shown:
            gold = {cid: int(query["gold_grades"].get(cid, RELEVANT)) for cid in query["gold_chunk_ids"]}
            self.panel.show_suggestions(listed, gold, query["text"])
        return self.rows

    def numbers_for(self, query: Optional[dict]) -> dict[str, int]:
        """Chunk id -> the number (key) of each suggestion of QUERY, for the pooled results to mark."""
        return {row["chunk_id"]: n for n, row in enumerate(suggest.suggestions(self.db, query["id"]), 1)} if query else {}

    def _reason(self, query: dict) -> str:
        reason = suggest.empty_reason(self.db, query["id"])
        if reason != "none_found":
            return reason
        if query["id"] in self.computing:
            return "computing"
        if self.last_error is not None:
            return "failed"
        if query["id"] in self.tried:
            return "stopped" if self.stopped else "no_match"
        self.fill_missing()  # a queue built since the window opened: compute now
        return "computing" if query["id"] in self.computing else "none_found"

    def fill_missing(self) -> None:
        """Compute, in a worker, the suggestions of queued rows that lack them (not yet tried)."""
        if self.busy():
            return
        todo = [qid for qid in suggest.lacking_suggestions(self.db) if qid not in self.tried]
        if not todo:
            return
        self.tried.update(todo)
        what = f"{len(todo)} queued {'query' if len(todo) == 1 else 'queries'}"
        self._start(suggest.fill_missing, todo, f"Computing suggested gold chunks for {what}…")

    def finished_text(self, result: dict) -> str:
        n = result["queries"]
        return f"Suggested gold chunks for {n} {'query' if n == 1 else 'queries'}."
