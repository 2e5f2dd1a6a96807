"""Application entry point: ``python -m curator.gui [PROJECT]``."""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    parser = argparse.ArgumentParser(prog="curator-gui", description="Curator reviewer app. Example: python -m curator.gui demo.curator")
    parser.add_argument("project", nargs="?", help="project file to open")
    parser.add_argument("--reviewer", help="reviewer name for this session (otherwise $CURATOR_REVIEWER, "
                        "the name set with Review > Change reviewer, or your login name, as in the CLI)")
    parser.add_argument("--benchmark-startup", action="store_true", help="print seconds until the window is shown, then quit")
    args = parser.parse_args(argv)
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from curator.gui import crash
    from curator.gui.window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Curator")
    _style(app)
    crash.install()  # from here an uncaught error is logged and shown in a dialog, and the app goes on
    window = MainWindow(args.project, reviewer=args.reviewer or ("bench" if args.benchmark_startup else None))
    window.show()
    _close_on_sigterm(app)
    if args.benchmark_startup:
        app.processEvents()
        print(f"window shown after {time.perf_counter() - started:.3f} s")
        QTimer.singleShot(0, window.close)
    return app.exec()


def _close_on_sigterm(app) -> None:
    """SIGTERM (a logout, ``kill``) closes the windows as their close button does, so each view
    stops its work and its worker process; by default it ended the app with no clean-up at all.
    Python runs a signal handler only between its own bytecodes, so a timer lets it run while Qt
    waits for events."""
    import signal

    from PySide6.QtCore import QTimer

    signal.signal(signal.SIGTERM, lambda *_: (app.closeAllWindows(), app.quit()))
    timer = QTimer(app)
    timer.timeout.connect(lambda: None)
    timer.start(200)


def _style(app) -> None:
    from curator.core.resources import resources_dir

    qss = resources_dir() / "style.qss"
    if qss.exists():
        app.setStyleSheet(qss.read_text(encoding="utf-8"))
    icon = resources_dir() / "icons" / "curator.svg"
    if icon.exists():
        from PySide6.QtGui import QIcon

        app.setWindowIcon(QIcon(str(icon)))
