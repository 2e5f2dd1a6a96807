"""Run a core task function off the GUI thread (Orange's pattern).

The worker opens its OWN SQLite connection in its thread, reports progress, result and error
through Qt signals (delivered queued to the GUI thread) and never touches a widget.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any, Callable, Optional

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from curator.core.errors import CuratorError
from curator.core.store import open_project
from curator.core.progress import CancelToken, Cancelled
from curator.gui.crash import write_traceback


class TaskSignals(QObject):
    progress = Signal(int, int, str)
    finished = Signal(object)
    failed = Signal(str, str)  # what happened, what to do
    cancelled = Signal()
    done = Signal()  # always emitted last, whatever the outcome


def explain(exc: BaseException, logged: Optional[Path] = None) -> tuple[str, str]:
    """A user-facing (what happened, what to do) pair for an exception; ``logged`` is where a bug's
    traceback was written (None: it could not be, and the message does not point at the log)."""
    if isinstance(exc, CuratorError):
        return str(exc), "Fix the problem named above and run the step again; work already saved is kept."
    where = f"its traceback is in {logged}" if logged else "its traceback could not be written to the log"
    return (f"{type(exc).__name__}: {exc}",
            f"This looks like a bug. Work already saved is kept; run the step again, and report it if it repeats "
            f"({where}).")


# Workers the pool is running. The pool holds only a C++ pointer (auto-delete is off), so a worker
# whose view was closed mid-run would be garbage-collected under its thread, and its signals
# object with it ("Signal source has been deleted" at the final emit). Kept here until run() returns.
_RUNNING: set["TaskWorker"] = set()


class TaskWorker(QRunnable):
    """Calls ``fn(db, *args, on_progress=..., cancel=..., **kwargs)`` in a pool thread."""

    def __init__(self, project_path: str | Path, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.setAutoDelete(False)  # the GUI keeps a reference until done
        self.project_path = str(project_path)
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.token = CancelToken()
        self.signals = TaskSignals()

    def cancel(self) -> None:
        self.token.cancel()

    def _progress(self, done: int, total: int, message: str = "") -> None:
        self._tell(self.signals.progress, int(done), int(total), str(message))

    def run(self) -> None:  # runs in the worker thread
        db = None
        try:
            db = open_project(self.project_path)
            result = self.fn(db, *self.args, on_progress=self._progress, cancel=self.token, **self.kwargs)
            self._tell(self.signals.finished, result)
        except Cancelled:
            self._tell(self.signals.cancelled)
        except BaseException as exc:  # noqa: BLE001 - every error must reach the user
            # a bug: its traceback goes to the error log first, so the message names it only if written
            logged = None if isinstance(exc, CuratorError) else write_traceback(traceback.format_exc())
            what, todo = explain(exc, logged)
            self._tell(self.signals.failed, what, todo)
        finally:
            if db is not None:
                db.close()
            self._tell(self.signals.done)
            _RUNNING.discard(self)

    @staticmethod
    def _tell(signal, *args: Any) -> None:
        """Emit, unless the application is gone: a task cancelled as the app quits finishes after Qt
        deleted its signal objects, and there is nobody left to tell ("Signal source has been deleted")."""
        try:
            signal.emit(*args)
        except RuntimeError:
            pass


def start(worker: TaskWorker, pool: Optional[QThreadPool] = None) -> TaskWorker:
    _RUNNING.add(worker)
    (pool or QThreadPool.globalInstance()).start(worker)
    return worker


def launch(project_path, fn: Callable[..., Any], *args: Any, progress: Callable, finished: Callable,
           failed: Callable, cancelled: Callable, done: Callable, **kwargs: Any) -> TaskWorker:
    """A worker for ``fn`` with each of its signals connected to the view's handler, started.

    ``done`` comes last whatever the outcome: that is where a view becomes idle again.
    """
    worker = TaskWorker(project_path, fn, *args, **kwargs)
    sig = worker.signals
    for signal, slot in ((sig.progress, progress), (sig.finished, finished), (sig.failed, failed),
                         (sig.cancelled, cancelled), (sig.done, done)):
        signal.connect(slot)
    return start(worker)


def one_step(label: str, work: Callable[[], Any], on_progress=None, cancel=None) -> Any:
    """A core call that reports no progress of its own, as a task: 0 of 1, a cancel check,
    the call (one transaction in core), then 1 of 1."""
    if on_progress is not None:
        on_progress(0, 1, label)
    if cancel is not None:
        cancel.check()
    result = work()
    if on_progress is not None:
        on_progress(1, 1, "done")
    return result


# -- task adapters for the Clusters tab (appended; core functions stay Qt-free) ------------

def cluster_task(db, *, k="auto", embedder: str = "default", seed: int = 0, fast: bool = False,
                 on_progress=None, cancel=None) -> dict:
    """Cluster every query in core's worker process (the import is lazy: the window never pays for
    numpy/sklearn/umap). This thread only waits, so the GUI thread keeps the GIL."""
    from curator.core.clustering.cluster import cluster_project

    path = db.execute("PRAGMA database_list").fetchone()[2]
    return cluster_project(path, embedder=embedder, k=k, seed=seed, fast=fast, on_progress=on_progress, cancel=cancel)


def stop_cluster_process() -> None:
    """Stop core's UMAP worker process if clustering ever started one (cheap otherwise)."""
    from curator.core.clustering.cluster import shutdown_worker

    shutdown_worker()


def sample_task(db, *, size: int, allocation: str = "proportional", seed: int = 0,
                on_progress=None, cancel=None) -> dict:
    """Top up the review queue with a stratified sample (core's build_queue is one transaction),
    then rank suggested gold chunks for the queued rows without gold, so review shows them at once."""
    from curator.core.retrieval.suggest import suggest
    from curator.core.review.sample import build_queue

    def queue_then_suggest() -> dict:
        result = build_queue(db, size=size, allocation=allocation, seed=seed)
        result["suggested"] = suggest(db, cancel=cancel)["queries"]
        return result

    return one_step("sampling", queue_then_suggest, on_progress, cancel)



def place_task(db, *, on_progress=None, cancel=None) -> int:
    """Embed the queries added since the active cluster run in its space (loading the embedder is
    too slow for the GUI thread), so the Clusters tab can place them on the map; returns how many."""
    from curator.core.clustering.coverage import embed_unplaced

    return one_step("placing new rows", lambda: embed_unplaced(db, cancel), on_progress, cancel)
