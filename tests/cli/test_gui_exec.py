"""``curator gui`` becomes the app (exec): same process id, no child, and a SIGTERM ends the app.

Before, the CLI waited on a child: killing it left the window running with parent 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc (Linux)")


def _wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _loaded_qt_widgets(pid: int) -> bool:
    return "libQt6Widgets" in Path(f"/proc/{pid}/maps").read_text()


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # a process that ended while we looked
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_curator_gui_replaces_its_process_and_a_sigterm_ends_the_app(tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "CURATOR_CONFIG_DIR": str(tmp_path / "config")}
    proc = subprocess.Popen([sys.executable, "-m", "curator", "gui"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)  # its own group: cleanup reaches a child
    try:
        _wait_for(lambda: proc.poll() is not None or "curator.gui" in _cmdline(proc.pid) or _children(proc.pid))
        assert proc.poll() is None, proc.communicate()
        assert _cmdline(proc.pid).split()[1:3] == ["-m", "curator.gui"]  # the same pid now runs the app
        _wait_for(lambda: _loaded_qt_widgets(proc.pid))
        time.sleep(1.0)  # let the window come up: the signal must reach a running event loop
        assert proc.poll() is None and _children(proc.pid) == []
        proc.send_signal(signal.SIGTERM)
        # SIGTERM closes the windows as their close button does (their workers stop), then the app exits
        assert proc.wait(timeout=30) == 0
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # with the old launcher, the orphaned app too
        except ProcessLookupError:
            pass
        proc.communicate(timeout=30)
