"""The main window: File menu with recent projects, one tab per view, geometry restored."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QFileDialog, QInputDialog, QLabel, QMainWindow, QMessageBox, QTabWidget

from curator.core.errors import CuratorError
from curator.core.store import open_project
from curator.gui.corpus_view import CorpusView
from curator.gui.queries_view import QueriesView
from curator.gui.review_view import ReviewView
from curator.gui.settings import app_settings

MAX_RECENT = 8


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
            self.tabs.addTab(QLabel("Open or create a project with the File menu."), "Start")

    def reviewer(self) -> str:
        """The reviewer's name, asked once and kept in QSettings (tests inject it)."""
        if self._reviewer:
            return self._reviewer
        name = self.settings.value("reviewer")
        if not name:
            name, ok = QInputDialog.getText(self, "Reviewer", "Your name (recorded with every decision):")
            name = name.strip() if ok and name.strip() else "reviewer"
            self.settings.setValue("reviewer", name)
        self._reviewer = str(name)
        return self._reviewer

    def _menus(self) -> None:
        menu = self.menuBar().addMenu("&File")
        menu.addAction("&New project…", self.new_project, "Ctrl+N")
        menu.addAction("&Open project…", self.choose_project, "Ctrl+O")
        self.recent_menu = menu.addMenu("Recent projects")
        menu.addSeparator()
        menu.addAction("&Quit", self.close, "Ctrl+Q")
        self._fill_recent()

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
            self.open_path(path, create=True)

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
        if self.db is not None:
            self.db.close()
        self.db, self.project_path = db, Path(path)
        recent = [str(self.project_path)] + [p for p in self.recent() if p != str(self.project_path)]
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self._fill_recent()
        self._build_tabs()
        self.setWindowTitle(f"Curator — {self.project_path.name}")
        return True

    def _build_tabs(self) -> None:
        self.tabs.clear()
        self.corpus_view = CorpusView(self.db)
        self.queries_view = QueriesView(self.db)
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
        self.tabs.addTab(self.clusters_view, "Clusters")
        self.evaluate_view = EvaluateView(self.db, self.project_path)
        self.tabs.addTab(self.evaluate_view, "Export / Evaluate")
        from curator.gui.adjudication_view import AdjudicationView  # two reviewers' conflicts after a merge

        self.adjudication_view = AdjudicationView(self.db, self.project_path, reviewer=self.reviewer())
        self.adjudication_view.resolved.connect(self.queries_view.update_query)
        self.adjudication_view.resolved.connect(lambda _id: self.review_view.refresh())
        self.tabs.addTab(self.adjudication_view, "Adjudicate")
        from curator.gui.diagnose_view import DiagnoseView  # a RAG system's traces on the 2x2

        self.diagnose_view = DiagnoseView(self.db, reviewer=self.reviewer())
        self.tabs.addTab(self.diagnose_view, "Diagnose")
        self.tabs.currentChanged.connect(self._tab_shown)
        self._focus_on_assigned_share()
        self.tabs.setCurrentWidget(self.review_view)
        self.review_view.setFocus()

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
        if getattr(self, "generate_view", None) is not None:
            self.generate_view.shutdown()  # stops after the row in flight; rows made are kept
        if self.db is not None:
            self.db.close()
            self.db = None
        if getattr(self, "clusters_view", None) is not None:
            self.clusters_view.shutdown()  # its UMAP process would otherwise outlive the window
        super().closeEvent(event)
