"""Compare two retrieval runs query by query: wins, losses, ties, mean difference, paired bootstrap CI.

A side is an eval run stored in the project (its id, as printed by ``curator eval``) or a TREC
run file, scored here against the project's current gold set. Only queries scored on both
sides are paired. The difference is B minus A, so a positive mean says B is better.

The interval is the percentile bootstrap of the mean paired difference: ``resamples`` (10,000)
resamples of the query set with replacement, drawn by ``numpy.random.default_rng(seed)``, and
the 2.5th and 97.5th percentiles (numpy's linear interpolation) of their means. Identical runs
give a difference of exactly 0 and the interval [0, 0].
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

import numpy as np
import sqlite_utils

from curator.core import store
from curator.core.evaluation import metrics
from curator.core.errors import InputError
from curator.core.evaluation.evaluate import gold_qrels, gold_rows, load_run

DEFAULT_METRIC = "mrr"  # every eval run has it; ndcg@10 exists only when 10 was among the k
RESAMPLES = 10_000
TIE_TOLERANCE = 1e-12  # per-query values closer than this are a tie (float noise, not a difference)
_METRIC = re.compile(r"^(mrr|(recall|hit|ndcg)@([1-9][0-9]*))$")
_RUN_ID = re.compile(r"[0-9]+")  # ASCII digits only: str.isdigit() also takes '²', which int() refuses
_MAX_ID = 2**63 - 1  # SQLite's largest INTEGER
_CELLS = 5_000_000  # resample indices drawn at once, to bound memory on large query sets


def paired_bootstrap(diffs, resamples: int = RESAMPLES, seed: int = 0, confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of paired differences (vectorised, in blocks)."""
    diffs = np.asarray(diffs, dtype=float)
    if diffs.size == 0:
        raise InputError("no query is scored in both runs, so there is nothing to compare")
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    block = max(1, _CELLS // diffs.size)
    for start in range(0, resamples, block):
        count = min(block, resamples - start)
        means[start:start + count] = diffs[rng.integers(0, diffs.size, size=(count, diffs.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def compare_scores(a: dict[str, float], b: dict[str, float], resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """Per-query B - A on the queries both sides scored: wins for B, wins for A, ties, mean, interval."""
    shared = sorted(set(a) & set(b))
    diffs = np.array([b[q] - a[q] for q in shared], dtype=float)
    diffs[np.abs(diffs) < TIE_TOLERANCE] = 0.0
    low, high = paired_bootstrap(diffs, resamples, seed)
    return {"queries": len(shared), "b_wins": int((diffs > 0).sum()), "a_wins": int((diffs < 0).sum()),
            "ties": int((diffs == 0).sum()), "mean_a": float(np.mean([a[q] for q in shared])),
            "mean_b": float(np.mean([b[q] for q in shared])), "mean_difference": float(diffs.mean()),
            "ci95": [low, high], "only_in_a": len(set(a) - set(b)), "only_in_b": len(set(b) - set(a)),
            "per_query": {q: float(d) for q, d in zip(shared, diffs)}}


def _check_metric(metric: str) -> Optional[int]:
    """The metric's cut-off (None for MRR); a clear error for a name Curator does not compute."""
    found = _METRIC.match(metric)
    if not found:
        raise InputError(f"unknown metric {metric!r}: use mrr, recall@K, hit@K or ndcg@K (for example ndcg@10)")
    return int(found.group(3)) if found.group(3) else None


def _run_id(ref: str) -> int:
    """An eval run id; one above SQLite's INTEGER range names no run (binding it raised OverflowError)."""
    run_id = int(ref)
    if run_id > _MAX_ID:
        raise InputError(f"no eval run {ref} in this project; 'curator eval PROJECT' prints the id of each run")
    return run_id


def _stored_side(db: sqlite_utils.Database, run_id: int, metric: str) -> tuple[str, dict[str, float]]:
    row = db.execute("SELECT retriever, per_query FROM eval_runs WHERE id = ?", [run_id]).fetchone()
    if row is None:
        raise InputError(f"no eval run {run_id} in this project; 'curator eval PROJECT' prints the id of each run")
    per_query = store.loads(row[1], {})
    missing = [q for q, scores in per_query.items() if metric not in scores]
    if missing:
        have = sorted(next(iter(per_query.values()), {}))
        raise InputError(f"eval run {run_id} has no {metric}: it has {', '.join(have)}; re-run eval with that k")
    return f"eval run {run_id} ({row[0]})", {q: scores[metric] for q, scores in per_query.items()}


def _file_side(db: sqlite_utils.Database, path: Path, metric: str, warnings: list[str]) -> tuple[str, dict[str, float]]:
    """A TREC run file scored against the project's gold set (approved + unanswerable rows)."""
    k = _check_metric(metric)
    run = load_run(path, warnings)
    scored = metrics.per_query(run, gold_qrels(gold_rows(db)), (k,) if k else ())
    if not scored:
        raise InputError("no reviewed answerable queries with gold chunks yet: approve some rows first")
    return f"run file {path.name}", {q: scores[metric] for q, scores in scored.items()}


def load_side(db: sqlite_utils.Database, ref: str, metric: str, warnings: list[str]) -> tuple[str, dict[str, float]]:
    """Per-query values of ``metric`` for an eval run id or a TREC run file path.

    A string of digits names an eval run, unless a file of that name exists."""
    _check_metric(metric)
    if _RUN_ID.fullmatch(str(ref)) and not Path(ref).is_file():
        return _stored_side(db, _run_id(str(ref)), metric)
    if Path(ref).is_file():
        return _file_side(db, Path(ref), metric, warnings)
    raise InputError(f"{ref!r} is neither an eval run id of this project nor a run file")


def compare(db: sqlite_utils.Database, ref_a: str, ref_b: str, metric: str = DEFAULT_METRIC,
            resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """Compare run B against run A on ``metric`` (see the module docstring for the statistics)."""
    warnings: list[str] = []
    label_a, a = load_side(db, ref_a, metric, warnings)
    label_b, b = load_side(db, ref_b, metric, warnings)
    result = compare_scores(a, b, resamples, seed)
    return {"a": label_a, "b": label_b, "metric": metric, "resamples": resamples, "seed": seed,
            **result, "warnings": warnings}
