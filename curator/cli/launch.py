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


def gui_command(project_path: str | None) -> list[str]:
    """The app's command line; in the desktop bundle (frozen) ``curator`` cannot run ``-m``, so the
    app is its sibling executable ``curator-gui`` (packaging/entry.py)."""
    if getattr(sys, "frozen", False):
        app = os.path.join(os.path.dirname(sys.executable), "curator-gui" + (".exe" if os.name == "nt" else ""))
        return [app] + ([project_path] if project_path else [])
    return [sys.executable, "-m", "curator.gui"] + ([project_path] if project_path else [])


def open_gui_if_possible(project_path: str | None) -> None:
    """Become the app: on POSIX the process is replaced (exec), so its id, its signals (Ctrl-C,
    a SIGTERM from a desktop or a supervisor) and its exit code are the app's; a parent that
    waited on a child instead left the window running, orphaned, when it was killed."""
    if not has_display():
        click.echo("No display found: the project is ready; open it with 'curator gui PROJECT' on a desktop.")
        return
    args = gui_command(project_path)
    if os.name != "posix":  # Windows' execv starts a new process and returns: wait on it instead
        raise SystemExit(subprocess.call(args))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(args[0], args)
