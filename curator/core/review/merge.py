"""Import another copy's review decisions, so reviewers can label offline and combine later.

Queries are matched by their stable id (source + normalised text), so two copies of one
project agree on ids. For every matched query the other copy's live journal rows are copied
into this journal with state ``merged``: both reviewers' decisions are kept, agreement and
conflicts read them, and nobody's undo stack picks them up. A query nobody here has decided
yet takes the other reviewer's decision through ``decisions.decide`` (journaled and undoable like
any decision); a query both copies decided differently is listed as a conflict and left as
it is until someone adjudicates it.

A journal row is identified by (query, reviewer, time, action), so re-running a merge, or
merging back the other way, never duplicates a decision. The other file is opened with
SQLite's read-only URI mode and never written.

Blind overlap: ``assign_overlap`` gives a share of the queue to every reviewer and splits the
rest between them; the plan is kept in the project, so the copies handed out carry it. Each
reviewer labels in their own copy, so nobody sees the other's decisions, and merge never
adopts the other's decision on an overlap query: it waits for this reviewer and adjudication.
"""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path
from typing import Optional

import sqlite_utils

from curator.core import store
from curator.core.review import adjudicate
from curator.core.review import decisions
from curator.core.errors import CuratorError, InputError, NotAProject
from curator.core.store.gold import grades_on_scale

OVERLAP_KEY = "blind_overlap"
_ACTION_OF_STATUS = {"approved": "approve", "rejected": "reject", "unanswerable": "unanswerable"}
_REQUIRED_TABLES = {"queries", "decisions"}


def _project_file(db: sqlite_utils.Database) -> str | None:
    row = db.execute("PRAGMA database_list").fetchone()
    return row[2] if row and row[2] else None


def _refuse_same_file(db: sqlite_utils.Database, other: Path) -> None:
    mine = _project_file(db)
    if mine and other.exists() and os.path.samefile(mine, other):
        raise InputError(f"{other}: that is this project itself; merge another reviewer's copy.")


def open_other(path: str | Path) -> sqlite_utils.Database:
    """The other copy, read-only, after the same checks ``open_project`` makes (newer schema,
    not a project, unreadable), so a wrong file gives a clear message and stays untouched."""
    path = Path(path)
    if not path.is_file():
        raise NotAProject(f"{path}: no such project file to merge from.")
    if path.stat().st_size == 0 or not store._looks_like_sqlite(path):
        raise NotAProject(f"{path}: not a SQLite file, so not a Curator project; it was not modified.")
    try:
        db = sqlite_utils.Database(store.connect_read_only(path))
    except sqlite3.DatabaseError as exc:
        raise NotAProject(f"{path}: not a readable SQLite file ({exc}); it was not modified.") from None
    try:
        store._check_is_project(db, path)
        missing = _REQUIRED_TABLES - set(db.table_names())
        if missing:
            raise NotAProject(f"{path}: an empty or unfinished Curator project (no {', '.join(sorted(missing))}).")
    except Exception:
        db.close()
        raise
    return db


def _read_other(other: sqlite_utils.Database) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    """(review fields of every query, live journal rows per query) from the other copy.

    Both reads share one snapshot, in case its reviewer is still labelling in that file."""
    other.conn.execute("BEGIN")
    try:
        return _read_snapshot(other)
    finally:
        other.conn.execute("ROLLBACK")


def _read_snapshot(other: sqlite_utils.Database) -> tuple[dict[str, dict], dict[str, list[dict]]]:
    fields = ", ".join(decisions.REVIEW_FIELDS)
    rows = {r["id"]: r for r in store.rows(other, f"SELECT id, {fields} FROM queries")}
    for row in rows.values():
        row["gold_chunk_ids"] = store.loads(row["gold_chunk_ids"], [])
        row["gold_grades"] = grades_on_scale(store.loads(row["gold_grades"], {}))  # a copy not migrated to m011
    journal: dict[str, list[dict]] = {}
    # claim verdicts stay out: their claim ids are the other copy's own row numbers
    for row in store.rows(other, f"""SELECT query_id, reviewer, at, action, before, after FROM decisions
                                     WHERE state IN ('done', 'merged') AND {decisions.QUERY_DECISIONS}
                                     ORDER BY at, id"""):
        row["before"], row["after"] = _grades_on_scale(row["before"]), _grades_on_scale(row["after"])
        journal.setdefault(row["query_id"], []).append(row)
    return rows, journal


def _grades_on_scale(side: Optional[str]) -> Optional[str]:
    """A journal row's before/after with its grades on today's scale (a copy not migrated to m011 may
    hold a 3, which adjudicating that decision here would otherwise try to write)."""
    state = store.loads(side, None)
    if not isinstance(state, dict) or not isinstance(state.get("gold_grades"), dict):
        return side
    on_scale = grades_on_scale(state["gold_grades"])
    return side if on_scale == state["gold_grades"] else store.dumps({**state, "gold_grades": on_scale})


def _import_journal(db: sqlite_utils.Database, rows: list[dict]) -> list[dict]:
    """Copy journal rows not already here (any state); one short transaction per query."""
    added = []
    with db.conn:
        for row in rows:
            known = db.execute("SELECT 1 FROM decisions WHERE query_id = ? AND reviewer IS ? AND at = ? AND action = ?",
                               [row["query_id"], row["reviewer"], row["at"], row["action"]]).fetchone()
            if known:
                continue
            db.execute("INSERT INTO decisions (query_id, reviewer, at, action, before, after, state) "
                       "VALUES (?,?,?,?,?,?,'merged')",
                       [row["query_id"], row["reviewer"], row["at"], row["action"], row["before"], row["after"]])
            added.append(row)
    return added


def _verdict(after_json: str) -> tuple:
    after = store.loads(after_json, {})
    return adjudicate.verdict({"status": after.get("status"), "gold_chunk_ids": after.get("gold_chunk_ids") or []})


def _same_name_here(db: sqlite_utils.Database, added: list[dict]) -> set[str]:
    """Names under which the two copies decided a query differently: two people (or two
    laptops' default login) sharing a name, whose disagreement cannot show as a conflict."""
    names, seen = set(), set()
    for row in reversed(added):  # each name's latest imported decision on the query
        if row["action"] == "adjudicate" or row["reviewer"] in seen:
            continue
        seen.add(row["reviewer"])
        mine = db.execute("SELECT after FROM decisions WHERE query_id = ? AND reviewer IS ? AND state = 'done' "
                          f"AND {decisions.QUERY_DECISIONS} ORDER BY at DESC, id DESC LIMIT 1",
                          [row["query_id"], row["reviewer"]]).fetchone()
        if mine and _verdict(mine[0]) != _verdict(row["after"]):
            names.add(row["reviewer"] or "")
    return names


def _untouched_here(db: sqlite_utils.Database, query_id: str) -> bool:
    """Nobody here has decided the query: it is pending and no own decision stands on it."""
    status = db.execute("SELECT status FROM queries WHERE id = ?", [query_id]).fetchone()[0]
    own = db.execute(f"SELECT 1 FROM decisions WHERE query_id = ? AND state = 'done' AND {decisions.QUERY_DECISIONS} "
                     "LIMIT 1", [query_id]).fetchone()
    return status == "pending" and own is None


def _adopt(db: sqlite_utils.Database, theirs: dict) -> None:
    """Take the other copy's decision on a query nobody here decided, as that reviewer."""
    action = _ACTION_OF_STATUS[theirs["status"]]
    decisions.decide(db, theirs["id"], action, theirs["reviewer"] or "merged", text=theirs["text"],
                  reference=theirs["reference"], gold=theirs["gold_chunk_ids"],
                  grades=theirs["gold_grades"] or None, note=theirs["note"],
                  relabel=False)  # approved against the other copy's text, not this one's


def _merge_query(db: sqlite_utils.Database, theirs: dict, journal: list[dict], blind: set[str],
                 report: dict) -> set[str]:
    """Import one query's journal rows and adopt the other decision where nobody decided here;
    returns the reviewer names both copies used for it with different verdicts."""
    qid = theirs["id"]
    added = _import_journal(db, journal)
    report["decisions_imported"] += len(added)
    if _untouched_here(db, qid):
        if qid in blind:
            report["held_blind"] += 1  # this reviewer still has to decide it without seeing theirs
        elif theirs["status"] in _ACTION_OF_STATUS:
            try:
                _adopt(db, theirs)
                report["adopted"] += 1
            except CuratorError as exc:  # e.g. gold chunks this copy never ingested
                report["errors"].append(f"{qid}: not adopted ({exc})")
    return _same_name_here(db, added)


def _warning(name: str) -> str:
    return (f"reviewer {name!r} decided the same queries in both copies; their decisions count as one person's, "
            "so disagreements between the copies are not listed as conflicts. Give each reviewer their own name "
            "(--reviewer) before labelling.")


def merge(db: sqlite_utils.Database, other_path: str | Path) -> dict:
    """Import OTHER's decisions on the queries both copies hold; returns counts and conflicts."""
    other_path = Path(other_path)
    _refuse_same_file(db, other_path)
    other = open_other(other_path)
    try:
        their_rows, their_journal = _read_other(other)
    finally:
        other.close()
    local_ids = {r[0] for r in db.execute("SELECT id FROM queries")}
    decided = [qid for qid, row in their_rows.items() if row["status"] != "pending" or qid in their_journal]
    matched = sorted(qid for qid in decided if qid in local_ids)
    report = {"other": str(other_path), "other_queries": len(their_rows), "other_decided": len(decided),
              "matched": len(matched), "unmatched": len(decided) - len(matched), "decisions_imported": 0,
              "adopted": 0, "held_blind": 0, "errors": []}
    blind, shared_names = overlap_ids(db), set()
    for qid in matched:
        shared_names |= _merge_query(db, their_rows[qid], their_journal.get(qid, []), blind, report)
    report["conflicts"] = adjudicate.conflicts(db, matched)
    report["warnings"] = [_warning(name) for name in sorted(shared_names)]
    report["reviewers"] = sorted({r["reviewer"] or "" for rows in their_journal.values() for r in rows})
    return report


def _queue_order(db: sqlite_utils.Database) -> list[str]:
    """The review queue, or every pending query when no queue was built."""
    queued = [r["query_id"] for r in decisions.queue(db)]
    pending = "SELECT id FROM queries WHERE status = 'pending' ORDER BY created_at, id"
    return queued or [r[0] for r in db.execute(pending)]


def assign_overlap(db: sqlite_utils.Database, reviewers: list[str], share: float, seed: int = 0) -> dict:
    """Give ``share`` of the queue to every reviewer and split the rest between them."""
    names = list(dict.fromkeys(r.strip() for r in reviewers if r.strip()))
    if len(names) < 2:
        raise InputError("a blind overlap needs at least two different reviewer names")
    if not 0 <= share <= 1:
        raise InputError(f"the overlap share must be between 0 and 1, not {share}")
    order = _queue_order(db)
    if not order:
        raise InputError("nothing to assign: generate or import queries, or build a queue with 'curator sample'")
    overlap = set(random.Random(seed).sample(order, round(share * len(order))))
    rest = [q for q in order if q not in overlap]
    mine = {name: overlap | set(rest[i::len(names)]) for i, name in enumerate(names)}
    plan = {"reviewers": names, "share": share, "seed": seed, "overlap": [q for q in order if q in overlap],
            "by_reviewer": {name: [q for q in order if q in mine[name]] for name in names}}
    store.meta_set(db, OVERLAP_KEY, store.dumps(plan))
    return {"reviewers": names, "share": share, "seed": seed, "queries": len(order), "overlap": len(overlap),
            "per_reviewer": {name: len(ids) for name, ids in plan["by_reviewer"].items()}}


def _plan(db: sqlite_utils.Database) -> dict:
    return store.loads(store.meta_get(db, OVERLAP_KEY), {})


def overlap_ids(db: sqlite_utils.Database) -> set[str]:
    return set(_plan(db).get("overlap", []))


def assigned(db: sqlite_utils.Database, reviewer: str) -> list[str]:
    """The queries assigned to ``reviewer``, in queue order (empty when there is no plan)."""
    plan = _plan(db)
    if not plan:
        return []
    if reviewer not in plan["by_reviewer"]:
        raise InputError(f"{reviewer!r} is not in the overlap plan; it assigns {', '.join(plan['reviewers'])}")
    return plan["by_reviewer"][reviewer]
