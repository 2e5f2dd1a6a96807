"""The main window: File / Edit / Review / Help menus, one tab per view, geometry restored.

The tabs are wired so that each stage's result reaches the views that read it (an ingest, a
log import or a merge re-reads the queries and the queue), and every empty state's button
leads to the tab that does the next step.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMainWindow, QMessageBox, QTabWidget

from curator.core.errors import CuratorError
from curator.core.review.identity import ENV_VAR, default_reviewer, remember_reviewer, stored_reviewer
from curator.core.store import open_project
from curator.gui.corpus_view import CorpusView
from curator.gui.empty_state import EmptyState
from curator.gui.queries_view import QueriesView
from curator.gui.review_view import ReviewView
from curator.gui.settings import app_settings

MAX_RECENT = 8
PROJECT_SUFFIX = ".curator"
START_TEXT = "No project open. Create a project for a folder of documents, or open one you have."
MENU_SHORTCUTS = (  # (key, what): the Help menu's list, beside the review view's own keys
    ("Ctrl+N", "new project"), ("Ctrl+O", "open project"), ("Ctrl+Q", "quit"),
    ("Ctrl+Z", "undo the last decision (Review, Adjudicate)"), ("Ctrl+Shift+Z", "redo"), ("F1", "this list"),
)
ADJUDICATE_KEYS = (("A / B", "take the left / right decision"), ("E", "edit the final decision"),
                   ("Space", "next conflict"), ("Ctrl+Z", "undo"))


def with_suffix(path: str) -> str:
    """A new project's file name ends in .curator even when the dialog was given a bare name."""
    return path if path.lower().endswith(PROJECT_SUFFIX) else path + PROJECT_SUFFIX


def shortcuts_text() -> str:
    """The F1 page; the Review tab's part comes from its key table, like its hint line and overlay."""
    from curator.gui.review_keys import help_rows

    sections = (("Window", MENU_SHORTCUTS), ("Review tab", help_rows()), ("Adjudicate tab", ADJUDICATE_KEYS))
    return "\n\n".join(f"{title}\n" + "\n".join(f"  {key:<14} {what}" for key, what in keys)
                        for title, keys in sections)


class MainWindow(QMainWindow):
    def __init__(self, project: Optional[str | Path] = None, settings: Optional[QSettings] = None,
                 reviewer: Optional[str] = None) -> None:
        super().__init__()
        self.settings = settings or app_settings()
        self._reviewer = reviewer
        self.db = None
        self.project_path: Optional[Path] = None
        self.tabs = QTabWidget()
        self.setCentralWidget(self.tabs)
        self.setWindowTitle("Curator")
        self._menus()
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        else:
            self.resize(1200, 760)
        if project:
            self.open_path(project)
        else:
            self.start = EmptyState(START_TEXT, [("New project…", self.new_project), ("Open project…", self.choose_project)])
            self.tabs.addTab(self.start, "Start")

    def reviewer(self) -> str:
        """The reviewer's name: the one the CLI uses too (core's ``default_reviewer``), so
        ``curator undo`` finds the window's decisions; tests and ``--reviewer`` inject one."""
        if not self._reviewer:
            self._adopt_old_window_name()
            self._reviewer = default_reviewer()
        return self._reviewer

    def _adopt_old_window_name(self) -> None:
        """Earlier versions kept the window's reviewer name in Qt's settings only: store it where the
        CLI reads it too, once, so the name a reviewer has been deciding under stays theirs."""
        old = self.settings.value("reviewer")
        if old and stored_reviewer() is None:
            try:
                remember_reviewer(str(old))
            except CuratorError:
                return  # an unusable old value: the login name it is
        self.settings.remove("reviewer")

    def change_reviewer(self) -> None:
        name, ok = QInputDialog.getText(self, "Change reviewer", "Your name (recorded with every decision, "
                                        "also used by the command line):", text=self.reviewer())
        if ok:
            self.set_reviewer(name)

    def set_reviewer(self, name: str) -> bool:
        """Store NAME for the window and the CLI and decide as NAME from now on."""
        try:
            remember_reviewer(name)
        except CuratorError as exc:
            QMessageBox.warning(self, "Reviewer not changed", str(exc))
            return False
        self._reviewer = name.strip()
        if self.db is not None:
            self.review_view.set_reviewer(self._reviewer)
            self.adjudication_view.judge = self._reviewer
            self.adjudication_view.reload()
            self.diagnose_view.reviewer = self._reviewer
        self.statusBar().showMessage(self._reviewer_note(), 10000)
        return True

    def _reviewer_note(self) -> str:
        env = os.environ.get(ENV_VAR, "").strip()
        if env and env != self._reviewer:
            return (f"Reviewing as {self._reviewer}; ${ENV_VAR} is set to {env}, so the command line still uses {env} "
                    "unless you pass --reviewer.")
        return f"Reviewing as {self._reviewer} (the command line uses this name too)."

    def _menus(self) -> None:
        menu = self.menuBar().addMenu("&File")
        menu.addAction("&New project…", self.new_project, "Ctrl+N")
        menu.addAction("&Open project…", self.choose_project, "Ctrl+O")
        self.recent_menu = menu.addMenu("Recent projects")
        menu.addSeparator()
        menu.addAction("&Quit", self.close, "Ctrl+Q")
        self._fill_recent()
        self._edit_menu()
        review = self.menuBar().addMenu("&Review")
        self.change_reviewer_action = review.addAction("Change &reviewer…", self.change_reviewer)
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction("&Keyboard shortcuts…", self.show_shortcuts, "F1")
        help_menu.addAction("&About Curator", self.show_about)

    def _edit_menu(self) -> None:
        """Undo and redo of review decisions. The keys show in the menu but stay the views' own
        (a widget-only shortcut on the window): bound here, Ctrl+Z would also fire inside an
        edit box, where it must undo typing, not a decision."""
        menu = self.menuBar().addMenu("&Edit")
        self.undo_action = menu.addAction("&Undo last decision", lambda: self._edit("undo"))
        self.redo_action = menu.addAction("&Redo", lambda: self._edit("redo"))
        for action, key in ((self.undo_action, QKeySequence.Undo), (self.redo_action, "Ctrl+Shift+Z")):
            action.setShortcut(QKeySequence(key))
            action.setShortcutContext(Qt.WidgetShortcut)

    def _edit(self, what: str) -> None:
        if self.db is None:
            return
        view = self.tabs.currentWidget()
        target = view if view is self.adjudication_view and what == "undo" else self.review_view
        getattr(target, what)()

    def show_shortcuts(self) -> QMessageBox:
        box = QMessageBox(QMessageBox.Information, "Keyboard shortcuts", "Keyboard shortcuts", QMessageBox.Ok, self)
        box.setTextFormat(Qt.PlainText)
        box.setInformativeText(shortcuts_text())
        box.open()  # not exec(): never block the event loop
        self._dialog = box
        return box

    def show_about(self) -> QMessageBox:
        from curator import __version__
        from curator.core.logfile import log_path

        box = QMessageBox(QMessageBox.Information, "About Curator",
                          f"Curator {__version__}: an offline workbench for retrieval-evaluation gold sets.",
                          QMessageBox.Ok, self)
        box.setTextFormat(Qt.PlainText)
        box.setInformativeText(f"Unexpected errors are written, with their details, to {log_path()}")
        box.open()
        self._dialog = box
        return box

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        for path in self.recent():
            self.recent_menu.addAction(path, lambda p=path: self.open_path(p))

    def recent(self) -> list[str]:
        value = self.settings.value("recent") or []
        return [value] if isinstance(value, str) else list(value)

    def new_project(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "New project", "", "Curator project (*.curator)")
        if path:
            self.open_path(with_suffix(path), create=True)

    def choose_project(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open project", "", "Curator project (*.curator);;All files (*)")
        if path:
            self.open_path(path)

    def open_path(self, path: str | Path, create: bool = False) -> bool:
        try:
            db = open_project(path, create=create)
        except CuratorError as exc:
            QMessageBox.warning(self, "Cannot open project", f"{exc}\n\nChoose another file or create a new project.")
            return False
        self._leave_project()
        self.db, self.project_path = db, Path(path)
        recent = [str(self.project_path)] + [p for p in self.recent() if p != str(self.project_path)]
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self._fill_recent()
        self._build_tabs()
        self.setWindowTitle(f"Curator — {self.project_path.name}")
        return True

    def _build_tabs(self) -> None:
        self.tabs.clear()
        self.corpus_view = CorpusView(self.db, self.project_path)
        self.queries_view = QueriesView(self.db, self.project_path)
        self.review_view = ReviewView(self.db, self.reviewer())
        self.review_view.decided.connect(self.queries_view.update_query)
        self.queries_view.open_query.connect(self._review_query)
        self.tabs.addTab(self.corpus_view, "Corpus")
        self.tabs.addTab(self.queries_view, "Queries")
        self.tabs.addTab(self.review_view, "Review")
        from curator.gui.clusters_view import ClustersView  # map, cluster list, clustering and sampling
        from curator.gui.evaluate_view import EvaluateView
        from curator.gui.generate_view import GenerateView

        self.generate_view = GenerateView(self.db, self.project_path)
        self.generate_view.project_changed.connect(self.queries_view.reload)
        self.generate_view.project_changed.connect(self.review_view.refresh)
        self.tabs.addTab(self.generate_view, "Generate")
        self.clusters_view = ClustersView(self.db, self.project_path)
        self.clusters_view.selection_changed.connect(self.queries_view.filter_ids)
        self.clusters_view.selection_changed.connect(self.review_view.set_focus)  # review just that region
        self.clusters_view.project_changed.connect(self.queries_view.reload)
        self.clusters_view.project_changed.connect(self.review_view.refresh)
        self.clusters_view.generate_for_gaps.connect(self._generate_for_gaps)
        self.tabs.addTab(self.clusters_view, "Clusters")
        self.evaluate_view = EvaluateView(self.db, self.project_path)
        self.tabs.addTab(self.evaluate_view, "Export / Evaluate")
        from curator.gui.validity_view import ValidityView  # does the gold set rank retrievers like real queries?

        self.validity_view = ValidityView(self.db, self.project_path)
        self.tabs.addTab(self.validity_view, "Validity")
        from curator.gui.adjudication_view import AdjudicationView  # two reviewers' conflicts after a merge

        self.adjudication_view = AdjudicationView(self.db, self.project_path, reviewer=self.reviewer())
        self.adjudication_view.resolved.connect(self.queries_view.update_query)
        self.adjudication_view.resolved.connect(lambda _id: self.review_view.refresh())
        self.tabs.addTab(self.adjudication_view, "Adjudicate")
        from curator.gui.diagnose_view import DiagnoseView  # a RAG system's traces on the 2x2

        self.diagnose_view = DiagnoseView(self.db, reviewer=self.reviewer())
        self.tabs.addTab(self.diagnose_view, "Diagnose")
        self._wire_stages()
        self.tabs.currentChanged.connect(self._tab_shown)
        self._focus_on_assigned_share()
        self.tabs.setCurrentWidget(self.review_view)
        self.review_view.setFocus()

    def _wire_stages(self) -> None:
        """Each stage's result reaches the views that read it; each empty state leads on."""
        for changed in (self.corpus_view.project_changed, self.queries_view.project_changed,
                        self.adjudication_view.merged):
            changed.connect(lambda *_: self.project_changed())
        self.queries_view.generate_requested.connect(lambda: self.tabs.setCurrentWidget(self.generate_view))
        self.queries_view.filter_cleared.connect(self.clusters_view.map.clear_selection)
        self.review_view.whole_queue.connect(self.clusters_view.map.clear_selection)
        self.review_view.next_step.connect(self.go_to_stage)

    def _generate_for_gaps(self) -> None:
        """The Clusters tab's coverage-aimed run goes through the Generate tab (its settings, its rows)."""
        self.tabs.setCurrentWidget(self.generate_view)
        self.generate_view.start_for_gaps()

    def project_changed(self) -> None:
        """Documents or queries arrived from another tab: every view that shows them re-reads."""
        self.queries_view.reload()
        self.review_view.refresh()
        self.generate_view.reload()
        self.clusters_view.reload()

    def go_to_stage(self, stage: str) -> None:
        views = {"corpus": self.corpus_view, "generate": self.generate_view, "clusters": self.clusters_view}
        self.tabs.setCurrentWidget(views[stage])

    def _focus_on_assigned_share(self) -> None:
        """With a blind-overlap plan in the project, a reviewer sees only the queries it gives them."""
        from curator.core.review import merge
        from curator.core.errors import InputError

        try:
            share = merge.assigned(self.db, self.reviewer())
        except InputError:
            return  # this reviewer is not in the plan: the whole queue
        if share:
            self.review_view.set_focus(share, f"assigned to {self.reviewer()} by the overlap plan")

    def _tab_shown(self, index: int) -> None:
        if self.tabs.widget(index) is self.adjudication_view:
            self.adjudication_view.reload()  # a merge from the command line may have brought conflicts

    def _review_query(self, query_id: str) -> None:
        self.review_view.show_query(query_id)
        self.tabs.setCurrentWidget(self.review_view)
        self.review_view.setFocus()

    def closeEvent(self, event) -> None:
        self.settings.setValue("geometry", self.saveGeometry())
        self._leave_project()
        super().closeEvent(event)

    def _leave_project(self) -> None:
        """Stop the open project's work before another project opens or the window closes: a
        generation or clustering run left going would carry on writing to the project left."""
        if getattr(self, "generate_view", None) is not None:
            self.generate_view.shutdown()  # stops after the row in flight; rows made are kept
        if getattr(self, "clusters_view", None) is not None:
            self.clusters_view.shutdown()  # its UMAP process would otherwise outlive the window
        if self.db is not None:
            self.review_view.shutdown()  # stores the reviewer's place; stops computing suggestions
            self.db.close()
            self.db = None
