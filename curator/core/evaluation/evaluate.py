"""Score a retriever against the project's gold set: overall, per query type, source and cluster.

Routing per slice follows the seed article, at the cut-off k_route (5, the usual number of
chunks passed to a generator): Recall@k_route >= 0.8 and MRR >= 0.6 is "healthy"; recall
high and MRR low is "add a reranker"; recall below 0.8 is "fix recall first".

The built-in retrievers live in curator.core.retrieval.retrievers; two stored eval runs (or run files)
are compared query by query in curator.core.evaluation.compare. Metrics follow trec_eval (see metrics).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable, Optional

import numpy as np
import sqlite_utils

from curator.core import store
from curator.core.evaluation import metrics
from curator.core.errors import InputError
from curator.core.files import (MAX_LINE_BYTES, LineProblems, bounded_lines, check_output, one_field, open_regular,
                                project_files, write_output)
from curator.core.queries.rows import list_queries
from curator.core.store.gold import broken_gold_ids
from curator.core.retrieval.retrievers import RETRIEVERS, get_retriever

RECALL_HEALTHY = 0.8
MRR_HEALTHY = 0.6


RUN_LINE = "expected 'qid Q0 docid rank score tag' with a finite score"


def _run_entry(line: bytes) -> Optional[tuple[str, str, float]]:
    """(qid, docid, score) of one run line, None when it is malformed.

    nan and inf are malformed: a nan score sorts wherever it happens to stand, so the same run
    scored MRR 1.0 or 0.17 depending on its line order."""
    parts = line.decode("utf-8", errors="replace").split()
    try:
        qid, _, doc, _, text = parts[:5]
        score = float(text)
    except ValueError:
        return None
    return (qid, doc, score) if math.isfinite(score) else None


def read_trec_run(path: Path, errors: list[str]) -> metrics.Run:
    """``qid Q0 docid rank score tag`` lines; malformed lines are reported as file:line and skipped.

    Read line by line from a regular file, a line at most files.MAX_LINE_BYTES long; the first
    problems are listed and the rest counted (files.LineProblems)."""
    run: metrics.Run = {}
    problems = LineProblems(path)
    try:
        with open_regular(path, "run file") as fh:
            for number, line in bounded_lines(fh, path, problems):
                if line is None or not line.strip():
                    continue
                entry = _run_entry(line)
                if entry is None:
                    problems.add(f"{path}:{number}: {RUN_LINE}; line skipped.")
                else:
                    run.setdefault(entry[0], {})[entry[1]] = entry[2]
    except OSError as exc:  # a read that fails midway (EIO, a file removed under a network mount)
        raise InputError(f"{path}: cannot read the run file ({exc.strerror or exc}).") from None
    errors.extend(problems.lines())
    return run


def load_run(path, errors: list[str]) -> metrics.Run:
    """A run file every command scores (eval, validate, compare): refused when no line is valid.

    An empty or garbage run would otherwise score 0.000 everywhere as if the retriever had found
    nothing, and validate ranked it with the others."""
    known = len(errors)  # validate shares one list among its run files: name this file's problem
    run = read_trec_run(Path(path), errors)
    if not run:
        raise InputError(f"{path}: no valid TREC run line ({RUN_LINE})"
                         + (f"; first problem: {errors[known]}" if len(errors) > known else ""))
    return run


def write_trec_run(path: Path, run: metrics.Run, tag: str, protected: Iterable[Path] = ()) -> None:
    """Scores are written with repr's shortest exact digits: rounding to a few decimals would turn
    near-ties into ties, which trec_eval then breaks by document id, so a run read back would score
    differently from the run that was evaluated. ``protected``: see files.check_output."""
    tag = one_field(tag, "curator")
    lines = (f"{one_field(qid)} Q0 {one_field(doc)} {rank} {float(run[qid][doc])!r} {tag}"
             for qid in sorted(run) for rank, doc in enumerate(metrics.ranked(run[qid]), 1))
    write_output(Path(path), lines, protected)


def retriever_run(db: sqlite_utils.Database, retriever: str, queries: list[dict], depth: int,
                  embedder: Optional[str] = None) -> tuple[metrics.Run, dict]:
    """The run of a built-in retriever on ``queries`` and the parameters that identify it."""
    fitted = get_retriever(retriever, db, embedder)
    return fitted.search({q["id"]: q["text"] for q in queries}, depth), fitted.params


def gold_rows(db: sqlite_utils.Database, statuses: Iterable[str] = ("approved", "unanswerable")) -> list[dict]:
    wanted, broken = set(statuses), broken_gold_ids(db)  # a row breaking the gold invariant is never scored
    return [q for q in list_queries(db) if q["status"] in wanted and q["id"] not in broken]


def is_answerable(q: dict) -> bool:
    return q["status"] != "unanswerable" and bool(q["answerable"]) and bool(q["gold_chunk_ids"])


def gold_qrels(rows: list[dict]) -> metrics.Qrels:
    """Graded qrels of the answerable rows (grade 1 where a reviewer gave none)."""
    return {q["id"]: {c: int(q["gold_grades"].get(c, 1)) for c in q["gold_chunk_ids"]} for q in rows if is_answerable(q)}


def _route(summary: dict, k_route: int) -> str:
    recall, mrr = summary.get(f"recall@{k_route}", 0.0), summary.get("mrr", 0.0)
    if recall < RECALL_HEALTHY:
        return "fix recall first"
    return "healthy" if mrr >= MRR_HEALTHY else "add a reranker"


def _auroc(positive: list[float], negative: list[float]) -> Optional[float]:
    """Probability that an answerable query's top score beats an unanswerable one's (ties count half)."""
    if not positive or not negative:
        return None
    # Counting by binary search instead of over all pairs: O((P + N) log N), not O(P N).
    neg = np.sort(np.asarray(negative, dtype=float))
    pos = np.asarray(positive, dtype=float)
    below, not_above = np.searchsorted(neg, pos, "left"), np.searchsorted(neg, pos, "right")
    return float((below + 0.5 * (not_above - below)).sum() / (len(pos) * len(neg)))


def _cluster_slice(q: dict) -> str:
    """A cluster's slice is keyed by its id (labels repeat and change when relabelled)."""
    return "cluster:unclustered" if q.get("cluster") is None else f"cluster:{q['cluster']}"


def _slices(rows: list[dict], scored: dict[str, dict], k_route: int) -> dict[str, dict]:
    groups: dict[str, list[dict]] = {"overall": []}
    labels: dict[str, str] = {}
    for q in rows:
        if q["id"] not in scored:
            continue
        for name in ("overall", f"type:{q['query_type']}", f"source:{q['source']}", _cluster_slice(q)):
            groups.setdefault(name, []).append(scored[q["id"]])
        labels[_cluster_slice(q)] = q.get("cluster_label") or "unclustered"
    result = {}
    for name, members in groups.items():
        summary = metrics.mean(members)
        result[name] = {"queries": len(members), **summary, "routing": _route(summary, k_route) if members else None}
        if name in labels:
            result[name]["label"] = labels[name]
    return result


def slice_title(name: str, summary: dict) -> str:
    """How a slice is shown: a cluster by its label beside its id ('cluster 3: install · venv')."""
    if "label" in summary and name != "cluster:unclustered":
        return f"cluster {name.split(':', 1)[1]}: {summary['label']}"
    return name


def _scored_run(db, retriever: str, run_file: Optional[str], rows: list[dict], k_max: int,
                embedder: Optional[str], errors: list[str]) -> tuple[metrics.Run, str, dict]:
    """The run to score (a TREC file, or a built-in retriever's), its name and its parameters."""
    if run_file:
        return load_run(run_file, errors), f"run:{Path(run_file).name}", {}
    if retriever not in RETRIEVERS:
        raise InputError(f"unknown retriever {retriever!r}; use {', '.join(RETRIEVERS)} or --run FILE")
    # Depth 100 at least, so MRR sees a relevant chunk ranked below the largest k.
    run, params = retriever_run(db, retriever, rows, max(k_max, 100), embedder)
    return run, retriever, params


def _check_save_run(save_run, run_file: Optional[str], protected: list[Path], replace: bool) -> None:
    """Never the project or another SQLite database (files.check_output), nor the run file being read;
    a file that is there and is not a TREC run (notes, a qrels file, a typo for another name) only
    with ``replace``."""
    check_output(save_run, protected)
    if run_file and Path(save_run).resolve() == Path(run_file).resolve():
        raise InputError(f"{save_run}: this is the run file being scored (--run); it was not modified. "
                         "Give --save-run another name.")
    if not replace and not _absent_empty_or_a_run(Path(save_run)):
        raise InputError(f"{save_run}: exists and is not a TREC run file; it was not modified. "
                         "Give --save-run another name, or --force to replace it.")


def _absent_empty_or_a_run(path: Path) -> bool:
    """True when writing a run to ``path`` loses nothing a user would miss: no file, an empty one,
    or one whose first line with text is a run line (a run saved before, being refreshed)."""
    if not path.exists():
        return True
    if not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            while line := fh.readline(MAX_LINE_BYTES):  # bounded: a huge file with no line break is no run
                if line.strip():
                    return _run_entry(line) is not None
    except OSError:
        return False
    return True


def evaluate(db: sqlite_utils.Database, retriever: str = "bm25", run_file: Optional[str] = None,
             ks: Iterable[int] = (1, 3, 5, 10, 20), save_run: Optional[str] = None,
             statuses: Iterable[str] = ("approved", "unanswerable"), embedder: Optional[str] = None,
             replace: bool = False) -> dict:
    """Evaluate a built-in retriever (see curator.core.retrieval.retrievers) or a TREC run file.

    ``embedder`` (tfidf | minilm | gguf:PATH) applies to the dense and hybrid retrievers; ``replace``
    lets ``save_run`` write over a file that is not a TREC run.
    Stores an eval run (metrics and per-query scores, for ``compare``) and returns its metrics."""
    ks = tuple(sorted(set(ks)))
    protected = project_files(db)
    if save_run:  # refused before the work, not after it
        _check_save_run(save_run, run_file, protected, replace)
    rows = gold_rows(db, statuses)
    answerable = [q for q in rows if is_answerable(q)]
    if not answerable:
        raise InputError("no reviewed answerable queries with gold chunks yet: approve some rows first")
    errors: list[str] = []
    run, name, params = _scored_run(db, retriever, run_file, rows, max(ks), embedder, errors)
    qrels = gold_qrels(rows)
    scored = metrics.per_query(run, qrels, ks)
    k_route = 5 if 5 in ks else max(ks)
    top = {qid: max(scores.values(), default=float("-inf")) for qid, scores in run.items()}
    unanswerable_ids = [q["id"] for q in rows if q["status"] == "unanswerable" or not q["answerable"]]
    result = {"retriever": name, "params": params, "ks": list(ks), "answerable_queries": len(answerable),
              "unanswerable_queries": len(unanswerable_ids), "slices": _slices(rows, scored, k_route),
              "unanswerable_auroc": _auroc([top.get(q["id"], float("-inf")) for q in answerable],
                                           [top.get(i, float("-inf")) for i in unanswerable_ids]),
              "warnings": errors}
    if save_run:
        write_trec_run(Path(save_run), run, name, protected)
    if store.is_read_only(db):
        errors.append("the project is read-only: this eval run was not stored ('eval --compare' needs a stored run "
                      "or a run file: add --save-run FILE)")
        return {"eval_run": None, **result}
    with db.conn:
        cursor = db.execute("INSERT INTO eval_runs (created_at, retriever, params, metrics, per_query, run_file) "
                            "VALUES (?,?,?,?,?,?)", [store.now(), name, store.dumps({"ks": list(ks), **params}),
                                                     store.dumps(result), store.dumps(scored),
                                                     str(Path(run_file).resolve()) if run_file else None])
    return {"eval_run": cursor.lastrowid, **result}


def eval_runs(db: sqlite_utils.Database, limit: int = 20) -> list[dict]:
    found = store.rows(db, "SELECT id, created_at, retriever, metrics FROM eval_runs ORDER BY id DESC LIMIT ?", [limit])
    for row in found:
        row["metrics"] = store.loads(row["metrics"], {})
    return found
