"""The Diagnose tab on a real project: the 2x2 counts, a cell's traces, a trace's coloured claims."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtGui import Qt as GuiQt

from curator.core.diagnosis.faithfulness import correct_verdict, judge_traces
from curator.core.diagnosis.traces import import_traces
from curator.core.generation.backends import FakeBackend
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from curator.gui.diagnose_view import VERDICT_COLOURS, DiagnoseView

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "screenshots" / "diagnose.png"


def _project(db, tmp_path):
    """Six traces: gold hits of 2 and supported claims of 2 chosen per quadrant."""
    chunks = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id LIMIT 6")]
    texts = dict(db.execute("SELECT id, text FROM chunks"))
    plan = [(2, 2), (2, 2), (0, 2), (0, 2), (0, 2), (2, 0), (0, 0)]
    records = []
    for i, (hits, supported) in enumerate(plan):
        with db.conn:
            qid = add_query(db, f"How do I set up tokens, variant {i}?", "manual", gold_chunk_ids=chunks[:2])
        decide(db, qid, "approve", "ana")
        retrieved = chunks[:hits] + chunks[4:6]
        first = " ".join(texts[retrieved[0]].split()[:10]).rstrip(".")
        claims = [f"{first}." if j < supported else f"The moon orbits variant {i} of claim {j}." for j in range(2)]
        records.append({"query_id": qid, "user_input": f"How do I set up tokens, variant {i}?", "retrieved_context_ids": retrieved,
                        "response": " ".join(claims)})
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    import_traces(db, path)
    judge_traces(db, FakeBackend(lambda m: "not supported" if "The moon" in m[-1]["content"] else "supported"))


def test_grid_counts_cell_click_and_trace_detail(qtbot, sample_db, tmp_path):
    _project(sample_db, tmp_path)
    view = DiagnoseView(sample_db, reviewer="ana")
    qtbot.addWidget(view)
    view.resize(1100, 760)
    view.show()
    assert view.cells["healthy"].text().startswith("Healthy: 2")
    assert view.cells["retrieval_failure"].text().startswith("Retrieval failure: 3")
    assert view.cells["generation_failure"].text().startswith("Generation failure: 1")
    assert view.cells["both_broken"].text().startswith("Both broken: 1")
    assert "3 of 5 wrong answers are retrieval failures" in view.summary.text()
    qtbot.mouseClick(view.cells["generation_failure"], Qt.LeftButton)
    assert len(view.listed_trace_ids()) == 1 and view.cells["generation_failure"].isChecked()
    qtbot.mouseClick(view.cells["healthy"], Qt.LeftButton)
    assert len(view.listed_trace_ids()) == 2
    view.trace_list.setCurrentRow(0)
    page = view.detail.toHtml()
    assert "★ gold" in page and "Gold chunks" in page
    assert VERDICT_COLOURS["supported"] in page.lower()
    shown = view.detail.toPlainText()  # an LLM judge gives a verdict only: who made it, how far it is trusted
    assert "by the LLM judge (fake; sampled yes/no, no probability); its agreement on this model is not measured" in shown
    assert "evidence [" not in shown
    qtbot.mouseClick(view.cells["both_broken"], Qt.LeftButton)
    view.trace_list.setCurrentRow(0)
    page = view.detail.toHtml()
    assert VERDICT_COLOURS["not supported"] in page.lower() and "★ gold" not in page
    qtbot.mouseClick(view.cells["generation_failure"], Qt.LeftButton)
    view.trace_list.setCurrentRow(0)
    marked = view.current_trace
    qtbot.mouseClick(view.wrong_button, Qt.LeftButton)
    assert sample_db.execute("SELECT human_label, labelled_by FROM traces WHERE id = ?", [marked]).fetchone() == (
        "wrong", "ana")
    assert "Calibrated" not in view.summary.text()  # marks of one kind separate nothing
    qtbot.mouseClick(view.cells["healthy"], Qt.LeftButton)
    view.trace_list.setCurrentRow(0)
    qtbot.mouseClick(view.right_button, Qt.LeftButton)
    assert "Calibrated on 2 marked traces" in view.summary.text()
    view.recall_spin.setValue(1.0)  # every trace with a gold miss now has low recall
    assert view.cells["healthy"].text().startswith("Healthy: 2")
    view.faith_spin.setValue(1.0)
    assert view.cells["generation_failure"].text().startswith("Generation failure: 1")
    view.recall_spin.setValue(0.5)
    view.faith_spin.setValue(0.7)
    qtbot.mouseClick(view.cells["generation_failure"], Qt.LeftButton)
    view.trace_list.setCurrentRow(0)
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    image = view.grab()
    assert image.save(str(SCREENSHOT if os.environ.get("CURATOR_SCREENSHOTS") else tmp_path / "diagnose.png"))


def test_a_trace_judged_from_its_reference_answer_shows_the_statements(qtbot, sample_db, tmp_path):
    path = tmp_path / "texts.jsonl"  # texts only, no gold: recall comes from the reference's statements
    path.write_text(json.dumps({"user_input": "Who rotates the keys?", "response": "Keys are rotated by admins.",
                                "retrieved_contexts": ["Keys are rotated weekly by the admins."],
                                "reference": "Keys are rotated weekly. The moon holds the master key."}) + "\n")
    import_traces(sample_db, path)
    judge_traces(sample_db, FakeBackend(lambda m: "not supported" if "The moon" in m[-1]["content"] else "supported"))
    view = DiagnoseView(sample_db, reviewer="ana")
    qtbot.addWidget(view)
    view.show()
    assert view.cells["healthy"].text().startswith("Healthy: 1")  # recall 0.5 (1 of 2 statements), faithful
    qtbot.mouseClick(view.cells["healthy"], Qt.LeftButton)
    view.trace_list.setCurrentRow(0)
    page = view.detail.toHtml()
    assert "Reference answer" in page and "reference statements (judge)" in page
    assert VERDICT_COLOURS["not supported"] in page.lower() and "The moon holds the master key." in page


def _tooltip_of(browser, text: str) -> str:
    """The tooltip Qt keeps for the fragment of the detail pane that reads ``text``."""
    block = browser.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            if it.fragment().text() == text:
                return it.fragment().charFormat().toolTip()
            it += 1
        block = block.next()
    raise AssertionError(f"no fragment {text!r}")


def _as_shown(tip: str) -> str:
    """What a user reads: Qt renders a tooltip as rich text when it looks like markup."""
    doc = QTextDocument()
    doc.setHtml(tip) if GuiQt.mightBeRichText(tip) else doc.setPlainText(tip)
    return doc.toPlainText()


def test_each_claim_shows_the_default_judges_probability_evidence_and_mismatches(qtbot, sample_db, tmp_path):
    """The real default judge (MiniLM and the committed weights); an evidence sentence with markup
    in it shows its tags as typed, in the pane and in the claim's tooltip."""
    from curator.core.diagnosis.judge import ClaimJudge, default_embed

    evidence = "Keys are rotated every 30 days by the <b>admins</b>."
    path = tmp_path / "texts.jsonl"
    path.write_text(json.dumps({"user_input": "How often are keys rotated?",
                                "response": "Keys are rotated every 30 days by the admins. "
                                            "Keys are rotated every 45 days by the admins.",
                                "retrieved_contexts": [f"Backups run nightly. {evidence}"]}) + "\n")
    import_traces(sample_db, path)
    judge_traces(sample_db, judge=ClaimJudge(default_embed()))
    view = DiagnoseView(sample_db, reviewer="ana")
    qtbot.addWidget(view)
    view.show()
    trace_id = sample_db.execute("SELECT id FROM traces").fetchone()[0]
    view.show_trace(trace_id)
    text = view.detail.toPlainText()
    assert "Each claim, who judged it, its evidence and what differs" in text
    assert re.search(r"by the default judge; it agreed with human labels \d+% of the time on labelled claims like this", text)
    assert text.count(f"evidence [1]: {evidence}") == 2  # context 1 (its rank), tags as typed
    assert "why: a number or version the evidence does not give" in text
    assert re.search(r"supported \(p=0\.\d\d\)", text) and re.search(r"not supported \(p=0\.\d\d\)", text)
    shown = _as_shown(_tooltip_of(view.detail, "Keys are rotated every 45 days by the admins."))
    assert shown.startswith("not supported (p=0.") and f"evidence [1]: {evidence}" in shown
    assert shown.endswith("why: a number or version the evidence does not give")
    claim_id = sample_db.execute("SELECT id FROM claims WHERE text LIKE '%45 days%'").fetchone()[0]
    correct_verdict(sample_db, claim_id, "supported", "ana")  # the probability that disagrees says whose verdict won
    view.show_trace(trace_id)
    assert re.search(r"supported \(default judge's p=0\.\d\d\)\s+by reviewer ana", view.detail.toPlainText())
