"""Child processes that never outlive Curator: the clustering worker and the chat template renderer.

A window ended by SIGTERM (or kill -9) runs no clean-up, and a ``multiprocessing`` child then kept
running with parent 1 (issue 32). So each child calls ``die_with_parent`` first thing: on Linux
the kernel kills it when the parent goes (PR_SET_PDEATHSIG), and a watchdog thread that polls the
parent's pid covers other systems and the moment before prctl took effect.

PR_SET_PDEATHSIG fires when the *thread* that started the child ends, not the process. The GUI
starts work from short-lived worker threads, so ``start`` starts children from one thread that
lasts as long as the process; otherwise a child would be killed when the task that happened to
start it finished.
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import os
import signal
import sys
import threading
import time
from typing import Callable, Optional, TypeVar

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
WATCH_SECONDS = 0.5  # how often a child's watchdog looks for its parent
_LASTING: Optional[cf.ThreadPoolExecutor] = None
_LASTING_LOCK = threading.Lock()
T = TypeVar("T")


def in_lasting_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` (one that starts child processes) on the thread that lives as long as this process."""
    global _LASTING
    with _LASTING_LOCK:
        if _LASTING is None:  # its one thread waits for work until the interpreter exits
            _LASTING = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="curator-children")
    return _LASTING.submit(fn).result()


def start(process) -> None:
    """Start a ``multiprocessing`` process so that its PR_SET_PDEATHSIG is tied to this process."""
    in_lasting_thread(process.start)


def die_with_parent(parent_pid: int) -> None:
    """In a child: end at once when the process ``parent_pid`` ends, however it ends."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watchdog below still ends the child
    if os.getppid() != parent_pid:  # the parent ended before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="curator-parent-watch", daemon=True).start()


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(WATCH_SECONDS)
    os._exit(1)  # adopted by init or a subreaper: the parent is gone
