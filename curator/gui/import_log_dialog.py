"""Import log: the field mapping core detected, editable before the import, and redaction.

Core's ``detect_fields`` says which column it would read for each role; the dialog shows each
as a combo box over the file's own fields, so a log whose query column has an unusual name
can still be imported without the command line. ``choices()`` gives ``import_log``'s arguments.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QVBoxLayout

NONE = "(none)"
ROLES = (("query", "Query text"), ("feedback", "Feedback (thumbs, rating)"),
         ("timestamp", "Timestamp"), ("session", "Session"))


class ImportLogDialog(QDialog):
    def __init__(self, detected: dict, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import a query log")
        self.detected = detected
        intro = QLabel(f"{detected['file']}\n{detected['records']} records; fields: {', '.join(detected['fields'])}.\n"
                       "Check which field holds what (detected from the field names):")
        intro.setTextFormat(Qt.PlainText)
        intro.setWordWrap(True)
        form = QFormLayout()
        self.combos: dict[str, QComboBox] = {}
        for role, caption in ROLES:
            combo = QComboBox()
            combo.addItems(([] if role == "query" else [NONE]) + detected["fields"])
            picked = detected["mapping"].get(role)
            combo.setCurrentText(picked if picked else NONE)
            combo.currentIndexChanged.connect(self._check)
            self.combos[role] = combo
            form.addRow(caption, combo)
        self.redact = QCheckBox("Redact e-mail addresses, phone numbers and long numbers in the queries")
        self.problem = QLabel()
        self.problem.setTextFormat(Qt.PlainText)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.button(QDialogButtonBox.Ok).setText("Import")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.redact)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self._check()

    def _field(self, role: str) -> Optional[str]:
        text = self.combos[role].currentText()
        return None if text in ("", NONE) else text

    def _check(self) -> None:
        """A log without a query field cannot be imported: say so instead of failing later."""
        ok = self._field("query") is not None
        self.problem.setText("" if ok else "This file has no fields: it cannot be imported as a log.")
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(ok)

    def choices(self) -> dict:
        """Keyword arguments for core's ``import_log``; "" tells it a role has no field (not "detect")."""
        fields = {f"{role}_field": self._field(role) or "" for role, _ in ROLES}
        return {**fields, "redact_pii": self.redact.isChecked()}
