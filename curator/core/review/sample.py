"""Stratified sampling of the review queue over the active cluster run, and coverage.

Strata are the clusters of the active run (one stratum "all" when nothing is clustered).
Rows already reviewed or queued are never drawn again, so running it twice tops up.
"""

from __future__ import annotations

import random
from typing import Optional

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError

ALLOCATIONS = ("proportional", "equal")
NEGATIVE_BOOST = 2.0  # how much more a query with negative feedback weighs in a draw


def draw_weight(row: dict, negative_boost: float = NEGATIVE_BOOST) -> float:
    """A row's weight in a draw: a query that got negative feedback weighs ``negative_boost`` times
    more (the review queue; coverage-aimed generation weighs real traffic by it too)."""
    return negative_boost if (row.get("negative_count") or 0) > 0 else 1.0


def _candidates(db: sqlite_utils.Database) -> dict[str, list[dict]]:
    """Pending, unqueued queries grouped by their cluster in the active run."""
    rows = store.rows(db, """SELECT q.id, q.query_type, q.negative_count, q.quality, qc.cluster
        FROM queries q
        LEFT JOIN cluster_runs cr ON cr.active = 1
        LEFT JOIN query_clusters qc ON qc.run_id = cr.id AND qc.query_id = q.id
        WHERE q.status = 'pending' AND q.id NOT IN (SELECT query_id FROM review_queue)
        ORDER BY q.id""")
    strata: dict[str, list[dict]] = {}
    for row in rows:
        strata.setdefault("all" if row["cluster"] is None else str(row["cluster"]), []).append(row)
    return strata


def allocate(sizes: dict[str, int], size: int, allocation: str, minimum: int) -> dict[str, int]:
    """Quota per stratum summing to min(size, population), each within its population."""
    total = sum(sizes.values())
    size = min(size, total)
    weights = sizes if allocation == "proportional" else {s: 1 for s in sizes}
    quota = {s: min(sizes[s], minimum) for s in sizes}
    while sum(quota.values()) < size:
        open_strata = [s for s in sizes if quota[s] < sizes[s]]
        # Give the next row to the stratum furthest below its weighted share.
        weight_sum = sum(weights[s] for s in open_strata)
        target = max(open_strata, key=lambda s: (weights[s] / weight_sum * size - quota[s], s))
        quota[target] += 1
    while sum(quota.values()) > size:  # minimums exceeded a small size: trim the largest quotas
        quota[max(quota, key=lambda s: (quota[s], s))] -= 1
    return quota


def _weighted_draw(rows: list[dict], n: int, rng: random.Random, negative_boost: float,
                   unanswerable_share: float) -> list[dict]:
    """Draw n rows without replacement: negative-feedback rows weigh more; a share of unanswerable."""
    unanswerable = [r for r in rows if r["query_type"] == "unanswerable"]
    others = [r for r in rows if r["query_type"] != "unanswerable"]
    want_unanswerable = min(len(unanswerable), round(n * unanswerable_share))
    picked = rng.sample(unanswerable, want_unanswerable)
    pool = others + [r for r in unanswerable if r not in picked]
    while len(picked) < n and pool:
        weights = [draw_weight(r, negative_boost) for r in pool]
        choice = rng.choices(range(len(pool)), weights=weights)[0]
        picked.append(pool.pop(choice))
    return picked


def best_first(rows: list[dict]) -> list[dict]:
    """Rows by generation quality score, best first; unscored rows (logs, manual) keep their order, last.

    The draw decides which rows a cluster gets; this only decides the order a reviewer meets them."""
    return sorted(rows, key=lambda r: (r.get("quality") is None, -(r.get("quality") or 0.0)))


def build_queue(db: sqlite_utils.Database, size: int, allocation: str = "proportional",
                negative_boost: float = NEGATIVE_BOOST,
                unanswerable_share: float = 0.15, min_per_cluster: int = 1, seed: int = 0) -> dict:
    """Append a stratified sample to the review queue; returns what was drawn per stratum."""
    if allocation not in ALLOCATIONS:
        raise InputError(f"unknown allocation {allocation!r}; use {' or '.join(ALLOCATIONS)}")
    if size < 1 or negative_boost <= 0 or not 0 <= unanswerable_share <= 1 or min_per_cluster < 0:
        raise InputError("--size must be ≥ 1, --negative-boost > 0 and --unanswerable-share within 0..1")
    strata = _candidates(db)
    quota = allocate({s: len(rows) for s, rows in strata.items()}, size, allocation, min_per_cluster)
    rng = random.Random(seed)
    run = db.execute("SELECT id FROM cluster_runs WHERE active = 1").fetchone()
    position = db.execute("SELECT COALESCE(MAX(position), 0) FROM review_queue").fetchone()[0]
    drawn: dict[str, int] = {}
    with db.conn:
        for stratum in sorted(strata):
            drawn_rows = _weighted_draw(strata[stratum], quota[stratum], rng, negative_boost, unanswerable_share)
            for row in best_first(drawn_rows):
                position += 1
                reason = {"stratum": stratum, "quota": quota[stratum], "allocation": allocation,
                          "negative": row["negative_count"] > 0, "seed": seed}
                db.execute("INSERT INTO review_queue (query_id, position, cluster_run, cluster, stratum, reason, added_at)"
                           " VALUES (?,?,?,?,?,?,?)", [row["id"], position, run[0] if run else None, row["cluster"],
                                                       stratum, store.dumps(reason), store.now()])
                drawn[stratum] = drawn.get(stratum, 0) + 1
    return {"queued": sum(drawn.values()), "by_stratum": drawn, "clustered": run is not None,
            "queue_size": position}


def coverage(db: sqlite_utils.Database) -> list[dict]:
    """Per cluster of the active run: label, population, synthetic, log, queued, reviewed, approved."""
    return store.rows(db, """SELECT COALESCE(qc.cluster, -1) AS cluster, COALESCE(cl.label, 'unclustered') AS label,
            COUNT(*) AS population, SUM(q.source = 'synthetic') AS synthetic, SUM(q.source = 'log') AS log,
            SUM(r.query_id IS NOT NULL) AS queued, SUM(q.status != 'pending') AS reviewed,
            SUM(q.status = 'approved') AS approved
        FROM queries q
        LEFT JOIN cluster_runs cr ON cr.active = 1
        LEFT JOIN query_clusters qc ON qc.run_id = cr.id AND qc.query_id = q.id
        LEFT JOIN clusters cl ON cl.run_id = cr.id AND cl.cluster = qc.cluster
        LEFT JOIN review_queue r ON r.query_id = q.id
        GROUP BY 1, 2 ORDER BY 1""")


def queue_entry(db: sqlite_utils.Database, query_id: str) -> Optional[dict]:
    """Why a query is in the review queue: position, stratum and the draw's reason (None if not queued)."""
    found = store.rows(db, "SELECT position, cluster, stratum, reason FROM review_queue WHERE query_id = ?", [query_id])
    if not found:
        return None
    entry = found[0]
    entry["reason"] = store.loads(entry["reason"], {})
    return entry
