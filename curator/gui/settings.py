"""Where the app keeps its settings (recent projects, reviewer name, window geometry).

``$CURATOR_CONFIG_DIR`` moves them to ``Curator.ini`` in that folder: the test suite, the
benches and the screenshot script set it, so they never write the user's real settings (a
test's temporary project once showed up under the user's Recent projects).
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QSettings

CONFIG_DIR_ENV = "CURATOR_CONFIG_DIR"
SETTINGS_FILE = "Curator.ini"


def app_settings() -> QSettings:
    """The settings store: ``$CURATOR_CONFIG_DIR/Curator.ini`` when set, else Qt's per-user
    default for Curator (``~/.config/Curator/Curator.conf`` on Linux)."""
    folder = os.environ.get(CONFIG_DIR_ENV)
    if folder:
        return QSettings(str(Path(folder) / SETTINGS_FILE), QSettings.IniFormat)
    return QSettings("Curator", "Curator")
