"""Cost of laying out the cluster map's labels (``ClusterMap.label_boxes``, run on every resize).

Each label tries up to 75 spots. The layout scanned every point for each spot (and intersected
each spot with every label placed so far, one Qt call each); it now asks a summed-area table of
the points per 4-pixel cell, built once per layout, and compares against the placed labels as
one array. "scan" below is the old way, kept here as the reference: both layouts run
alternately on the same map, and the figures are the ratio and each one's median.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/label_layout.py [--clusters 200] [--points 10000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from PySide6.QtCore import QRectF  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from curator.gui.cluster_map import ClusterMap  # noqa: E402


class ScanMap(ClusterMap):
    """The layout as it was: every point scanned and every placed label intersected, per spot."""

    def label_boxes(self) -> dict[int, QRectF]:
        from PySide6.QtGui import QFontMetrics

        metrics = QFontMetrics(self.font())
        placed: list[QRectF] = []
        out: dict[int, QRectF] = {}
        clusters, counts = np.unique(self.clusters, return_counts=True)
        sizes = {int(c): int(n) for c, n in zip(clusters, counts) if int(c) in self.labels}
        for cluster in sorted(sizes, key=lambda c: (-sizes[c], c)):
            size = metrics.boundingRect(self.label_text(cluster)).adjusted(-4, -2, 4, 2).size()
            best, best_score = None, None
            for order, row in enumerate(self._spots(cluster, float(size.width()), float(size.height()))):
                spot = QRectF(row[0], row[1], row[2] - row[0], row[3] - row[1])
                overlap = sum(_area(spot.intersected(other)) for other in placed)
                covered = points_in(self.screen_xy, spot)
                if overlap == 0 and covered == 0:
                    best = spot
                    break
                score = (overlap, covered, order)
                if best_score is None or score < best_score:
                    best, best_score = spot, score
            placed.append(best)
            out[cluster] = best
        return out


def _area(rect: QRectF) -> float:
    return max(0.0, rect.width()) * max(0.0, rect.height())


def points_in(xy: np.ndarray, box: QRectF) -> int:
    x, y = xy[:, 0], xy[:, 1]
    return int(((x >= box.left()) & (x <= box.right()) & (y >= box.top()) & (y <= box.bottom())).sum())


def crowded(cls, clusters: int, points: int, size: tuple[int, int]) -> ClusterMap:
    rng = np.random.default_rng(0)
    centres = rng.uniform(0, 10, size=(clusters, 2))
    labels = rng.integers(0, clusters, size=points)
    xy = centres[labels] + rng.normal(0, 0.25, size=(points, 2))
    m = cls()
    m.resize(*size)
    ids = [f"q{i}" for i in range(points)]
    m.set_points(ids, xy, labels, np.arange(points) % 3 == 0, ids)
    m.set_coverage([], {c: f"topic {c} · configuration · packages" for c in range(clusters)})
    return m


def summary(m: ClusterMap, boxes: dict[int, QRectF]) -> str:
    rects = list(boxes.values())
    overlaps = sum(rects[a].intersects(rects[b]) for a in range(len(rects)) for b in range(a + 1, len(rects)))
    hidden = sum(points_in(m.screen_xy, r) for r in rects)
    return f"{len(rects)} labels, {overlaps} overlapping pairs, {hidden} points under a label"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--points", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    QApplication.instance() or QApplication([])
    print(f"load {open('/proc/loadavg').read().split()[:3]}")
    for size in ((650, 560), (1400, 900)):
        maps = {"grid": crowded(ClusterMap, args.clusters, args.points, size),
                "scan": crowded(ScanMap, args.clusters, args.points, size)}
        times: dict[str, list[float]] = {name: [] for name in maps}
        for _ in range(args.rounds):  # alternate A/B on the same maps
            for name, m in maps.items():
                started = time.perf_counter()
                boxes = m.label_boxes()
                times[name].append(time.perf_counter() - started)
        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"{args.clusters} clusters, {args.points} points, map {size[0]}x{size[1]}: "
              f"scan/grid {med['scan'] / med['grid']:.1f}x (median of {args.rounds}: scan {1000 * med['scan']:.1f} ms, "
              f"grid {1000 * med['grid']:.1f} ms)")
        for name, m in maps.items():
            print(f"  {name}: {summary(m, m.label_boxes())}")
    print(f"load {open('/proc/loadavg').read().split()[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
