"""The validity panel of the Export / Evaluate tab: does the gold set rank retrievers like real queries?

The verdict sits above a chart of every retriever side by side per source (synthetic, log), each
bar with its 95% bootstrap interval; tau, the difficulty gaps and the stability line follow as
text. The report is computed by core's validity.validate in a TaskWorker (own SQLite connection).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QProgressBar, QPushButton, QVBoxLayout, QWidget

from curator.gui import workers
from curator.gui.chart import Chart
from curator.gui.generate_view import plain
from curator.gui.task_view import show_error

SOURCE_COLOURS = {"synthetic": QColor("#2563eb"), "log": QColor("#f59e0b"), "manual": QColor("#6b7280")}
VERDICT_COLOURS = {"agrees": "#15803d", "uncertain": "#b45309", "disagrees": "#b91c1c"}
DEFAULT_RETRIEVERS = "bm25,tfidf,dense,hybrid"


def validity_task(db, *, retrievers: list[str], metric: str, on_progress=None, cancel=None) -> dict:
    from curator.core.evaluation.validity import validate

    if on_progress is not None:
        on_progress(0, 1, "scoring the retrievers")
    if cancel is not None:
        cancel.check()
    result = validate(db, retrievers, {}, metric)
    if on_progress is not None:
        on_progress(1, 1, "done")
    return result


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
    lines = []
    a = report.get("agreement")
    if a:
        low, high = a["ci95"]
        interval = "n/a" if low is None else f"[{low:+.2f}, {high:+.2f}]"
        lines.append(f"Synthetic: {' > '.join(a['synthetic_ranking'])}   Real: {' > '.join(a['real_ranking'])}   "
                     f"tau {'undefined' if a['tau'] is None else format(a['tau'], '+.2f')} {interval}")
    lines += [f"{g['text']} (95% [{g['ci95'][0]:+.2f}, {g['ci95'][1]:+.2f}])" for g in report["difficulty_gap"]
              if g["ci95"][0] is not None]
    lines += [f"Stability ({name.replace('source:', '')}): {s['text']}" for name, s in report["stability"].items()]
    return "\n".join(lines)


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
        top = self._legend(painter, metrics, sources) + self.PAD
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


class ValidityPanel(QWidget):
    """Retrievers and metric, a Check validity button, then the verdict, the chart and the details."""

    finished = Signal(object)
    failed = Signal(str, str)

    def __init__(self, project_path: str | Path, parent=None) -> None:
        super().__init__(parent)
        self.project_path = Path(project_path)
        self.worker: Optional[workers.TaskWorker] = None
        self.report: Optional[dict] = None
        self.retrievers = QLineEdit(DEFAULT_RETRIEVERS)
        self.retrievers.setToolTip("Comma-separated built-in retrievers: bm25, tfidf, dense, hybrid, fts5")
        self.metric_box = QLineEdit("recall@5")  # not "self.metric": that would hide QPaintDevice.metric()
        self.metric_box.setMaximumWidth(110)
        self.button = QPushButton("Check validity")
        self.button.clicked.connect(self.run)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(160)
        self.progress.hide()
        self.verdict = plain("Does the gold set rank your retrievers like your real (log) queries? "
                             "Press Check validity.")
        self.verdict.setStyleSheet("font-weight: bold;")
        self.chart = ValidityChart()
        self.details = plain(hint=True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        controls = QHBoxLayout()
        layout.addLayout(controls)
        for widget in (plain("Retrievers"), self.retrievers, plain("Metric"), self.metric_box, self.button, self.progress):
            controls.addWidget(widget)
        layout.addWidget(self.verdict)
        layout.addWidget(self.chart, 1)
        layout.addWidget(self.details)

    def run(self) -> Optional[workers.TaskWorker]:
        if self.worker is not None:
            return None
        names = [n.strip() for n in self.retrievers.text().split(",") if n.strip()]
        self.button.setEnabled(False)
        workers.show_busy(self.progress, self.verdict, True, "Scoring every retriever on the gold set…")
        self.worker = workers.launch(
            self.project_path, validity_task, retrievers=names, metric=self.metric_box.text().strip() or "recall@5",
            progress=lambda done, total, _: workers.show_progress(self.progress, done, total),
            finished=self.show_report, failed=self._failed, cancelled=lambda: None, done=self._done)
        return self.worker

    def show_report(self, report: dict) -> None:
        self.report = report
        code = report["verdict"]["code"]
        self.verdict.setText(report["verdict"]["text"])
        self.verdict.setStyleSheet(f"font-weight: bold; color: {VERDICT_COLOURS.get(code, '#374151')};")
        self.chart.set_report(report)
        self.details.setText(details_text(report))
        self.finished.emit(report)

    def _failed(self, what: str, todo: str) -> None:
        self.verdict.setText(f"Failed: {what}")
        self._dialog = show_error(self, what, todo)
        self.failed.emit(what, todo)

    def _done(self) -> None:
        self.worker = None
        self.button.setEnabled(True)
        workers.show_busy(self.progress, self.verdict, False)
