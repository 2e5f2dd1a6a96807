"""The adjudication tab: two reviewers' decisions side by side, and a third person's final one.

Keys are handled in ``keyPressEvent`` of the view (A takes the left decision, B the right one,
E edits, Space moves on, Ctrl+Z undoes); the display widgets take no focus, and while an edit
box has focus it consumes typed keys, so a pick never fires while typing. Every final
decision goes through ``curator.core.review.adjudicate.resolve``, a journaled ``adjudicate``
decision committed at once. All user text is shown as plain text, never as rich text.
"Merge another copy…" runs core's ``merge`` on a chosen .curator file in a worker and shows
what it brought in; the conflicts it found are listed at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import sqlite_utils
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QFileDialog, QFrame, QHBoxLayout, QLineEdit, QListWidget, QPlainTextEdit,
                               QPushButton, QSplitter, QVBoxLayout, QWidget)

from curator.core.review import adjudicate
from curator.core.corpus import documents
from curator.core.review import decisions
from curator.core.review.identity import default_reviewer
from curator.core.diagnosis import faithfulness  # noqa: F401 (registers how undoing a verdict rescores its trace)
from curator.core.errors import CuratorError
from curator.gui import workers
from curator.gui.task_view import TaskView
from curator.gui.widgets import EditKeys, plain_label

HINT = "A take left · B take right · E edit (Ctrl+Enter saves, Esc cancels) · Space next · Ctrl+Z undo"


def _read_only_text(height: int) -> QPlainTextEdit:
    edit = QPlainTextEdit()
    edit.setReadOnly(True)
    edit.setFocusPolicy(Qt.NoFocus)
    edit.setMaximumHeight(height)
    return edit


class DecisionPanel(QFrame):
    """One reviewer's decision: who, status, question, answer, gold chunks and note."""

    def __init__(self, title: str, parent=None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.StyledPanel)
        self.header = plain_label(title, bold=True)
        self.question, self.answer = _read_only_text(80), _read_only_text(110)
        self.gold, self.note = _read_only_text(110), plain_label()
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        for caption, widget in (("Question", self.question), ("Reference answer", self.answer),
                                ("Gold chunks", self.gold)):
            layout.addWidget(plain_label(caption))
            layout.addWidget(widget)
        layout.addWidget(self.note)
        layout.addStretch(1)

    def show_decision(self, key: str, decision: Optional[dict], gold_lines: list[str]) -> None:
        if decision is None:
            self.header.setText(f"{key}: —")
            for edit in (self.question, self.answer, self.gold):
                edit.setPlainText("")
            self.note.setText("")
            return
        self.header.setText(f"{key}: {decision['reviewer'] or '(no name)'} · {decision['status'].upper()}")
        self.question.setPlainText(decision["text"] or "")
        self.answer.setPlainText(decision["reference"] or "")
        self.gold.setPlainText("\n".join(gold_lines) or "(none)")
        self.note.setText(f"note: {decision['note']}" if decision.get("note") else "")


def merge_task(db: sqlite_utils.Database, other: str, *, on_progress=None, cancel=None) -> dict:
    """Core's merge (one pass, no progress of its own) as a task for the worker."""
    from curator.core.review.merge import merge

    return workers.one_step("merging", lambda: merge(db, other), on_progress, cancel)


def merge_summary(result: dict) -> str:
    who = ", ".join(r for r in result["reviewers"] if r) or "no named reviewer"
    return (f"Merged {Path(result['other']).name} ({who}): {result['other_decided']} decided there, "
            f"{result['matched']} of them here too, {result['decisions_imported']} decisions imported, "
            f"{result['adopted']} rows taken over, {len(result['conflicts'])} conflicts to adjudicate"
            + (f", {result['unmatched']} not in this project" if result["unmatched"] else "") + ".")


class AdjudicationView(TaskView, QWidget):
    """The adjudication tab. ``resolved`` is emitted with the query id after every change."""

    resolved = Signal(str)
    merged = Signal(object)  # core's merge report: other views re-read the project
    task_finished = Signal(object)
    task_failed = Signal(str, str)
    failure_title = "Merge failed"

    def __init__(self, db: sqlite_utils.Database, project_path: str | Path, reviewer: Optional[str] = None,
                 parent=None) -> None:
        super().__init__(parent)
        self.db, self.project_path = db, Path(project_path)
        self.init_tasks(cancellable=False)  # a merge is one transaction: it cannot stop half-way
        self.last_merge: Optional[dict] = None
        self.judge = reviewer or default_reviewer()
        self.conflicts: list[dict] = []
        self.index = 0
        self.editing = False
        self.setFocusPolicy(Qt.StrongFocus)
        self._build()
        self.reload()

    # -- layout ----------------------------------------------------------------------------
    def _build(self) -> None:
        self.status_label = plain_label()
        self.question_label = plain_label(bold=True)
        self.listing = QListWidget()
        self.listing.setFocusPolicy(Qt.NoFocus)
        self.listing.currentRowChanged.connect(self._select_row)
        self.left, self.right = DecisionPanel("A"), DecisionPanel("B")
        self._build_editor()
        panels = QHBoxLayout()
        panels.addWidget(self.left)
        panels.addWidget(self.right)
        main = QWidget()
        col = QVBoxLayout(main)
        col.addWidget(self.status_label)
        col.addWidget(self.question_label)
        col.addLayout(panels, 1)
        col.addWidget(self.editor)
        col.addWidget(plain_label(HINT))
        splitter = QSplitter()
        splitter.addWidget(self.listing)
        splitter.addWidget(main)
        splitter.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(self._merge_bar())
        layout.addWidget(splitter, 1)

    def _merge_bar(self) -> QHBoxLayout:
        self.merge_button = QPushButton("Merge another copy…")
        self.merge_button.setToolTip("Bring in another reviewer's decisions from their copy of this project "
                                     "(opened read-only; re-merging changes nothing).")
        self.merge_button.setFocusPolicy(Qt.NoFocus)
        self.merge_button.clicked.connect(self.choose_copy)
        bar = QHBoxLayout()
        bar.addWidget(self.merge_button)
        bar.addWidget(self.task_bar, 1)
        return bar

    # -- merge -----------------------------------------------------------------------------
    def choose_copy(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Merge another reviewer's copy", str(self.project_path.parent),
                                              "Curator project (*.curator);;All files (*)")
        if path:
            self.merge_copy(path)

    def merge_copy(self, path: str):
        return self.run_task(merge_task, str(path), message=f"Merging {Path(path).name}…",
                             finished=self._merged, cancelled=lambda: self.status.setText("Cancelled."))

    def _merged(self, result: dict) -> tuple:
        self.last_merge = result
        self.status.setText("\n".join([merge_summary(result), *result["warnings"], *result["errors"]]))
        self.reload()
        self.merged.emit(result)
        return (result,)

    def set_busy(self, busy: bool, message: str = "") -> None:
        self.merge_button.setEnabled(not busy)
        super().set_busy(busy, message)

    def _build_editor(self) -> None:
        self.editor = QFrame()
        self.edit_status = QComboBox()
        self.edit_status.addItems(list(adjudicate.DECIDED))
        self.edit_question, self.edit_answer = QPlainTextEdit(), QPlainTextEdit()
        self.edit_question.setMaximumHeight(70)
        self.edit_answer.setMaximumHeight(90)
        self.edit_gold = QLineEdit(placeholderText="comma-separated chunk ids")
        self._edit_keys = EditKeys(self.save_edit, self.cancel_edit)
        form = QVBoxLayout(self.editor)
        form.addWidget(plain_label("Final decision", bold=True))
        for caption, widget in (("Status", self.edit_status), ("Question", self.edit_question),
                                ("Reference answer", self.edit_answer), ("Gold chunk ids", self.edit_gold)):
            widget.installEventFilter(self._edit_keys)
            form.addWidget(plain_label(caption))
            form.addWidget(widget)
        self.editor.hide()

    # -- data ------------------------------------------------------------------------------
    def reload(self) -> None:
        """Re-read the open conflicts, staying near the row the judge was on."""
        self.conflicts = adjudicate.conflicts(self.db)
        self.index = min(self.index, max(0, len(self.conflicts) - 1))
        self.listing.blockSignals(True)
        self.listing.clear()
        for conflict in self.conflicts:
            who = " vs ".join(f"{d['reviewer']}:{d['status']}" for d in conflict["decisions"][:2])
            self.listing.addItem(f"{who} — {(conflict['text'] or '')[:60]}")
        if self.conflicts:
            self.listing.setCurrentRow(self.index)
        self.listing.blockSignals(False)
        self._render()

    @property
    def current(self) -> Optional[dict]:
        return self.conflicts[self.index] if self.conflicts else None

    def _select_row(self, row: int) -> None:
        if 0 <= row < len(self.conflicts):
            self.index = row
            self._render()

    def _gold_lines(self, decision: dict) -> list[str]:
        found = {c["id"]: c for c in documents.get_chunks(self.db, decision["gold_chunk_ids"])}
        return [f"{cid} — {found[cid]['doc_path']} › {found[cid]['title'] or ''}" if cid in found
                else f"{cid} — (not in this project's corpus)" for cid in decision["gold_chunk_ids"]]

    def _render(self) -> None:
        conflict = self.current
        if conflict is None:
            self.status_label.setText("No open conflicts. Merge another reviewer's copy (the button above) to find some.")
            self.question_label.setText("")
            self.left.show_decision("A", None, [])
            self.right.show_decision("B", None, [])
            return
        decisions = conflict["decisions"]
        more = f" · {len(decisions) - 2} more reviewer(s) not shown" if len(decisions) > 2 else ""
        self.status_label.setText(f"Conflict {self.index + 1} of {len(self.conflicts)} · differs in "
                                  f"{', '.join(conflict['fields'])} · judge: {self.judge}{more}")
        self.question_label.setText(conflict["text"] or "")
        for key, panel, decision in (("A", self.left, decisions[0]), ("B", self.right, decisions[1])):
            panel.show_decision(key, decision, self._gold_lines(decision))

    # -- decisions -------------------------------------------------------------------------
    def _resolve(self, **choice) -> None:
        conflict = self.current
        if conflict is None:
            return
        try:
            adjudicate.resolve(self.db, conflict["query_id"], self.judge, **choice)
        except CuratorError as exc:  # e.g. a gold chunk this copy never ingested: say so, keep the row
            self.status_label.setText(f"Not saved: {exc}")
            return
        self.resolved.emit(conflict["query_id"])
        self.reload()

    def pick(self, side: int) -> None:
        """Take the left (0) or right (1) reviewer's decision as the final one."""
        if self.current is not None:
            self._resolve(pick=self.current["decisions"][side]["reviewer"])

    def next_conflict(self) -> None:
        if self.conflicts:
            self.index = (self.index + 1) % len(self.conflicts)
            self.listing.setCurrentRow(self.index)
            self._render()

    def undo(self) -> None:
        try:
            query_id = decisions.undo(self.db, self.judge)
        except CuratorError as exc:  # a reviewer's later decision depends on the adjudication: say so
            self.status_label.setText(f"Not undone: {exc}")
            return
        if query_id:
            self.resolved.emit(query_id)
            self.reload()

    # -- edit ------------------------------------------------------------------------------
    def start_edit(self) -> None:
        """Edit the final decision, starting from the left reviewer's."""
        if self.current is None:
            return
        base = self.current["decisions"][0]
        self.edit_status.setCurrentText(base["status"])
        self.edit_question.setPlainText(base["text"] or "")
        self.edit_answer.setPlainText(base["reference"] or "")
        self.edit_gold.setText(",".join(base["gold_chunk_ids"]))
        self.editing = True
        self.editor.show()
        self.edit_question.setFocus()

    def _end_edit(self) -> None:
        self.editing = False
        self.editor.hide()
        self.setFocus()

    def save_edit(self) -> None:
        gold = [g.strip() for g in self.edit_gold.text().split(",") if g.strip()]
        choice = {"status": self.edit_status.currentText(), "text": self.edit_question.toPlainText().strip(),
                  "reference": self.edit_answer.toPlainText().strip(), "gold": gold}
        self._end_edit()
        self._resolve(**choice)

    def cancel_edit(self) -> None:
        self._end_edit()
        self._render()

    # -- keys ------------------------------------------------------------------------------
    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt's naming)
        if self.editing:
            return super().keyPressEvent(event)
        key, mods = event.key(), event.modifiers()
        if key == Qt.Key_Z and mods & Qt.ControlModifier:
            self.undo()
        elif key == Qt.Key_A:
            self.pick(0)
        elif key == Qt.Key_B:
            self.pick(1)
        elif key == Qt.Key_E:
            self.start_edit()
        elif key in (Qt.Key_Space, Qt.Key_S, Qt.Key_N):
            self.next_conflict()
        else:
            super().keyPressEvent(event)
