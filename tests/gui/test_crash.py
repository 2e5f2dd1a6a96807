"""Errors never vanish: an exception raised in a slot is written to the error log with its
traceback and shown in a dialog; a worker's bug is logged too; Help > About and the running
app say where the log is."""

from __future__ import annotations

import subprocess
import sys

import pytest
from PySide6.QtWidgets import QPushButton

from curator.core.logfile import append_error, log_path
from curator.gui import crash


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after the test
    return tmp_path / "state" / "curator" / "curator.log"


def broken_slot() -> None:
    raise ZeroDivisionError("the reviewer's 0 rows")


@pytest.mark.qt_no_exception_capture  # the app's own hook is under test, not pytest-qt's
def test_an_error_in_a_slot_is_logged_and_shown_and_the_app_goes_on(qtbot, state):
    assert log_path() == state
    reporter = crash.install()
    assert sys.excepthook is reporter
    button = QPushButton("Break")
    qtbot.addWidget(button)
    button.clicked.connect(broken_slot)
    button.click()  # PySide6 hands the slot's exception to sys.excepthook
    assert reporter.count == 1
    text = state.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text and "in broken_slot" in text
    assert "ZeroDivisionError: the reviewer's 0 rows" in text
    dialog = reporter.dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.text() == "ZeroDivisionError: the reviewer's 0 rows"
    assert str(state) in dialog.informativeText() and "broken_slot" in dialog.detailedText()
    button.click()  # the same error again while the dialog is open: logged, not a second dialog
    assert reporter.count == 2 and reporter.dialog is dialog
    assert state.read_text(encoding="utf-8").count("ZeroDivisionError: the reviewer's 0 rows") == 2
    dialog.close()


def test_a_worker_bug_is_logged_and_its_dialog_says_where(qtbot, state, sample_project_path):
    from test_task_view import Probe

    def buggy(db, *, on_progress=None, cancel=None):
        return {}["missing key"]

    probe = Probe(sample_project_path)
    qtbot.addWidget(probe)
    with qtbot.waitSignal(probe.task_failed, timeout=10000) as failed:
        probe.start(buggy)
    qtbot.waitUntil(lambda: not probe.busy(), timeout=10000)
    assert failed.args[0] == "KeyError: 'missing key'" and str(state) in failed.args[1]
    assert "in buggy" in state.read_text(encoding="utf-8")
    probe._dialog.close()


def test_an_unwritable_log_does_not_turn_one_error_into_two(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "state"
    blocker.write_text("a file where the folder should be")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    assert crash.write_traceback("Traceback: boom\n") is None
    assert "cannot write the error log" in capsys.readouterr().err


def test_the_log_starts_again_past_its_size(tmp_path, monkeypatch):
    from curator.core import logfile

    monkeypatch.setattr(logfile, "MAX_BYTES", 100)
    path = tmp_path / "curator.log"
    append_error("x" * 150, path)
    append_error("second", path)
    assert "second" in path.read_text() and "x" * 150 not in path.read_text()
    assert "x" * 150 in (tmp_path / "curator.log.1").read_text()


def test_about_names_the_log(qtbot, state, tmp_path):
    from PySide6.QtCore import QSettings

    from curator.gui.window import MainWindow

    win = MainWindow(settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat), reviewer="ana")
    qtbot.addWidget(win)
    box = win.show_about()
    assert str(state) in box.informativeText()
    box.close()


def test_the_app_installs_the_hook(tmp_path):
    code = ("import sys; from curator.gui.app import main; main(['--benchmark-startup']); "
            "print(type(sys.excepthook).__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "ErrorReporter"
