"""The cluster map: every query as a point, coloured by cluster, in one QPainter pass.

Points are painted into a cached QImage once per data change or resize (one ``drawPoints``
call per colour and marker: 10k+ points stay smooth); hover, selection and the lasso are
drawn on top of that cache. Synthetic queries are filled discs, log (real) queries are
squares with a dark outline; a real query with no synthetic row among its nearest neighbours (a
coverage gap, ``set_coverage``) sits on a red halo with a red ring, so regions of real queries
without synthetic rows show at a glance. Queries added since the cluster run (``set_placed``) are
drawn hollow: their position is an estimate from their nearest clustered queries, not a fit.
Each cluster's label is drawn near its points; labels are laid out greedily so no two overlap
(``label_boxes``).
Hover text is shown in a plain-text label, never as rich text.
Clicking a point selects it, dragging draws a lasso polygon; Shift adds to the selection.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QLabel, QWidget

# Tableau-20 style palette, darker members first so small clusters stay visible.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
           "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")
MARGIN = 18
POINT = 7.0          # disc diameter in pixels
HOVER_RADIUS = 8.0   # pixels within which a point counts as under the cursor
DRAG_START = 4       # pixels the mouse must move before a press becomes a lasso
TIP_CHARS = 300
GAP = QColor("#dc2626")  # a real query without a synthetic neighbour
LABEL_CHARS = 32
CELL = 4  # pixels per side of a cell of the label layout's occupancy grid


class Occupancy:
    """How many points lie in a box, in constant time: a summed-area table of the points per
    ``CELL``-pixel cell, built once per label layout (a scan of every point per candidate spot cost
    ~150M comparisons with 200 clusters and 10k points, on every resize). A box counts the points of
    every cell it touches: never fewer than lie inside it, and 0 only when none does. Boxes are
    rows of left, top, right, bottom (``counts``) or a QRectF (``count``)."""

    def __init__(self, xy: np.ndarray, width: int, height: int) -> None:
        self.cols, self.rows = max(1, -(-width // CELL)), max(1, -(-height // CELL))
        counts = np.zeros((self.rows, self.cols), np.int64)
        if len(xy):
            cx = np.clip((xy[:, 0] // CELL).astype(int), 0, self.cols - 1)
            cy = np.clip((xy[:, 1] // CELL).astype(int), 0, self.rows - 1)
            np.add.at(counts, (cy, cx), 1)
        self.table = np.zeros((self.rows + 1, self.cols + 1), np.int64)
        self.table[1:, 1:] = counts.cumsum(axis=0).cumsum(axis=1)

    def counts(self, boxes: np.ndarray) -> np.ndarray:
        cells = (np.asarray(boxes, np.float64).reshape(-1, 4) // CELL).astype(int)
        x0, x1 = (np.clip(cells[:, i], 0, self.cols - 1) for i in (0, 2))
        y0, y1 = (np.clip(cells[:, i], 0, self.rows - 1) for i in (1, 3))
        t = self.table
        return t[y1 + 1, x1 + 1] - t[y0, x1 + 1] - t[y1 + 1, x0] + t[y0, x0]

    def count(self, box: QRectF) -> int:
        return int(self.counts(np.array([[box.left(), box.top(), box.right(), box.bottom()]]))[0])


def _overlaps(spots: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """Per spot, the total area it shares with the boxes in ``taken`` (both rows of left, top, right, bottom)."""
    if len(taken) == 0:
        return np.zeros(len(spots))
    w = np.minimum(spots[:, None, 2], taken[None, :, 2]) - np.maximum(spots[:, None, 0], taken[None, :, 0])
    h = np.minimum(spots[:, None, 3], taken[None, :, 3]) - np.maximum(spots[:, None, 1], taken[None, :, 1])
    return (np.maximum(w, 0) * np.maximum(h, 0)).sum(axis=1)


def cluster_color(cluster: int) -> QColor:
    return QColor("#9ca3af") if cluster < 0 else QColor(PALETTE[cluster % len(PALETTE)])


def points_in_polygon(xy: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Boolean mask of rows of ``xy`` inside ``poly`` (even-odd ray casting, vectorised per edge)."""
    inside = np.zeros(len(xy), dtype=bool)
    if len(poly) < 3 or len(xy) == 0:
        return inside
    x, y = xy[:, 0], xy[:, 1]
    x0, y0 = poly[:, 0], poly[:, 1]
    x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
    for ax, ay, bx, by in zip(x0, y0, x1, y1):
        crosses = (ay > y) != (by > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = (bx - ax) * (y - ay) / (by - ay) + ax
        inside ^= crosses & (x < at)
    return inside


class ClusterMap(QWidget):
    """A scatter map of queries. ``selection_changed`` carries the selected query ids (a list)."""

    selection_changed = Signal(list)
    hovered = Signal(str)  # query id under the cursor ("" when none)

    def __init__(self, parent: Optional[QWidget] = None) -> None:
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setMinimumSize(320, 240)
        self.setAttribute(Qt.WA_OpaquePaintEvent)
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.data_xy = np.zeros((0, 2), np.float32)
        self.clusters = np.zeros(0, int)
        self.is_log = np.zeros(0, bool)
        self.gap = np.zeros(0, bool)
        self.placed = np.zeros(0, bool)  # added since the run: position estimated, drawn hollow
        self.labels: dict[int, str] = {}
        self.selected = np.zeros(0, bool)
        self.screen_xy = np.zeros((0, 2), np.float32)
        self._cache: Optional[QImage] = None
        self._hover: int = -1
        self._press: Optional[QPoint] = None
        self._lasso: list[QPointF] = []
        self.tip = QLabel(self)
        self.tip.setObjectName("mapTip")
        self.tip.setTextFormat(Qt.PlainText)  # query text is user data: never rich text
        self.tip.setWordWrap(True)
        self.tip.setMaximumWidth(360)
        self.tip.setStyleSheet("QLabel#mapTip { background: #111827; color: white; padding: 5px 7px;"
                               " border-radius: 4px; }")
        self.tip.hide()
        self.empty_text = "No cluster run yet: press 'Run clustering'."

    # -- data ------------------------------------------------------------------------------
    def set_points(self, ids: Sequence[str], xy: np.ndarray, clusters: Sequence[int],
                   is_log: Sequence[bool], texts: Sequence[str], placed: Optional[Sequence[bool]] = None) -> None:
        self.ids, self.texts = list(ids), list(texts)
        self.data_xy = np.asarray(xy, np.float64).reshape(-1, 2)
        self.clusters = np.asarray(clusters, int)
        self.is_log = np.asarray(is_log, bool)
        self.placed = np.zeros(len(self.ids), bool) if placed is None else np.asarray(placed, bool)
        self.gap = np.zeros(len(self.ids), bool)
        self.selected = np.zeros(len(self.ids), bool)
        self._hover = -1
        self.tip.hide()
        self._relayout()

    def set_rows(self, rows: Sequence[dict]) -> None:
        """Rows as returned by ``reads.cluster_points`` (a row with ``placed`` True is drawn hollow)."""
        self.set_points([r["query_id"] for r in rows], np.array([[r["x"], r["y"]] for r in rows], np.float64),
                        [r["cluster"] for r in rows], [r["source"] == "log" for r in rows],
                        [r["text"] or "" for r in rows], [bool(r.get("placed")) for r in rows])

    def set_placed(self, rows: Sequence[dict]) -> None:
        """Replace the points added since the run with ``rows`` (``coverage.placed_points``) and
        keep the fitted ones, the selection and the gap marks of the points that stay. A placed point
        is a mean of fitted positions, inside their bounds: the map's scale does not jump."""
        fitted = np.flatnonzero(~self.placed)
        selected, gaps = set(self.selected_ids()), set(self.gap_ids())
        self.ids = [self.ids[i] for i in fitted] + [r["query_id"] for r in rows]
        self.texts = [self.texts[i] for i in fitted] + [r["text"] or "" for r in rows]
        self.data_xy = np.vstack([self.data_xy[fitted], np.array([[r["x"], r["y"]] for r in rows], np.float64).reshape(-1, 2)])
        self.clusters = np.concatenate([self.clusters[fitted], np.array([r["cluster"] for r in rows], int)])
        self.is_log = np.concatenate([self.is_log[fitted], np.array([r["source"] == "log" for r in rows], bool)])
        self.placed = np.concatenate([np.zeros(len(fitted), bool), np.ones(len(rows), bool)])
        self.gap = np.array([q in gaps for q in self.ids], bool)
        self.selected = np.array([q in selected for q in self.ids], bool)
        self._hover = -1
        self.tip.hide()
        self._relayout()

    def placed_ids(self) -> list[str]:
        return [self.ids[i] for i in np.flatnonzero(self.placed)]

    def set_coverage(self, gap_ids, labels: dict[int, str]) -> None:
        """Highlight the real queries in ``gap_ids`` and draw ``labels`` (cluster -> text) on the map."""
        wanted = set(gap_ids)
        self.gap = np.array([q in wanted for q in self.ids], bool)
        self.labels = dict(labels)
        self._cache = None
        self.update()

    def gap_ids(self) -> list[str]:
        return [self.ids[i] for i in np.flatnonzero(self.gap)]

    def label_positions(self) -> dict[int, tuple[float, float]]:
        """Where each labelled cluster's name would go first: above its points, centred on their
        median x (a label over the median covered the very points it names)."""
        out = {}
        for c in np.unique(self.clusters):
            if int(c) in self.labels:
                pts = self.screen_xy[self.clusters == c]
                out[int(c)] = (float(np.median(pts[:, 0])), float(pts[:, 1].min()))
        return out

    def label_text(self, cluster: int) -> str:
        label = self.labels[cluster]
        return f"{cluster} · " + (label if len(label) <= LABEL_CHARS else label[:LABEL_CHARS - 1] + "…")

    def label_boxes(self) -> dict[int, QRectF]:
        """Each label's box in widget pixels, laid out greedily so that no two overlap.

        Larger clusters are placed first (they are the ones a reader looks for). Each label tries
        spots around its cluster, nearest first: above the middle half of its points, below it, on it, then
        further up and down in steps of a box height; it takes the first spot inside the map that
        overlaps no label placed before it and covers no point (``_free_spot``)."""
        from PySide6.QtGui import QFontMetrics

        metrics = QFontMetrics(self.font())
        occupancy = Occupancy(self.screen_xy, self.width(), self.height())
        placed = np.zeros((0, 4))  # left, top, right, bottom of the labels placed so far
        out: dict[int, QRectF] = {}
        clusters, counts = np.unique(self.clusters, return_counts=True)
        sizes = {int(c): int(n) for c, n in zip(clusters, counts) if int(c) in self.labels}
        for cluster in sorted(sizes, key=lambda c: (-sizes[c], c)):
            size = metrics.boundingRect(self.label_text(cluster)).adjusted(-4, -2, 4, 2).size()
            box = self._free_spot(cluster, float(size.width()), float(size.height()), placed, occupancy)
            placed = np.vstack([placed, box])
            left, top, right, bottom = (float(v) for v in box)
            out[cluster] = QRectF(left, top, right - left, bottom - top)
        return out

    def _spots(self, cluster: int, w: float, h: float) -> np.ndarray:
        """Candidate boxes for one cluster's label, best first, each kept inside the widget: rows of
        left, top, right, bottom."""
        pts = self.screen_xy[self.clusters == cluster]
        x = float(np.median(pts[:, 0]))
        # the middle half of its points: in the free layout a cluster's outliers sit far from its bulk
        top, middle, bottom = (float(v) for v in np.percentile(pts[:, 1], [25, 50, 75]))
        ys = [top - POINT - h, bottom + POINT, middle - h / 2]
        for step in range(1, 12):
            ys += [top - POINT - h - step * (h + 2), bottom + POINT + step * (h + 2)]
        xs = [x - w / 2, x - w - POINT, x + POINT]
        # each y with each x, y outermost; min(max()) as before: a map narrower than the box puts it at the right edge
        lefts = np.tile(np.minimum(np.maximum(2.0, xs), self.width() - w - 2), len(ys))
        tops = np.repeat(np.minimum(np.maximum(2.0, ys), self.height() - h - 2), len(xs))
        return np.column_stack([lefts, tops, lefts + w, tops + h])

    def _free_spot(self, cluster: int, w: float, h: float, taken: np.ndarray, occupancy: Occupancy) -> np.ndarray:
        """The first spot that overlaps no placed label and covers no point; failing that, the one
        that overlaps labels least, then covers fewest points (a label must never hide another).
        All spots are scored at once (left, top, right, bottom)."""
        spots = self._spots(cluster, w, h)
        overlap, covered = _overlaps(spots, taken), occupancy.counts(spots)
        free = (overlap == 0) & (covered == 0)
        best = int(np.argmax(free)) if free.any() else int(np.lexsort((np.arange(len(spots)), covered, overlap))[0])
        return spots[best]

    def selected_ids(self) -> list[str]:
        return [self.ids[i] for i in np.flatnonzero(self.selected)]

    def select_ids(self, ids, emit: bool = True) -> None:
        wanted = set(ids)
        self.selected = np.array([q in wanted for q in self.ids], bool)
        self._selection_done(emit)

    def select_cluster(self, cluster: int) -> None:
        self.selected = self.clusters == cluster
        self._selection_done(True)

    def clear_selection(self) -> None:
        self.selected = np.zeros(len(self.ids), bool)
        self._selection_done(True)

    def _selection_done(self, emit: bool) -> None:
        self.update()
        if emit:
            self.selection_changed.emit(self.selected_ids())

    # -- geometry --------------------------------------------------------------------------
    def _relayout(self) -> None:
        """Map data coordinates to pixels (aspect kept, y up) and drop the cached image."""
        self._cache = None
        if len(self.data_xy) == 0:
            self.screen_xy = np.zeros((0, 2), np.float32)
            self.update()
            return
        lo, hi = self.data_xy.min(axis=0), self.data_xy.max(axis=0)
        span = np.maximum(hi - lo, 1e-9)
        w, h = max(self.width() - 2 * MARGIN, 1), max(self.height() - 2 * MARGIN, 1)
        scale = min(w / span[0], h / span[1])
        offset = np.array([MARGIN + (w - span[0] * scale) / 2, MARGIN + (h - span[1] * scale) / 2])
        sx = (self.data_xy[:, 0] - lo[0]) * scale + offset[0]
        sy = self.height() - ((self.data_xy[:, 1] - lo[1]) * scale + offset[1])
        self.screen_xy = np.column_stack([sx, sy]).astype(np.float32)
        self.update()

    def resizeEvent(self, event) -> None:
        self._relayout()
        super().resizeEvent(event)

    def nearest(self, pos: QPointF | QPoint, radius: float = HOVER_RADIUS) -> int:
        """Index of the point nearest ``pos`` within ``radius`` pixels, else -1."""
        if len(self.screen_xy) == 0:
            return -1
        d2 = ((self.screen_xy - np.array([pos.x(), pos.y()], np.float32)) ** 2).sum(axis=1)
        i = int(np.argmin(d2))
        return i if d2[i] <= radius * radius else -1

    # -- painting --------------------------------------------------------------------------
    def _render_cache(self) -> QImage:
        ratio = self.devicePixelRatioF()
        image = QImage((self.size() * ratio), QImage.Format_ARGB32_Premultiplied)
        image.setDevicePixelRatio(ratio)
        image.fill(QColor("#ffffff"))
        painter = QPainter(image)
        painter.setRenderHint(QPainter.Antialiasing)
        painter.setPen(QPen(QColor("#e5e7eb"), 1))
        painter.drawRect(QRect(0, 0, self.width() - 1, self.height() - 1))
        self._draw_gap_halos(painter)
        # Synthetic first, log on top: real queries are fewer and the ones worth spotting.
        # Placed points last: one can sit exactly on the fitted point it was placed by.
        for placed in (False, True):
            for log in (False, True):
                for cluster in np.unique(self.clusters):
                    mask = (self.clusters == cluster) & (self.is_log == log) & (self.placed == placed)
                    if mask.any():
                        self._draw_group(painter, self.screen_xy[mask], cluster_color(int(cluster)), log, placed)
        self._draw_gap_rings(painter)
        self._draw_labels(painter)
        painter.end()
        return image

    def _gap_points(self) -> list[QPointF]:
        return [QPointF(float(x), float(y)) for x, y in self.screen_xy[self.gap]] if len(self.gap) else []

    def _draw_gap_halos(self, painter: QPainter) -> None:
        """A soft red disc under each gap: neighbouring gaps merge into one visible region."""
        halo = QColor(GAP)
        halo.setAlpha(45)
        painter.setPen(Qt.NoPen)
        painter.setBrush(halo)
        for point in self._gap_points():
            painter.drawEllipse(point, 3 * POINT, 3 * POINT)

    def _draw_gap_rings(self, painter: QPainter) -> None:
        painter.setPen(QPen(GAP, 2))
        painter.setBrush(Qt.NoBrush)
        for point in self._gap_points():
            painter.drawEllipse(point, POINT, POINT)

    def _draw_labels(self, painter: QPainter) -> None:
        """Each cluster's number and label on a pale box near its points, no two boxes overlapping."""
        painter.setFont(self.font())  # the font label_boxes measured with
        for cluster, box in sorted(self.label_boxes().items()):
            painter.setPen(QPen(cluster_color(cluster), 1.5))
            painter.setBrush(QColor(255, 255, 255, 215))
            painter.drawRoundedRect(box, 3, 3)
            painter.setPen(QColor("#111827"))
            painter.drawText(box, Qt.AlignCenter, self.label_text(cluster))

    @staticmethod
    def _draw_group(painter: QPainter, pts: np.ndarray, colour: QColor, log: bool, hollow: bool = False) -> None:
        """One cluster's points of one kind: log queries squares, synthetic ones discs. A ``hollow``
        point (added since the run) is its marker's outline in the cluster colour, white inside, so an
        estimated position never passes for a fitted one; a fitted log square has a dark outline."""
        poly = QPolygonF([QPointF(float(x), float(y)) for x, y in pts])
        cap = Qt.SquareCap if log else Qt.RoundCap
        if hollow:
            painter.setPen(QPen(colour, POINT + 4, Qt.SolidLine, cap))
            painter.drawPoints(poly)
            painter.setPen(QPen(QColor("#ffffff"), POINT - 1, Qt.SolidLine, cap))
        elif log:  # dark square outline, then the coloured square inside it
            painter.setPen(QPen(QColor("#111827"), POINT + 2, Qt.SolidLine, cap))
            painter.drawPoints(poly)
            painter.setPen(QPen(colour, POINT - 1, Qt.SolidLine, cap))
        else:
            fill = QColor(colour)
            fill.setAlpha(210)
            painter.setPen(QPen(fill, POINT + 2, Qt.SolidLine, cap))
        painter.drawPoints(poly)

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        if len(self.ids) == 0:
            painter.fillRect(self.rect(), QColor("#ffffff"))
            painter.setPen(QColor("#6b7280"))
            painter.drawText(self.rect(), Qt.AlignCenter | Qt.TextWordWrap, self.empty_text)
            return
        if self._cache is None or self._cache.size() != self.size() * self.devicePixelRatioF():
            self._cache = self._render_cache()
        painter.drawImage(0, 0, self._cache)
        painter.setRenderHint(QPainter.Antialiasing)
        if self.selected.any():  # fade the rest, redraw the selection in its colours with a dark ring
            painter.fillRect(self.rect(), QColor(255, 255, 255, 170))
            for cluster in np.unique(self.clusters[self.selected]):
                mask = self.selected & (self.clusters == cluster)
                poly = QPolygonF([QPointF(float(x), float(y)) for x, y in self.screen_xy[mask]])
                painter.setPen(QPen(QColor("#111827"), POINT + 3, Qt.SolidLine, Qt.RoundCap))
                painter.drawPoints(poly)
                painter.setPen(QPen(cluster_color(int(cluster)), POINT, Qt.SolidLine, Qt.RoundCap))
                painter.drawPoints(poly)
        if self._hover >= 0:
            x, y = self.screen_xy[self._hover]
            painter.setPen(QPen(QColor("#111827"), 2))
            painter.setBrush(Qt.NoBrush)
            painter.drawEllipse(QPointF(float(x), float(y)), POINT, POINT)
        if len(self._lasso) > 1:
            painter.setPen(QPen(QColor("#2563eb"), 1.5, Qt.DashLine))
            painter.setBrush(QColor(37, 99, 235, 40))
            painter.drawPolygon(QPolygonF(self._lasso))

    # -- mouse -----------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.LeftButton:
            self._press = event.position().toPoint()
            self._lasso = [event.position()]
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        if self._press is not None and event.buttons() & Qt.LeftButton:
            self._lasso.append(pos)
            self._set_hover(-1)
            self.update()
            return
        self._set_hover(self.nearest(pos))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() != Qt.LeftButton or self._press is None:
            return super().mouseReleaseEvent(event)
        moved = (event.position().toPoint() - self._press).manhattanLength()
        add = bool(event.modifiers() & Qt.ShiftModifier)
        if moved >= DRAG_START and len(self._lasso) >= 3:
            poly = np.array([[p.x(), p.y()] for p in self._lasso], np.float64)
            hit = points_in_polygon(self.screen_xy.astype(np.float64), poly)
        else:
            hit = np.zeros(len(self.ids), bool)
            i = self.nearest(event.position())
            if i >= 0:
                hit[i] = True
        self.selected = (self.selected | hit) if add else hit
        self._press, self._lasso = None, []
        self._selection_done(True)

    def leaveEvent(self, event) -> None:
        self._set_hover(-1)
        super().leaveEvent(event)

    def _set_hover(self, index: int) -> None:
        if index == self._hover:
            return
        self._hover = index
        if index < 0:
            self.tip.hide()
            self.hovered.emit("")
        else:
            self._show_tip(index)
            self.hovered.emit(self.ids[index])
        self.update()

    def _show_tip(self, index: int) -> None:
        text = self.texts[index]
        text = text if len(text) <= TIP_CHARS else text[:TIP_CHARS - 1] + "…"
        kind = "log" if self.is_log[index] else "synthetic"
        if self.gap[index]:
            kind += " · no synthetic row among its nearest queries"
        if self.placed[index]:
            kind += " · added since the cluster run: placed near its nearest queries (run clustering to fit it)"
        self.tip.setText(f"{text}\n— cluster {self.clusters[index]} · {kind}")
        self.tip.adjustSize()
        x, y = self.screen_xy[index]
        left = int(min(max(4, x + 12), self.width() - self.tip.width() - 4))
        top = int(y + 12 if y + 12 + self.tip.height() < self.height() else y - 12 - self.tip.height())
        self.tip.move(left, max(4, top))
        self.tip.show()
        self.tip.raise_()

    def hover_text(self) -> str:
        return self.tip.text() if self.tip.isVisible() else ""
