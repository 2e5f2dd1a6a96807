"""The Generate tab: model picker, type mix, count, start / cancel / resume, live rows.

Generation runs in a ``TaskWorker`` (a pool thread with its own SQLite connection). Core's
``generate`` reports each accepted row and each rejected candidate (with its reason) through
its ``GenerationEvents``; the ``RowFeed`` below turns them into Qt signals, so the lists fill
while the run goes on. The backend is core's own, so a GUI run batches like a CLI run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Optional

import sqlite_utils
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QPushButton, QSpinBox, QSplitter,
                               QVBoxLayout, QWidget)

from curator.core.generation.runs import generation_runs, rejected_candidates
from curator.core.generation.backends import Backend
from curator.core.generation.generate import (DEFAULT_MIX, NO_EVENTS, QUERY_TYPES, GenerationConfig,
                                              GenerationEvents)
from curator.gui import workers
from curator.gui.model_picker import ENDPOINT, FIRST as BUNDLED, OTHER_FILE as GGUF, ModelPicker
from curator.gui.models import RecordTableModel
from curator.gui.settings import app_settings
from curator.gui.task_view import TaskView
from curator.gui.widgets import plain_label, record_table, titled

__all__ = ["BUNDLED", "ENDPOINT", "GGUF", "GenerateView"]  # the picker's fixed entries, as tests name them
HINT_DISMISSED = "generate/bigger_model_hint_dismissed"  # the model path whose hint the user closed
ANSWER_CHOICES = {"Taken from the chunk (answer-first)": "extractive", "Written by the model": "free"}
MODE_CHOICES = {"Follow the model": "auto", "Need-first (capable model)": "need-first",
                "Extractive (small model)": "extractive"}
RESUMABLE = ("cancelled", "running")  # 'running' after a crash: the run never finished
ROW_COLUMNS = (("query_type", "Type"), ("text", "Question"), ("reference", "Reference answer"), ("quality", "Quality"))
REJECT_COLUMNS = (("query_type", "Type"), ("text", "Candidate"), ("reason", "Why rejected"))
NO_QUESTION = "(no question could be read from the model's reply)"

BackendFactory = Callable[[GenerationConfig], Backend]


# -- the task adapter (runs in the worker thread) -----------------------------------------

class RowFeed(QObject):
    """Created on the GUI thread; emitted from the worker, so delivery is queued to the GUI."""

    accepted = Signal(object)  # a query dict from core
    rejected = Signal(object)  # a rejected candidate: query_type, text, reason

    def events(self) -> GenerationEvents:
        """Core's generation events, each one emitting a signal of this feed."""
        def rejected(query_type: str, text: Optional[str], reason: str) -> None:
            self.rejected.emit({"query_type": query_type, "text": text, "reason": reason})
        return GenerationEvents(accepted=self.accepted.emit, rejected=rejected)


def generate_task(db: sqlite_utils.Database, config: GenerationConfig, *, feed: Optional[RowFeed] = None,
                  backend_factory: Optional[BackendFactory] = None, on_progress=None, cancel=None,
                  target: str = "corpus") -> dict:
    """Run core's generate, feeding each stored row (accepted or rejected) back to the GUI.

    Without a factory core opens the backend itself from ``config``, exactly as the CLI does,
    so a GUI run batches like a CLI run (same ``parallel``)."""
    from curator.core.generation.generate import generate

    if target == "coverage":  # the Clusters tab's "Generate for gaps" (issue 28): chosen here, off the GUI thread
        from curator.core.clustering.coverage import target_chunks

        config.chunk_ids = target_chunks(db)["chunk_ids"]
    backend = backend_factory(config) if backend_factory is not None else None
    return generate(db, config, backend=backend, on_progress=on_progress, cancel=cancel,
                    events=feed.events() if feed is not None else NO_EVENTS)


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


class GenerateView(TaskView, QWidget):
    project_changed = Signal()            # rows were added to the project
    task_finished = Signal(object)        # core's run summary
    task_failed = Signal(str, str)
    failure_title = "Generation failed"
    cancel_message = "Cancelling after the row in flight…"

    def __init__(self, db: sqlite_utils.Database, project_path: str | Path,
                 backend_factory: Optional[BackendFactory] = None, parent=None) -> None:
        super().__init__(parent)
        self.db, self.project_path = db, Path(project_path)
        self.backend_factory = backend_factory  # tests inject a scripted backend
        self.init_tasks()
        self.feed: Optional[RowFeed] = None
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
        self.rows_label = plain_label("New rows (this session)")
        self.rejected_label = plain_label("Rejected candidates")
        splitter = QSplitter()
        for label, table in ((self.rows_label, self.rows_table), (self.rejected_label, self.rejected_table)):
            splitter.addWidget(titled(label, table))
        splitter.setSizes([600, 500])
        self.rate = plain_label()
        self.task_bar.add(self.rate)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(options)
        layout.addLayout(self._hint_bar())
        layout.addWidget(self.task_bar)
        layout.addWidget(splitter, 1)

    def _model_box(self) -> QGroupBox:
        box = QGroupBox("Model")
        self.picker = ModelPicker(self.db, "Bundled model (SmolLM2-135M)", parent=box)
        self.model_choice, self.model_path, self.endpoint = self.picker.choice, self.picker.path, self.picker.endpoint
        self.browse_button = self.picker.browse_button
        self.model_choice.currentIndexChanged.connect(self._model_changed)
        self.n_ctx = QSpinBox(minimum=512, maximum=32768, singleStep=512, value=2048)
        self.n_ctx.setToolTip("Context window in tokens (local models)")
        form = QFormLayout(box)
        self.picker.add_rows(form)
        form.addRow("Context", self.n_ctx)
        self.picker.listed.connect(self._show_hint)
        self.picker.refresh()
        return box

    def _hint_bar(self) -> QHBoxLayout:
        """A first-run hint: a bigger model than the bundled one was found, and what a row costs with it."""
        self.hint_label = plain_label(hint=True)
        self.hint_label.setWordWrap(True)
        self.hint_use = QPushButton("Use it")
        self.hint_close = QPushButton("Dismiss")
        self.hint_use.clicked.connect(self._use_hinted)
        self.hint_close.clicked.connect(self._dismiss_hint)
        bar = QHBoxLayout()
        bar.addWidget(self.hint_label, 1)
        bar.addWidget(self.hint_use)
        bar.addWidget(self.hint_close)
        self._hinted: Optional[dict] = None
        self._set_hint_visible(False)
        return bar

    def _set_hint_visible(self, visible: bool) -> None:
        for widget in (self.hint_label, self.hint_use, self.hint_close):
            widget.setVisible(visible)

    def _show_hint(self, _listing: dict) -> None:
        hint = self.picker.hint()
        dismissed = app_settings().value(HINT_DISMISSED, "")
        self._hinted = hint if hint and hint["model"]["path"] != dismissed else None
        if self._hinted:
            self.hint_label.setText(self._hinted["text"])
        self._set_hint_visible(self._hinted is not None and self.model_choice.currentIndex() == BUNDLED)

    def _use_hinted(self) -> None:
        if self._hinted and self.picker.select_path(self._hinted["model"]["path"]):
            self._set_hint_visible(False)

    def _dismiss_hint(self) -> None:
        if self._hinted:
            app_settings().setValue(HINT_DISMISSED, self._hinted["model"]["path"])
        self._set_hint_visible(False)

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
        self.answers = QComboBox()
        for label, mode in ANSWER_CHOICES.items():
            self.answers.addItem(label, mode)
        self.answers.setToolTip("Taken from the chunk: factoid, keyword and vague rows answer with a sentence of "
                                "their gold chunk and the model writes only the query (best with small models). "
                                "Written by the model: it writes both (for a big model).")
        self.mode = QComboBox()
        for label, mode in MODE_CHOICES.items():
            self.mode.addItem(label, mode)
        self.mode.setToolTip("Need-first: the model reads a chunk and asks what a user with the need it meets would "
                             "ask, then quotes the answer (a capable model). Extractive: it asks about one sentence "
                             "(a small model). Follow the model: need-first for 1B+ parameters or an endpoint.")
        self.start_button = QPushButton("Start")
        self.start_button.clicked.connect(self.start)
        self.resume_button = QPushButton("Resume last run")
        self.resume_button.clicked.connect(self.resume)
        self.run_status = plain_label(hint=True)
        form = QFormLayout(box)
        form.addRow("Rows", self.count)
        form.addRow("Seed", self.seed)
        form.addRow("Answers", self.answers)
        form.addRow("Mode", self.mode)
        buttons = QHBoxLayout()
        for button in (self.start_button, self.resume_button):
            buttons.addWidget(button)
        form.addRow(buttons)
        form.addRow(self.run_status)
        return box

    def _model_changed(self, index: int) -> None:
        self.n_ctx.setEnabled(index != ENDPOINT)
        if index != BUNDLED and hasattr(self, "hint_label"):
            self._set_hint_visible(False)

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
            self.refuse("Every query type has weight 0.", "Give at least one type a weight above 0 %.")
            return None
        choice = self.model_choice.currentIndex()
        model_path, endpoint = self.picker.chosen_path(), self.picker.chosen_endpoint()
        if choice == GGUF and not model_path:
            self.refuse("No GGUF file chosen.", "Choose a .gguf model file, or pick the bundled model.")
            return None
        if choice == ENDPOINT and not endpoint:
            self.refuse("No endpoint URL given.", "Type the server's URL, e.g. http://localhost:8080/v1.")
            return None
        return GenerationConfig(count=self.count.value(), mix=mix, seed=self.seed.value(),
                                model_path=model_path, endpoint=endpoint,
                                n_ctx=self.n_ctx.value(), resume=resume, answers=self.answers.currentData(),
                                mode=self.mode.currentData() if self.answers.currentData() != "free" else "auto")

    # -- tasks -----------------------------------------------------------------------------
    def start(self) -> Optional[workers.TaskWorker]:
        config = self.config()
        return self._start(config) if config else None

    def resume(self) -> Optional[workers.TaskWorker]:
        if not self.can_resume():
            self.refuse("There is no unfinished generation run to resume.", "Start a new run instead.")
            return None
        config = self.config(resume=True)
        return self._start(config) if config else None

    def start_for_gaps(self) -> Optional[workers.TaskWorker]:
        """A run with the form's settings, aimed at the under-covered clusters (the Clusters tab asks)."""
        config = self.config()
        return self._start(config, target="coverage") if config else None

    def _start(self, config: GenerationConfig, target: str = "corpus") -> Optional[workers.TaskWorker]:
        if self.worker is not None:
            return None
        self.feed = RowFeed(self)
        self.feed.accepted.connect(self._row_accepted)
        self.feed.rejected.connect(self._row_rejected)
        if not config.resume:
            self.rejected_model.set_rows([])
        return self.run_task(generate_task, config, feed=self.feed, backend_factory=self.backend_factory, target=target,
                             message="Resuming the last run…" if config.resume else "Loading the model…",
                             finished=self._finished, cancelled=self._cancelled)

    def shutdown(self) -> None:
        """Ask a running generation to stop (the window is closing); rows made so far are kept."""
        self.cancel()

    def set_busy(self, busy: bool, message: str = "") -> None:
        for widget in (self.start_button, self.count, self.seed, self.answers, self.mode, self.model_choice,
                       *self.mix_spins.values()):
            widget.setEnabled(not busy)
        self.resume_button.setEnabled(not busy and self.can_resume())
        super().set_busy(busy, message)
        if busy:
            self._started = time.monotonic()
            self.progress.setFormat("%p%")  # spinning until the first row
            self.rate.setText("")
        else:
            self.reload()
            self.picker.refresh()  # this run's rows count for its model now

    def show_task_progress(self, done: int, total: int, message: str) -> None:
        self.progress.setFormat("%v / %m rows")
        super().show_task_progress(done, total, message)
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

    def _finished(self, summary: dict) -> tuple:
        if summary.get("status") == "cancelled":  # core returns a summary when cancelled
            self._cancelled(summary)
            return (summary,)
        self.status.setText(f"Run {summary['run_id']} {summary['status']}: {summary['accepted_this_session']} rows "
                            f"accepted this session, {summary['rejected']} rejected in all, "
                            f"{summary['seconds']:.1f} s ({summary['rows_per_min']:.1f} rows/min)."
                            + "".join(f"\nWarning: {w}" for w in summary.get("warnings", [])))
        self.rate.setText(f"{summary['rows_per_min']:.1f} rows/min")  # core's figure for the whole run
        self.project_changed.emit()
        return (summary,)

    def _cancelled(self, summary: Optional[dict] = None) -> None:
        made = f" {summary['accepted_this_session']} rows made this session are kept;" if summary else ""
        self.status.setText(f"Cancelled;{made or ' rows made so far are kept;'} Resume continues the run.")
        self.project_changed.emit()
