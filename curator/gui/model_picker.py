"""The model picker of the Generate and Diagnose tabs: the models found on this machine (core's
``list_models``: name, parameters, size, and whether it fits in free memory), each with its numbers
in this project, plus "Other file..." and an endpoint.

The listing runs in a worker (a slow disk or a big Hugging Face cache never holds the window);
until it arrives the fixed entries are there to use. A model too big for free memory stays listed,
greyed, with the reason in its text and tooltip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import sqlite_utils
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QFormLayout, QHBoxLayout, QLineEdit, QPushButton, QWidget

from curator.core.modelfiles.listing import (bigger_model_hint, human_bytes, human_parameters, project_numbers,
                                              store_name)
from curator.gui import workers
from curator.gui.widgets import path_row, plain_label, project_file

# The fixed entries keep their places (0, 1, 2) whatever is found: found models follow a separator.
FIRST, OTHER_FILE, ENDPOINT = 0, 1, 2
FOUND_START = 4  # after the separator at 3
ROW = Qt.UserRole + 1  # an entry's listing row (a dict), None for the fixed entries


def models_task(db: sqlite_utils.Database, *, on_progress=None, cancel=None) -> dict:
    """The listing with this project's numbers (runs in the worker, on its own connection)."""
    from curator.core.modelfiles.listing import list_models

    return list_models(db)


def entry_text(row: dict) -> str:
    """One listed model: name, parameters, type, size; then its numbers here, or why it does not fit."""
    text = (f"{row['name']}  ·  {human_parameters(row['parameters'])} · {row['quantization'] or '?'} · "
            f"{human_bytes(row['size_bytes'])} · {store_name(row['store'])}")
    if row["fits"] is False:
        return f"{text}  —  too big here: {row['fit_reason']}"
    numbers = project_numbers(row)
    return f"{text}  —  here: {numbers}" if numbers else f"{text}  —  not used in this project yet"


class ModelPicker(QWidget):
    """A combo of models and two fields (a file, an endpoint URL), laid out as a form's rows.

    ``first`` names entry 0: the bundled model in Generate (``include_bundled``: the entry shows its
    numbers), "no LLM judge" in Diagnose (the bundled 135M is never offered as a judge). The
    bundled file is never repeated among the found entries."""

    listed = Signal(object)  # core's listing, once it arrived (the view may show a hint)

    def __init__(self, db: sqlite_utils.Database, first: str, include_bundled: bool = True, parent=None) -> None:
        super().__init__(parent)
        self.db, self.include_bundled, self.first = db, include_bundled, first
        self.listing: Optional[dict] = None
        self.first_row: Optional[dict] = None  # the bundled model's row (Generate), for its numbers
        self.choice = QComboBox()
        self.choice.addItems([first, "Other GGUF file…", "OpenAI-compatible endpoint"])
        self.choice.insertSeparator(3)
        self.choice.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.choice.setMinimumContentsLength(28)
        self.choice.currentIndexChanged.connect(self._changed)
        self.path = QLineEdit(placeholderText="path/to/model.gguf")
        self.browse_button = QPushButton("Choose…")
        self.add_folder_button = QPushButton("Add folder…")
        self.add_folder_button.setToolTip("Search a folder of .gguf files too (kept for the next time, and for "
                                          "'curator models').")
        self.add_folder_button.clicked.connect(self.choose_folder)
        self.endpoint = QLineEdit(placeholderText="http://localhost:8080/v1")
        self.numbers = plain_label(hint=True)
        self.numbers.setWordWrap(True)
        self.worker: Optional[workers.TaskWorker] = None
        self._again = False
        self._changed(FIRST)

    def add_rows(self, form: QFormLayout, label: str = "Model") -> None:
        row = QHBoxLayout()
        row.addWidget(self.choice, 1)
        row.addWidget(self.add_folder_button)
        form.addRow(label, row)
        form.addRow("GGUF file", path_row(self.path, self.browse_button, self.choose_file))
        form.addRow("Endpoint URL", self.endpoint)
        form.addRow(self.numbers)

    # -- the listing --------------------------------------------------------------------------
    def refresh(self) -> Optional[workers.TaskWorker]:
        """List the models again off the GUI thread (the project's numbers change as rows are made)."""
        if self.worker is not None:
            self._again = True  # the listing under way may predate the change: list once more after it
            return None
        self._again = False
        self.worker = workers.launch(project_file(self.db), models_task, progress=lambda *a: None,
                                     finished=self.show_listing, failed=self._failed, cancelled=lambda: None,
                                     done=self._done)
        return self.worker

    def _done(self) -> None:
        self.worker = None
        if self._again:
            self.refresh()

    def _failed(self, what: str, _todo: str) -> None:
        self.numbers.setText(f"The models on this computer could not be listed: {what}")

    def show_listing(self, listing: dict) -> None:
        """Put the found models after the fixed entries, keeping the current choice when it is still there."""
        self.listing = listing
        kept = self.chosen_path() if self.choice.currentIndex() >= FOUND_START else None
        self.choice.blockSignals(True)
        while self.choice.count() > FOUND_START:
            self.choice.removeItem(FOUND_START)
        rows = [r for r in listing["models"] if r["readable"]]
        self.first_row = next((r for r in rows if r["store"] == "bundled"), None)
        for row in rows:
            if row["store"] != "bundled":
                self._add_entry(row)
        if self.include_bundled and self.first_row:
            numbers = project_numbers(self.first_row)
            self.choice.setItemText(FIRST, f"{self.first}  —  here: {numbers}" if numbers else self.first)
        self.choice.blockSignals(False)
        self._fit_popup()
        if kept:
            self.select_path(kept)
        self._changed(self.choice.currentIndex())
        self.listed.emit(listing)

    def _add_entry(self, row: dict) -> None:
        self.choice.addItem(entry_text(row))
        index = self.choice.count() - 1
        self.choice.setItemData(index, row, ROW)
        self.choice.setItemData(index, f"{row['path']}\n{row['fit_reason']}", Qt.ToolTipRole)
        if row["fits"] is False:  # greyed: shown with its reason, not choosable
            self.choice.model().item(index).setEnabled(False)

    def _fit_popup(self) -> None:
        """The list as wide as its longest entry: a model's numbers sit at the end of its line."""
        view, metrics = self.choice.view(), self.choice.fontMetrics()
        view.setTextElideMode(Qt.ElideNone)
        widest = max(metrics.horizontalAdvance(self.choice.itemText(i)) for i in range(self.choice.count()))
        view.setMinimumWidth(widest + 40)

    def rows(self) -> list[dict]:
        return [self.choice.itemData(i, ROW) for i in range(FOUND_START, self.choice.count())]

    def hint(self) -> Optional[dict]:
        return bigger_model_hint(self.listing["models"]) if self.listing else None

    # -- the choice ---------------------------------------------------------------------------
    def current_row(self) -> Optional[dict]:
        index = self.choice.currentIndex()
        if index == FIRST and self.include_bundled:
            return self.first_row
        return self.choice.itemData(index, ROW) if index >= FOUND_START else None

    def select_path(self, path: str) -> bool:
        for index in range(FOUND_START, self.choice.count()):
            row = self.choice.itemData(index, ROW)
            if row and row["path"] == path and self.choice.model().item(index).isEnabled():
                self.choice.setCurrentIndex(index)
                return True
        return False

    def chosen_path(self) -> Optional[str]:
        """The GGUF file chosen: a found model's path or the typed one (None: the first entry or an endpoint)."""
        index = self.choice.currentIndex()
        if index >= FOUND_START:
            return self.choice.itemData(index, ROW)["path"]
        return (self.path.text().strip() or None) if index == OTHER_FILE else None

    def chosen_endpoint(self) -> Optional[str]:
        return (self.endpoint.text().strip() or None) if self.choice.currentIndex() == ENDPOINT else None

    def _changed(self, index: int) -> None:
        for widget in (self.path, self.browse_button):
            widget.setEnabled(index == OTHER_FILE)
        self.endpoint.setEnabled(index == ENDPOINT)
        row = self.current_row()
        self.numbers.setText(self._describe(row) if row else "")
        self.numbers.setVisible(row is not None)  # no blank line under "Other file" or an endpoint

    def _describe(self, row: dict) -> str:
        numbers = project_numbers(row) or "not used in this project yet"
        return (f"{row['name']}: {human_parameters(row['parameters'])} parameters, {row['quantization']}, "
                f"context {row['context_length']}, {'chat template' if row['chat_template'] else 'NO chat template'}; "
                f"{row['fit_reason']}. In this project: {numbers}.")

    def choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a GGUF model", "", "GGUF models (*.gguf);;All files (*)")
        if path:
            self.path.setText(path)
            self.choice.setCurrentIndex(OTHER_FILE)

    def choose_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of GGUF models")
        if folder:
            self.add_folder(folder)

    def add_folder(self, folder: str) -> Optional[workers.TaskWorker]:
        """Remember ``folder`` among the user's model folders and list the models again."""
        from curator.core.errors import CuratorError
        from curator.core.modelfiles.places import add_folder

        try:
            add_folder(folder)
        except CuratorError as exc:
            self.numbers.setText(str(exc))
            self.numbers.setVisible(True)
            return None
        return self.refresh()
