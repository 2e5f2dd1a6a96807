"""The base of the painted charts (per-cluster bars, validity bars): white, antialiased, and a
sentence saying what to do when there is nothing to draw yet."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter
from PySide6.QtWidgets import QSizePolicy, QWidget

EMPTY_TEXT_COLOUR = QColor("#6b7280")


class Chart(QWidget):
    def __init__(self, min_width: int, min_height: int, parent=None) -> None:
        super().__init__(parent)
        self.setMinimumSize(min_width, min_height)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Expanding)

    def begin_paint(self, empty_text: Optional[str]) -> Optional[tuple[QPainter, QFontMetrics]]:
        """A painter on a white background and the font's metrics; None once ``empty_text``
        (what to do first) is drawn instead, when the chart has no data."""
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        painter.fillRect(self.rect(), QColor("#ffffff"))
        if empty_text:
            painter.setPen(EMPTY_TEXT_COLOUR)
            painter.drawText(self.rect(), Qt.AlignCenter, empty_text)
            return None
        return painter, QFontMetrics(self.font())
