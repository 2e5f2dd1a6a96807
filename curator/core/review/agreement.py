"""Inter-reviewer agreement (raw rate and Cohen's kappa), overall and per cluster.

Labels come from the decisions journal (a reviewer's own rows and rows imported by ``merge``):
each reviewer's label on a query is the status their latest live decision left it in.
Adjudications are not labels: the judge sees both decisions first, so counting the judge as
a reviewer would inflate agreement.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from typing import Optional

import sqlite_utils

from curator.core.review.adjudicate import standing_decisions

UNCLUSTERED = "unclustered"


def cohen_kappa(a: list[str], b: list[str]) -> float:
    """Cohen's kappa for two equal-length label lists (1.0 when chance agreement is total)."""
    n = len(a)
    if n == 0:
        return float("nan")
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if expected == 1.0:
        return 1.0
    return (observed - expected) / (1 - expected)


def _latest_labels(db: sqlite_utils.Database) -> dict[str, dict[str, str]]:
    """reviewer -> {query_id: status} from each reviewer's standing decision."""
    out: dict[str, dict[str, str]] = {}
    for qid, entry in standing_decisions(db).items():
        for name, decision in entry["reviewers"].items():
            out.setdefault(name, {})[qid] = decision["status"]
    return out


def _clusters(db: sqlite_utils.Database) -> dict[str, tuple[int, Optional[str]]]:
    """query id -> (cluster, label) in the active cluster run."""
    found = db.execute(
        """SELECT qc.query_id, qc.cluster, cl.label FROM cluster_runs cr
           JOIN query_clusters qc ON qc.run_id = cr.id
           LEFT JOIN clusters cl ON cl.run_id = cr.id AND cl.cluster = qc.cluster
           WHERE cr.active = 1""").fetchall()
    return {qid: (cluster, label) for qid, cluster, label in found}


def _scores(a: list[str], b: list[str]) -> dict:
    n = len(a)
    return {"n": n, "agreement": sum(x == y for x, y in zip(a, b)) / n if n else None,
            "kappa": cohen_kappa(a, b) if n else None}


def _cluster_order(item) -> tuple:
    cluster = item[0][0]
    return (1, 0) if cluster == UNCLUSTERED else (0, cluster)


def _by_cluster(common: list[str], la: dict, lb: dict, clusters: dict) -> list[dict]:
    groups: dict = {}
    for qid in common:
        groups.setdefault(clusters.get(qid, (UNCLUSTERED, None)), []).append(qid)
    out = []
    for (cluster, label), qids in sorted(groups.items(), key=_cluster_order):
        out.append({"cluster": cluster, "label": label, **_scores([la[q] for q in qids], [lb[q] for q in qids])})
    return out


def agreement(db: sqlite_utils.Database) -> dict:
    """Per reviewer pair: overlap, raw agreement and kappa, overall and per cluster."""
    labels = _latest_labels(db)
    clusters = _clusters(db)
    pairs = []
    for r1, r2 in combinations(sorted(labels), 2):
        common = sorted(set(labels[r1]) & set(labels[r2]))
        scores = _scores([labels[r1][q] for q in common], [labels[r2][q] for q in common])
        pairs.append({"a": r1, "b": r2, **scores,
                      "by_cluster": _by_cluster(common, labels[r1], labels[r2], clusters)})
    return {"reviewers": sorted(labels), "pairs": pairs,
            "decided": {name: len(found) for name, found in sorted(labels.items())}}

