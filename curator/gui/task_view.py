"""One way for a view to run a core task: busy, start, cancel, progress, failure, outcome.

``TaskView`` sits on top of ``workers.launch``. A view mixes it in, calls ``init_tasks()`` in its
``__init__`` and puts ``self.task_bar`` (a ``TaskBar``: status line, progress bar, Cancel) in
its layout; ``status``, ``progress`` and ``cancel_button`` are the bar's widgets. The view
declares ``task_finished`` and ``task_failed`` signals and overrides ``set_busy`` to enable or
disable its own inputs. The rules it holds:

- one task at a time: ``run_task`` refuses (returns None) while a worker runs;
- the outcome (``task_finished`` or ``task_failed``) is announced only after the worker's
  last signal (``done``), so a listener that starts the next step finds the view idle;
  a refusal before any worker started is announced at once;
- every failure is shown the same way: "Failed: ..." in the status line, ``last_error``
  set, and a non-blocking warning dialog with what happened and what to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QMessageBox, QProgressBar, QPushButton, QSizePolicy, QWidget

from curator.gui import workers
from curator.gui.widgets import plain_label

Outcome = tuple[Any, tuple]  # (a signal, the arguments it is emitted with)


def show_error(parent: QWidget, what: str, todo: str, title: str = "Step failed") -> QMessageBox:
    """A non-blocking warning dialog: what happened (plain text), then what to do."""
    box = QMessageBox(QMessageBox.Warning, title, what, QMessageBox.Ok, parent)
    box.setTextFormat(Qt.PlainText)
    box.setInformativeText(todo)
    box.open()  # not exec(): never block the event loop (or a test) on a dialog
    return box


class TaskBar(QWidget):
    """A view's status line, progress bar and Cancel button: where every task shows that it runs.

    The progress bar spins until the first report and hides when the task ends; the status line
    keeps the last message (the outcome, or "Failed: ..."). ``add`` puts a view's own figure
    (a rate, a count) beside the bar."""

    def __init__(self, cancellable: bool = True, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Maximum)  # a line, never the tab's spare height
        self.status = plain_label()
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(260)
        self.progress.hide()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.setVisible(cancellable)  # a one-step task cannot stop half-way: no button
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.addWidget(self.status, 1)
        self._row.addWidget(self.progress)
        self._row.addWidget(self.cancel_button)

    def add(self, widget: QWidget) -> None:
        """Show ``widget`` between the status line and the progress bar."""
        self._row.insertWidget(1, widget)

    def show_busy(self, busy: bool, message: str = "") -> None:
        self.progress.setVisible(busy)
        self.cancel_button.setEnabled(busy)
        if busy:
            self.progress.setRange(0, 0)
            self.status.setText(message)

    def show_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)


class TaskView:
    """Mixin for a QWidget view that runs one ``workers.TaskWorker`` at a time."""

    failure_title = "Step failed"
    cancel_message = ""  # the status line while a cancelled task winds down (blank: unchanged)
    project_path: Path

    def init_tasks(self, cancellable: bool = True) -> None:
        """Call in ``__init__`` (after QWidget's) before building the widgets: it makes the task bar."""
        self.task_bar = TaskBar(cancellable)
        self.status, self.progress, self.cancel_button = (self.task_bar.status, self.task_bar.progress,
                                                          self.task_bar.cancel_button)
        self.cancel_button.clicked.connect(self.cancel)
        self.worker: Optional[workers.TaskWorker] = None
        self.last_error: Optional[tuple[str, str]] = None
        self._dialog: Optional[QMessageBox] = None
        self._outcome: Optional[Outcome] = None

    # -- what a view overrides ---------------------------------------------------------
    def set_busy(self, busy: bool, message: str = "") -> None:
        """Enable or disable the view's inputs (then call this); the bar shows progress and Cancel while busy."""
        self.task_bar.show_busy(busy, message)

    def show_task_progress(self, done: int, total: int, message: str) -> None:
        self.task_bar.show_progress(done, total)

    # -- the pattern -------------------------------------------------------------------
    def busy(self) -> bool:
        return self.worker is not None

    def run_task(self, fn: Callable[..., Any], *args: Any, message: str, finished: Callable[[Any], tuple],
                 cancelled: Callable[[], None], **kwargs: Any) -> Optional[workers.TaskWorker]:
        """Start ``fn`` in a worker. ``finished(result)`` updates the view and returns the
        arguments of ``task_finished``; ``cancelled()`` runs if the task raised Cancelled."""
        if self.worker is not None:
            return None
        self.set_busy(True, message)
        self.worker = workers.launch(
            self.project_path, fn, *args, progress=self.show_task_progress,
            finished=lambda result: self._announce(self.task_finished, finished(result)),
            failed=self.fail, cancelled=cancelled, done=self._task_done, **kwargs)
        return self.worker

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            if self.cancel_message:
                self.status.setText(self.cancel_message)

    def fail(self, what: str, todo: str) -> None:
        """Show a failure (a task's error or a refused start) and announce it on ``task_failed``."""
        self.last_error = (what, todo)
        self.status.setText(f"Failed: {what}")
        self._dialog = show_error(self, what, todo, self.failure_title)
        self._announce(self.task_failed, (what, todo))

    def refuse(self, what: str, todo: str) -> None:
        """``fail`` for a start that is refused before any worker runs; returns None for ``return``."""
        self.fail(what, todo)
        return None

    def _announce(self, signal, args: tuple) -> None:
        if self.worker is None:
            signal.emit(*args)
        else:
            self._outcome = (signal, args)

    def _task_done(self) -> None:
        """The worker's last signal: only now is the view idle, so only now is the outcome announced."""
        self.worker = None
        self.set_busy(False)
        outcome, self._outcome = self._outcome, None
        if outcome is not None:
            outcome[0].emit(*outcome[1])
