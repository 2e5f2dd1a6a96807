"""The Export / Evaluate tab: export the gold set, score a retriever, chart Recall@k and MRR per cluster.

Export and evaluation run in ``TaskWorker``s (own SQLite connection per thread). The last
evaluation stored in the project (``eval_runs``) is shown when the tab opens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import sqlite_utils
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QLineEdit,
                               QPushButton, QSplitter, QVBoxLayout, QWidget)

from curator.core.clustering.reads import active_cluster_run
from curator.core.evaluation.evaluate import eval_runs
from curator.core.export.writers import exports as past_exports
from curator.core.evaluation.evaluate import RECALL_HEALTHY, RETRIEVERS, slice_title
from curator.core.errors import InputError
from curator.core.evaluation import metrics
from curator.core.evaluation.metrics import DEFAULT_KS
from curator.core.export.writers import DEFAULT_STATUSES, FORMATS, manifest_path
from curator.core.review.decisions import STATUSES
from curator.core.store.stats import approved_by_source
from curator.gui import workers
from curator.gui.chart import Chart
from curator.gui.models import RecordTableModel
from curator.gui.task_view import TaskView
from curator.gui.widgets import path_row, plain_label, record_table, titled

EMBEDDERS = ("", "minilm", "static", "tfidf")  # editable: also gguf:PATH, endpoint:URL
OUT_NAMES = {"jsonl": "gold.jsonl", "trec": "gold.qrels", "beir": "beir"}
MANIFEST_COLUMNS = (("group", "Count of"), ("value", "Value"), ("rows", "Rows"))
RECALL_COLOUR, MRR_COLOUR = QColor("#2563eb"), QColor("#f59e0b")


def _when(stamp: str) -> str:
    """'2026-12-03T10:13:40.55+00:00' -> '2026-12-03 10:13' (stored stamps are UTC)."""
    return str(stamp)[:16].replace("T", " ")


def parse_ks(text: str) -> tuple[int, ...]:
    """Core's k-list rule; raises ValueError naming the field's text, for the user."""
    try:
        return metrics.parse_ks(text)
    except InputError as exc:
        raise ValueError(f"k values {text!r}: {exc}, comma-separated (e.g. {DEFAULT_KS})") from None


def manifest_rows(manifest: dict) -> list[dict]:
    """Manifest counts as (group, value, rows) rows: the total first, then each breakdown."""
    rows = [{"group": "total", "value": manifest.get("format", ""), "rows": manifest.get("rows", 0)}]
    for key, group in (("by_status", "status"), ("by_type", "type"), ("by_source", "source"),
                       ("by_cluster", "cluster")):
        rows += [{"group": group, "value": value, "rows": n} for value, n in (manifest.get(key) or {}).items()]
    for name, n in ((manifest.get("split") or {}).get("counts") or {}).items():
        rows.append({"group": "split", "value": name, "rows": n})
    return rows


def read_manifest(out: str, fmt: str) -> Optional[dict]:
    """The manifest written beside an export (None if it was moved or deleted)."""
    try:
        return json.loads(manifest_path(out, fmt).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


MIN_AUROC_ROWS = 10  # below this many rows of each kind, one row moves the AUROC by 0.05 or more


def auroc_note(result: dict) -> str:
    """' · unanswerable AUROC 0.81', only with enough rows of both kinds to mean something."""
    auroc = result.get("unanswerable_auroc")
    if auroc is None:
        return ""
    if min(result["unanswerable_queries"], result["answerable_queries"]) < MIN_AUROC_ROWS:
        return f" · unanswerable AUROC needs {MIN_AUROC_ROWS}+ unanswerable and answerable rows"
    return f" · unanswerable AUROC {auroc:.2f}"


def metric_columns(ks: list[int]) -> tuple[tuple[str, str], ...]:
    k_route = 5 if 5 in ks else max(ks)
    return (("slice", "Slice"), ("queries", "Queries"), ("mrr", "MRR"),
            *((f"recall@{k}", f"Recall@{k}") for k in ks), (f"ndcg@{k_route}", f"nDCG@{k_route}"),
            ("routing", "Routing"))


def slice_rows(result: dict) -> list[dict]:
    """Overall first, then types, sources and clusters, each a dict of its metrics."""
    slices = result.get("slices") or {}
    order = sorted(slices, key=lambda name: (name != "overall", name.split(":")[0], name))
    return [{**slices[name], "slice": slice_title(name, slices[name])} for name in order]


def cluster_bars(result: dict, k: int) -> list[tuple[str, float, float]]:
    """(cluster label, Recall@k, MRR) per cluster slice."""
    slices = result.get("slices") or {}
    return [(s.get("label") or name.split(":", 1)[1], float(s.get(f"recall@{k}", 0.0)), float(s.get("mrr", 0.0)))
            for name, s in sorted(slices.items()) if name.startswith("cluster:")]


def no_evaluation_text(approved: int) -> str:
    if approved:
        return (f"No evaluation yet. Press Evaluate to score the chosen retriever on the {approved} approved "
                f"{'row' if approved == 1 else 'rows'} (Recall@k, MRR and nDCG, overall and per slice).")
    return "No evaluation yet: approve some rows in Review, then press Evaluate."


def no_cluster_bars_text(evaluated: bool, approved: int, clustered: bool) -> str:
    """The per-cluster chart's empty text: the first missing step, in the order they are taken."""
    if not clustered:
        return "No clusters in this project: run clustering (Clusters tab), then Evaluate, to see results per cluster."
    if not approved:
        return "No approved rows yet: approve some in Review, then press Evaluate."
    if not evaluated:
        return "Press Evaluate to chart Recall@k and MRR per cluster."
    return "This evaluation has no per-cluster slices (its rows had no cluster when it ran): press Evaluate again."


# -- tasks (run in the worker thread) -------------------------------------------------------

def export_task(db: sqlite_utils.Database, out: str, *, fmt: str, statuses: tuple[str, ...],
                split: Optional[dict], on_progress=None, cancel=None) -> dict:
    from curator.core.export.writers import export

    manifest = workers.one_step("exporting", lambda: export(db, out, format=fmt, statuses=statuses, split=split),
                                on_progress, cancel)
    return {**manifest, "out": str(out)}


def evaluate_task(db: sqlite_utils.Database, *, retriever: str, run_file: Optional[str], ks: tuple[int, ...],
                  on_progress=None, cancel=None, **options) -> dict:
    from curator.core.evaluation.evaluate import evaluate

    def work() -> dict:
        return evaluate(db, retriever=retriever, run_file=run_file, ks=ks, **options)

    return workers.one_step("evaluating", work, on_progress, cancel)


# -- the chart -----------------------------------------------------------------------------

class ClusterBarChart(Chart):
    """Horizontal grouped bars per cluster: Recall@k and MRR, 0..1, with the healthy-recall line."""

    ROW, BAR, PAD = 34, 11, 8

    def __init__(self, parent=None) -> None:
        super().__init__(320, 200, parent)
        self.bars: list[tuple[str, float, float]] = []
        self.k = 5
        self.empty_text = "No per-cluster results yet."  # the view says what this project lacks

    def set_bars(self, bars: list[tuple[str, float, float]], k: int) -> None:
        self.bars, self.k = list(bars), k
        self.update()

    def paintEvent(self, event) -> None:
        started = self.begin_paint(None if self.bars else self.empty_text)
        if started is None:
            return
        painter, metrics = started
        label_w = min(int(self.width() * 0.38), max(metrics.horizontalAdvance(b[0]) for b in self.bars) + 2 * self.PAD)
        left, right = label_w + self.PAD, self.width() - 3 * self.PAD - metrics.horizontalAdvance("0.00")
        top = self._legend(painter, metrics) + self.PAD
        plot_w = max(10, right - left)
        self._grid(painter, metrics, left, plot_w, top)
        for i, (label, recall, mrr) in enumerate(self.bars):
            y = top + i * self.ROW
            painter.setPen(QColor("#111827"))
            text = metrics.elidedText(label, Qt.ElideRight, label_w - self.PAD)
            painter.drawText(QRectF(self.PAD, y, label_w - self.PAD, 2 * self.BAR + 2), Qt.AlignVCenter | Qt.AlignLeft, text)
            for j, (value, colour) in enumerate(((recall, RECALL_COLOUR), (mrr, MRR_COLOUR))):
                bar = QRectF(left, y + j * (self.BAR + 2), plot_w * max(0.0, min(1.0, value)), self.BAR)
                painter.fillRect(bar, colour)
                painter.setPen(QColor("#374151"))
                painter.drawText(QRectF(bar.right() + 4, bar.top() - 2, 60, self.BAR + 4), Qt.AlignVCenter, f"{value:.2f}")
        painter.end()

    def _legend(self, painter: QPainter, metrics: QFontMetrics) -> int:
        x, y = self.PAD, self.PAD
        for name, colour in ((f"Recall@{self.k}", RECALL_COLOUR), ("MRR", MRR_COLOUR)):
            painter.fillRect(QRectF(x, y + 3, 12, 10), colour)
            painter.setPen(QColor("#111827"))
            painter.drawText(x + 16, y + metrics.ascent(), name)
            x += 16 + metrics.horizontalAdvance(name) + 18
        painter.setPen(QColor("#6b7280"))
        painter.drawText(x, y + metrics.ascent(), f"dashed line: healthy recall ({RECALL_HEALTHY:g})")
        return y + metrics.height() + 4

    def _grid(self, painter: QPainter, metrics: QFontMetrics, left: float, plot_w: float, top: float) -> None:
        bottom = top + len(self.bars) * self.ROW
        for step in range(5):
            x = left + plot_w * step / 4
            painter.setPen(QPen(QColor("#e5e7eb"), 1))
            painter.drawLine(int(x), int(top - 4), int(x), int(bottom))
            painter.setPen(QColor("#6b7280"))
            painter.drawText(int(x - 10), int(bottom + metrics.ascent() + 2), f"{step / 4:.2f}".rstrip("0").rstrip("."))
        pen = QPen(QColor("#dc2626"), 1, Qt.DashLine)
        painter.setPen(pen)
        x = left + plot_w * RECALL_HEALTHY
        painter.drawLine(int(x), int(top - 4), int(x), int(bottom))


# -- the view --------------------------------------------------------------------------------

class EvaluateView(TaskView, QWidget):
    task_finished = Signal(str, object)  # ("export" | "evaluate", result)
    task_failed = Signal(str, str)

    def __init__(self, db: sqlite_utils.Database, project_path: str | Path, parent=None) -> None:
        super().__init__(parent)
        self.db, self.project_path = db, Path(project_path)
        self.init_tasks(cancellable=False)  # export and evaluate are one step each: nothing to stop half-way
        self.result: Optional[dict] = None
        self.manifest: Optional[dict] = None
        self._build()
        self.reload()

    # -- layout ----------------------------------------------------------------------------
    def _build(self) -> None:
        options = QHBoxLayout()
        options.addWidget(self._export_box(), 1)
        options.addWidget(self._evaluate_box(), 1)
        self.manifest_model = RecordTableModel(MANIFEST_COLUMNS)
        self.manifest_table = record_table(self.manifest_model, stretch=(1,))
        self.metrics_model = RecordTableModel(metric_columns([1, 3, 5, 10, 20]))
        self.metrics_table = record_table(self.metrics_model, stretch=())
        self.metrics_table.horizontalHeader().setMaximumSectionSize(320)  # long cluster labels are elided
        self.summary = plain_label()
        self.chart = ClusterBarChart()
        self.chart_k = QComboBox()
        self.chart_k.currentIndexChanged.connect(self._draw_chart)
        chart_bar = QHBoxLayout()
        chart_bar.addWidget(plain_label("Per cluster"), 1)
        chart_bar.addWidget(plain_label("Recall at k ="))
        chart_bar.addWidget(self.chart_k)
        left = titled(plain_label("Last export"), self.manifest_table)
        chart_pane = QWidget()
        ccol = QVBoxLayout(chart_pane)
        ccol.setContentsMargins(0, 0, 0, 0)
        ccol.addLayout(chart_bar)
        ccol.addWidget(self.chart, 1)
        results = QSplitter(Qt.Vertical)
        results.addWidget(titled(self.summary, self.metrics_table))
        results.addWidget(chart_pane)
        # floors below the panes' own minimum hints, so the tab fits a 1024x640 window; the
        # metrics pane keeps room for the overall row and a few slices
        for pane, floor in ((results.widget(0), 150), (chart_pane, 80)):
            pane.setMinimumHeight(floor)
        results.setChildrenCollapsible(False)
        results.setStretchFactor(0, 1)
        results.setStretchFactor(1, 1)
        results.setSizes([300, 300])
        splitter = QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(results)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([300, 900])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(options)
        layout.addWidget(self.task_bar)
        layout.addWidget(splitter, 1)

    def _export_box(self) -> QGroupBox:
        box = QGroupBox("Export the gold set")
        self.format = QComboBox()
        self.format.addItems(list(FORMATS))
        self.status_checks: dict[str, QCheckBox] = {}
        statuses = QHBoxLayout()
        for name in STATUSES:
            check = QCheckBox(name)
            check.setChecked(name in DEFAULT_STATUSES)
            self.status_checks[name] = check
            statuses.addWidget(check)
        statuses.addStretch(1)
        self.split = QLineEdit(placeholderText="optional, e.g. dev=0.3,test=0.7")
        self.out_dir = QLineEdit(str(self.project_path.parent / f"{self.project_path.stem}-export"))
        folder = path_row(self.out_dir, QPushButton("Choose…"), self.choose_folder)
        self.export_button = QPushButton("Export")
        self.export_button.clicked.connect(self.run_export)
        form = QFormLayout(box)
        form.addRow("Format", self.format)
        form.addRow("Statuses", statuses)
        form.addRow("Split", self.split)
        form.addRow("Folder", folder)
        form.addRow(self.export_button)
        return box

    def _evaluate_box(self) -> QGroupBox:
        box = QGroupBox("Evaluate a retriever")
        self.retriever = QComboBox()
        self.retriever.addItems(list(RETRIEVERS))
        self.retriever.currentTextChanged.connect(self._retriever_changed)
        self.embedder = QComboBox()
        self.embedder.setEditable(True)  # also gguf:PATH, endpoint:URL
        self.embedder.addItems(list(EMBEDDERS))
        self.embedder.setToolTip("Embedder for the dense and hybrid retrievers (blank: the project's)")
        self.ks = QLineEdit(DEFAULT_KS)
        self.run_file = QLineEdit(placeholderText="optional TREC run file (qid Q0 docid rank score tag)")
        run_row = path_row(self.run_file, QPushButton("Choose…"), self.choose_run_file)
        self.evaluate_button = QPushButton("Evaluate")
        self.evaluate_button.clicked.connect(self.run_evaluate)
        self._retriever_changed(self.retriever.currentText())
        form = QFormLayout(box)
        form.addRow("Retriever", self.retriever)
        form.addRow("Embedder", self.embedder)
        form.addRow("k values", self.ks)
        form.addRow("Run file", run_row)
        form.addRow(plain_label("A run file, when given, is scored instead of the retriever.", hint=True))
        form.addRow(self.evaluate_button)
        return box

    def _retriever_changed(self, name: str) -> None:
        self.embedder.setEnabled(name in ("dense", "hybrid"))

    def choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Export folder", self.out_dir.text())
        if path:
            self.out_dir.setText(path)

    def choose_run_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "TREC run file", "", "TREC runs (*.trec *.run *.txt);;All files (*)")
        if path:
            self.run_file.setText(path)

    # -- data ------------------------------------------------------------------------------
    def reload(self) -> None:
        """Show the last evaluation and the last export stored in the project."""
        runs = eval_runs(self.db, limit=1)
        if runs and runs[0]["metrics"]:
            self.show_result({"eval_run": runs[0]["id"], **runs[0]["metrics"]}, runs[0]["created_at"])
        else:
            self.show_result(None)
        exports = past_exports(self.db, limit=1)
        if self.manifest is None and exports:
            last = exports[0]
            self.status.setText(f"Last export: {last['format']} to {last['path']} ({_when(last['created_at'])}).")
            self.manifest_model.set_rows(manifest_rows(read_manifest(last["path"], last["format"]) or {"rows": "?"}))
        elif self.manifest is None:
            self.status.setText("Nothing exported yet.")

    def show_result(self, result: Optional[dict], when: str = "") -> None:
        self.result = result
        ks = list(result["ks"]) if result else [1, 3, 5, 10, 20]
        self.metrics_model.set_rows(slice_rows(result) if result else [], columns=metric_columns(ks))
        self.chart_k.blockSignals(True)
        self.chart_k.clear()
        self.chart_k.addItems([str(k) for k in ks])
        self.chart_k.setCurrentIndex(ks.index(5) if 5 in ks else len(ks) - 1)
        self.chart_k.blockSignals(False)
        self._draw_chart()
        self._say_what_is_missing()
        if result:
            self.summary.setText(
                f"Eval run {result.get('eval_run', '?')} · {result['retriever']} · {result['answerable_queries']} "
                f"answerable, {result['unanswerable_queries']} unanswerable" + auroc_note(result)
                + (f" · {_when(when)}" if when else "") + "".join(f"\n{w}" for w in result.get("warnings", [])[:3]))

    def _say_what_is_missing(self) -> None:
        """The empty table and chart say what is true of this project now, and the next step."""
        approved = sum(approved_by_source(self.db).values())
        clustered = active_cluster_run(self.db) is not None
        if self.result is None:
            self.summary.setText(no_evaluation_text(approved))
        self.chart.empty_text = no_cluster_bars_text(self.result is not None, approved, clustered)
        self.chart.update()

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's naming)
        # rows approved in the Review tab since the last look change what the empty states say
        self._say_what_is_missing()
        super().showEvent(event)

    def _draw_chart(self) -> None:
        k = int(self.chart_k.currentText() or 5)
        self.chart.set_bars(cluster_bars(self.result, k) if self.result else [], k)

    def overall(self) -> dict:
        """The overall metrics row as shown (raw values), for tests."""
        rows = self.metrics_model.rows()
        return rows[0] if rows else {}

    # -- tasks -----------------------------------------------------------------------------
    def export_target(self) -> Path:
        return Path(self.out_dir.text().strip()).expanduser() / OUT_NAMES[self.format.currentText()]

    def run_export(self) -> Optional[workers.TaskWorker]:
        from curator.core.errors import InputError
        from curator.core.export.splits import parse_split

        statuses = tuple(name for name, check in self.status_checks.items() if check.isChecked())
        if not statuses:
            return self.refuse("No status chosen.", "Tick at least one status to export (usually approved).")
        if not self.out_dir.text().strip():
            return self.refuse("No export folder chosen.", "Choose a folder for the export.")
        try:
            split = parse_split(self.split.text().strip())
        except InputError as exc:
            return self.refuse(str(exc), "Fix the split, or leave it empty for a single file.")
        return self._start("export", export_task, str(self.export_target()), fmt=self.format.currentText(),
                           statuses=statuses, split=split)

    def run_evaluate(self) -> Optional[workers.TaskWorker]:
        try:
            ks = parse_ks(self.ks.text())
        except ValueError as exc:
            return self.refuse(str(exc), "Fix the k values and press Evaluate again.")
        run_file = self.run_file.text().strip() or None
        extra = {}
        if self.embedder.isEnabled() and self.embedder.currentText().strip():
            extra["embedder"] = self.embedder.currentText().strip()
        return self._start("evaluate", evaluate_task, retriever=self.retriever.currentText(), run_file=run_file,
                           ks=ks, **extra)

    def _start(self, kind: str, fn, *args, **kwargs) -> Optional[workers.TaskWorker]:
        return self.run_task(fn, *args, message="Exporting…" if kind == "export" else "Evaluating…",
                             finished=lambda result: self._finished(kind, result),
                             cancelled=lambda: self.status.setText("Cancelled; nothing was changed."), **kwargs)

    def set_busy(self, busy: bool, message: str = "") -> None:
        self.export_button.setEnabled(not busy)
        self.evaluate_button.setEnabled(not busy)
        super().set_busy(busy, message)

    def _finished(self, kind: str, result: dict) -> tuple:
        if kind == "export":
            self.manifest = result
            self.manifest_model.set_rows(manifest_rows(result))
            self.status.setText(f"Exported {result['rows']} rows as {result['format']} to {result['out']} "
                                f"(files: {', '.join(result.get('files', {}))}).")
        else:
            self.show_result(result)
            self.status.setText(f"Evaluated {result['answerable_queries']} answerable queries with {result['retriever']}.")
        return kind, result
