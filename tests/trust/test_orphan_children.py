"""A Curator process ended by SIGTERM or kill -9 while its clustering worker runs leaves no worker
behind (issue 32: the multiprocessing child kept running with parent 1). The worker is started
from a short-lived thread, as a GUI task starts it, and must still live until its parent ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import trustkit

SCRIPT = """
import sys, threading, time
from curator.core.clustering import cluster

def first_task():  # a GUI task thread: makes the worker, then ends
    cluster._pool().submit(time.sleep, 0).result()

thread = threading.Thread(target=first_task)
thread.start()
thread.join()
pool = cluster._pool()
busy = pool.submit(time.sleep, 600)  # the worker is in the middle of a job
print(next(iter(pool._processes)), flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    """No such process, or only its zombie (PID 1 in a container may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.1)
    return _gone(pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_clustering_worker_dies_with_its_parent(sig):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    parent = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, env=env)
    trustkit.CHILDREN.append(parent)
    worker = int(parent.stdout.readline())
    try:
        time.sleep(1.0)
        assert not _gone(worker), "the worker died when the thread that started it ended"
        parent.send_signal(sig)
        parent.wait(timeout=30)
        assert _wait_gone(worker, 10), f"worker {worker} outlived its parent (signal {sig.name})"
    finally:
        if not _gone(worker):
            os.kill(worker, signal.SIGKILL)


GUI_SCRIPT = """
import sys, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

app = QApplication(sys.argv[:1])
from curator.core.clustering import cluster

pool = cluster._pool()  # the worker, as the Clusters tab's first run starts it
busy = pool.submit(time.sleep, 600)  # and in the middle of a job (an idle worker ends when its pipe closes)
QTimer.singleShot(0, lambda: print(next(iter(pool._processes)), flush=True))  # runs once the window waits
from curator.gui.app import main

sys.exit(main([sys.argv[1]]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_window_ended_by_sigterm_closes_and_leaves_no_worker(sample_project_path, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "QT_QPA_PLATFORM": "offscreen"}
    log = tmp_path / "stderr.txt"  # a file, not a pipe: a worker left running would hold a pipe open
    with open(log, "w") as err:
        window = subprocess.Popen([sys.executable, "-c", GUI_SCRIPT, str(sample_project_path)],
                                  stdout=subprocess.PIPE, stderr=err, text=True, env=env)
    trustkit.CHILDREN.append(window)
    line = window.stdout.readline()
    assert line.strip().isdigit(), log.read_text()
    worker = int(line)
    try:
        window.send_signal(signal.SIGTERM)
        window.wait(timeout=60)
        assert window.returncode == 0, log.read_text()  # closed as by its close button, not killed
        assert _wait_gone(worker, 10), f"worker {worker} outlived the window"
    finally:
        if not _gone(worker):
            os.kill(worker, signal.SIGKILL)
