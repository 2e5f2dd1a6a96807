"""The Review tab's smaller pieces: the row's header and why-queued lines, the gold chunks shown in
their surrounding text, and the note dialog. Each takes what core read and renders it; none
reads the project itself."""

from __future__ import annotations

from typing import Optional

from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QPlainTextEdit, QTextEdit, QVBoxLayout

from curator.core.generation import quality
from curator.gui.highlight import content_words, highlight

# The empty queue's way on, by core's ``screen.missing_stage``: (what is missing, button caption).
NEXT_STEP = {
    "corpus": ("Nothing to review yet: the project has no documents.", "Add documents in the Corpus tab…"),
    "generate": ("Nothing to review yet: the project has no queries.", "Generate queries from the corpus…"),
    "clusters": ("Nothing left to review in the queue.", "Cluster the queries and build a review queue…"),
}

NO_GOLD = "(no gold chunk — press 1-5 to take a suggestion, R to grade a pooled result relevant, G to search, or U if the corpus cannot answer this)"


def why_queued(q: dict, entry: Optional[dict]) -> str:
    """One line on why the row is in the queue: how often it was asked, the negative feedback
    signals, its cluster and the draw that picked it."""
    parts = []
    if q["source"] == "log":
        parts.append(f"asked {q['frequency']}×")
        signals = sorted(set((q.get("metadata") or {}).get("signals") or []))
        if q["negative_count"]:
            parts.append(f"negative feedback {q['negative_count']}×" + (f" ({', '.join(signals)})" if signals else ""))
    if q.get("cluster_label"):
        parts.append(f"cluster “{q['cluster_label']}”")
    if entry is not None:
        reason = entry["reason"]
        boosted = "; boosted for negative feedback" if reason.get("negative") else ""
        parts.append(f"drawn from stratum {entry['stratum']} ({reason.get('allocation', '?')}, "
                     f"quota {reason.get('quota', '?')}){boosted}")
    return ("Why in the queue: " + " · ".join(parts)) if parts else ""


def quality_note(q: dict) -> str:
    """' · quality 0.62 (BM25 finds the gold chunk at rank 1; ...)' for generated rows, else ''."""
    if q.get("quality") is None:
        return ""
    return f" · quality {q['quality']:.2f} ({quality.explain(q.get('quality_signals'))})"


def header(q: dict) -> str:
    """STATUS · type · source · cluster label · by whom · note, each word once (a log query's type
    and source are both "log")."""
    parts = [q["status"].upper(), *dict.fromkeys([q["query_type"], q["source"]])]
    if q.get("cluster") is not None:
        label = q.get("cluster_label")
        parts.append(f"cluster {q['cluster']}: {label}" if label else f"cluster {q['cluster']}")
    if q.get("reviewer"):
        parts.append(f"by {q['reviewer']}")
    if q.get("note"):
        parts.append(f"note: {q['note']}")
    return " · ".join(parts) + quality_note(q)


def gold_missing_text(exc) -> str:
    """What to do when core refused an approval for want of usable gold (a GoldMissing)."""
    what = f"its gold chunk(s) {', '.join(exc.unusable)} are retired" if exc.unusable else "it has no gold chunk"
    return (f"Not approved: {what}. Press 1-5 to take a suggestion as gold, G to search for one, "
            "or U to label it unanswerable.")


def _formats() -> tuple[QTextCharFormat, QTextCharFormat, QTextCharFormat]:
    dim, head, normal = QTextCharFormat(), QTextCharFormat(), QTextCharFormat()
    dim.setForeground(QColor("#6b7280"))
    head.setFontWeight(QFont.Bold)
    head.setForeground(QColor("#1d4ed8"))
    return dim, head, normal


def render_gold(edit: QTextEdit, gold: list[dict], reference: str) -> int:
    """Core's ``gold_in_context`` as plain text with character formats (never HTML, so corpus
    text cannot inject markup), the reference answer's words highlighted in each gold chunk.
    Returns how many words were highlighted."""
    edit.setPlainText("")
    if not gold:
        edit.setPlainText(NO_GOLD)
        return 0
    dim, head, normal = _formats()
    cursor = QTextCursor(edit.document())
    spans = []
    for chunk in gold:
        cursor.insertText(f"{chunk['doc_path']}  ›  {chunk['title'] or ''}   [grade {chunk['grade']}]\n", head)
        if chunk["before"]:
            cursor.insertText("… " + chunk["before"] + "\n", dim)
        start = cursor.position()
        cursor.insertText(chunk["text"] + "\n", normal)
        spans.append((start, cursor.position()))
        if chunk["after"]:
            cursor.insertText(chunk["after"] + " …\n", dim)
        cursor.insertText("\n", normal)
    words = content_words(reference)
    count = sum(highlight(edit, s, e, words) for s, e in spans)
    edit.moveCursor(QTextCursor.Start)
    return count


class NoteDialog(QDialog):
    def __init__(self, note: str, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Note")
        self.edit = QPlainTextEdit(note or "")
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.edit)
        layout.addWidget(buttons)
