"""The suggested gold chunks of the review row, shown inline under the question.

Each suggestion shows its number (the key that toggles it), whether it is gold and its grade, the
document path and heading, and a snippet with the question's words highlighted. The text is
plain text with character formats, never HTML, so corpus text cannot inject markup."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextEdit

from curator.gui.highlight import QUESTION_STOP, content_words, highlight

SNIPPET = 320


def _formats() -> dict[str, QTextCharFormat]:
    formats = {name: QTextCharFormat() for name in ("head", "gold", "path", "text")}
    formats["head"].setFontWeight(QFont.Bold)
    formats["gold"].setFontWeight(QFont.Bold)
    formats["gold"].setForeground(QColor("#15803d"))
    formats["path"].setForeground(QColor("#1d4ed8"))
    return formats


class SuggestionsPanel(QTextEdit):
    """Read-only, takes no focus: the review view's keys 1-5 act on it."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setAcceptRichText(False)
        self.setFocusPolicy(Qt.NoFocus)
        self.highlighted = 0

    def show_suggestions(self, rows: list[dict], gold: dict[str, int], question: str) -> int:
        """Render ``rows`` (core's suggestions, best first); ``gold`` maps chunk id -> grade.
        Returns how many question words were highlighted."""
        self.setPlainText("")
        fmt, terms = _formats(), content_words(question, QUESTION_STOP)
        cursor = QTextCursor(self.document())
        spans = []
        for row in rows:
            mark = f"  ✓ gold, grade {gold[row['chunk_id']]}" if row["chunk_id"] in gold else ""
            cursor.insertText(f"{row['rank']}", fmt["head"])
            cursor.insertText(f"{mark}  ", fmt["gold"])
            cursor.insertText(f"{row['path']}  ›  {row['title'] or '(no heading)'}\n", fmt["path"])
            start = cursor.position()
            snippet = " ".join(row["text"].split())
            cursor.insertText((snippet[:SNIPPET] + ("…" if len(snippet) > SNIPPET else "")) + "\n\n", fmt["text"])
            spans.append((start, cursor.position()))
        self.highlighted = sum(highlight(self, s, e, terms) for s, e in spans)
        self.moveCursor(QTextCursor.Start)
        return self.highlighted
