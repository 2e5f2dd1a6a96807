"""Inter-reviewer agreement (raw rate and Cohen's kappa) from the decisions journal."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import sqlite_utils

from curator.core.store import loads

LABELS = {"approve": "approved", "reject": "rejected", "unanswerable": "unanswerable"}


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
    """reviewer -> {query_id: label} from each reviewer's latest done labelling decision."""
    out: dict[str, dict[str, str]] = {}
    sql = "SELECT query_id, reviewer, action, after FROM decisions WHERE state='done' ORDER BY id"
    for qid, reviewer, action, after in db.execute(sql).fetchall():
        label = LABELS.get(action)
        if action == "adjudicate":
            label = (loads(after) or {}).get("status")
        if label in LABELS.values():
            out.setdefault(reviewer or "", {})[qid] = label
    return out


def agreement(db: sqlite_utils.Database) -> dict:
    """Per reviewer pair: overlap count, raw agreement and kappa on queries both decided."""
    labels = _latest_labels(db)
    pairs = []
    for r1, r2 in combinations(sorted(labels), 2):
        common = sorted(set(labels[r1]) & set(labels[r2]))
        a = [labels[r1][q] for q in common]
        b = [labels[r2][q] for q in common]
        raw = sum(x == y for x, y in zip(a, b)) / len(common) if common else None
        pairs.append({"a": r1, "b": r2, "n": len(common), "agreement": raw,
                      "kappa": cohen_kappa(a, b) if common else None})
    return {"reviewers": sorted(labels), "pairs": pairs}
