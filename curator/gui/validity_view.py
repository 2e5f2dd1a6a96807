"""The Validity tab: does the gold set rank retrievers like the project's real queries?

The product's most important answer gets a tab of its own. The verdict sits above a chart of
every retriever side by side per source (synthetic, log), each bar with its 95% bootstrap
interval; beside the chart, in its own pane (never over it), the rankings with tau, the
difficulty gaps and the stability lines. The report is computed by core's validity.validate
in a TaskWorker (own SQLite connection) through ``TaskView``, like every other task.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

import sqlite_utils
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QPlainTextEdit, QPushButton, QSplitter, QVBoxLayout, QWidget

from curator.core.queries.rows import list_queries
from curator.gui import workers
from curator.gui.chart import Chart
from curator.gui.task_view import TaskView
from curator.gui.widgets import plain_label, titled

SOURCE_COLOURS = {"synthetic": QColor("#2563eb"), "log": QColor("#f59e0b"), "manual": QColor("#6b7280")}
VERDICT_COLOURS = {"agrees": "#15803d", "uncertain": "#b45309", "disagrees": "#b91c1c"}
DEFAULT_RETRIEVERS = "bm25,tfidf,dense,hybrid"


INTRO = ("A gold set is valid when it ranks retrievers as the project's real (log) queries do. The check scores "
         "each retriever on the approved synthetic rows and on the approved log rows, then compares the rankings.")


def validity_task(db, *, retrievers: list[str], metric: str, on_progress=None, cancel=None) -> dict:
    """Core's validate (one pass, no progress of its own) as a task for the worker."""
    from curator.core.evaluation.validity import validate

    return workers.one_step("scoring the retrievers", lambda: validate(db, retrievers, {}, metric), on_progress, cancel)


def before_check_text(by_source: dict[str, int]) -> str:
    """What the check will compare on this project, or the step it lacks first."""
    synthetic, log = by_source.get("synthetic", 0), by_source.get("log", 0)
    if not synthetic and not log:
        return "No approved rows yet: approve synthetic and log (real) rows in Review, then check validity."
    if not log:
        return (f"{synthetic} approved synthetic rows and no approved log (real) rows: import a query log (Queries tab) "
                "and approve some of its rows, or nothing says whether the gold set ranks retrievers as real queries do.")
    if not synthetic:
        return (f"{log} approved log rows and no approved synthetic rows: generate some (Generate tab) and approve "
                "them to compare the two.")
    return f"Press Check validity to compare the retrievers on {synthetic} approved synthetic and {log} approved log rows."


def source_bars(report: dict) -> tuple[list[str], list[str], dict]:
    """(retrievers, sources shown, {(retriever, source): (mean, low, high)}) from a report."""
    sources = [s for s in ("synthetic", "log", "manual") if f"source:{s}" in report["slices"]]
    bars = {}
    for source in sources:
        part = report["slices"][f"source:{source}"]
        for name in report["retrievers"]:
            low, high = part["ci95"][name]
            bars[(name, source)] = (part["means"][name], low, high)
    return list(report["retrievers"]), sources, bars


def details_text(report: dict) -> str:
    """The report's details as plain text: rankings and tau, difficulty gaps, stability; a blank line
    between the three, so each reads as a paragraph."""
    sections = []
    a = report.get("agreement")
    if a:
        low, high = a["ci95"]
        interval = "n/a" if low is None else f"[{low:+.2f}, {high:+.2f}]"
        sections.append([f"Synthetic: {' > '.join(a['synthetic_ranking'])}", f"Real: {' > '.join(a['real_ranking'])}",
                         f"Kendall tau {'undefined' if a['tau'] is None else format(a['tau'], '+.2f')}, "
                         f"95% interval {interval}"])
    sections.append([f"{g['text']} (95% [{g['ci95'][0]:+.2f}, {g['ci95'][1]:+.2f}])" for g in report["difficulty_gap"]
                     if g["ci95"][0] is not None])
    sections.append([f"Stability ({name.replace('source:', '')}): {s['text']}" for name, s in report["stability"].items()])
    return "\n\n".join("\n".join(lines) for lines in sections if lines)


class ValidityChart(Chart):
    """Vertical bars, 0..1: one group per retriever, one bar per source, whiskers for the interval."""

    PAD, BAR = 10, 18

    def __init__(self, parent=None) -> None:
        super().__init__(360, 220, parent)
        self.report: Optional[dict] = None

    def set_report(self, report: Optional[dict]) -> None:
        self.report = report
        self.update()

    def paintEvent(self, event) -> None:
        started = self.begin_paint(None if self.report else "Press Check validity to rank the retrievers per source.")
        if started is None:
            return
        painter, metrics = started
        names, sources, bars = source_bars(self.report)
        top = self._legend(painter, metrics, sources) + self.PAD + metrics.height()  # room for a value over 1.0's whisker
        left, bottom = self.PAD + metrics.horizontalAdvance("0.75") + 6, self.height() - metrics.height() - self.PAD
        plot = QRectF(left, top, max(10, self.width() - left - self.PAD), max(10, bottom - top))
        self._axis(painter, metrics, plot)
        group_w = plot.width() / max(1, len(names))
        width = max(self.BAR, min(48, group_w * 0.6 / max(1, len(sources))))  # wide enough for its "0.00"
        for i, name in enumerate(names):
            x0 = plot.left() + i * group_w + (group_w - len(sources) * (width + 4)) / 2
            for j, source in enumerate(sources):
                self._bar(painter, metrics, plot, QRectF(x0 + j * (width + 4), 0, width, 0), bars[(name, source)],
                          SOURCE_COLOURS[source])
            painter.setPen(QColor("#111827"))
            label = metrics.elidedText(name, Qt.ElideRight, int(group_w) - 4)
            painter.drawText(QRectF(plot.left() + i * group_w, plot.bottom() + 2, group_w, metrics.height()),
                             Qt.AlignHCenter | Qt.AlignTop, label)
        painter.end()

    def _bar(self, painter: QPainter, metrics: QFontMetrics, plot: QRectF, slot: QRectF, bar: tuple,
             colour: QColor) -> None:
        """One bar in the horizontal ``slot`` (x and width), its whisker, and its value above both."""
        mean, low, high = bar
        x, width = slot.left(), slot.width()
        y_of = lambda v: plot.bottom() - plot.height() * max(0.0, min(1.0, v))  # noqa: E731
        painter.fillRect(QRectF(x, y_of(mean), width, plot.bottom() - y_of(mean)), colour)
        if low is not None:
            painter.setPen(QPen(QColor("#111827"), 1.5))
            mid = x + width / 2
            painter.drawLine(int(mid), int(y_of(low)), int(mid), int(y_of(high)))
            for v in (low, high):
                painter.drawLine(int(mid - 4), int(y_of(v)), int(mid + 4), int(y_of(v)))
        painter.setPen(QColor("#374151"))
        painter.drawText(QRectF(x - 2, y_of(max(mean, high or mean)) - metrics.height() - 1, width + 4,
                                metrics.height()), Qt.AlignHCenter | Qt.AlignBottom, f"{mean:.2f}")

    def _axis(self, painter: QPainter, metrics: QFontMetrics, plot: QRectF) -> None:
        for step in range(5):
            y = plot.bottom() - plot.height() * step / 4
            painter.setPen(QPen(QColor("#e5e7eb"), 1))
            painter.drawLine(int(plot.left()), int(y), int(plot.right()), int(y))
            painter.setPen(QColor("#6b7280"))
            painter.drawText(QRectF(self.PAD, y - metrics.height() / 2, plot.left() - self.PAD - 4, metrics.height()),
                             Qt.AlignRight | Qt.AlignVCenter, f"{step / 4:g}")

    def _legend(self, painter: QPainter, metrics: QFontMetrics, sources: list[str]) -> int:
        x, y = self.PAD, self.PAD
        for source in sources:
            painter.fillRect(QRectF(x, y + 3, 12, 10), SOURCE_COLOURS[source])
            painter.setPen(QColor("#111827"))
            text = f"{source} ({self.report['slices'][f'source:{source}']['queries']})"
            painter.drawText(x + 16, y + metrics.ascent(), text)
            x += 16 + metrics.horizontalAdvance(text) + 18
        painter.setPen(QColor("#6b7280"))
        painter.drawText(x, y + metrics.ascent(), f"{self.report['metric']}, whiskers: 95% bootstrap interval")
        return y + metrics.height() + 4


class ValidityView(TaskView, QWidget):
    """Retrievers and metric, a Check validity button and the task bar; then the verdict, and the
    chart beside the details."""

    task_finished = Signal(object)  # core's validity report
    task_failed = Signal(str, str)
    failure_title = "Validity check failed"

    def __init__(self, db: sqlite_utils.Database, project_path: str | Path, parent=None) -> None:
        super().__init__(parent)
        self.db, self.project_path = db, Path(project_path)
        self.init_tasks(cancellable=False)  # validate is one pass: it cannot stop half-way
        self.report: Optional[dict] = None
        self._checked_on: dict[str, int] = {}  # approved rows per source when the report was made
        self._build()  # the counts are read when the tab is first shown, not while the window opens

    def _build(self) -> None:
        self.retrievers = QLineEdit(DEFAULT_RETRIEVERS)
        self.retrievers.setToolTip("Comma-separated built-in retrievers: bm25, tfidf, dense, hybrid, fts5")
        self.metric_box = QLineEdit("recall@5")  # not "self.metric": that would hide QPaintDevice.metric()
        self.metric_box.setMaximumWidth(110)
        self.button = QPushButton("Check validity")
        self.button.clicked.connect(self.run)
        controls = QHBoxLayout()
        for widget in (plain_label("Retrievers"), self.retrievers, plain_label("Metric"), self.metric_box, self.button):
            controls.addWidget(widget)
        controls.addWidget(self.task_bar, 1)
        self.verdict = plain_label()
        self.verdict.setStyleSheet("font-weight: bold;")
        self.chart = ValidityChart()
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.setPlaceholderText("The rankings, Kendall's tau, the difficulty gaps and the stability of each "
                                        "source show here after the check.")
        body = QSplitter()
        body.addWidget(self.chart)
        body.addWidget(titled(plain_label("Details", bold=True), self.details))
        body.setChildrenCollapsible(False)
        body.setStretchFactor(0, 3)
        body.setStretchFactor(1, 2)
        body.setSizes([720, 480])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(controls)
        layout.addWidget(plain_label(INTRO, hint=True))
        layout.addWidget(self.verdict)
        layout.addWidget(body, 1)

    def reload(self) -> None:
        """Before a check, say what it would compare on this project (counts of approved rows);
        after one, say when rows approved or changed since make the report out of date."""
        counts = approved_by_source(self.db)
        if self.report is None:
            self.verdict.setText(before_check_text(counts))
        elif counts != self._checked_on and not self.busy():
            self.status.setText("The approved rows changed since this check: press Check validity again.")

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's naming)
        self.reload()  # rows approved in the Review tab since the last look
        super().showEvent(event)

    def run(self) -> Optional[workers.TaskWorker]:
        names = [n.strip() for n in self.retrievers.text().split(",") if n.strip()]
        if not names:
            return self.refuse("No retriever named.", f"List some, comma-separated, e.g. {DEFAULT_RETRIEVERS}.")
        return self.run_task(validity_task, retrievers=names, metric=self.metric_box.text().strip() or "recall@5",
                             message="Scoring every retriever on the gold set…", finished=self.show_report,
                             cancelled=lambda: None)

    def set_busy(self, busy: bool, message: str = "") -> None:
        self.button.setEnabled(not busy)
        super().set_busy(busy, message)

    def show_report(self, report: dict) -> tuple:
        self.report, self._checked_on = report, approved_by_source(self.db)
        code = report["verdict"]["code"]
        self.verdict.setText(report["verdict"]["text"])
        self.verdict.setStyleSheet(f"font-weight: bold; color: {VERDICT_COLOURS.get(code, '#374151')};")
        self.chart.set_report(report)
        self.details.setPlainText(details_text(report))
        self.status.setText(f"Checked {', '.join(report['retrievers'])} on {report['metric']}.")
        return (report,)


def approved_by_source(db: sqlite_utils.Database) -> dict[str, int]:
    return dict(Counter(q["source"] for q in list_queries(db, status="approved")))
