"""The one worker-view pattern: busy, one task at a time, outcome after done, one failure display."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

from curator.core.errors import InputError
from curator.gui.task_view import TaskView


class Probe(TaskView, QWidget):
    """The smallest view on the pattern; it records the view's state at each announcement."""

    task_finished = Signal(object)
    task_failed = Signal(str, str)
    cancel_message = "Stopping…"

    def __init__(self, project_path) -> None:
        super().__init__()
        self.project_path = project_path
        self.init_tasks()
        self.go = QPushButton("Go")
        layout = QVBoxLayout(self)
        for widget in (self.go, self.task_bar):
            layout.addWidget(widget)
        self.heard: list[tuple] = []
        self.task_finished.connect(lambda result: self.heard.append(("finished", result, self.busy())))
        self.task_failed.connect(lambda what, todo: self.heard.append(("failed", what, self.busy())))

    def set_busy(self, busy: bool, message: str = "") -> None:
        self.go.setEnabled(not busy)
        super().set_busy(busy, message)

    def start(self, fn, **kwargs):
        return self.run_task(fn, message="Working…", finished=lambda result: (result * 2,),
                             cancelled=lambda: self.status.setText("Cancelled."), **kwargs)


def count_rows(db, *, gate: threading.Event, on_progress=None, cancel=None) -> int:
    on_progress(1, 2, "half")
    gate.wait(10)
    cancel.check()
    return db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]


def broken(db, *, on_progress=None, cancel=None):
    raise InputError("the file x.md:3 is not UTF-8")


@pytest.fixture
def probe(qtbot, sample_project_path):
    view = Probe(sample_project_path)
    qtbot.addWidget(view)
    view.show()
    return view


def test_a_task_runs_once_and_is_announced_only_when_the_view_is_idle(probe, qtbot):
    gate = threading.Event()
    assert probe.start(count_rows, gate=gate) is not None
    assert probe.busy() and not probe.go.isEnabled() and probe.progress.isVisible()
    assert probe.cancel_button.isEnabled() and probe.status.text() == "Working…"
    assert probe.start(count_rows, gate=gate) is None  # one task at a time
    qtbot.waitUntil(lambda: probe.progress.value() == 1, timeout=10000)
    gate.set()
    qtbot.waitUntil(lambda: bool(probe.heard), timeout=10000)
    kind, doubled, busy_then = probe.heard[0]
    assert kind == "finished" and doubled > 0 and doubled % 2 == 0
    assert busy_then is False  # announced after done: a listener may start the next step at once
    assert probe.go.isEnabled() and not probe.progress.isVisible() and not probe.cancel_button.isEnabled()


def test_a_failure_is_shown_one_way_and_announced_after_done(probe, qtbot):
    probe.start(broken)
    qtbot.waitUntil(lambda: bool(probe.heard), timeout=10000)
    assert probe.heard == [("failed", "the file x.md:3 is not UTF-8", False)]
    assert probe.status.text() == "Failed: the file x.md:3 is not UTF-8"
    assert probe.last_error[0] == "the file x.md:3 is not UTF-8" and "run the step again" in probe.last_error[1]
    assert probe._dialog.isVisible() and probe._dialog.textFormat() == Qt.PlainText
    assert probe._dialog.windowTitle() == "Step failed"
    probe._dialog.close()


def test_a_refusal_before_any_worker_is_announced_at_once(probe):
    assert probe.refuse("No folder chosen.", "Choose one.") is None
    assert probe.heard == [("failed", "No folder chosen.", False)] and not probe.busy()
    probe._dialog.close()


def test_cancel_says_so_and_ends_idle_without_an_outcome(probe, qtbot):
    gate = threading.Event()
    probe.start(count_rows, gate=gate)
    probe.cancel()
    assert probe.status.text() == "Stopping…"
    gate.set()
    qtbot.waitUntil(lambda: not probe.busy(), timeout=10000)
    assert probe.status.text() == "Cancelled." and probe.heard == [] and probe.go.isEnabled()
    probe.cancel_button.click()  # idle: the bar's Cancel does nothing (and is disabled anyway)
    assert not probe.busy()


def test_the_bar_is_the_views_status_progress_and_cancel(probe, qtbot):
    """One bar: the view's status, progress and Cancel are the bar's widgets, and Cancel cancels."""
    bar = probe.task_bar
    assert (probe.status, probe.progress, probe.cancel_button) == (bar.status, bar.progress, bar.cancel_button)
    probe.resize(600, 700)
    qtbot.wait(10)
    assert bar.height() <= bar.sizeHint().height()  # one line: the spare height goes to the view's content
    assert probe.cancel_button.isVisible() and not probe.cancel_button.isEnabled()
    gate = threading.Event()
    probe.start(count_rows, gate=gate)
    probe.cancel_button.click()
    assert probe.status.text() == "Stopping…"
    gate.set()
    qtbot.waitUntil(lambda: not probe.busy(), timeout=10000)
    assert probe.status.text() == "Cancelled."


def test_a_task_that_cannot_stop_shows_no_cancel_button(qtbot, sample_project_path):
    class OneStep(Probe):
        def __init__(self, project_path) -> None:
            QWidget.__init__(self)
            self.project_path = project_path
            self.init_tasks(cancellable=False)
            QVBoxLayout(self).addWidget(self.task_bar)

    view = OneStep(sample_project_path)
    qtbot.addWidget(view)
    view.show()
    assert view.task_bar.isVisible() and not view.cancel_button.isVisible()


def test_every_task_view_uses_the_one_bar():
    """No view builds a progress bar or a Cancel button of its own (there were seven copies)."""
    import re
    from pathlib import Path

    import curator.gui

    gui = Path(curator.gui.__file__).parent
    for path in sorted(gui.glob("*.py")):
        if path.name == "task_view.py":
            continue
        text = path.read_text(encoding="utf-8")
        assert "QProgressBar(" not in text, path.name
        assert not re.search(r"QPushButton\(\"Cancel\"\)", text), path.name
        if re.search(r"class \w+\(TaskView, QWidget\)", text):
            assert "self.task_bar" in text, f"{path.name} runs tasks but never shows the task bar"


def test_workers_never_touch_a_widget():
    """A worker runs in a pool thread: it opens its own SQLite connection and reports through
    signals only, so the module that runs tasks holds no widget code at all."""
    from pathlib import Path

    import curator.gui.workers as workers_module

    text = Path(workers_module.__file__).read_text(encoding="utf-8")
    assert "QtWidgets" not in text and "open_project(self.project_path)" in text
