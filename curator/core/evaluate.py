"""Score a retriever against the project's gold set: overall, per query type, source and cluster.

Routing per slice follows the seed article, at the cut-off k_route (5, the usual number of
chunks passed to a generator): Recall@k_route >= 0.8 and MRR >= 0.6 is "healthy"; recall
high and MRR low is "add a reranker"; recall below 0.8 is "fix recall first".
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

import sqlite_utils

from curator.core import metrics, store
from curator.core.errors import InputError
from curator.core.export import _write_lines
from curator.core.queries import list_queries
from curator.core.search import search_chunks

RETRIEVERS = ("bm25",)
RECALL_HEALTHY = 0.8
MRR_HEALTHY = 0.6


def read_trec_run(path: Path, errors: list[str]) -> metrics.Run:
    """``qid Q0 docid rank score tag`` lines; malformed lines are reported as file:line and skipped."""
    run: metrics.Run = {}
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the run file ({exc.strerror or exc}).") from None
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts:
            continue
        try:
            qid, _, doc, _, score = parts[:5]
            run.setdefault(qid, {})[doc] = float(score)
        except ValueError:
            errors.append(f"{path}:{number}: expected 'qid Q0 docid rank score tag'; line skipped.")
    return run


def write_trec_run(path: Path, run: metrics.Run, tag: str) -> None:
    lines = (f"{qid} Q0 {doc} {rank} {run[qid][doc]:.6f} {tag}"
             for qid in sorted(run) for rank, doc in enumerate(metrics.ranked(run[qid]), 1))
    _write_lines(Path(path), lines)


def bm25_run(db: sqlite_utils.Database, queries: list[dict], depth: int) -> metrics.Run:
    return {q["id"]: {hit["id"]: hit["score"] for hit in search_chunks(db, q["text"], limit=depth)} for q in queries}


def _route(summary: dict, k_route: int) -> str:
    recall, mrr = summary.get(f"recall@{k_route}", 0.0), summary.get("mrr", 0.0)
    if recall < RECALL_HEALTHY:
        return "fix recall first"
    return "healthy" if mrr >= MRR_HEALTHY else "add a reranker"


def _auroc(positive: list[float], negative: list[float]) -> Optional[float]:
    """Probability that an answerable query's top score beats an unanswerable one's (ties count half)."""
    if not positive or not negative:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def _slices(rows: list[dict], scored: dict[str, dict], k_route: int) -> dict[str, dict]:
    groups: dict[str, list[dict]] = {"overall": []}
    for q in rows:
        if q["id"] not in scored:
            continue
        for name in ("overall", f"type:{q['query_type']}", f"source:{q['source']}",
                     f"cluster:{q['cluster_label'] or 'unclustered'}"):
            groups.setdefault(name, []).append(scored[q["id"]])
    result = {}
    for name, members in groups.items():
        summary = metrics.mean(members)
        result[name] = {"queries": len(members), **summary, "routing": _route(summary, k_route) if members else None}
    return result


def evaluate(db: sqlite_utils.Database, retriever: str = "bm25", run_file: Optional[str] = None,
             ks: Iterable[int] = (1, 3, 5, 10, 20), save_run: Optional[str] = None,
             statuses: Iterable[str] = ("approved", "unanswerable")) -> dict:
    """Evaluate; stores an eval run and returns its metrics."""
    ks = tuple(sorted(set(ks)))
    wanted = set(statuses)
    rows = [q for q in list_queries(db) if q["status"] in wanted]
    answerable = [q for q in rows if q["status"] != "unanswerable" and q["answerable"] and q["gold_chunk_ids"]]
    if not answerable:
        raise InputError("no reviewed answerable queries with gold chunks yet: approve some rows first")
    errors: list[str] = []
    if run_file:
        run, name = read_trec_run(Path(run_file), errors), f"run:{Path(run_file).name}"
    elif retriever in RETRIEVERS:
        run, name = bm25_run(db, rows, max(max(ks), 100)), retriever
    else:
        raise InputError(f"unknown retriever {retriever!r}; use {', '.join(RETRIEVERS)} or --run FILE")
    qrels = {q["id"]: {c: int(q["gold_grades"].get(c, 1)) for c in q["gold_chunk_ids"]} for q in answerable}
    scored = metrics.per_query(run, qrels, ks)
    k_route = 5 if 5 in ks else max(ks)
    top = {qid: max(scores.values(), default=float("-inf")) for qid, scores in run.items()}
    unanswerable_ids = [q["id"] for q in rows if q["status"] == "unanswerable" or not q["answerable"]]
    result = {"retriever": name, "ks": list(ks), "answerable_queries": len(answerable),
              "unanswerable_queries": len(unanswerable_ids), "slices": _slices(rows, scored, k_route),
              "unanswerable_auroc": _auroc([top.get(q["id"], float("-inf")) for q in answerable],
                                           [top.get(i, float("-inf")) for i in unanswerable_ids]),
              "warnings": errors}
    if save_run:
        write_trec_run(Path(save_run), run, name.replace(" ", "_"))
    with db.conn:
        cursor = db.execute("INSERT INTO eval_runs (created_at, retriever, params, metrics, per_query, run_file) "
                            "VALUES (?,?,?,?,?,?)", [store.now(), name, store.dumps({"ks": list(ks)}),
                                                     store.dumps(result), store.dumps(scored), run_file])
    return {"eval_run": cursor.lastrowid, **result}
