"""The 2x2 of context recall and faithfulness: each trace routed to the component to fix.

Routing follows the seed article (evaluating-retrieval.txt, "Retrieval failure or generation
failure: the 2x2"), with its starting thresholds recall < 0.5 and faithfulness < 0.7. A trace
lacking either score is "unscored". Calibration: with traces a reviewer marked right or wrong,
the thresholds that best separate them (wrong = not healthy) on that subset are reported, with
the traces that would change quadrant under them.
"""

from __future__ import annotations

from collections import Counter
from typing import Optional

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError
from curator.core.diagnosis.faithfulness import judge_summary, statement_recall
from curator.core.diagnosis.recall import context_recall, uses_ids
from curator.core.diagnosis.traces import gold_ids_for

RECALL_THRESHOLD = 0.5
FAITH_THRESHOLD = 0.7
QUADRANTS = ("healthy", "generation_failure", "retrieval_failure", "both_broken")
ROUTING = {
    "healthy": "healthy: both components are working; ship it",
    "generation_failure": ("generation failure: context present, model ignored it; check for lost-in-the-middle, "
                           "tighten the prompt to stay within context, or reduce k"),
    "retrieval_failure": ("retrieval failure: faithful to bad context; fix the retriever (chunking, embedding "
                          "model, or BM25 to hybrid)"),
    "both_broken": "both broken: fix retrieval first and re-measure",
    "unscored": ("unscored: recall needs gold chunk ids or a judged reference answer, faithfulness judged "
                 "claims"),
}
# "N of M wrong answers are ..." phrasing of each failure quadrant.
SLICE_WORDS = {
    "generation_failure": "generation failures with the context present: fix the prompt or reduce k",
    "retrieval_failure": "retrieval failures faithful to bad context: fix the retriever",
    "both_broken": "failures of both retrieval and generation: fix retrieval first",
}


def quadrant(recall: Optional[float], faithfulness: Optional[float], recall_threshold: float = RECALL_THRESHOLD,
             faith_threshold: float = FAITH_THRESHOLD) -> str:
    """The seed's routing: a score equal to its threshold counts as high."""
    if recall is None or faithfulness is None:
        return "unscored"
    low_recall, low_faith = recall < recall_threshold, faithfulness < faith_threshold
    if low_recall and low_faith:
        return "both_broken"
    if low_recall:
        return "retrieval_failure"
    return "generation_failure" if low_faith else "healthy"


def refresh_recall(db: sqlite_utils.Database) -> None:
    """Recompute every trace's recall against the current gold set (reviews after the import
    count): from ids where it can, else from the judged statements of the reference answer."""
    rows = db.execute("""SELECT t.id, t.retrieved_ids, t.retrieved_texts, t.reference_ids, q.id, q.status,
                                q.gold_chunk_ids FROM traces t LEFT JOIN queries q ON q.id = t.query_id""").fetchall()
    with db.conn:
        for tid, retrieved, texts, reference, qid, status, gold in rows:
            query = {"id": qid, "status": status, "gold_chunk_ids": gold} if qid else None
            ids, basis = gold_ids_for(query, store.loads(reference, []))
            retrieved_ids = store.loads(retrieved, [])
            if uses_ids(ids, retrieved_ids, store.loads(texts, [])):
                recall = context_recall(ids, retrieved_ids)
            else:
                recall, basis = statement_recall(db, tid)
            db.execute("UPDATE traces SET context_recall = ?, recall_basis = ? WHERE id = ?", [recall, basis, tid])


def trace_rows(db: sqlite_utils.Database) -> list[dict]:
    """Traces with their query's type and cluster (active cluster run)."""
    return store.rows(
        db,
        """SELECT t.id, t.question, t.query_id, t.matched_by, t.context_recall, t.faithfulness, t.human_label,
                  q.query_type, q.status AS query_status, qc.cluster, cl.label AS cluster_label
           FROM traces t LEFT JOIN queries q ON q.id = t.query_id
           LEFT JOIN cluster_runs cr ON cr.active = 1
           LEFT JOIN query_clusters qc ON qc.run_id = cr.id AND qc.query_id = t.query_id
           LEFT JOIN clusters cl ON cl.run_id = cr.id AND cl.cluster = qc.cluster
           ORDER BY t.created_at, t.id""",
    )


def _cluster_name(row: dict) -> str:
    if row["cluster"] is None:
        return "(no cluster)"
    return row["cluster_label"] or f"cluster {row['cluster']}"


def _counts_by(rows: list[dict], key) -> dict[str, dict[str, int]]:
    out: dict[str, Counter] = {}
    for row in rows:
        out.setdefault(key(row), Counter())[row["quadrant"]] += 1
    return {name: dict(counts) for name, counts in sorted(out.items())}


def biggest_failure_slice(by_cluster: dict, by_type: dict) -> Optional[dict]:
    """The slice (cluster or query type) with most wrong answers, and its largest failure quadrant."""
    best = None
    for kind, table in (("cluster", by_cluster), ("query type", by_type)):
        for name, counts in table.items():
            wrong = {q: n for q, n in counts.items() if q in SLICE_WORDS}
            total = sum(wrong.values())
            if total and (best is None or total > best["wrong"]):
                top = max(sorted(wrong), key=lambda q: wrong[q])
                best = {"kind": kind, "name": name, "wrong": total, "quadrant": top, "count": wrong[top]}
    if best:
        best["text"] = (f"{best['kind']} '{best['name']}': {best['count']} of {best['wrong']} wrong answers are "
                        f"{SLICE_WORDS[best['quadrant']]}")
    return best


def calibrate(rows: list[dict], recall_threshold: float = RECALL_THRESHOLD,
              faith_threshold: float = FAITH_THRESHOLD) -> Optional[dict]:
    """Thresholds that best separate the traces a reviewer marked right from those marked wrong,
    and what moving to them would change.

    A trace is predicted wrong when it is not healthy. Candidates are the default, the scores
    seen, the midpoints between them, 0 and 1.01; it needs traces of both marks. Ties go to the pair
    nearest the seed's defaults, so few labels move them little. ``changes`` counts the scored
    traces (marked or not) whose quadrant differs under the calibrated thresholds from the ones used.
    """
    labelled = [r for r in rows if r["human_label"] in ("right", "wrong")
                and r["context_recall"] is not None and r["faithfulness"] is not None]
    if len({r["human_label"] for r in labelled}) < 2:
        return None  # thresholds cannot separate marks of one kind
    rt, ft, agree = _best_pair(labelled)
    used_agree = _agreement(labelled, recall_threshold, faith_threshold)
    moved = _moves(rows, (recall_threshold, faith_threshold), (rt, ft))
    result = {"labelled": len(labelled), "recall_threshold": rt, "faith_threshold": ft,
              "agreement": agree / len(labelled), "default_agreement": used_agree / len(labelled),
              "changes": len(moved), "moves": moved}
    result["text"] = (f"calibrated on {len(labelled)} marked traces: recall < {rt:.2f}, faithfulness < {ft:.2f} "
                      f"agree with the marks on {result['agreement']:.0%} (the thresholds used: "
                      f"{result['default_agreement']:.0%}); {len(moved)} of "
                      f"{sum(r['context_recall'] is not None and r['faithfulness'] is not None for r in rows)} "
                      f"scored traces would change quadrant")
    return result


def _agreement(labelled: list[dict], rt: float, ft: float) -> int:
    return sum((quadrant(r["context_recall"], r["faithfulness"], rt, ft) != "healthy") == (r["human_label"] == "wrong")
               for r in labelled)


def _best_pair(labelled: list[dict]) -> tuple[float, float, int]:
    recalls = _candidates([r["context_recall"] for r in labelled], RECALL_THRESHOLD)
    faiths = _candidates([r["faithfulness"] for r in labelled], FAITH_THRESHOLD)
    best = None
    for rt in recalls:
        for ft in faiths:
            agree = _agreement(labelled, rt, ft)
            key = (agree, -abs(rt - RECALL_THRESHOLD) - abs(ft - FAITH_THRESHOLD))
            if best is None or key > best[0]:
                best = (key, rt, ft, agree)
    return best[1], best[2], best[3]


def _moves(rows: list[dict], used: tuple[float, float], calibrated: tuple[float, float]) -> list[dict]:
    """The traces whose quadrant the calibrated thresholds would change: id, from, to."""
    out = []
    for r in rows:
        before = quadrant(r["context_recall"], r["faithfulness"], *used)
        after = quadrant(r["context_recall"], r["faithfulness"], *calibrated)
        if before != after:
            out.append({"id": r["id"], "from": before, "to": after})
    return out


def _candidates(scores: list[float], default: float) -> list[float]:
    seen = sorted(set(scores))
    middles = [round((a + b) / 2, 4) for a, b in zip(seen, seen[1:])]
    return sorted({0.0, 1.01, default, *seen, *middles})


def diagnose(db: sqlite_utils.Database, recall_threshold: float = RECALL_THRESHOLD,
             faith_threshold: float = FAITH_THRESHOLD) -> dict:
    """Every trace in its quadrant, counts overall, per cluster and per query type, the routing
    of the biggest failure slice, and the calibrated thresholds when traces are marked."""
    refresh_recall(db)
    rows = trace_rows(db)
    for row in rows:
        row["quadrant"] = quadrant(row["context_recall"], row["faithfulness"], recall_threshold, faith_threshold)
        row["routing"] = ROUTING[row["quadrant"]]
    by_cluster = _counts_by(rows, _cluster_name)
    by_type = _counts_by(rows, lambda r: r["query_type"] or "(none)")
    return {"thresholds": {"recall": recall_threshold, "faithfulness": faith_threshold},
            "counts": dict(Counter(r["quadrant"] for r in rows)), "total": len(rows),
            "by_cluster": by_cluster, "by_query_type": by_type,
            "biggest_failure": biggest_failure_slice(by_cluster, by_type),
            "calibration": calibrate(rows, recall_threshold, faith_threshold), "routing": ROUTING,
            "judge": judge_summary(db), "traces": rows}


def mark_trace(db: sqlite_utils.Database, trace_id: str, label: str, reviewer: str) -> dict:
    """A reviewer's call on a trace's answer ('right' / 'wrong', or 'none' to clear), for calibration."""
    if label not in ("right", "wrong", "none"):
        raise InputError(f"unknown mark {label!r}; use right, wrong or none")
    with db.conn:
        cursor = db.execute("UPDATE traces SET human_label = ?, labelled_by = ?, labelled_at = ? WHERE id = ?",
                            [None if label == "none" else label, reviewer, store.now(), trace_id])
    if cursor.rowcount == 0:
        raise InputError(f"no trace with id {trace_id!r}")
    return {"trace_id": trace_id, "label": label, "reviewer": reviewer}
