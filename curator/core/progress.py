"""The task-function protocol shared by the CLI and GUI workers.

Long work is a plain function taking ``on_progress(done, total, message)`` and a
``CancelToken``; it checks the token between units of work and raises ``Cancelled``.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

ProgressCallback = Callable[[int, int, str], None]


class Cancelled(Exception):
    """Raised inside a task when its token is cancelled; work already committed stays."""


class CancelToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()


def no_progress(done: int, total: int, message: str) -> None:
    """The default progress callback: ignore."""


def report(on_progress: Optional[ProgressCallback], done: int, total: int, message: str = "") -> None:
    if on_progress is not None:
        on_progress(done, total, message)
