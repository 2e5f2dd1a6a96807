"""The Clusters tab: the 2-D map of the active cluster run, the cluster list, clustering and sampling.

Clustering and sampling run in ``TaskWorker``s (pool threads with their own SQLite
connection); UMAP itself runs in core's spawn worker process, so the GUI thread only
receives progress signals. Selections on the map are emitted as ``selection_changed``
(a set of query ids, or None for "no filter") for the window to filter the Queries view.

Coverage (curator.core.clustering.coverage) fills the list's Real, Negative, Synthetic and Gaps
columns and the map's red gap points; an under-covered cluster's Gaps cell is red. "Generate for
gaps" asks the window to start a coverage-aimed run in the Generate tab (``generate_for_gaps``):
a view never imports another view.

Rows added since the cluster run (generated for the gaps, a log imported) are drawn hollow at the
mean map position of their nearest clustered queries (``coverage.placed_points``), so a coverage-aimed
run shows on the map at once; "Run clustering" fits them properly. Their vectors are embedded by
a worker (``workers.place_task``) when not cached: the GUI thread only reads cached vectors.

After ``shutdown`` (the project is left, its connection closed) a worker that ends later touches
nothing, as in the Review tab's suggestion lists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import sqlite_utils
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QPixmap
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QPushButton, QSpinBox,
                               QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from curator.core.clustering import coverage
from curator.core.clustering.reads import active_cluster_run, cluster_points
from curator.core.errors import CuratorError
from curator.core.review import sample
from curator.gui import workers
from curator.gui.cluster_map import ClusterMap, cluster_color
from curator.gui.task_view import TaskView
from curator.gui.widgets import plain_label

LIST_HEADERS = ("Cluster", "Label", "Size", "Real", "Negative", "Synthetic", "Gaps", "Queued", "Reviewed", "Approved")
LABEL_MAX_WIDTH = 260  # px: a label is four top terms; longer ones are elided and shown whole in the tooltip
HEADER_TIPS = {"Real": "Real (log) queries; those added since the run are placed by their nearest clustered query",
               "Negative": "Real queries that got negative feedback",
               "Synthetic": "Generated rows",
               "Gaps": f"Real queries with no synthetic row among their {coverage.K_NEIGHBOURS} nearest queries "
                       "(red: the cluster is under-covered)"}


def _item(value, align_right: bool = False) -> QTableWidgetItem:
    item = QTableWidgetItem("" if value is None else str(value))  # QTableWidgetItem text is plain
    item.setFlags(Qt.ItemIsEnabled | Qt.ItemIsSelectable)
    if align_right:
        item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
    return item


def _swatch(cluster: int):
    pix = QPixmap(12, 12)
    pix.fill(cluster_color(cluster) if cluster >= 0 else QColor("#9ca3af"))
    return pix


class ClustersView(TaskView, QWidget):
    selection_changed = Signal(object)  # set[str] of query ids, or None to clear the filter
    project_changed = Signal()          # clustering or sampling wrote to the project
    task_finished = Signal(str, object)  # ("cluster" | "sample", result dict)
    task_failed = Signal(str, str)
    generate_for_gaps = Signal()         # the window starts a coverage-aimed run in the Generate tab
    cancel_message = "Cancelling…"

    def __init__(self, db: sqlite_utils.Database, project_path: str | Path, parent=None) -> None:
        super().__init__(parent)
        self.db, self.project_path = db, Path(project_path)
        self.coverage: Optional[dict] = None  # core's coverage report of the active run, as last read
        self._coverage_of: Optional[tuple] = None  # what that report was measured on (see _coverage_key)
        self._placer: Optional[workers.TaskWorker] = None  # embeds rows added since the run, off this thread
        self._placing_tried: Optional[tuple] = None  # the coverage key a placing worker last ran for
        self._placing_error: Optional[str] = None  # why the last placing worker failed (shown in the status)
        self._closed = False  # shutdown() ran: the project's connection is closed, workers' slots do nothing
        self.unplaced = 0  # rows added since the run that are not on the map (no vector yet, or none possible)
        self._cluster_of: dict[str, int] = {}  # query id -> cluster as coverage counts it (placed rows included)
        self._labels: dict[int, str] = {}
        self.init_tasks()
        self._build()
        self.reload()

    # -- layout ----------------------------------------------------------------------------
    def _build(self) -> None:
        self.k_spin = QSpinBox(minimum=0, maximum=200, value=0)
        self.k_spin.setSpecialValueText("auto")
        self.k_spin.setToolTip("Number of clusters; 'auto' picks k by silhouette")
        self.cluster_button = QPushButton("Run clustering")
        self.cluster_button.clicked.connect(self.run_clustering)
        self.size_spin = QSpinBox(minimum=1, maximum=100000, value=50)
        self.size_spin.setToolTip("Rows to add to the review queue")
        self.allocation = QComboBox()
        self.allocation.addItems(list(sample.ALLOCATIONS))
        self.sample_button = QPushButton("Build review queue")
        self.sample_button.clicked.connect(self.run_sampling)
        self.gaps_button = QPushButton("Generate for gaps")
        self.gaps_button.setToolTip("Generate rows from the chunks suggested for the real queries of under-covered "
                                    "clusters, in proportion to their traffic (the Generate tab's settings)")
        self.gaps_button.clicked.connect(self.generate_for_gaps.emit)
        bar = QHBoxLayout()
        for widget in (QLabel("k"), self.k_spin, self.cluster_button, QLabel("   Sample size"), self.size_spin,
                       self.allocation, self.sample_button, self.gaps_button):
            bar.addWidget(widget)
        bar.addStretch(1)

        self.table = QTableWidget(0, len(LIST_HEADERS))
        self.table.setHorizontalHeaderLabels(list(LIST_HEADERS))
        for col, name in enumerate(LIST_HEADERS):
            if name in HEADER_TIPS:
                self.table.horizontalHeaderItem(col).setToolTip(HEADER_TIPS[name])
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        hh = self.table.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeToContents)
        hh.setSectionResizeMode(1, QHeaderView.Stretch)
        self.table.itemSelectionChanged.connect(self._cluster_row_chosen)

        self.map = ClusterMap()
        self.map.selection_changed.connect(self._map_selected)
        self.selection_label = plain_label("Click a point or drag a lasso to filter the Queries tab.", hint=True)
        self.clear_button = QPushButton("Clear selection")
        self.clear_button.setEnabled(False)
        self.clear_button.clicked.connect(self.map.clear_selection)
        legend = QLabel("● synthetic   ■ log (real) query   red ring: no synthetic row near it   "
                        "hollow: added since the run")
        legend.setObjectName("hint")
        legend.setToolTip("Hollow points were added after this cluster run: each is drawn at the mean position of "
                          "its nearest clustered queries and counted in their cluster. Run clustering to fit them.")
        under = QHBoxLayout()  # the legend has its own line: beside it the selection hint wrapped to a column
        under.addWidget(self.selection_label, 1)
        under.addWidget(self.clear_button)
        right = QWidget()
        rcol = QVBoxLayout(right)
        rcol.setContentsMargins(0, 0, 0, 0)
        rcol.addWidget(self.map, 1)
        rcol.addWidget(legend)
        rcol.addLayout(under)

        self.splitter = QSplitter()
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([560, 700])
        self._splitter_moved = False  # once the user drags it, the list keeps the width they chose
        self.splitter.splitterMoved.connect(lambda *_: setattr(self, "_splitter_moved", True))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(bar)
        layout.addWidget(self.task_bar)
        layout.addWidget(self.splitter, 1)

    # -- data ------------------------------------------------------------------------------
    def reload(self) -> None:
        """Re-read the active run's points and the cluster list."""
        run = active_cluster_run(self.db)
        had_selection = bool(self.map.selected.any())
        self.map.set_rows(cluster_points(self.db) if run else [])
        self._coverage_of = None  # new points carry no gaps: measure coverage again
        if had_selection:  # the old selection is gone with the old points: drop the filter too
            self._map_selected([])
        self.refresh_counts()
        if run:
            self.status.setText(self._run_text(run))
        else:
            self.status.setText("No cluster run yet. Run clustering to group the queries, then build a review queue.")

    def _run_text(self, run: dict) -> str:
        sil = f", silhouette {run['silhouette']:.2f}" if run.get("silhouette") is not None else ""
        return (f"Cluster run {run['id']} ({run['embedder']}, k={run['k']}{sil}) · "
                f"{len(self.map.ids)} queries on the map" + self._placed_text() + self._coverage_text())

    def _placed_text(self) -> str:
        placed = int(self.map.placed.sum())
        text = (f" · {placed} added since the run drawn hollow near their nearest queries "
                "(Run clustering to fit them)") if placed else ""
        if self.unplaced:
            text += f" · {self.unplaced} added since the run not on the map yet" + (
                ": placing them…" if self._placer is not None else
                f" (could not place them: {self._placing_error})" if self._placing_error else
                " (their embedder cannot be rebuilt: Run clustering)")
        return text

    def _measure(self) -> Optional[dict]:
        """Coverage of the active run from cached vectors only (nothing is embedded on the GUI thread);
        the rows added since the run that it could place are drawn on the map."""
        try:
            measured = coverage.measure(self.db, embed_new=False)
        except CuratorError:
            return None
        self.map.set_placed(coverage.placed_points(measured))
        self.map.set_coverage(measured.gap_ids(), measured.labels)
        self.unplaced = sum(r["cluster"] < 0 for r in measured.rows)
        self._cluster_of = {r["id"]: int(r["cluster"]) for r in measured.rows}
        self._labels = dict(measured.labels)
        return coverage.report(measured)

    def _place_new_rows(self, key: tuple) -> None:
        """Rows added since the run without a cached vector: embed them in a worker, then measure again.
        Once per coverage key, so an embedder that cannot be rebuilt is not retried on every show."""
        if self._closed or not self.unplaced or self._placer is not None or self._placing_tried == key:
            return
        self._placing_tried, self._placing_error = key, None
        self._placer = workers.launch(self.project_path, workers.place_task, progress=lambda *_: None,
                                      finished=self._placed, failed=self._placing_failed,
                                      cancelled=lambda: None, done=self._placing_done)

    def _placed(self, embedded: int) -> None:
        if embedded and not self._closed:
            self._coverage_of = None  # the cache now holds their vectors: measure again

    def _placing_failed(self, what: str, todo: str) -> None:
        if not self._closed:  # kept for the status line (_placed_text), which _placing_done rewrites
            self._placing_error = what

    def _placing_done(self) -> None:
        self._placer = None
        if self._closed:  # the project was left: its connection is closed
            return
        self.refresh_counts()
        if self._coverage_of is not None and self._placing_tried != self._coverage_of:
            # rows were added while the worker ran, after it read which rows to embed: place them too
            self._place_new_rows(self._coverage_of)
        run = active_cluster_run(self.db)
        if run and not self.busy():
            self.status.setText(self._run_text(run))

    def placing(self) -> bool:
        """A worker is embedding rows added since the run (tests wait on it)."""
        return self._placer is not None

    def _coverage_text(self) -> str:
        r = self.coverage
        if not r or not r["real"]:
            return ""
        return (f" · {r['real_in_clusters_without_synthetic']} of {r['real']} real queries in clusters without "
                f"synthetic rows, {r['real_without_synthetic_neighbour']} with none near them (red)")

    def _review_counts(self) -> list[dict]:
        """Per cluster as coverage counts it (rows added since the run in the cluster they were placed
        in, so Size = Real + Synthetic): size, queued, reviewed, approved; -1 holds the rows not placed.
        Statuses and the queue are read afresh (review decisions do not change the coverage key)."""
        if not self._cluster_of:
            return sample.coverage(self.db)
        out: dict[int, dict] = {}
        for query_id, status, queued in self.db.execute(
                "SELECT q.id, q.status, r.query_id IS NOT NULL FROM queries q "
                "LEFT JOIN review_queue r ON r.query_id = q.id"):
            cluster = self._cluster_of.get(query_id, -1)
            c = out.setdefault(cluster, {"cluster": cluster, "population": 0, "queued": 0, "reviewed": 0, "approved": 0,
                                         "label": self._labels.get(cluster, "not on the map: added since the run")})
            c["population"] += 1
            c["queued"] += bool(queued)
            c["reviewed"] += status != "pending"
            c["approved"] += status == "approved"
        return [out[c] for c in sorted(out)]

    def refresh_counts(self) -> None:
        """Cluster list: review counts from the queue, real/synthetic/gap counts from coverage."""
        run = active_cluster_run(self.db)
        key = self._coverage_key(run) if run else None
        if key != self._coverage_of:  # coverage reads every vector: measure again only when rows changed
            self._cluster_of, self._labels = {}, {}
            self.coverage, self._coverage_of = (self._measure() if run else None), key
            if run:
                self._place_new_rows(key)
        rows = self._review_counts() if run else []
        by_cluster = {c["cluster"]: c for c in (self.coverage or {}).get("clusters", [])}
        self.table.blockSignals(True)
        self.table.setRowCount(len(rows))
        for i, row in enumerate(rows):
            cluster = int(row["cluster"])
            first = _item("-" if cluster < 0 else cluster, align_right=True)
            first.setData(Qt.DecorationRole, _swatch(cluster))
            first.setData(Qt.UserRole, cluster)
            self.table.setItem(i, 0, first)
            self.table.setItem(i, 1, _item(row["label"]))
            self.table.item(i, 1).setToolTip(row["label"] or "")
            cov = by_cluster.get(cluster, {})
            values = (row["population"], cov.get("real"), cov.get("negative"), cov.get("synthetic"),
                      cov.get("real_without_synthetic_neighbour"), row["queued"], row["reviewed"], row["approved"])
            for col, value in enumerate(values, start=2):
                self.table.setItem(i, col, _item(int(value or 0), align_right=True))
            if cov.get("under_covered"):
                gaps = self.table.item(i, 6)
                gaps.setForeground(QColor("#dc2626"))
                gaps.setToolTip("Under-covered: real queries here have few synthetic rows near them")
        self.table.blockSignals(False)
        self._fit_labels()

    def _fit_labels(self) -> None:
        """Widen the list so its labels show whole (up to LABEL_MAX_WIDTH), taking the room from the
        map but leaving it at least half the splitter: nine count columns otherwise squeeze the
        Label column, which stretches, to a few letters."""
        if self._splitter_moved or self.table.rowCount() == 0:
            return
        header = self.table.horizontalHeader()
        counts = sum(header.sectionSize(col) for col in range(self.table.columnCount()) if col != 1)
        label = min(max(self.table.sizeHintForColumn(1), header.sectionSizeHint(1)), LABEL_MAX_WIDTH)
        frame = self.table.verticalScrollBar().sizeHint().width() + 2 * self.table.frameWidth()
        total = sum(self.splitter.sizes())
        wanted = min(counts + label + frame, total // 2)
        if wanted > self.splitter.sizes()[0]:
            self.splitter.setSizes([wanted, total - wanted])

    def _coverage_key(self, run: dict) -> tuple:
        """The run and the rows coverage counts: the tab is shown after every review decision, but
        only new or removed rows, or approvals, move its figures."""
        rows = self.db.execute("SELECT COUNT(*), MAX(created_at), SUM(status = 'approved') FROM queries").fetchone()
        return (run["id"], *rows)

    def counts(self) -> list[tuple]:
        """The cluster list as shown (for tests): tuples of the cells' text."""
        return [tuple(self.table.item(r, c).text() for c in range(self.table.columnCount()))
                for r in range(self.table.rowCount())]

    def showEvent(self, event) -> None:
        # Decisions made in the Review tab change the counts; re-read them when shown.
        self.refresh_counts()
        super().showEvent(event)

    # -- selection -------------------------------------------------------------------------
    def _cluster_row_chosen(self) -> None:
        items = self.table.selectedItems()
        if items:
            cluster = self.table.item(items[0].row(), 0).data(Qt.UserRole)
            self.map.select_cluster(int(cluster))

    def _map_selected(self, ids: list) -> None:
        if ids:
            self.selection_label.setText(f"{len(ids)} selected: the Queries tab shows only these.")
        else:
            self.selection_label.setText("Click a point or drag a lasso to filter the Queries tab.")
            self.table.clearSelection()
        self.clear_button.setEnabled(bool(ids))
        self.selection_changed.emit(set(ids) if ids else None)

    # -- tasks -----------------------------------------------------------------------------
    def run_clustering(self) -> Optional[workers.TaskWorker]:
        k = self.k_spin.value() or "auto"
        return self._start("cluster", workers.cluster_task, k=k)

    def run_sampling(self) -> Optional[workers.TaskWorker]:
        return self._start("sample", workers.sample_task, size=self.size_spin.value(),
                           allocation=self.allocation.currentText())

    def _start(self, kind: str, fn, **kwargs) -> Optional[workers.TaskWorker]:
        return self.run_task(fn, message="Clustering…" if kind == "cluster" else "Sampling…",
                             finished=lambda result: self._finished(kind, result),
                             cancelled=lambda: self.status.setText("Cancelled; the project is unchanged."), **kwargs)

    def shutdown(self) -> None:
        """The project is left (another opens, or the window closes): stop the workers and core's
        clustering process (a fit it kills has stored nothing); their late signals touch nothing."""
        self._closed = True
        if self._placer is not None:
            self._placer.cancel()
        self.cancel()
        workers.stop_cluster_process()

    def set_busy(self, busy: bool, message: str = "") -> None:
        if self._closed:  # a task that ends after shutdown: the view may be gone with its project
            return
        for widget in (self.cluster_button, self.sample_button, self.k_spin, self.size_spin, self.allocation,
                       self.gaps_button):
            widget.setEnabled(not busy)
        super().set_busy(busy, message)

    def show_task_progress(self, done: int, total: int, message: str) -> None:
        super().show_task_progress(done, total, message)
        self.progress.setFormat(f"{message} %p%" if message else "%p%")

    def fail(self, what: str, todo: str) -> None:
        if not self._closed:  # no dialog over a project that is gone
            super().fail(what, todo)

    def _finished(self, kind: str, result) -> tuple:
        if self._closed:
            return kind, result
        self.reload()
        if kind == "cluster":
            self.status.setText(f"{self.status.text()} · clustered in {result.get('seconds', 0):.1f} s")
        else:
            self.status.setText(f"Added {result['queued']} rows to the review queue "
                                f"(queue size {result['queue_size']}).")
        self.project_changed.emit()
        return kind, result
