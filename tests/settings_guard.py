"""Keeps the test suite off the user's real settings (``import settings_guard``).

Qt's default settings for Curator live in ``$XDG_CONFIG_HOME/Curator`` (``~/.config/Curator``);
a test's temporary project once showed up in a user's Recent projects. The conftest points
``$CURATOR_CONFIG_DIR`` (honoured by curator.gui.settings) and ``$XDG_CONFIG_HOME`` (for any
QSettings made another way, and for child processes) at a temporary folder, and fails a test
after which anything under the real folders changed.
"""

from __future__ import annotations

import os
import pwd
import tempfile
from pathlib import Path


def real_settings_dirs() -> list[Path]:
    """Where Qt would keep Curator's settings for this user, read before the suite overrides it."""
    homes = {Path(pwd.getpwuid(os.getuid()).pw_dir), Path(os.path.expanduser("~"))}
    bases = {home / ".config" for home in homes}
    if os.environ.get("XDG_CONFIG_HOME"):
        bases.add(Path(os.environ["XDG_CONFIG_HOME"]))
    return sorted(base / "Curator" for base in bases)


def snapshot(folders: list[Path]) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every file under ``folders``; a folder that does not exist is empty."""
    found = {}
    for folder in folders:
        if folder.exists():
            for path in [folder, *folder.rglob("*")]:
                stat = path.stat()
                found[str(path)] = (stat.st_size, stat.st_mtime_ns)
    return found


def changes(before: dict, after: dict) -> list[str]:
    return sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))


def isolate() -> tuple[list[Path], Path]:
    """Move every settings write of this process and its children into a temporary folder;
    returns the real folders to watch and the temporary one."""
    real = real_settings_dirs()
    folder = Path(tempfile.mkdtemp(prefix="curator-test-settings-"))
    os.environ["CURATOR_CONFIG_DIR"] = str(folder / "curator")
    os.environ["XDG_CONFIG_HOME"] = str(folder / "xdg")
    return real, folder
