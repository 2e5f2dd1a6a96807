"""The error log: where an unexpected error's traceback is written so that it never vanishes.

The window's excepthook and its task workers append to it; ``curator doctor`` and the window's
Help > About show its path. It lives in the user's state folder ($XDG_STATE_HOME/curator, else
~/.local/state/curator), not beside a project: one log for every project the user opens.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Optional

MAX_BYTES = 1_000_000  # past this the log starts again; the previous one is kept as curator.log.1
_lock = threading.Lock()  # the GUI thread and worker threads may report at the same moment


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "curator"


def log_path() -> Path:
    return state_dir() / "curator.log"


def append_error(text: str, path: Optional[Path] = None) -> Path:
    """Append ``text`` (a traceback) under a dated header; returns the file written."""
    path = path or log_path()
    entry = f"--- {time.strftime('%Y-%m-%d %H:%M:%S %z')} (pid {os.getpid()})\n{text.rstrip()}\n\n"
    with _lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_BYTES:
            path.replace(path.with_name(path.name + ".1"))
        with open(path, "a", encoding="utf-8") as out:
            out.write(entry)
    return path
