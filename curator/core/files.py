"""Files written all or nothing: a temporary file beside the target, fsynced, renamed into place.

Shared by every stage that writes a user-visible file (exports, TREC runs), so a crash or a
full disk never leaves half a file under the real name.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` only on success."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_lines(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` (each without its newline) to ``path`` atomically."""
    with atomic_file(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())
