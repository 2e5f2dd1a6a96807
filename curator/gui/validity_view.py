"""The Validity tab: does the gold set rank retrievers like the project's real queries?

The product's most important answer gets a tab of its own. The verdict sits above a chart of
every retriever side by side per source (synthetic, log), each bar with its 95% bootstrap
interval; beside the chart, in its own column (never over it): the retriever pairs (the verdict
rests on the winner and on the pairs the real rows clearly separate), the realism of each synthetic
type against the real rows, and the rankings with tau, the difficulty gaps and the stability lines.
The report is computed by core's validity.validate in a TaskWorker (own SQLite connection) through
``TaskView``, like every other task.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import sqlite_utils
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import (QHBoxLayout, QLineEdit, QPlainTextEdit, QPushButton, QSplitter, QTableView,
                               QVBoxLayout, QWidget)

from curator.core.queries.realism import MIN_REAL_ROWS
from curator.core.store.stats import approved_by_source, gold_set_version
from curator.gui import workers
from curator.gui.chart import Chart
from curator.gui.models import RecordTableModel, plain_tooltip
from curator.gui.task_view import TaskView
from curator.gui.widgets import ROW_HEIGHT, plain_label, record_table, titled

SOURCE_COLOURS = {"synthetic": QColor("#2563eb"), "log": QColor("#f59e0b"), "manual": QColor("#6b7280")}
VERDICT_COLOURS = {"agrees": "#15803d", "uncertain": "#b45309", "disagrees": "#b91c1c"}
DEFAULT_RETRIEVERS = "bm25,tfidf,dense,hybrid"
DISAGREE_COLOUR = QColor("#b91c1c")
# Short titles: record_table keeps every column at least as wide as the widest title.
PAIR_COLUMNS = (("pair", "Pair"), ("real", "Real gap [95%]"), ("synthetic", "Synthetic gap"), ("agrees", "Agree?"))
REALISM_COLUMNS = (("set", "Rows"), ("chunk_overlap", "Overlap"), ("words", "Words"),
                   ("stopword_share", "Stopwords"), ("question", "Questions"))
PAIRS_HINT = "Real leader first. Bold: clearly apart on the real rows (95%); red: the synthetic rows disagree."
REALISM_HINT = ("Medians. Overlap: share of the query's words found in its gold chunk; Words: length; Stopwords: share "
                "of function words; Questions: share phrased as a question.")


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


def pair_rows(report: dict) -> list[dict]:
    """The report's pairs as table rows, each written from the real leader's side as core's sentence
    is (so every real gap reads as positive); clear pairs first, then by the size of the real gap."""
    rows = [_pair_row(p) for p in report.get("pairs") or []]
    return sorted(rows, key=lambda r: (not r["is_clear"], -r["size"]))


def _pair_row(pair: dict) -> dict:
    real, synthetic = pair["real"], pair["synthetic"]
    flip = (real["gap"] or 0) < 0  # b leads on the real rows: say "b - a" and flip every sign
    ahead, behind = (pair["b"], pair["a"]) if flip else (pair["a"], pair["b"])
    sign = -1 if flip else 1
    low, high = real["ci95"]
    interval = "[n/a]" if low is None else (f"[{-high:+.2f}, {-low:+.2f}]" if flip else f"[{low:+.2f}, {high:+.2f}]")
    agrees = {True: "agree", False: "disagree", None: "real tie"}[pair["agrees"]]
    return {"pair": f"{ahead} - {behind}", "real": f"{_signed(real['gap'], sign)} {interval}"
            + (" clear" if real["clear"] else ""), "synthetic": _signed(synthetic["gap"], sign), "agrees": agrees,
            "text": pair["text"], "is_clear": bool(real["clear"]), "size": abs(real["gap"] or 0)}


def _signed(gap: Optional[float], sign: int) -> str:
    return "n/a" if gap is None else f"{sign * gap:+.2f}"


def realism_rows(report: dict) -> list[dict]:
    """The realism section as table rows: the reference first, then each synthetic type (medians)."""
    section = report.get("realism")
    if not section:
        return []
    reference = section["reference"]
    label = "real" if section["reference_basis"] == "project" else "built-in"
    rows = [_realism_row(f"{label} ({reference['rows']})", reference)]
    rows += [_realism_row(f"{name} ({figures['rows']})", figures) for name, figures in section["synthetic"].items()]
    return rows


def _realism_row(name: str, figures: dict) -> dict:
    def median(key: str, percent: bool) -> str:
        value = (figures.get(key) or {}).get("median")
        return "n/a" if value is None else (f"{value:.0%}" if percent else f"{value:g}")

    return {"set": name, "chunk_overlap": median("chunk_overlap", True), "words": median("words", False),
            "stopword_share": median("stopword_share", True),
            "question": f"{(figures.get('forms') or {}).get('question', 0):.0%}"}


def realism_text(report: dict) -> str:
    """What the synthetic rows are compared with, then core's sentence for each synthetic type."""
    section = report.get("realism")
    if not section:
        return ""
    reference = section["reference"]["name"]
    lines = [f"Compared with {reference}." if section["reference_basis"] == "project" else
             f"Compared with the {reference} (this project has fewer than {MIN_REAL_ROWS} approved real rows "
             "with gold)."]
    lines += [f"{figures['text']}." for figures in section["synthetic"].values()]
    if not section["synthetic"]:
        return lines[0] + " No approved synthetic rows to measure."
    return "\n".join(lines + ["", REALISM_HINT])


class PairTableModel(RecordTableModel):
    """The pairs table: a clear pair's row in bold, a clear pair whose synthetic gap has the other
    sign in red (those rows set the verdict), and core's sentence as every cell's tooltip."""

    def __init__(self, parent=None) -> None:
        super().__init__(PAIR_COLUMNS, parent=parent)

    def data(self, index, role: int = Qt.DisplayRole):
        if index.isValid() and 0 <= index.row() < self.rowCount():
            row = self._rows[index.row()]
            if role == Qt.FontRole and row["is_clear"]:
                font = QFont()
                font.setBold(True)
                return font
            if role == Qt.ForegroundRole and row["is_clear"] and row["agrees"] == "disagree":
                return DISAGREE_COLOUR
            if role == Qt.ToolTipRole:
                return plain_tooltip(row["text"])
        return super().data(index, role)


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
        self._checked_on: tuple = ()  # stats.gold_set_version when the report was made
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
        body.addWidget(self._side_column())
        body.setChildrenCollapsible(False)
        body.setStretchFactor(0, 11)  # the chart keeps over half the width; the pairs table its four columns
        body.setStretchFactor(1, 9)
        body.setSizes([660, 540])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addLayout(controls)
        layout.addWidget(plain_label(INTRO, hint=True))
        layout.addWidget(self.verdict)
        layout.addWidget(body, 1)

    def _side_column(self) -> QSplitter:
        """Pairs above realism above the details, in one column beside the chart (never over it)."""
        self.pairs_model = PairTableModel()
        self.pairs_table = record_table(self.pairs_model, stretch=(0,))
        self.realism_model = RecordTableModel(REALISM_COLUMNS)
        self.realism_table = record_table(self.realism_model, stretch=(0,))
        self.realism_text = QPlainTextEdit()
        self.realism_text.setReadOnly(True)
        self.realism_text.setPlaceholderText("How each synthetic type reads against the real rows shows here.")
        realism = titled(self.realism_table, self.realism_text)
        column = QSplitter(Qt.Vertical)
        # One line of explanation per pane at most: at 1366x768 six pair rows need the height
        column.addWidget(titled(_header("Retriever pairs", PAIRS_HINT), self.pairs_table))
        column.addWidget(titled(plain_label("Realism: each synthetic type against the real rows", bold=True), realism))
        column.addWidget(titled(plain_label("Details", bold=True), self.details))
        column.setChildrenCollapsible(False)
        column.setSizes([230, 190, 140])
        return column

    def reload(self) -> None:
        """Before a check, say what it would compare on this project (counts of approved rows);
        after one, say when rows approved or changed since make the report out of date."""
        if self.report is None:
            self.verdict.setText(before_check_text(approved_by_source(self.db)))
        elif gold_set_version(self.db) != self._checked_on and not self.busy():
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
        self.report, self._checked_on = report, gold_set_version(self.db)
        code = report["verdict"]["code"]
        self.verdict.setText(report["verdict"]["text"])
        self.verdict.setStyleSheet(f"font-weight: bold; color: {VERDICT_COLOURS.get(code, '#374151')};")
        self.chart.set_report(report)
        self.details.setPlainText(details_text(report))
        self.pairs_model.set_rows(pair_rows(report))
        self.realism_model.set_rows(realism_rows(report))
        self.realism_text.setPlainText(realism_text(report))
        self._fit_tables()
        self.status.setText(f"Checked {', '.join(report['retrievers'])} on {report['metric']}.")
        return (report,)

    def _fit_tables(self) -> None:
        """The pairs table keeps room for up to six rows (four retrievers) in sight; the realism
        table takes no more than its rows, leaving the rest of its pane to the sentences."""
        pairs = min(6, self.pairs_model.rowCount())
        self.pairs_table.setMinimumHeight(rows_height(self.pairs_table, pairs) if pairs else 0)
        self.realism_table.setMaximumHeight(rows_height(self.realism_table, self.realism_model.rowCount()))


def rows_height(table: QTableView, rows: int) -> int:
    """The height that shows a table's header and ``rows`` rows (at least one) without scrolling."""
    return table.horizontalHeader().sizeHint().height() + max(1, rows) * ROW_HEIGHT + 2 * table.frameWidth()


def _header(title: str, hint: str) -> QWidget:
    """A pane's bold title over its explanation."""
    return titled(plain_label(title, bold=True), plain_label(hint, hint=True))

