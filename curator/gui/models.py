"""Qt item models: thin adapters over rows read from curator.core (napari style).

Every change is bracketed (beginResetModel/endResetModel, layoutChanged, dataChanged with
roles) so views and proxies stay consistent. No widget per row: 100k rows stay smooth.
"""

from __future__ import annotations

import html
from typing import Any, Optional, Sequence

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt

ID_ROLE = Qt.UserRole + 1
RAW_ROLE = Qt.UserRole + 2  # the unformatted value of a RecordTableModel cell (floats stay floats)
COLUMNS = ("text", "query_type", "source", "status", "cluster", "reviewer", "quality")
HEADERS = ("Text", "Type", "Source", "Status", "Cluster", "Reviewer", "Quality")


def plain_tooltip(text: str) -> str:
    """A tooltip that shows ``text`` as it is. Qt renders a tooltip as rich text whenever it looks
    like markup, and there is no per-tooltip plain-text flag: so the text is escaped inside a
    paragraph that keeps its line breaks, and a chunk's "<b>x</b>" shows its tags."""
    return f'<p style="white-space:pre-wrap">{html.escape(text, quote=False)}</p>' if text else ""


def _cell(row: dict, name: str) -> str:
    value = row.get(name)
    if name == "cluster" and value is not None:
        label = row.get("cluster_label")
        return f"{value}: {label}" if label else str(value)
    if name == "quality" and value is not None:
        return f"{value:.2f}"  # fixed width, so the text sort is the numeric sort for 0..1
    return "" if value is None else str(value)


class QueryTableModel(QAbstractTableModel):
    """Queries as a flat table; each row is a tuple of display strings plus the query id."""

    def __init__(self, rows: Optional[list[dict]] = None, parent=None) -> None:
        super().__init__(parent)
        self._cells: list[tuple[str, ...]] = []
        self._ids: list[str] = []
        self._haystack: list[str] = []
        if rows:
            self.set_rows(rows)

    # -- loading ---------------------------------------------------------------------------
    def set_rows(self, rows: list[dict]) -> None:
        self.beginResetModel()
        self._cells = [tuple(_cell(r, c) for c in COLUMNS) for r in rows]
        self._ids = [r["id"] for r in rows]
        self._haystack = [cells[0].lower() for cells in self._cells]
        self.endResetModel()

    def update_row(self, row: dict) -> None:
        """Refresh one query in place (after a decision) with a dataChanged for its cells."""
        try:
            i = self._ids.index(row["id"])
        except ValueError:
            return
        self._cells[i] = tuple(_cell(row, c) for c in COLUMNS)
        self._haystack[i] = self._cells[i][0].lower()
        self.dataChanged.emit(self.index(i, 0), self.index(i, len(COLUMNS) - 1), [Qt.DisplayRole, Qt.ToolTipRole])

    # -- Qt API ----------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._cells)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.DisplayRole) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self._cells)):
            return None
        if role == Qt.DisplayRole:
            return self._cells[index.row()][index.column()]
        if role == Qt.ToolTipRole:
            return plain_tooltip(self._cells[index.row()][index.column()])
        if role == ID_ROLE:
            return self._ids[index.row()]
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.DisplayRole) -> Any:
        if role != Qt.DisplayRole:
            return None
        if orientation == Qt.Horizontal:
            return HEADERS[section] if 0 <= section < len(HEADERS) else None
        return str(section + 1)

    def sort(self, column: int, order: Qt.SortOrder = Qt.AscendingOrder) -> None:
        """Sort in Python once (fast) instead of letting a proxy call lessThan n log n times."""
        if not (0 <= column < len(COLUMNS)):
            return
        self.layoutAboutToBeChanged.emit()
        old = self.persistentIndexList()
        old_ids = [self._ids[i.row()] for i in old]
        order_idx = sorted(range(len(self._cells)), key=lambda i: self._cells[i][column].lower(),
                           reverse=order == Qt.DescendingOrder)
        self._cells = [self._cells[i] for i in order_idx]
        self._ids = [self._ids[i] for i in order_idx]
        self._haystack = [self._haystack[i] for i in order_idx]
        where = {qid: n for n, qid in enumerate(self._ids)}
        self.changePersistentIndexList(old, [self.index(where[q], i.column()) for q, i in zip(old_ids, old)])
        self.layoutChanged.emit()

    # -- helpers for the proxy -------------------------------------------------------------
    def cell(self, row: int, column: int) -> str:
        return self._cells[row][column]

    def haystack(self, row: int) -> str:
        return self._haystack[row]

    def query_id(self, row: int) -> str:
        return self._ids[row]

    def distinct(self, column: int) -> list[str]:
        return sorted({c[column] for c in self._cells})


class QueryFilterProxy(QSortFilterProxyModel):
    """Filters by free text, by an exact value per column, and by a set of query ids (map)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._text = ""
        self._columns: dict[int, str] = {}
        self._ids: Optional[set[str]] = None

    def set_text(self, text: str) -> None:
        self.beginFilterChange()
        self._text = text.strip().lower()
        self.endFilterChange()

    def set_column_filter(self, column: int, value: Optional[str]) -> None:
        self.beginFilterChange()
        if value:
            self._columns[column] = value
        else:
            self._columns.pop(column, None)
        self.endFilterChange()

    def set_ids(self, ids: Optional[set[str]]) -> None:
        self.beginFilterChange()
        self._ids = set(ids) if ids is not None else None
        self.endFilterChange()

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex) -> bool:
        if not self._text and not self._columns and self._ids is None:
            return True
        model: QueryTableModel = self.sourceModel()
        if self._ids is not None and model.query_id(source_row) not in self._ids:
            return False
        if self._text and self._text not in model.haystack(source_row):
            return False
        return all(model.cell(source_row, c) == v for c, v in self._columns.items())

    def sort(self, column: int, order: Qt.SortOrder = Qt.AscendingOrder) -> None:
        self.sourceModel().sort(column, order)


# -- a small table of records (generation rows, export manifests, metrics) ---------------------

class RecordTableModel(QAbstractTableModel):
    """Rows of dicts shown as a table of plain strings; ``columns`` is ((key, header), ...).

    Floats show with three decimals; ``RAW_ROLE`` gives a cell's value unformatted."""

    def __init__(self, columns: Sequence[tuple[str, str]], formats: Optional[dict] = None, parent=None) -> None:
        super().__init__(parent)
        self.keys = [key for key, _ in columns]
        self.headers = [header for _, header in columns]
        self.formats = formats or {}  # key -> callable(value) -> str
        self._rows: list[dict] = []

    def set_rows(self, rows: Sequence[dict], columns: Optional[Sequence[tuple[str, str]]] = None) -> None:
        """Replace every row (and optionally the columns) in one reset."""
        self.beginResetModel()
        if columns is not None:
            self.keys = [key for key, _ in columns]
            self.headers = [header for _, header in columns]
        self._rows = list(rows)
        self.endResetModel()

    def append_rows(self, rows: Sequence[dict]) -> None:
        if not rows:
            return
        first = len(self._rows)
        self.beginInsertRows(QModelIndex(), first, first + len(rows) - 1)
        self._rows.extend(rows)
        self.endInsertRows()

    def rows(self) -> list[dict]:
        return list(self._rows)

    def text(self, row: int, column: int) -> str:
        value = self._rows[row].get(self.keys[column])
        if value is None:
            return ""
        fmt = self.formats.get(self.keys[column])
        if fmt is not None:
            return fmt(value)
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.keys)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.DisplayRole) -> Any:
        if not index.isValid() or not (0 <= index.row() < len(self._rows)):
            return None
        if role == Qt.DisplayRole:
            return self.text(index.row(), index.column())
        if role == Qt.ToolTipRole:
            return plain_tooltip(self.text(index.row(), index.column()))
        if role == RAW_ROLE:
            return self._rows[index.row()].get(self.keys[index.column()])
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.DisplayRole) -> Any:
        if role != Qt.DisplayRole:
            return None
        if orientation == Qt.Horizontal:
            return self.headers[section] if 0 <= section < len(self.headers) else None
        return str(section + 1)
