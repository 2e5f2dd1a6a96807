"""The Clusters tab on a real clustered project: map drawn, hover, click and lasso, counts, workers."""

from __future__ import annotations

import json
from pathlib import Path

import shutil

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPointF, QSettings, Qt
from PySide6.QtGui import QColor, QMouseEvent

from curator.core.corpus import documents
from curator.core.review import decisions
from curator.core.clustering.cluster import cluster_queries, shutdown_worker
from curator.core.queries.rows import add_query
from curator.core.review.sample import build_queue
from curator.core.store import open_project
from curator.gui.cluster_map import points_in_polygon
from curator.gui import clusters_view
from curator.gui.clusters_view import ClustersView
from curator.gui.window import MainWindow

# Three clearly different support topics, shared with the other clustering tests.
TOPICS = json.loads((Path(__file__).parents[1] / "data" / "topic_queries.json").read_text())
PER_TOPIC = 20


def _fill(path) -> None:
    db = open_project(path)
    chunk = documents.list_chunks(db)[0]["id"]
    with db.conn:
        for base in TOPICS.values():
            for i in range(PER_TOPIC):
                text = f"{base[i % len(base)]} {['please', 'help', 'today', 'now', 'again'][i % 5]} {i}"
                if i % 3 == 0:  # a third are real (log) queries
                    add_query(db, text, "log", query_type="log")
                else:
                    add_query(db, text + " <b>x</b>", "synthetic", query_type="factoid", gold_chunk_ids=[chunk])
    db.close()


@pytest.fixture(scope="module")
def clustered_template(tmp_path_factory, _ingested_template):
    path = tmp_path_factory.mktemp("clusters") / "clustered.curator"
    shutil.copy(_ingested_template, path)
    _fill(path)
    db = open_project(path)
    cluster_queries(db, k=3, seed=0)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    yield path
    shutdown_worker()


@pytest.fixture
def project(tmp_path, clustered_template):
    path = tmp_path / "p.curator"
    shutil.copy(clustered_template, path)
    return path


@pytest.fixture
def view(qtbot, project):
    db = open_project(project)
    v = _shown_view(qtbot, db, project)
    yield v
    v.close()
    db.close()


def _mouse(widget, kind, pos, buttons=Qt.LeftButton, button=Qt.LeftButton):
    point = QPointF(*pos)
    event = QMouseEvent(kind, point, widget.mapToGlobal(point), button, buttons, Qt.NoModifier)
    widget.event(event) if kind != QEvent.MouseMove else widget.mouseMoveEvent(event)


def _drag(widget, points):
    _mouse(widget, QEvent.MouseButtonPress, points[0])
    for p in points[1:]:
        _mouse(widget, QEvent.MouseMove, p, button=Qt.NoButton)
    _mouse(widget, QEvent.MouseButtonRelease, points[-1], buttons=Qt.NoButton)


def _colours(image, step=3) -> set:
    return {image.pixelColor(x, y).name() for x in range(0, image.width(), step) for y in range(0, image.height(), step)}


def test_map_drawn_with_cluster_colours(view, tmp_path):
    m = view.map
    assert len(m.ids) == 3 * PER_TOPIC
    assert set(np.unique(m.clusters)) == {0, 1, 2}
    assert m.is_log.sum() == 3 * len(range(0, PER_TOPIC, 3))
    image = m.grab().toImage()
    assert image.save(str(tmp_path / "map.png"))
    assert view.grab().save(str(tmp_path / "clusters_tab.png"))
    from curator.gui.cluster_map import PALETTE
    found = _colours(image, 1)
    assert len(found) > 20  # not blank
    assert sum(c in found for c in PALETTE[:3]) == 3  # one colour per cluster


def test_hover_shows_plain_text_and_click_selects(view, qtbot):
    m = view.map
    i = int(np.flatnonzero(~m.is_log)[0])
    x, y = m.screen_xy[i]
    _mouse(m, QEvent.MouseMove, (x, y), buttons=Qt.NoButton, button=Qt.NoButton)
    j = m.nearest(QPointF(x, y))  # overlapping points: the nearest one is the one shown
    assert m.hover_text().startswith(m.texts[j][:20])
    assert "<b>x</b>" in m.hover_text() and m.tip.textFormat() == Qt.PlainText
    with qtbot.waitSignal(view.selection_changed) as blocker:
        _mouse(m, QEvent.MouseButtonPress, (x, y))
        _mouse(m, QEvent.MouseButtonRelease, (x, y), buttons=Qt.NoButton)
    assert blocker.args[0] == {m.ids[j]}
    with qtbot.waitSignal(view.selection_changed) as blocker:
        view.clear_button.click()
    assert blocker.args[0] is None


def test_lasso_selects_the_points_inside(view, qtbot):
    m = view.map
    w, h = m.width(), m.height()
    lasso = [(5, 5), (w * 0.55, 5), (w * 0.55, h * 0.6), (w * 0.3, h - 5), (5, h - 5)]
    expected = {m.ids[i] for i in np.flatnonzero(points_in_polygon(m.screen_xy.astype(float), np.array(lasso)))}
    assert 0 < len(expected) < len(m.ids)
    with qtbot.waitSignal(view.selection_changed) as blocker:
        _drag(m, lasso)
    assert blocker.args[0] == expected
    assert set(m.selected_ids()) == expected


def test_points_in_polygon_square():
    xy = np.array([[1, 1], [5, 5], [2, 3], [-1, 2], [3.9, 0.1]])
    square = np.array([[0, 0], [4, 0], [4, 4], [0, 4]])
    assert points_in_polygon(xy, square).tolist() == [True, False, True, False, True]


def test_cluster_list_counts(qtbot, project):
    db = open_project(project)
    build_queue(db, size=9, allocation="equal")
    queued = [r[0] for r in db.execute("SELECT query_id FROM review_queue ORDER BY position").fetchall()]
    decisions.decide(db, queued[0], "approve", reviewer="t")
    decisions.decide(db, queued[1], "reject", reviewer="t")
    truth = {c: {"size": 0, "queued": 0, "reviewed": 0, "approved": 0} for c in range(3)}
    for qid, cluster, status in db.execute(
            "SELECT qc.query_id, qc.cluster, q.status FROM query_clusters qc JOIN queries q ON q.id = qc.query_id"):
        t = truth[cluster]
        t["size"] += 1
        t["queued"] += qid in queued
        t["reviewed"] += status != "pending"
        t["approved"] += status == "approved"
    v = ClustersView(db, project)
    qtbot.addWidget(v)
    rows = v.counts()
    assert [int(r[0]) for r in rows] == [0, 1, 2]
    for r in rows:
        t = truth[int(r[0])]
        assert r[1]  # a label
        assert (int(r[2]),) + tuple(int(x) for x in r[7:]) == (t["size"], t["queued"], t["reviewed"], t["approved"])
        assert int(r[3]) + int(r[5]) == t["size"]  # real + synthetic: every query of the fixture is one or the other
    assert sum(int(r[7]) for r in rows) == 9 and sum(int(r[8]) for r in rows) == 2
    # choosing a cluster row selects its points on the map
    with qtbot.waitSignal(v.selection_changed) as blocker:
        v.table.selectRow(1)
    assert len(blocker.args[0]) == int(rows[1][2])
    v.close()
    db.close()


def test_sampling_and_clustering_run_in_workers(view, qtbot):
    """Sampling also ranks suggested gold for the queued rows (MiniLM: the first call converts and loads the model)."""
    view.size_spin.setValue(6)
    with qtbot.waitSignal(view.task_finished, timeout=240000) as blocker:
        assert view.run_sampling() is not None
        assert view.busy() and not view.cluster_button.isEnabled()
    assert blocker.args[0] == "sample" and blocker.args[1]["queued"] == 6
    # announced only once idle: the next step can start from the signal (this raced before)
    assert not view.busy() and view.cluster_button.isEnabled()
    assert sum(int(r[7]) for r in view.counts()) == 6
    view.k_spin.setValue(4)
    outcomes = []  # the first signal wins: a failure must show its message, not a timeout
    view.task_finished.connect(lambda *args: outcomes.append(("finished", args)))
    view.task_failed.connect(lambda *args: outcomes.append(("failed", args)))
    progress = []
    worker = view.run_clustering()
    assert worker is not None, "the view refused to start clustering"
    worker.signals.progress.connect(lambda *args: progress.append(args))
    try:
        qtbot.waitUntil(lambda: bool(outcomes) and not view.busy(), timeout=240000)
    except qtbot.TimeoutError:
        pytest.fail(f"clustering gave no outcome in 240 s; progress seen: {progress}; status: {view.status.text()!r}")
    kind, args = outcomes[0]
    assert kind == "finished", args
    assert args[0] == "cluster" and args[1]["k"] == 4
    assert len(view.counts()) == 4 and len(set(np.unique(view.map.clusters))) == 4
    assert view.cluster_button.isEnabled()


def test_worker_error_reaches_a_dialog(qtbot, tmp_path):
    path = tmp_path / "tiny.curator"
    db = open_project(path, create=True)
    v = ClustersView(db, path)
    qtbot.addWidget(v)
    assert "No cluster run" in v.status.text()
    with qtbot.waitSignal(v.task_failed, timeout=30000) as blocker:
        v.run_clustering()
    assert "at least 3 queries" in blocker.args[0]
    assert v._dialog is not None and v._dialog.isVisible()
    v._dialog.close()
    v.close()
    db.close()


def test_window_lasso_filters_queries_tab(qtbot, project, tmp_path):
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat)
    win = MainWindow(project, settings=settings, reviewer="t")
    qtbot.addWidget(win)
    win.resize(1100, 700)
    win.show()
    win.tabs.setCurrentWidget(win.clusters_view)
    qtbot.waitExposed(win)
    assert win.queries_view.visible_count() == 3 * PER_TOPIC
    win.clusters_view.map.select_cluster(0)
    n = int((win.clusters_view.map.clusters == 0).sum())
    assert win.queries_view.visible_count() == n
    assert win.review_view.focus is not None and len(win.review_view.focus) == n  # the review view follows
    assert win.grab().save(str(tmp_path / "window_clusters.png"))
    win.clusters_view.map.clear_selection()
    assert win.queries_view.visible_count() == 3 * PER_TOPIC and win.review_view.focus is None
    win.close()


def _drop_synthetic(db, cluster: int) -> set[str]:
    """Delete a cluster's synthetic rows; returns its real queries' ids."""
    gone = [r[0] for r in db.execute("""SELECT q.id FROM queries q JOIN query_clusters qc ON qc.query_id = q.id
                                          WHERE qc.cluster = ? AND q.source = 'synthetic'""", [cluster])]
    real = {r[0] for r in db.execute("""SELECT q.id FROM queries q JOIN query_clusters qc ON qc.query_id = q.id
                                          WHERE qc.cluster = ? AND q.source = 'log'""", [cluster])}
    with db.conn:
        for query_id in gone:
            db.execute("DELETE FROM query_clusters WHERE query_id = ?", [query_id])
            db.execute("DELETE FROM queries WHERE id = ?", [query_id])
    return real


def test_real_queries_without_synthetic_rows_are_drawn_as_gaps(qtbot, project):
    """A cluster whose synthetic rows are gone: its real queries are gaps (red on the map, counted,
    the cluster's Gaps cell red), each cluster's label is on the map, and the button asks for a run."""
    db = open_project(project)
    cluster = 0
    real = _drop_synthetic(db, cluster)
    v = ClustersView(db, project)
    qtbot.addWidget(v)
    v.resize(1100, 650)
    v.show()
    qtbot.waitExposed(v)
    assert real <= set(v.map.gap_ids())  # (other clusters' real queries may be gaps too: they resemble each other)
    row = next(r for r in v.counts() if r[0] == str(cluster))
    assert int(row[3]) == len(real) and int(row[5]) == 0 and int(row[6]) == len(real)
    assert v.table.item(0, 6).foreground().color().name() == "#dc2626"
    total_real = db.execute("SELECT COUNT(*) FROM queries WHERE source = 'log'").fetchone()[0]
    assert f"{len(real)} of {total_real} real queries in clusters without synthetic rows" in v.status.text()
    assert set(v.map.label_positions()) == {0, 1, 2}
    image = v.map.grab().toImage()
    assert "#dc2626" in _colours(image, step=1)  # the red gap rings are drawn
    with qtbot.waitSignal(v.generate_for_gaps):
        v.gaps_button.click()
    v.close()
    db.close()


def test_generate_for_gaps_runs_in_the_generate_tab_on_the_gaps_chunks(qtbot, project, tmp_path):
    """The button goes through the Generate tab's task: its rows come from the chunks aimed at."""
    from curator.core.clustering.coverage import target_chunks
    from curator.core.generation.backends import FakeBackend
    from scripted import good_reply

    db = open_project(project)
    _drop_synthetic(db, 0)
    aimed = target_chunks(db)["chunk_ids"]  # before the run: its rows change the coverage
    win = MainWindow(project, settings=QSettings(str(tmp_path / "s.ini"), QSettings.IniFormat), reviewer="t")
    qtbot.addWidget(win)
    win.generate_view.backend_factory = lambda config: FakeBackend(good_reply)
    win.generate_view.count.setValue(2)
    with qtbot.waitSignal(win.generate_view.task_finished, timeout=240000) as blocker:
        win.clusters_view.gaps_button.click()
    assert win.tabs.currentWidget() is win.generate_view
    run = blocker.args[0]["run_id"]
    params = json.loads(db.execute("SELECT params FROM generation_runs WHERE id = ?", [run]).fetchone()[0])
    assert params["chunk_ids"] == aimed
    sources = [json.loads(r[0])[0] for r in db.execute("SELECT source_chunk_ids FROM queries WHERE run_id = ?", [run])]
    assert sources and set(sources) <= set(aimed)
    win.close()
    db.close()


def test_rows_added_after_clustering_are_drawn_hollow_in_their_cluster(qtbot, project, tmp_path):
    """Rows generated after the run (no vector cached yet) are embedded by a worker, then drawn
    hollow at their nearest clustered queries, counted in that cluster, and the status says so."""
    from curator.core.clustering import coverage
    from curator.gui.cluster_map import PALETTE

    db = open_project(project)
    topic = next(iter(TOPICS.values()))
    with db.conn:
        new = [add_query(db, f"{text} added later {i}", "synthetic", query_type="factoid")
               for i, text in enumerate(topic[:3])]
    v = ClustersView(db, project)
    qtbot.addWidget(v)
    v.resize(1100, 650)
    v.show()
    qtbot.waitExposed(v)
    qtbot.waitUntil(lambda: not v.placing(), timeout=120000)
    m = v.map
    assert set(new) <= set(m.placed_ids()) and len(m.placed_ids()) == len(new)
    assert len(m.ids) == 3 * PER_TOPIC + len(new)
    counted = {r["id"]: r["cluster"] for r in coverage.measure(db).rows}
    index = {q: i for i, q in enumerate(m.ids)}
    for query_id in new:
        assert m.clusters[index[query_id]] == counted[query_id] >= 0
    assert "3 added since the run drawn hollow" in v.status.text()
    rows = v.counts()
    assert all(r[0] != "-" for r in rows)  # every new row is placed: none left outside the clusters
    assert all(int(r[2]) == int(r[3]) + int(r[5]) for r in rows)  # Size = Real + Synthetic, placed rows included
    # A coverage gap's red ring is drawn on top of every point, and rows placed at their nearest clustered queries
    # can sit on a gap (all three did on 2026-12-07, umap-learn 0.5.12, pynndescent 0.7.0): the marker is checked
    # without the rings.
    m.set_coverage([], m.labels)
    image = m.grab().toImage()
    assert image.save(str(tmp_path / "placed.png"))
    boxes = m.label_boxes().values()
    hollow = [index[q] for q in new if not any(b.contains(QPointF(*m.screen_xy[index[q]])) for b in boxes)]
    assert hollow, "every placed point is under a label"
    for i in hollow:  # white inside, the cluster colour on the ring
        x, y = (int(round(float(c))) for c in m.screen_xy[i])
        assert image.pixelColor(x, y).name() == "#ffffff"
        ring = [image.pixelColor(x + dx, y) for dx in (-6, -5, -4, 4, 5, 6)]
        # antialiasing blends the ring's edge at fractional positions: one pixel of it is near the colour
        assert any(_close(c, QColor(PALETTE[int(m.clusters[i])])) for c in ring), [c.name() for c in ring]
    fitted = next(i for i in np.flatnonzero(~m.placed & ~m.is_log & ~m.gap)
                  if not any(b.contains(QPointF(*m.screen_xy[i])) for b in boxes))
    x, y = (int(round(float(c))) for c in m.screen_xy[fitted])
    assert image.pixelColor(x, y).name() != "#ffffff"  # a fitted point is filled
    v.close()
    db.close()


def _crowded_map(qtbot, clusters: int = 12):
    """A map of ``clusters`` small clusters packed side by side, each with a long label."""
    from curator.gui.cluster_map import ClusterMap

    m = ClusterMap()
    qtbot.addWidget(m)
    m.resize(650, 560)  # about the map's share of the window at its default size
    rng = np.random.default_rng(0)
    centres = [(c % 4 * 1.0, c // 4 * 0.6) for c in range(clusters)]
    xy = np.vstack([rng.normal(centre, 0.08, size=(10, 2)) for centre in centres])
    ids = [f"q{i}" for i in range(len(xy))]
    labels = np.repeat(np.arange(clusters), 10)
    m.set_points(ids, xy, labels, [i % 2 == 0 for i in range(len(xy))], ids)
    m.set_coverage([], {c: "configuration · installation · packages" for c in range(clusters)})
    m.show()
    qtbot.waitExposed(m)
    return m


def _points_in(xy, box) -> int:
    """The exact number of points inside ``box`` (edges included)."""
    x, y = xy[:, 0], xy[:, 1]
    return int(((x >= box.left()) & (x <= box.right()) & (y >= box.top()) & (y <= box.bottom())).sum())


def test_occupancy_grid_never_undercounts_and_is_zero_only_on_empty_boxes():
    """The label layout's occupancy grid against an exact count, on random points and boxes: at
    least the exact count, exactly 0 when the box holds no point, and close to it (a box counts
    only the cells it touches)."""
    from PySide6.QtCore import QRectF

    from curator.gui.cluster_map import CELL, Occupancy

    rng = np.random.default_rng(1)
    xy = rng.uniform(0, [640, 480], size=(3000, 2)).astype(np.float32)
    xy[:500] = rng.normal([200, 150], 20, size=(500, 2))  # a dense cluster
    grid = Occupancy(xy, 640, 480)
    empty = 0
    for _ in range(2000):
        w, h = rng.uniform(4, 160), rng.uniform(4, 40)
        box = QRectF(rng.uniform(0, 640 - w), rng.uniform(0, 480 - h), w, h)
        exact, counted = _points_in(xy, box), grid.count(box)
        assert counted >= exact
        empty += exact == 0
        grown = QRectF(box.left() - CELL, box.top() - CELL, box.width() + 2 * CELL, box.height() + 2 * CELL)
        assert counted <= _points_in(xy, grown)  # only the cells the box touches
    assert empty > 20, "some boxes must be empty for the zero case to be tested"
    tiny = QRectF(600, 20, 30, 10)
    assert Occupancy(np.array([[610.0, 25.0]], np.float32), 640, 480).count(tiny) == 1
    assert Occupancy(np.array([[610.0, 45.0]], np.float32), 640, 480).count(tiny) == 0


def test_cluster_labels_do_not_overlap(qtbot, tmp_path):
    """Twelve crowded clusters: the label boxes stay inside the map and no two intersect, where the
    first-choice spots (above each cluster's points) do collide."""
    from PySide6.QtCore import QRectF

    m = _crowded_map(qtbot)
    boxes = m.label_boxes()
    assert set(boxes) == set(range(12))
    for a in boxes:
        assert QRectF(m.rect()).contains(boxes[a])
        for b in boxes:
            if a < b:
                assert not boxes[a].intersects(boxes[b]), (a, b, boxes[a], boxes[b])
    assert sum(_points_in(m.screen_xy, box) for box in boxes.values()) == 0  # and no label hides a point
    # the naive layout (every label centred above its cluster) overlaps here: the test can fail
    naive = [QRectF(x - boxes[c].width() / 2, y - boxes[c].height(), boxes[c].width(), boxes[c].height())
             for c, (x, y) in m.label_positions().items()]
    assert any(naive[a].intersects(naive[b]) for a in range(len(naive)) for b in range(a + 1, len(naive)))
    assert m.grab().save(str(tmp_path / "labels.png"))


def _with_new_rows(project, count: int = 3) -> tuple:
    """The project's connection after adding ``count`` synthetic rows the cluster run never saw."""
    db = open_project(project)
    topic = next(iter(TOPICS.values()))
    with db.conn:
        new = [add_query(db, f"{text} added later {i}", "synthetic", query_type="factoid")
               for i, text in enumerate(topic[:count])]
    return db, new


def _close(a: QColor, b: QColor, tolerance: int = 24) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a.getRgb()[:3], b.getRgb()[:3]))


def _shown_view(qtbot, db, project) -> ClustersView:
    v = ClustersView(db, project)
    qtbot.addWidget(v)
    v.resize(1100, 650)
    v.show()
    qtbot.waitExposed(v)
    return v


def test_shutdown_cancels_the_placing_worker_and_its_late_signals_touch_nothing(qtbot, project):
    """The project is left while rows added since the run are being embedded: shutdown cancels the
    worker and its signals, arriving after the connection closed, neither read the project nor
    raise (pytest-qt fails the test on an exception in a slot)."""
    db, _ = _with_new_rows(project)
    v = _shown_view(qtbot, db, project)
    placer = v._placer
    assert placer is not None, "rows without a cached vector start a placing worker"
    v.shutdown()
    db.close()  # as the window does right after shutdown
    qtbot.waitUntil(lambda: not v.placing(), timeout=120000)
    qtbot.wait(50)  # any signal still queued is delivered
    assert placer.token.cancelled
    v.close()


def test_rows_added_while_placing_are_placed_too(qtbot, project, monkeypatch):
    """A row added while the placing worker runs, after it read what to embed: when that worker
    embedded nothing (here it is held, then returns 0), a second one places the new row too."""
    import threading

    from curator.gui import workers

    real, release, calls = workers.place_task, threading.Event(), []

    def held_first(db, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            release.wait(60)
            return 0
        return real(db, **kwargs)

    monkeypatch.setattr(workers, "place_task", held_first)
    db, new = _with_new_rows(project)
    v = _shown_view(qtbot, db, project)
    assert v.placing()
    with db.conn:
        new.append(add_query(db, "how do I reset my password added while placing", "synthetic", query_type="factoid"))
    v.refresh_counts()  # the tab is shown again: the new row is counted, the worker already runs
    assert v.unplaced == len(new)
    release.set()
    qtbot.waitUntil(lambda: len(calls) == 2 and not v.placing(), timeout=120000)
    assert sorted(v.map.placed_ids()) == sorted(new)
    assert v.unplaced == 0
    v.close()
    db.close()


def test_a_placing_failure_stays_in_the_status_line(qtbot, project, monkeypatch):
    """The placing worker fails: the status line keeps why (it used to be overwritten at once)."""
    from curator.core.errors import InputError
    from curator.gui import workers

    def failing(db, **kwargs):
        raise InputError("the run's embedder file is gone")

    monkeypatch.setattr(workers, "place_task", failing)
    db, new = _with_new_rows(project)
    v = _shown_view(qtbot, db, project)
    qtbot.waitUntil(lambda: not v.placing(), timeout=120000)
    qtbot.wait(50)
    assert v.unplaced == len(new)
    assert f"{len(new)} added since the run not on the map yet (could not place them: the run's embedder file is gone)" \
        in v.status.text()
    v.close()
    db.close()


def test_the_list_widens_so_labels_show_whole_until_the_user_drags_the_splitter(qtbot, project):
    """Nine count columns squeezed the stretching Label column to a few letters at the default size:
    the list now takes room from the map for its labels, never more than half, and once the user
    drags the splitter their width is kept."""
    db = open_project(project)
    v = ClustersView(db, project)
    qtbot.addWidget(v)
    v.resize(1200, 700)
    v.show()
    qtbot.waitExposed(v)
    v.refresh_counts()
    total = sum(v.splitter.sizes())
    assert v.splitter.sizes()[0] == total // 2  # the labels want more: the map keeps half
    v.resize(1600, 700)
    v.refresh_counts()
    needed = min(v.table.sizeHintForColumn(1), clusters_view.LABEL_MAX_WIDTH)
    assert v.table.horizontalHeader().sectionSize(1) >= needed > 40
    list_width, map_width = v.splitter.sizes()
    assert map_width >= list_width
    v.splitter.splitterMoved.emit(300, 1)  # what a drag of the handle emits
    v.splitter.setSizes([300, sum(v.splitter.sizes()) - 300])
    v.refresh_counts()
    assert v.splitter.sizes()[0] == 300
    v.close()
    db.close()
