"""Start the desktop app from the CLI as its own process, so cli never imports gui."""

from __future__ import annotations

import os
import subprocess
import sys

import click


def has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM") == "offscreen":
        return True
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def open_gui_if_possible(project_path: str | None) -> None:
    if not has_display():
        click.echo("No display found: the project is ready; open it with 'curator gui PROJECT' on a desktop.")
        return
    args = [sys.executable, "-m", "curator.gui"] + ([project_path] if project_path else [])
    raise SystemExit(subprocess.call(args))
