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


def cache_dir() -> Path:
    """The user's cache folder for curator (XDG_CACHE_HOME or ~/.cache, then curator/): converted and
    repacked model files, numba's compiled kernels."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "curator"


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_beside(path: Path) -> Path:
    """An empty temporary file beside ``path``, with the mode a plain ``open`` would give it.

    mkstemp makes files 0600: exports came out unreadable to the group whatever the umask said."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.fchmod(fd, 0o666 & ~current_umask())
    os.close(fd)
    return Path(tmp)


def stage_lines(path: Path, lines: Iterable[str]) -> Path:
    """Write ``lines`` to a fsynced temporary file beside ``path``; the caller renames it."""
    tmp = temp_beside(path)
    try:
        _write(tmp, lines)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _write(tmp: Path, lines: Iterable[str]) -> None:
    with open(tmp, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
        fh.flush()
        os.fsync(fh.fileno())


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it over ``path`` only on success."""
    tmp = str(temp_beside(path))
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_lines(path: Path, lines: Iterable[str]) -> None:
    """Write ``lines`` (each without its newline) to ``path`` atomically."""
    with atomic_file(path) as tmp:
        _write(tmp, lines)
