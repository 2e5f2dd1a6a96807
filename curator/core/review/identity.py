"""Who is reviewing: one answer for the window and the command line.

The GUI and the CLI both call ``default_reviewer``, so a decision made in the window is found by
``curator undo`` run from the shell (undo and redo only look at one reviewer's decisions). The
order: ``$CURATOR_REVIEWER`` (a shared machine, a script), then the name stored by
``remember_reviewer`` (the window's Review > Change reviewer…), then the login name. The stored
name is a one-line text file, not Qt's settings, because the CLI must read it without Qt.
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path
from typing import Optional

from curator.core.errors import InputError

ENV_VAR = "CURATOR_REVIEWER"
CONFIG_DIR_VAR = "CURATOR_CONFIG_DIR"  # tests point this at a temporary folder
DEFAULT_HELP = "$CURATOR_REVIEWER, else the name set in the app (Review > Change reviewer), else your login name"


def config_dir() -> Path:
    """``$CURATOR_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/curator``, else ``~/.config/curator``."""
    explicit = os.environ.get(CONFIG_DIR_VAR)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "curator"


def _reviewer_file() -> Path:
    return config_dir() / "reviewer"


def stored_reviewer() -> Optional[str]:
    try:
        name = _reviewer_file().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None  # no setting yet (or an unreadable one): fall through to the login name
    return name or None


def default_reviewer() -> str:
    """The reviewer name every front end records when none is given explicitly."""
    return os.environ.get(ENV_VAR, "").strip() or stored_reviewer() or getpass.getuser()


def clean_name(name: str) -> str:
    """A reviewer name as stored: trimmed, one line, not empty."""
    name = (name or "").strip()
    if not name or "\n" in name or "\r" in name:
        raise InputError("a reviewer name must be one non-empty line, e.g. ana")
    return name


def remember_reviewer(name: str) -> Path:
    """Store NAME as this user's reviewer name for the window and the CLI; returns the file."""
    name = clean_name(name)
    path = _reviewer_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(name + "\n", encoding="utf-8")
    os.replace(tmp, path)  # never a half-written name
    return path
