"""Word highlighting in plain-text QTextEdit documents (character formats, never HTML)."""

from __future__ import annotations

import re

from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextEdit

from curator.core.generation.filters import STOPWORDS

WORD = re.compile(r"\w{3,}", re.UNICODE)
STOP = STOPWORDS  # the one stop-word list, generation's
QUESTION_STOP = STOP | set("how what why when which who does do did not".split())


def content_words(text: str, stop: set[str] = STOP) -> set[str]:
    """The lower-cased words of ``text`` worth highlighting elsewhere (3+ letters, no stop words)."""
    return {w.lower() for w in WORD.findall(text or "") if w.lower() not in stop}


def highlight(edit: QTextEdit, start: int, end: int, words: set[str]) -> int:
    """Give every word of ``words`` in [start, end) of the plain-text document a highlight format;
    returns how many were marked."""
    fmt = QTextCharFormat()
    fmt.setBackground(QColor("#fde68a"))
    fmt.setFontWeight(QFont.Bold)
    text = edit.toPlainText()[start:end]
    count = 0
    for match in WORD.finditer(text):
        if match.group().lower() in words:
            cursor = QTextCursor(edit.document())
            cursor.setPosition(start + match.start())
            cursor.setPosition(start + match.end(), QTextCursor.KeepAnchor)
            cursor.mergeCharFormat(fmt)
            count += 1
    return count
