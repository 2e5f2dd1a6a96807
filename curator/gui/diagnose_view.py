"""The Diagnose tab: the 2x2 of context recall and faithfulness, its traces, and one trace read.

Clicking a cell lists its traces; a trace shows the query, its gold chunks, the retrieved
chunks (gold ones marked) and the response with each claim coloured by the judge's verdict.
Marking a trace right or wrong feeds the threshold calibration. All reads go through core.
"""

from __future__ import annotations

import html
from typing import Optional

import sqlite_utils
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QDoubleSpinBox, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QListWidget,
                               QListWidgetItem, QPushButton, QSplitter, QTextBrowser, QVBoxLayout, QWidget)

from curator.core.diagnosis.details import trace_detail
from curator.core.diagnosis.quadrants import FAITH_THRESHOLD, RECALL_THRESHOLD, diagnose, mark_trace
from curator.gui import workers
from curator.gui.model_picker import ModelPicker
from curator.gui.models import plain_tooltip
from curator.gui.widgets import project_file

# (row, column) of each quadrant: recall high on top, faithfulness high on the left.
CELLS = {"healthy": (1, 1), "generation_failure": (1, 2), "retrieval_failure": (2, 1), "both_broken": (2, 2)}
TITLES = {"healthy": "Healthy", "generation_failure": "Generation failure", "retrieval_failure": "Retrieval failure",
          "both_broken": "Both broken"}
SHORT = {"healthy": "ship it", "generation_failure": "prompt, lost in the middle, reduce k",
         "retrieval_failure": "faithful to bad context: fix the retriever", "both_broken": "fix retrieval first"}
COLOURS = {"healthy": "#d9f2d9", "generation_failure": "#fff1cc", "retrieval_failure": "#ffd9cc",
           "both_broken": "#f2c4c4"}
VERDICT_COLOURS = {"supported": "#c8ecc8", "not supported": "#f6c1c1"}
UNJUDGED = "#e4e4e4"


def judge_task(db: sqlite_utils.Database, model_path: Optional[str] = None, endpoint: Optional[str] = None, *,
               on_progress=None, cancel=None) -> dict:
    """Judge the claims not judged yet: the default judge, then the chosen LLM on the claims it is
    unsure of (as ``curator diagnose --judge-model``); runs in a worker."""
    from curator.core.diagnosis.faithfulness import judge_traces
    from curator.core.diagnosis.judge import lazy_default_judge
    from curator.core.generation.backends import open_backend

    # one claim at a time locally, as the CLI does (a 4-token reply is all prompt)
    backend = open_backend(model_path, endpoint, parallel=None if endpoint else 1) if model_path or endpoint else None
    return judge_traces(db, backend, on_progress=on_progress, judge=lazy_default_judge())


class DiagnoseView(QWidget):
    marked = Signal(str)  # a trace was marked right or wrong

    def __init__(self, db: sqlite_utils.Database, reviewer: str = "reviewer", parent=None) -> None:
        super().__init__(parent)
        self.db, self.reviewer = db, reviewer
        self.report: dict = {}
        self.current_cell: Optional[str] = None
        self.current_trace: Optional[str] = None
        self.recall_spin = self._spin(RECALL_THRESHOLD)
        self.faith_spin = self._spin(FAITH_THRESHOLD)
        self.summary = QLabel(wordWrap=True)
        # a word-wrapped label in a box layout gets one line's height unless told otherwise
        self.summary.setMinimumHeight(self.summary.fontMetrics().lineSpacing() * 3)
        self.cells = {name: self._cell_button(name) for name in CELLS}
        self.trace_list = QListWidget()
        self.trace_list.currentItemChanged.connect(lambda item, _old: item and self.show_trace(item.data(Qt.UserRole)))
        self.detail = QTextBrowser()
        self.right_button = QPushButton("Answer is right")
        self.wrong_button = QPushButton("Answer is wrong")
        self.right_button.clicked.connect(lambda: self._mark("right"))
        self.wrong_button.clicked.connect(lambda: self._mark("wrong"))
        self.judge_worker: Optional[workers.TaskWorker] = None
        self.judge_box = self._judge_box()
        self._layout()
        self.reload()

    def _judge_box(self) -> QGroupBox:
        """The judge: the default one, and an LLM from the models on this computer (or a file, an endpoint)."""
        box = QGroupBox("Judge")
        self.judge_picker = ModelPicker(self.db, "No LLM judge (the default judge only)", include_bundled=False,
                                        parent=box)
        self.judge_button = QPushButton("Judge unjudged claims")
        self.judge_button.setToolTip("The default judge gives every claim a verdict; an LLM judge chosen above "
                                     "re-checks only the claims it is unsure of.")
        self.judge_button.clicked.connect(self.judge)
        self.judge_status = QLabel(wordWrap=True)
        form = QFormLayout(box)
        self.judge_picker.add_rows(form, "LLM judge")
        form.addRow(self.judge_button, self.judge_status)
        self.judge_picker.refresh()
        return box

    def judge(self) -> Optional[workers.TaskWorker]:
        if self.judge_worker is not None:
            return None
        self.judge_button.setEnabled(False)
        self.judge_status.setText("Judging…")
        self.judge_worker = workers.launch(
            project_file(self.db), judge_task, self.judge_picker.chosen_path(), self.judge_picker.chosen_endpoint(),
            progress=lambda done, _t, _m: self.judge_status.setText(f"Judging… {done} claims"),
            finished=self._judged, failed=lambda what, todo: self.judge_status.setText(f"Failed: {what} {todo}"),
            cancelled=lambda: None, done=self._judge_done)
        return self.judge_worker

    def _judged(self, summary: dict) -> None:
        self.judge_status.setText(f"{summary['claims_judged']} claims judged ({summary['judge']}).")
        self.reload()
        self.judge_picker.refresh()

    def _judge_done(self) -> None:
        self.judge_worker = None
        self.judge_button.setEnabled(True)

    def _spin(self, value: float) -> QDoubleSpinBox:
        spin = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2, value=value)
        spin.valueChanged.connect(lambda _v: self.reload())
        return spin

    def _cell_button(self, name: str) -> QPushButton:
        button = QPushButton(checkable=True, minimumHeight=70)
        button.setStyleSheet(f"QPushButton {{ background: {COLOURS[name]}; text-align: center; }}"
                             "QPushButton:checked { border: 3px solid #333; }")
        button.clicked.connect(lambda _c, n=name: self.show_cell(n))
        return button

    def _layout(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Recall low below"))
        bar.addWidget(self.recall_spin)
        bar.addWidget(QLabel("Faithfulness low below"))
        bar.addWidget(self.faith_spin)
        bar.addStretch(1)
        refresh = QPushButton("Refresh")  # traces imported or judged from the command line meanwhile
        refresh.clicked.connect(self.reload)
        bar.addWidget(refresh)
        grid = QGridLayout()
        grid.addWidget(QLabel("<b>faithfulness high</b>", alignment=Qt.AlignCenter), 0, 1)
        grid.addWidget(QLabel("<b>faithfulness low</b>", alignment=Qt.AlignCenter), 0, 2)
        grid.addWidget(QLabel("<b>recall high</b>"), 1, 0)
        grid.addWidget(QLabel("<b>recall low</b>"), 2, 0)
        for name, (row, col) in CELLS.items():
            grid.addWidget(self.cells[name], row, col)
        marks = QHBoxLayout()
        marks.addWidget(self.right_button)
        marks.addWidget(self.wrong_button)
        marks.addStretch(1)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.detail)
        right_layout.addLayout(marks)
        split = QSplitter()
        split.addWidget(self.trace_list)
        split.addWidget(right)
        split.setSizes([320, 680])
        layout = QVBoxLayout(self)
        layout.addWidget(self.judge_box)
        layout.addLayout(bar)
        layout.addLayout(grid)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)

    def reload(self) -> None:
        self.report = diagnose(self.db, self.recall_spin.value(), self.faith_spin.value())
        counts = self.report["counts"]
        for name, button in self.cells.items():
            button.setText(f"{TITLES[name]}: {counts.get(name, 0)}\n{SHORT[name]}")
        self.summary.setText(self._summary_text())
        if self.current_cell:
            self.show_cell(self.current_cell)

    def _summary_text(self) -> str:
        r = self.report
        parts = [f"{r['total']} traces, {r['counts'].get('unscored', 0)} unscored."]
        if r["biggest_failure"]:
            parts.append("Biggest failure slice: " + r["biggest_failure"]["text"] + ".")
        if r["calibration"]:
            parts.append(r["calibration"]["text"].capitalize() + ".")
        if r.get("judge") and r["judge"]["claims"]:
            parts.append("Judge: " + r["judge"]["text"] + ".")
        return " ".join(parts)

    def show_cell(self, name: str) -> None:
        self.current_cell = name
        for other, button in self.cells.items():
            button.setChecked(other == name)
        self.trace_list.blockSignals(True)
        self.trace_list.clear()
        for row in self.report["traces"]:
            if row["quadrant"] == name:
                mark = {"right": " ✓", "wrong": " ✗"}.get(row["human_label"] or "", "")
                item = QListWidgetItem(f"{row['question'][:70]}  (R {row['context_recall']:.2f}, "
                                       f"F {row['faithfulness']:.2f}){mark}")
                item.setData(Qt.UserRole, row["id"])
                self.trace_list.addItem(item)
        self.trace_list.blockSignals(False)

    def listed_trace_ids(self) -> list[str]:
        return [self.trace_list.item(i).data(Qt.UserRole) for i in range(self.trace_list.count())]

    def show_trace(self, trace_id: str) -> None:
        self.current_trace = trace_id
        self.detail.setHtml(trace_html(trace_detail(self.db, trace_id)))

    def _mark(self, label: str) -> None:
        if self.current_trace:
            mark_trace(self.db, self.current_trace, label, self.reviewer)
            self.marked.emit(self.current_trace)
            trace = self.current_trace
            self.reload()
            self.show_trace(trace)


def _score(value: Optional[float]) -> str:
    return "–" if value is None else f"{value:.2f}"


def claim_notes(claim: dict) -> list[str]:
    """The claim's verdict, which judge made it and how often that judge agreed with human labels
    on claims like it, the default judge's probability, its evidence sentence and the mismatches it
    found, as plain lines in the words of `curator trace`."""
    whose = "p" if claim.get("judged_by") in (None, "default judge") else "default judge's p"
    p = "" if claim.get("probability") is None else f" ({whose}={claim['probability']:.2f})"
    lines = [f"{claim['verdict'] or 'unjudged'}{p}"]
    if claim["verdict"]:
        lines.append(verdict_origin_line(claim))
    if claim.get("evidence"):
        lines.append(f"evidence [{claim['context_index']}]: {claim['evidence']}")
    return lines + [f"why: {reason}" for reason in claim.get("reasons") or []]


def verdict_origin_line(claim: dict) -> str:
    """Who judged the claim and that judge's measured agreement, e.g. "by the default judge; right 97%
    of the time on labelled claims like this"."""
    by = claim.get("judged_by") or "judge"
    if by == "reviewer":
        return f"by reviewer {claim.get('reviewer') or ''}".rstrip()
    if by == "LLM judge":
        p = claim.get("llm_probability")
        how = f"P(supported) {p:.2f}" if p is not None else "sampled yes/no, no probability"
        line = f"by the LLM judge ({claim.get('judge', '').split(':', 1)[-1]}; {how})"
    else:
        line = "by the default judge"
    agreement = claim.get("agreement")
    line += (f"; it agreed with human labels {agreement:.0%} of the time on labelled claims like this"
             if agreement is not None else "; its agreement on this model is not measured")
    if by == "default judge" and claim.get("unsure"):
        line += "; unsure: outside the region where it is reliable (an LLM judge would check it)"
    return line


def _claim_span(claim: dict) -> str:
    """A claim coloured by its verdict; hovering it shows its notes. The title is double-quoted:
    Qt decodes entities only there, and plain_tooltip keeps an evidence sentence's tags as typed."""
    e = html.escape
    colour = VERDICT_COLOURS.get(claim["verdict"] or "", UNJUDGED)
    tip = plain_tooltip("\n".join(claim_notes(claim)))
    return f'<span style="background:{colour}" title="{e(tip)}">{e(claim["text"])}</span> '


def _evidence_section(title: str, claims: list[dict]) -> list[str]:
    """Each judged claim, its notes in view (a tooltip alone is easy to miss): who judged it and
    how far that judge is trusted, and what the default judge measured; nothing before judging."""
    e = html.escape
    shown = [c for c in claims if c["verdict"] or c.get("probability") is not None]
    if not shown:
        return []
    return [f"<h4>{e(title)}</h4>"] + [
        "<p>" + _claim_span(c) + "<br><small>" + "<br>".join(e(line) for line in claim_notes(c)) + "</small></p>"
        for c in shown]


def trace_html(d: dict) -> str:
    """The trace as HTML: query, scores, coloured claims, gold chunks, retrieved chunks (gold marked)."""
    e = html.escape
    out = [f"<h3>{e(d['question'])}</h3>",
           f"<p>context recall <b>{_score(d['context_recall'])}</b> ({e(d['recall_basis'])}) · faithfulness "
           f"<b>{_score(d['faithfulness'])}</b> · matched to query {e(d['query_id'] or '')} by {e(d['matched_by'])}</p>"]
    out.append("<h4>Response</h4><p>")
    out += [_claim_span(c) for c in d["claims"]]
    if not d["claims"]:
        out.append(e(d["response"]))
    out.append("</p>")
    out += _evidence_section("Each claim, who judged it, its evidence and what differs", d["claims"])
    if d.get("statements"):
        out.append("<h4>Reference answer (recall judged from its statements)</h4><p>")
        out += [_claim_span(c) for c in d["statements"]]
        out.append("</p>")
        out += _evidence_section("Each statement, who judged it, its evidence and what differs", d["statements"])
    out.append("<p><small>green: supported, red: not supported, grey: not judged yet</small></p>")
    out.append("<h4>Gold chunks</h4>")
    out += [f"<p><code>{e(g['chunk_id'])}</code> {e(g['text'][:300])}</p>" for g in d["gold"]] or ["<p>(none)</p>"]
    out.append("<h4>Retrieved</h4>")
    for r in d["retrieved"]:
        badge = "<b style='color:#1a7f1a'>★ gold</b> " if r["gold"] else ""
        out.append(f"<p>{badge}[{r['rank']}] <code>{e(str(r['chunk_id']))}</code> ({e(r['matched'])}) "
                   f"{e(r['text'][:300])}</p>")
    return "".join(out)
