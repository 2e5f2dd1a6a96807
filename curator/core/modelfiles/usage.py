"""What each model did in one project, keyed by the SHA-256 of its file.

Every generation run records the hash of the file that ran (``generation_runs.model_sha256``) and,
for the bundled model's repacked copy, the hash of the original (``params.source_model_sha256``):
the original's hash is the key, so a run of the copy counts for the file the user picked. A row's
fate is read from today's project: ``queries.status`` (approved, rejected, unanswerable, pending)
and the review journal (an ``edit`` decision not undone). A claim judge records its file's name,
not its hash (``llama-cpp:NAME.gguf``), so judge agreement is matched by file name.
"""

from __future__ import annotations

from datetime import datetime
from typing import Optional

import sqlite_utils

from curator.core import store

LLAMA_JUDGE_PREFIX = "llama-cpp:"  # diagnosis.faithfulness.backend_label of a local GGUF judge


def _empty() -> dict:
    return {"runs": 0, "candidates": 0, "accepted": 0, "approved": 0, "edited": 0, "rejected": 0,
            "unanswerable": 0, "pending": 0, "seconds": 0.0, "model_path": None}


def _run_key(run: dict) -> Optional[str]:
    params = store.loads(run["params"], {}) or {}
    return params.get("source_model_sha256") or run["model_sha256"]


def _run_sizes(run: dict) -> set[int]:
    params = store.loads(run["params"], {}) or {}
    return {s for s in (run["model_size"], params.get("source_model_size")) if isinstance(s, int)}


def recorded_sizes(db: sqlite_utils.Database) -> set[int]:
    """Sizes of the model files the project's runs used: a file of another size needs no hashing."""
    sizes: set[int] = set()
    for run in store.rows(db, "SELECT model_size, params FROM generation_runs WHERE model_sha256 IS NOT NULL"):
        sizes |= _run_sizes(run)
    return sizes


def _seconds(db: sqlite_utils.Database, run: dict) -> float:
    """The run's working time: what it recorded (all its sessions), else its first to its last row."""
    recorded = (store.loads(run["counts"], {}) or {}).get("seconds")
    if isinstance(recorded, (int, float)):
        return float(recorded)
    last = db.execute("SELECT MAX(t) FROM (SELECT MAX(created_at) AS t FROM queries WHERE run_id = ? UNION ALL "
                      "SELECT MAX(created_at) FROM rejected_candidates WHERE run_id = ?)", [run["id"], run["id"]]).fetchone()[0]
    if not last or not run["created_at"]:
        return 0.0
    return max(0.0, (datetime.fromisoformat(last) - datetime.fromisoformat(run["created_at"])).total_seconds())


def _add_run(db: sqlite_utils.Database, totals: dict, run: dict) -> None:
    rid = run["id"]
    statuses = dict(db.execute("SELECT status, COUNT(*) FROM queries WHERE run_id = ? GROUP BY 1", [rid]).fetchall())
    accepted = sum(statuses.values())
    rejected_candidates = db.execute("SELECT COUNT(*) FROM rejected_candidates WHERE run_id = ?", [rid]).fetchone()[0]
    edited = db.execute("SELECT COUNT(DISTINCT d.query_id) FROM decisions d JOIN queries q ON q.id = d.query_id "
                        "WHERE q.run_id = ? AND d.action = 'edit' AND d.state = 'done'", [rid]).fetchone()[0]
    totals["runs"] += 1
    totals["candidates"] += accepted + rejected_candidates
    totals["accepted"] += accepted
    totals["edited"] += edited
    for status in ("approved", "rejected", "unanswerable", "pending"):
        totals[status] += statuses.get(status, 0)
    totals["seconds"] += _seconds(db, run)
    totals["model_path"] = totals["model_path"] or run["model_path"]


def _finish(totals: dict) -> dict:
    minutes = totals["seconds"] / 60
    totals["rows_per_minute"] = round(totals["accepted"] / minutes, 2) if minutes > 0 else None
    totals["seconds_per_row"] = round(totals["seconds"] / totals["accepted"], 1) if totals["accepted"] else None
    reviewed = totals["approved"] + totals["rejected"] + totals["unanswerable"]
    totals["approval_rate"] = round(totals["approved"] / reviewed, 3) if reviewed else None
    totals["seconds"] = round(totals["seconds"], 1)
    return totals


def generation_by_model(db: sqlite_utils.Database) -> dict[str, dict]:
    """Per model file hash: runs, candidates, accepted rows, their review outcome, rows per minute."""
    by_sha: dict[str, dict] = {}
    for run in store.rows(db, "SELECT * FROM generation_runs ORDER BY id"):
        key = _run_key(run)
        if key:
            _add_run(db, by_sha.setdefault(key, _empty()), run)
    return {sha: _finish(totals) for sha, totals in by_sha.items()}


def judge_agreement_by_file(db: sqlite_utils.Database) -> dict[str, dict]:
    """Per judge model file name: claims a reviewer checked after it, and how many kept its verdict."""
    found: dict[str, dict] = {}
    for row in store.rows(db, "SELECT verdict, before FROM judgements WHERE judge = 'reviewer' AND before IS NOT NULL"):
        before = store.loads(row["before"], None)
        judge = before.get("judge") if isinstance(before, dict) else None
        if not isinstance(judge, str) or not judge.startswith(LLAMA_JUDGE_PREFIX):
            continue
        entry = found.setdefault(judge.removeprefix(LLAMA_JUDGE_PREFIX), {"claims_checked": 0, "kept": 0})
        entry["claims_checked"] += 1
        entry["kept"] += before.get("verdict") == row["verdict"]
    for entry in found.values():
        entry["agreement"] = round(entry["kept"] / entry["claims_checked"], 3)
    return found
