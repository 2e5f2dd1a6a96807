"""GUI responsiveness benchmark (Qt offscreen). Prints figures, asserts nothing.

- window shown: wall time from launching ``python -m curator.gui --benchmark-startup`` to the
  "window shown" line (target <= 2 s);
- GUI-thread stall: a 20 ms QTimer heartbeat while the Clusters tab runs a real clustering
  (tfidf + UMAP in core's worker process) through its TaskWorker; max / p99 stall (target <= 100 ms);
- decision commit: core ``decisions.decide`` and the Review tab's full A-key path (commit + advance + render);
- 100k-row Queries table: first paint and a scroll through it, page by page;
- cluster map: first paint (cache build) and repaint with 10k points.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/gui.py [--queries 3000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Settings (recent projects) go to a throwaway folder, never the user's own (curator.gui.settings);
# the app processes started from here inherit it.
os.environ["CURATOR_CONFIG_DIR"] = tempfile.mkdtemp(prefix="curator-bench-settings-")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from PySide6.QtCore import QElapsedTimer, QPointF, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from curator.core.queries.rows import add_query  # noqa: E402
from curator.core.store import open_project  # noqa: E402

HEARTBEAT_MS = 20


def build_project(path: Path, n: int) -> None:
    from cluster import sentences  # bench/cluster.py

    db = open_project(path, create=True)
    with db.conn:
        for i, (text, _) in enumerate(sentences(n)):
            add_query(db, text, "log" if i % 4 == 0 else "synthetic", query_type="log" if i % 4 == 0 else "factoid")
    db.close()


def window_shown(project: Path, runs: int = 3) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "curator.gui", "--benchmark-startup", "--reviewer", "bench",
                                 str(project)], stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
        for line in proc.stdout:
            if line.startswith("window shown"):
                out.append(time.perf_counter() - start)
                break
        proc.wait()
    return out


class Heartbeat:
    """Records the gaps between 20 ms timer ticks on the GUI thread."""

    def __init__(self, phase=lambda: "") -> None:
        self.clock = QElapsedTimer()
        self.gaps: list[float] = []
        self.phases: list[str] = []
        self.phase = phase  # what the task reported last, to attribute the worst stall
        self.timer = QTimer()
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.clock.start()
        self.timer.start()

    def _tick(self) -> None:
        self.gaps.append(self.clock.restart())
        self.phases.append(self.phase())

    def stop(self) -> str:
        self.timer.stop()
        stalls = np.maximum(np.array(self.gaps[1:] or [0], float) - HEARTBEAT_MS, 0)
        worst = int(np.argmax(stalls)) + 1
        over = int((stalls > 100).sum())
        return (f"ticks={len(self.gaps)} max stall={stalls.max():.0f} ms (phase '{self.phases[worst - 1] if worst <= len(self.phases) else ''}') "
                f"p99={np.percentile(stalls, 99):.0f} ms stalls>100ms={over} mean gap={np.mean(self.gaps[1:] or [0]):.1f} ms")


def wait_for(app, predicate, timeout: float) -> None:
    end = time.perf_counter() + timeout
    while not predicate() and time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.002)


def clustering_stall(app, project: Path) -> None:
    from curator.gui.clusters_view import ClustersView

    db = open_project(project)
    view = ClustersView(db, project)
    view.resize(1100, 700)
    view.show()
    for label, k in (("cold (spawn + numba JIT)", 0), ("warm", 10)):
        done = []
        view.task_finished.connect(lambda kind, result, d=done: d.append(result))
        beat = Heartbeat(lambda: view.progress.format() if view.progress.isVisible() else "after")
        beat.start()
        start = time.perf_counter()
        view.k_spin.setValue(k)
        view.run_clustering()
        wait_for(app, lambda: done or (view.worker is None and view.last_error), 900)
        wait_for(app, lambda: view.worker is None, 30)
        summary = beat.stop()
        took = time.perf_counter() - start
        result = done[0] if done else {"error": view.last_error}
        print(f"clustering {label}: {took:.1f} s, k={result.get('k')}, timings={result.get('timings')}; "
              f"heartbeat {summary}")
    view.close()
    db.close()


def decision_commit(app, project: Path, n: int = 100) -> None:
    from curator.core.review import decisions
    from curator.core.review.sample import build_queue
    from curator.gui.review_view import ReviewView

    db = open_project(project)
    build_queue(db, size=2 * n + 10)
    ids = [r[0] for r in db.execute("SELECT query_id FROM review_queue ORDER BY position LIMIT ?", [n]).fetchall()]
    core = []
    for qid in ids:
        t = time.perf_counter()
        decisions.decide(db, qid, "approve", reviewer="bench")
        core.append((time.perf_counter() - t) * 1000)
    view = ReviewView(db, "bench2")
    view.show()
    full = []
    for _ in range(n):
        t = time.perf_counter()
        view.decide("approve")
        app.processEvents()
        full.append((time.perf_counter() - t) * 1000)
    print(f"decision commit (core decisions.decide): median {statistics.median(core):.2f} ms, max {max(core):.2f} ms")
    print(f"decision in the Review tab (commit + advance + render): median {statistics.median(full):.1f} ms, "
          f"max {max(full):.1f} ms")
    view.close()
    db.close()


def queries_table(app, rows: int = 100_000) -> None:
    from curator.gui.queries_view import QueriesView

    with tempfile.TemporaryDirectory() as tmp:
        db = open_project(Path(tmp) / "e.curator", create=True)
        view = QueriesView(db)
        data = [{"id": f"q{i}", "text": f"how do I configure option {i} for the sync engine", "query_type": "factoid",
                 "source": "log" if i % 4 == 0 else "synthetic", "status": "pending", "cluster": i % 12,
                 "cluster_label": f"topic {i % 12}", "reviewer": None} for i in range(rows)]
        t = time.perf_counter()
        view.set_rows(data)
        load = time.perf_counter() - t
        view.resize(1100, 700)
        t = time.perf_counter()
        view.show()
        view.grab()
        first = time.perf_counter() - t
        bar = view.table.verticalScrollBar()
        steps = np.linspace(0, bar.maximum(), 200).astype(int)
        times = []
        for value in steps:
            t = time.perf_counter()
            bar.setValue(int(value))
            view.table.viewport().grab()  # a real paint of the visible rows (repaint() is a no-op offscreen)
            times.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        view.search.setText("option 99")
        filt = time.perf_counter() - t
        print(f"queries table {rows} rows: set_rows {load * 1000:.0f} ms, first paint {first * 1000:.0f} ms, "
              f"scroll 200 jumps: median {statistics.median(times):.1f} ms max {max(times):.1f} ms, "
              f"text filter {filt * 1000:.0f} ms ({view.visible_count()} shown)")
        view.close()
        db.close()


def cluster_map(app, n: int = 10_000) -> None:
    from curator.gui.cluster_map import ClusterMap

    rng = np.random.default_rng(0)
    centres = rng.normal(scale=10, size=(12, 2))
    labels = rng.integers(0, 12, n)
    xy = centres[labels] + rng.normal(size=(n, 2))
    m = ClusterMap()
    m.resize(900, 650)
    m.set_points([f"q{i}" for i in range(n)], xy, labels, rng.random(n) < 0.25, [f"query {i}" for i in range(n)])
    m.show()
    t = time.perf_counter()
    m.grab()
    first = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(20):
        m.grab()  # cached points layer + overlays
    again = (time.perf_counter() - t) / 20
    t = time.perf_counter()
    m.select_cluster(3)
    m.repaint()
    sel = time.perf_counter() - t
    t = time.perf_counter()
    for i in range(200):
        m.nearest(QPointF(*map(float, m.screen_xy[i])))
    hover = (time.perf_counter() - t) / 200
    print(f"cluster map {n} points: first paint {first * 1000:.0f} ms, repaint {again * 1000:.1f} ms, "
          f"select cluster + repaint {sel * 1000:.0f} ms, hover lookup {hover * 1000:.2f} ms")
    m.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=3000, help="queries in the clustering project")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "bench.curator"
        build_project(project, args.queries)
        shown = window_shown(project)
        print(f"window shown from process launch ({args.queries} queries): "
              + ", ".join(f"{s:.2f} s" for s in shown))
        cluster_map(app)
        queries_table(app)
        clustering_stall(app, project)
        decision_commit(app, project)
    from curator.core.clustering.cluster import shutdown_worker

    shutdown_worker()


if __name__ == "__main__":
    main()
