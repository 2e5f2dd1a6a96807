"""Errors never vanish: an exception nothing caught (in a slot, an event handler, a timer) is
written with its traceback to the error log (core's ``logfile``) and shown in a dialog, and the
window goes on. Without this hook PySide6 printed the traceback to a terminal the user of a
desktop launcher never sees.

Task workers catch their own errors (``workers.TaskWorker``) and report them the same way.
"""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QThread, Qt
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from curator.core.logfile import append_error, log_path


def write_traceback(text: str) -> Optional[Path]:
    """The traceback to stderr and to the error log; the log's path, or None if it cannot be written."""
    sys.stderr.write(text)
    try:
        return append_error(text)
    except OSError as exc:  # a read-only home must not turn one error into two
        sys.stderr.write(f"curator: cannot write the error log {log_path()}: {exc}\n")
        return None


def error_dialog(parent: Optional[QWidget], what: str, details: str, logged: Optional[Path]) -> QMessageBox:
    """A non-blocking dialog: what went wrong, that saved work is kept, where the details are."""
    box = QMessageBox(QMessageBox.Critical, "Unexpected error", what, QMessageBox.Ok, parent)
    box.setTextFormat(Qt.PlainText)
    where = f"The details are in {logged}." if logged else "The details could not be written to the log."
    box.setInformativeText("This looks like a bug. Work already saved is kept; the window goes on. "
                           f"{where} Please include them when you report it.")
    box.setDetailedText(details)
    box.open()  # not exec(): an error inside a nested event loop could stack dialogs without end
    return box


class ErrorReporter:
    """The ``sys.excepthook`` of the app; ``parent`` gives the window the dialog opens over."""

    def __init__(self, parent: Callable[[], Optional[QWidget]] = QApplication.activeWindow) -> None:
        self.parent = parent
        self.dialog: Optional[QMessageBox] = None
        self.count = 0  # errors reported, so a test (or a storm of errors) can be seen

    def __call__(self, exc_type, exc, tb) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            sys.__excepthook__(exc_type, exc, tb)
            return
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        logged = write_traceback(details)
        self.count += 1
        if self._on_gui_thread() and not self._dialog_open():
            self.dialog = error_dialog(self.parent(), f"{exc_type.__name__}: {exc}", details, logged)

    def _dialog_open(self) -> bool:
        """One dialog at a time: an error repeating in every paint event is logged, not stacked."""
        return self.dialog is not None and self.dialog.isVisible()

    @staticmethod
    def _on_gui_thread() -> bool:
        app = QApplication.instance()
        return app is not None and QThread.currentThread() == app.thread()


def install(parent: Callable[[], Optional[QWidget]] = QApplication.activeWindow) -> ErrorReporter:
    reporter = ErrorReporter(parent)
    sys.excepthook = reporter
    return reporter
