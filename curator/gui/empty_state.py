"""An empty view that says the next step and has a button that takes it.

A view keeps its content and one of these in a ``QStackedWidget`` (``EmptyStack``) and shows
the empty page while there is nothing to show, so a new user is never left on a blank table.
"""

from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QStackedWidget, QVBoxLayout, QWidget


class EmptyState(QWidget):
    """A centred sentence ("No documents yet. ...") and one or more buttons under it."""

    def __init__(self, text: str, actions: list[tuple[str, Callable[[], None]]], parent=None) -> None:
        super().__init__(parent)
        self.label = QLabel(text)
        self.label.setTextFormat(Qt.PlainText)
        self.label.setWordWrap(True)
        self.label.setAlignment(Qt.AlignCenter)
        self.label.setObjectName("emptyState")
        self.buttons: list[QPushButton] = []
        row = QHBoxLayout()
        row.addStretch(1)
        for caption, slot in actions:
            button = QPushButton(caption)
            button.clicked.connect(slot)
            self.buttons.append(button)
            row.addWidget(button)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        layout.addWidget(self.label)
        layout.addLayout(row)
        layout.addStretch(2)

    def set_text(self, text: str) -> None:
        self.label.setText(text)


class EmptyStack(QStackedWidget):
    """The content page and its empty state; ``show_empty(True)`` flips to the empty one."""

    def __init__(self, content: QWidget, empty: EmptyState, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.content, self.empty = content, empty
        self.addWidget(content)
        self.addWidget(empty)

    def show_empty(self, empty: bool) -> None:
        self.setCurrentWidget(self.empty if empty else self.content)

    def is_empty(self) -> bool:
        return self.currentWidget() is self.empty
