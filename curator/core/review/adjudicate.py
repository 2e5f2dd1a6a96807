"""Conflicts between reviewers, and the final decision a third person records for each one.

A conflict is a query whose reviewers' latest decisions disagree on the status or, when they
approved it, on the gold chunks. Decisions are read from the journal: a reviewer's own
``done`` rows and the ``merged`` rows that ``merge`` imported from another copy, so conflicts
are found the same way whether both reviewers worked in one project or in two copies.

An adjudication is an ordinary ``adjudicate`` decision made through ``decisions.decide``, so it is
journaled and undoable like any other. A conflict counts as resolved while a ``done``
adjudication is newer than every reviewer decision on the query; undoing it reopens the conflict.
"""

from __future__ import annotations

from typing import Iterable, Optional

import sqlite_utils

from curator.core import store
from curator.core.review import decisions
from curator.core.store.gold import judged_not_relevant
from curator.core.errors import InputError

# Journal states that count as a reviewer's standing decision ('undone'/'discarded' do not).
LIVE_STATES = ("done", "merged")
DECIDED = ("approved", "rejected", "unanswerable")
_COMPARED = ("status", "gold_chunk_ids", "text", "reference")


def _journal(db: sqlite_utils.Database, query_ids: Optional[list[str]]) -> list[dict]:
    """Live journal rows, oldest first, optionally only for some queries."""
    where, params = "", []
    if query_ids is not None:
        if not query_ids:
            return []
        where = "AND query_id IN (SELECT value FROM json_each(?))"
        params = [store.dumps(query_ids)]
    found = store.rows(db, f"""SELECT id, query_id, reviewer, at, action, after FROM decisions
                               WHERE state IN ('done', 'merged') AND {decisions.QUERY_DECISIONS} {where}
                               ORDER BY at, id""", params)
    for row in found:
        row["after"] = store.loads(row["after"], {})
    return found


def standing_decisions(db: sqlite_utils.Database, query_ids: Optional[list[str]] = None) -> dict[str, dict]:
    """query id -> {"reviewers": {name: decision}, "adjudicated_at": time or None}.

    A reviewer's decision is the query as their latest live journal row left it; a reviewer
    whose latest row put the query back to pending has no standing decision."""
    out: dict[str, dict] = {}
    for row in _journal(db, query_ids):
        entry = out.setdefault(row["query_id"], {"reviewers": {}, "adjudicated_at": None})
        if row["action"] == "adjudicate":
            entry["adjudicated_at"] = row["at"]
            continue
        name = row["reviewer"] or ""
        if row["after"].get("status") in DECIDED:
            entry["reviewers"][name] = _decision(row)
        else:
            entry["reviewers"].pop(name, None)
    return out


def _decision(row: dict) -> dict:
    after = row["after"]
    return {"reviewer": row["reviewer"] or "", "decision_id": row["id"], "at": row["at"], "action": row["action"],
            "status": after.get("status"), "text": after.get("text"), "reference": after.get("reference"),
            "gold_chunk_ids": list(after.get("gold_chunk_ids") or []),
            "gold_grades": dict(after.get("gold_grades") or {}), "note": after.get("note")}


def verdict(decision: dict) -> tuple:
    """What two reviewers must share to agree: the status, and the gold set when approved."""
    gold = frozenset(decision["gold_chunk_ids"]) if decision["status"] == "approved" else None
    return decision["status"], gold


def _differing_fields(decisions: list[dict]) -> list[str]:
    def norm(d: dict, f: str):
        return frozenset(d[f]) if f == "gold_chunk_ids" else (d[f] or "")
    return [f for f in _COMPARED if len({norm(d, f) for d in decisions}) > 1]


def conflicts(db: sqlite_utils.Database, query_ids: Optional[Iterable[str]] = None,
              include_resolved: bool = False) -> list[dict]:
    """Queries whose reviewers disagree, each with every reviewer's decision (sorted by name)."""
    ids = None if query_ids is None else list(dict.fromkeys(query_ids))
    found = []
    for qid, entry in sorted(standing_decisions(db, ids).items()):
        decisions = [entry["reviewers"][name] for name in sorted(entry["reviewers"])]
        if len(decisions) < 2 or len({verdict(d) for d in decisions}) < 2:
            continue
        resolved = entry["adjudicated_at"] is not None and entry["adjudicated_at"] > max(d["at"] for d in decisions)
        if resolved and not include_resolved:
            continue
        found.append({"query_id": qid, "fields": _differing_fields(decisions), "resolved": resolved,
                      "decisions": decisions})
    _attach_current(db, found)
    return found


def _attach_current(db: sqlite_utils.Database, found: list[dict]) -> None:
    """The query's current text and status, for lists and the adjudication screen."""
    if not found:
        return
    rows = store.rows(db, "SELECT id, text, status FROM queries WHERE id IN (SELECT value FROM json_each(?))",
                      [store.dumps([c["query_id"] for c in found])])
    by_id = {r["id"]: r for r in rows}
    for conflict in found:
        row = by_id.get(conflict["query_id"], {})
        conflict["text"], conflict["status"] = row.get("text"), row.get("status")


def resolve(db: sqlite_utils.Database, query_id: str, judge: str, *, pick: Optional[str] = None,
            status: Optional[str] = None, text: Optional[str] = None, reference: Optional[str] = None,
            gold: Optional[Iterable[str]] = None, grades: Optional[dict[str, int]] = None,
            note: Optional[str] = None) -> dict:
    """Record the final decision on a query as one journaled ``adjudicate`` decision.

    ``pick`` names the reviewer whose decision is taken as it is; explicit fields override it
    (that is an edit). Without ``pick``, ``status`` is required."""
    base = _picked(db, query_id, pick) if pick is not None else {}
    status = status or base.get("status")
    if status not in DECIDED:
        raise InputError(f"{query_id}: say which decision wins (pick a reviewer) or give a status "
                         f"({', '.join(DECIDED)})")
    gold = list(gold) if gold is not None else base.get("gold_chunk_ids")
    grades = grades if grades is not None else (base.get("gold_grades") if gold is not None else None)
    if status == "unanswerable":
        gold, grades = [], {}  # an unanswerable query has no gold, whoever said otherwise
    if grades is not None and gold is not None:  # the gold's grades, and the chunks judged not relevant
        grades = {**judged_not_relevant(grades, gold), **{cid: int(grades.get(cid, 1)) for cid in gold}}
    return decisions.decide(db, query_id, "adjudicate", judge, status=status,
                         text=text if text is not None else base.get("text"),
                         reference=reference if reference is not None else base.get("reference"),
                         gold=gold, grades=grades, note=note)


def _picked(db: sqlite_utils.Database, query_id: str, reviewer: str) -> dict:
    entry = standing_decisions(db, [query_id]).get(query_id, {"reviewers": {}})
    if reviewer not in entry["reviewers"]:
        known = ", ".join(sorted(entry["reviewers"])) or "nobody"
        raise InputError(f"{query_id}: {reviewer!r} has no decision on this query (decided by: {known})")
    return entry["reviewers"][reviewer]
