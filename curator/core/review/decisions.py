"""Reviewer decisions, committed the moment they are made, with unlimited undo and redo.

Every decision writes one ``decisions`` row holding the reviewable fields of the query before
and after it, in the same transaction as the change itself. Undo sets the fields that decision
changed back to ``before`` and marks the row ``undone``; redo sets them to ``after`` again. Both
refuse while a later decision in force (anyone's) depends on those fields, so nobody's later work
is erased. A new decision discards the reviewer's redo stack. Because the journal lives in the
project file, undo works after a restart.

A reviewer's correction of a claim's verdict (``curator claim-verdict``, diagnosis.faithfulness) is
journaled here too, as a row of action ``verdict`` under the trace's query, so undo and redo walk
one history whatever was decided: undo right after a verdict takes back the verdict, not an
older review decision. Such a row's ``before``/``after`` hold the claim's judgement (and the
trace's scores then, for the audit), not the query's fields; undo and redo rescore the trace from
the judgements in force with the function diagnosis registers (``rescore_traces_with``). Readers of
the journal that want review decisions only use ``QUERY_DECISIONS``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

import sqlite_utils

from curator.core import store
from curator.core.corpus.ingest import text_sha
from curator.core.errors import InputError
from curator.core.store.gold import (check_grades, clear_labelled_changes, gold_problem, judged_not_relevant,
                                     labelled_changes, restore_labelled_changes)
from curator.core.queries.rows import normalize_text

STATUSES = ("pending", "approved", "rejected", "unanswerable")
ACTIONS = ("approve", "reject", "unanswerable", "pending", "edit", "gold", "note", "adjudicate")
_STATUS_OF_ACTION = {"approve": "approved", "reject": "rejected", "unanswerable": "unanswerable", "pending": "pending"}
# The fields a decision may change; exactly these are journaled and restored by undo.
REVIEW_FIELDS = ("status", "text", "reference", "gold_chunk_ids", "gold_grades", "answerable", "note",
                 "reviewer", "reviewed_at")
_JSON_FIELDS = {"gold_chunk_ids", "gold_grades"}
VERDICT = "verdict"  # the journal action of a claim verdict correction (not a decision on the query)
QUERY_DECISIONS = f"action != '{VERDICT}'"  # SQL condition: journal rows that decided a query
# Journaled with the fields: the pending changes of the row's gold passages (edited since it was
# labelled) that the decision cleared. A reviewer's approval is a label made against today's text,
# so it clears them (and the stale flag); undo puts back exactly those, redo clears them again, and
# changes a later re-ingest recorded are left alone. Other decisions, and approvals replayed from
# another copy by a merge (made against that copy's text), clear nothing. Each cleared change carries,
# as a fourth item, the hash of the text the decision read (corpus.ingest.text_sha): redo clears it only
# while the chunk still holds that text, since a re-ingest since then made the label stale again.
CLEARED_CHANGES = "cleared_changes"


def snapshot(db: sqlite_utils.Database, query_id: str) -> dict:
    row = db.execute(f"SELECT {', '.join(REVIEW_FIELDS)} FROM queries WHERE id = ?", [query_id]).fetchone()
    if row is None:
        raise InputError(f"no query with id {query_id!r}")
    state = dict(zip(REVIEW_FIELDS, row))
    for name in _JSON_FIELDS:
        state[name] = store.loads(state[name], [] if name == "gold_chunk_ids" else {})
    return state


def _write(db: sqlite_utils.Database, query_id: str, state: dict) -> None:
    values = {k: (store.dumps(v) if k in _JSON_FIELDS else v) for k, v in state.items() if k in REVIEW_FIELDS}
    assignments = ", ".join(f"{k} = :{k}" for k in values)
    db.execute(f"UPDATE queries SET {assignments} WHERE id = :_id", {**values, "_id": query_id})


def _check_gold(db: sqlite_utils.Database, gold: Iterable[str]) -> list[str]:
    ids = list(dict.fromkeys(gold))
    if ids:
        marks = ",".join("?" * len(ids))
        found = {r[0] for r in db.execute(f"SELECT id FROM chunks WHERE id IN ({marks})", ids)}
        missing = [i for i in ids if i not in found]
        if missing:
            raise InputError(f"unknown chunk id(s): {', '.join(missing)}")
    return ids


def _apply(state: dict, action: str, changes: dict) -> dict:
    after = dict(state)
    for key, value in changes.items():
        if value is not None:
            after[key] = value
    if action in _STATUS_OF_ACTION:
        after["status"] = _STATUS_OF_ACTION[action]
    if action == "unanswerable":
        after["answerable"], after["gold_chunk_ids"], after["gold_grades"] = 0, [], {}
    elif after.get("status") == "approved" and after["gold_chunk_ids"]:
        after["answerable"] = 1  # by approve or by an adjudication to approved, after an earlier "unanswerable"
    return after


def decide(
    db: sqlite_utils.Database,
    query_id: str,
    action: str,
    reviewer: str,
    *,
    text: Optional[str] = None,
    reference: Optional[str] = None,
    gold: Optional[Iterable[str]] = None,
    grades: Optional[dict[str, int]] = None,
    note: Optional[str] = None,
    status: Optional[str] = None,
    relabel: bool = True,
    settles: Iterable[str] = (),
) -> dict:
    """Record one decision (and its effect on the query) in a single transaction.

    Raises ``GoldMissing`` (an InputError) rather than leave an approved, answerable row without
    an active gold chunk (see ``curator.core.store.gold``). An approval with ``relabel`` (a reviewer
    here, reading today's text) makes a row that went stale for an edited passage current again;
    ``settles`` names chunks whose pending change any decision settles (a 0 given against today's
    text). Either way the cleared changes are journaled, so undo puts them back."""
    if action not in ACTIONS:
        raise InputError(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    if status is not None and status not in STATUSES:
        raise InputError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    if text is not None and not text.strip():
        raise InputError("the question cannot be empty")
    check_grades(grades)  # one scale (store.gold.GRADES) whoever grades: a key, the dialog, the CLI, a merge
    with db.conn:
        before = snapshot(db, query_id)
        gold_ids = _check_gold(db, gold) if gold is not None else None
        if gold_ids is not None and grades is None:
            # chunks judged not relevant (grade 0, review.pool) stay judged when the gold changes
            grades = {**judged_not_relevant(before["gold_grades"], gold_ids),
                      **{cid: before["gold_grades"].get(cid, 1) for cid in gold_ids}}
        changes = {"text": text, "reference": reference, "gold_chunk_ids": gold_ids, "gold_grades": grades,
                   "note": note, "status": status, "reviewer": reviewer, "reviewed_at": store.now()}
        after = _apply(before, action, changes)
        problem = gold_problem(db, query_id, after)
        if problem is not None:
            raise problem  # the one thing never allowed: an approved answerable row without usable gold
        _write(db, query_id, after)
        if text is not None:
            db.execute("UPDATE queries SET text_norm = ? WHERE id = ?", [normalize_text(text), query_id])
        # An approval reads today's text of the row's gold; ``settles`` names other chunks read again
        # (a grade). A 0-graded chunk's change is offered in the pool until it is graded again.
        read_again = set(settles) | (set(after["gold_chunk_ids"]) if relabel and action == "approve" else set())
        cleared = [[*c, _text_hash(db, c[0])] for c in labelled_changes(db, query_id) if c[0] in read_again]
        if cleared:
            clear_labelled_changes(db, query_id, cleared)
            before, after = {**before, CLEARED_CHANGES: cleared}, {**after, CLEARED_CHANGES: cleared}
        decision_id = journal(db, query_id, reviewer, after["reviewed_at"], action, before, after)
    return {"decision_id": decision_id, "query_id": query_id, "action": action,
            **{k: v for k, v in after.items() if k != CLEARED_CHANGES}}


def journal(db: sqlite_utils.Database, query_id: str, reviewer: str, at: str, action: str, before: dict,
            after: dict) -> int:
    """Add a done row to the journal (inside the caller's transaction); a new decision of any kind
    discards the reviewer's redo stack, as in any editor. Returns the row's id."""
    db.execute("UPDATE decisions SET state = 'discarded' WHERE reviewer IS ? AND state = 'undone'", [reviewer])
    cursor = db.execute(
        "INSERT INTO decisions (query_id, reviewer, at, action, before, after, state) VALUES (?,?,?,?,?,?,'done')",
        [query_id, reviewer, at, action, store.dumps(before), store.dumps(after)],
    )
    return cursor.lastrowid


# -- undo and redo, field by field --------------------------------------------------------------------
# Undo never writes back a whole saved copy of the row (that erased whatever other reviewers, widen-gold
# or an adjudication decided on the row since): it sets back only the fields its decision changed, and
# only while no later decision in force depends on them; redo likewise. So each row always equals the
# replay of its journal (docs/trust.md, "Undo with several reviewers"; tests/trust/test_undo_many_reviewers.py).

# Who decided the row last. Every decision writes them, so no decision depends on another's: after an
# undo or redo they are those of the newest decision in force that set them (``attribution``).
ATTRIBUTION = ("reviewer", "reviewed_at")
CONTENT_FIELDS = tuple(f for f in REVIEW_FIELDS if f not in ATTRIBUTION)
# An approval stands on the row it approved, not only on what it changed: taking back an earlier edit or
# gold change under it would leave an approval of a row nobody approved.
_APPROVED_ROW = ("status", "text", "reference", "gold_chunk_ids", "gold_grades", "answerable")
_STATUS_ACTIONS = {*_STATUS_OF_ACTION, "adjudicate"}
_GOLD_RULE_FIELDS = {"status", "gold_chunk_ids", "answerable"}  # what the gold rule (store.gold.gold_problem) reads
_FIELD_NAMES = {"status": "status", "text": "question", "reference": "reference answer", "gold_chunk_ids": "gold chunks",
                "gold_grades": "gold grades", "answerable": "answerable flag", "note": "note"}
_IN_FORCE = f"state = 'done' AND {QUERY_DECISIONS}"  # the journal rows whose effect the row holds now
_APPLIED = f"state != 'merged' AND {QUERY_DECISIONS}"  # rows applied here at some time (merged ones never were)


def _entries(db: sqlite_utils.Database, where: str, params: list) -> list[dict]:
    found = store.rows(db, f"SELECT id, query_id, reviewer, at, action, state, before, after FROM decisions "
                           f"WHERE {where} ORDER BY id", params)
    for entry in found:
        entry["before"], entry["after"] = store.loads(entry["before"], {}), store.loads(entry["after"], {})
    return found


def changed_fields(entry: dict) -> list[str]:
    """The reviewable fields (attribution aside) a journaled decision changed: what its undo takes back."""
    return [f for f in CONTENT_FIELDS if entry["before"].get(f) != entry["after"].get(f)]


def _stands_on(entry: dict) -> set[str]:
    """The fields a decision depends on: those it changed, a status decision's status, an approval's row."""
    fields = set(changed_fields(entry))
    if entry["action"] in _STATUS_ACTIONS:
        fields.add("status")
    if _approves(entry):
        fields.update(_APPROVED_ROW)
    return fields


def _approves(entry: dict) -> bool:
    """An approval, or an adjudication to approved: it stands on the whole row it approved."""
    return entry["action"] in _STATUS_ACTIONS and entry["after"].get("status") == "approved"


def describe(entry: dict) -> str:
    """"bob's approve (decision 12, 2026-12-06 20:01:30)": who, what and when, for a refusal."""
    when = (entry["at"] or "")[:19].replace("T", " ")
    return f"{entry['reviewer'] or 'someone'}'s {entry['action']} (decision {entry['id']}, {when})"


def _names(fields: Iterable[str]) -> str:
    return ", ".join(_FIELD_NAMES[f] for f in CONTENT_FIELDS if f in set(fields))


def _refuse_if_depended_on(db: sqlite_utils.Database, entry: dict, verb: str) -> None:
    """InputError naming the newest later decision in force that depends on a field ``entry`` changed."""
    mine = changed_fields(entry)
    later = _entries(db, f"query_id = ? AND id > ? AND {_IN_FORCE}", [entry["query_id"], entry["id"]])
    blocking = [(other, [f for f in mine if f in _stands_on(other)]) for other in reversed(later)]
    blocking = [(other, shared) for other, shared in blocking if shared]
    if blocking:
        other, shared = blocking[0]
        more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
        raise InputError(f"cannot {verb} {describe(entry)} on {entry['query_id']}: {describe(other)}{more} came "
                         f"after it, is still in force and depends on its {_names(shared)}; nothing was changed. "
                         f"Undo that one first (as {other['reviewer'] or 'its reviewer'}), or make a new decision instead.")


def _cause(db: sqlite_utils.Database, entry: dict, fields: list[str]) -> str:
    """The newest other decision on the row that changed one of ``fields`` (and whether it is undone)."""
    for other in reversed(_entries(db, f"query_id = ? AND id != ? AND {_APPLIED}", [entry["query_id"], entry["id"]])):
        if set(changed_fields(other)) & set(fields):
            return describe(other) + ("" if other["state"] == "done" else f", {other['state']}")
    return "changed outside the journal"


def _set_fields(db: sqlite_utils.Database, entry: dict, verb: str, expected: dict, target: dict,
                checked: Iterable[str]) -> None:
    """Write ``target``'s values of the fields the decision changed, if the row holds ``expected`` in
    every ``checked`` field and the result keeps the gold invariant; else InputError, nothing written."""
    query_id, fields = entry["query_id"], changed_fields(entry)
    row = snapshot(db, query_id)
    moved = [f for f in checked if row.get(f) != expected.get(f)]
    if moved:
        raise InputError(f"cannot {verb} {describe(entry)} on {query_id}: the row's {_names(moved)} no longer "
                         f"hold what they held then ({_cause(db, entry, moved)}); nothing was changed.")
    values = {f: target.get(f) for f in fields}
    problem = gold_problem(db, query_id, {**row, **values})
    if problem is not None and _answers_for(db, query_id, row, values):  # e.g. a re-ingest retired the gold it brings back
        raise InputError(f"cannot {verb} {describe(entry)}: it would leave an approved row without usable gold "
                         f"({problem}); nothing was changed.")
    if values:
        _write(db, query_id, values)
    if "text" in values:
        db.execute("UPDATE queries SET text_norm = ? WHERE id = ?", [normalize_text(values["text"]), query_id])


def _changed_on_approved_row(db: sqlite_utils.Database, entry: dict) -> set[str]:
    """The fields later decisions in force changed only while the row was approved (on top of an approval)."""
    on_approved, elsewhere = set(), set()
    for other in _entries(db, f"query_id = ? AND id > ? AND {_IN_FORCE}", [entry["query_id"], entry["id"]]):
        (on_approved if other["before"].get("status") == "approved" else elsewhere).update(changed_fields(other))
    return on_approved - elsewhere


def _answers_for(db: sqlite_utils.Database, query_id: str, row: dict, values: dict) -> bool:
    """Whether a step that leaves the row breaking the gold rule is to blame: it changes the status, gold
    or answerable flag, or the row kept the rule before it. Undoing a note on an approved row whose gold a
    re-ingest retired since is not (refusing it would strand the undo of the approval behind it)."""
    return bool(set(values) & _GOLD_RULE_FIELDS) or gold_problem(db, query_id, row) is None


def _take_back(db: sqlite_utils.Database, entry: dict) -> None:
    """Undo a review decision: its changed fields back to ``before``, where the row still holds its ``after``."""
    _refuse_if_depended_on(db, entry, "undo")
    _set_fields(db, entry, "undo", entry["after"], entry["before"], changed_fields(entry))
    if entry["after"].get(CLEARED_CHANGES):  # the approval's "labelled against today's text", undone
        restore_labelled_changes(db, entry["query_id"], entry["after"][CLEARED_CHANGES])


def _apply_again(db: sqlite_utils.Database, entry: dict) -> None:
    """Redo a review decision: its changed fields to ``after`` again, where the row holds its ``before``."""
    _refuse_if_depended_on(db, entry, "redo")
    changed = changed_fields(entry)
    # An approval is redone only onto the row it approved, the fields it did not change included, never
    # onto one changed while the row was not approved: that would approve a row nobody approved. Changes
    # made on top of the approved row (widen-gold, an edit of the approved row) stay, as in the replay.
    kept = _changed_on_approved_row(db, entry) if _approves(entry) else set(_APPROVED_ROW)
    checked = [f for f in _APPROVED_ROW if f not in changed and f not in kept]
    _set_fields(db, entry, "redo", entry["before"], entry["after"], [*changed, *checked])
    still_read = [c for c in entry["after"].get(CLEARED_CHANGES) or [] if len(c) < 4 or _text_hash(db, c[0]) == c[3]]
    if still_read:  # the label was made against the text the chunk holds now, so it is current again
        clear_labelled_changes(db, entry["query_id"], still_read)


def _text_hash(db: sqlite_utils.Database, chunk_id: str) -> Optional[str]:
    """The hash of the text a chunk holds now (None for a chunk no longer stored)."""
    row = db.execute("SELECT title, text FROM chunks WHERE id = ?", [chunk_id]).fetchone()
    return text_sha(*row) if row else None


def attribution(db: sqlite_utils.Database, query_id: str) -> dict:
    """The row's reviewer and reviewed_at as its journal has them: those of the newest decision in force
    that set them, else the row's before its first journaled decision."""
    entries = _entries(db, f"query_id = ? AND {_APPLIED}", [query_id])
    who = {f: entries[0]["before"].get(f) for f in ATTRIBUTION}
    for entry in entries:
        if entry["state"] == "done" and any(entry["before"].get(f) != entry["after"].get(f) for f in ATTRIBUTION):
            who = {f: entry["after"].get(f) for f in ATTRIBUTION}
    return who


def _restore(db: sqlite_utils.Database, decision_id: int, new_state: str) -> str:
    """Undo (``new_state`` 'undone') or redo ('done') one journal row; InputError, nothing written, if refused."""
    entry = _entries(db, "id = ?", [decision_id])[0]
    if entry["action"] == VERDICT:
        _restore_verdict(db, entry, undo=new_state == "undone")
        db.execute("UPDATE decisions SET state = ? WHERE id = ?", [new_state, decision_id])
        return entry["query_id"]
    if new_state == "undone":
        _take_back(db, entry)
    else:
        _apply_again(db, entry)
    db.execute("UPDATE decisions SET state = ? WHERE id = ?", [new_state, decision_id])
    _write(db, entry["query_id"], attribution(db, entry["query_id"]))  # read after the state change above
    return entry["query_id"]


# How a trace's scores follow its judgements is diagnosis's to say, and review may not import diagnosis
# (it builds on review): diagnosis.faithfulness registers its rescoring here when it is imported.
_rescorers: list[Callable[[sqlite_utils.Database, str], None]] = []


def rescore_traces_with(rescore: Callable[[sqlite_utils.Database, str], None]) -> None:
    """Register the function that recomputes a trace's scores from the judgements in force."""
    _rescorers[:] = [rescore]


def _restore_verdict(db: sqlite_utils.Database, entry: dict, undo: bool) -> None:
    """Undo or redo a journaled claim verdict from what its row recorded, as a query decision is.

    Undo deletes the judgement the correction added, so the claim's verdict is again the newest one
    left (the judge's, an earlier or a later correction's, or none); the journal row keeps what was
    undone. Redo adds the judgement again as the newest (under a new id, recorded in the row), and is
    refused while a later verdict on the claim is in force (it would override a newer one). Either way
    the trace is rescored from the judgements in force, never from saved scores, which would erase the
    effect of other reviewers' verdicts on its other claims."""
    if not _rescorers:
        raise InputError("cannot undo or redo a claim verdict before curator.core.diagnosis.faithfulness is "
                         "imported (it rescores the trace); nothing was changed.")
    after = entry["after"]
    if undo:
        db.execute("DELETE FROM judgements WHERE id = ?", [after["judgement_id"]])
    else:
        _refuse_if_newer_verdict(db, entry)
        judgement = after["judgement"]
        cursor = db.execute(f"INSERT INTO judgements ({', '.join(judgement)}) VALUES ({', '.join('?' * len(judgement))})",
                            list(judgement.values()))
        after["judgement_id"] = cursor.lastrowid
        db.execute("UPDATE decisions SET after = ? WHERE id = ?", [store.dumps(after), entry["id"]])
    _rescorers[0](db, after["trace_id"])


def _refuse_if_newer_verdict(db: sqlite_utils.Database, entry: dict) -> None:
    """InputError if the claim got a verdict after the undone one (its id was freed by the undo, so an
    equal id is a later judgement too): a redo would put an older verdict over it."""
    newer = db.execute("SELECT judge, reviewer, at FROM judgements WHERE claim_id = ? AND id >= ? ORDER BY id DESC",
                       [entry["after"]["claim_id"], entry["after"]["judgement_id"]]).fetchone()
    if newer is not None:
        who = f"{newer[1]}'s verdict" if newer[1] else f"the judge {newer[0]}'s verdict"
        raise InputError(f"cannot redo {describe(entry)} on claim {entry['after']['claim_id']}: {who} "
                         f"({(newer[2] or '')[:19].replace('T', ' ')}) came after it and is in force; nothing was "
                         f"changed. Make a new verdict instead (curator claim-verdict).")


def undo(db: sqlite_utils.Database, reviewer: str, decision_id: Optional[int] = None) -> Optional[str]:
    """Undo the reviewer's latest decision in force, whatever its kind (a review decision or a claim
    verdict), or the one ``decision_id`` names; returns its query id (a verdict's: the query of the
    claim's trace), or None if there is nothing to undo."""
    return _step(db, reviewer, "undone", decision_id)


def redo(db: sqlite_utils.Database, reviewer: str, decision_id: Optional[int] = None) -> Optional[str]:
    """Re-apply the reviewer's most recently undone decision, or the undone one ``decision_id`` names."""
    return _step(db, reviewer, "done", decision_id)


_VERB = {"undone": "undo", "done": "redo"}
_SHOWN_OTHERS = 5  # decisions named in a refusal, newest first


def _stack(db: sqlite_utils.Database, reviewer: str, new_state: str) -> list[int]:
    """The reviewer's decisions undo (state done, newest first) or redo (undone, oldest undone first) may take."""
    state, order = ("done", "DESC") if new_state == "undone" else ("undone", "ASC")
    return [r[0] for r in db.execute(f"SELECT id FROM decisions WHERE reviewer IS ? AND state = ? ORDER BY id {order}",
                                     [reviewer, state])]


def _step(db: sqlite_utils.Database, reviewer: str, new_state: str, decision_id: Optional[int]) -> Optional[str]:
    """Undo or redo one decision of the reviewer's; a refusal names the other decisions that can be
    taken instead, so one blocked row does not strand the reviewer's whole stack."""
    verb = _VERB[new_state]
    with db.conn:
        stack = _stack(db, reviewer, new_state)
        if decision_id is not None and decision_id not in stack:
            yours = ", ".join(f"#{i}" for i in stack[:10]) or "none"
            raise InputError(f"decision {decision_id} is not one of {reviewer}'s decisions to {verb} "
                             f"({'in force' if verb == 'undo' else 'undone'}: {yours}); nothing was changed.")
        target = stack[0] if decision_id is None and stack else decision_id
        if target is None:
            return None
        try:
            return _restore(db, target, new_state)
        except InputError as exc:
            others = _possible(db, [i for i in stack if i != target], new_state)
            if not others:
                raise
            raise InputError(f"{exc} Other decisions of yours you can {verb}: {'; '.join(others)}; "
                             f"use --decision ID (curator {verb} PROJECT --decision ID).") from None


def _possible(db: sqlite_utils.Database, ids: list[int], new_state: str) -> list[str]:
    """"#12 approve q_1a2b (2026-12-06 20:01:30)" for each of ``ids`` whose undo (redo) would apply now,
    found by trying it and rolling it back."""
    found = []
    for decision_id in ids:
        db.execute("SAVEPOINT probe")
        try:
            _restore(db, decision_id, new_state)
            found.append(_short(_entries(db, "id = ?", [decision_id])[0]))
        except InputError:
            pass
        finally:
            db.execute("ROLLBACK TO probe")
            db.execute("RELEASE probe")
        if len(found) == _SHOWN_OTHERS:
            break
    return found


def _short(entry: dict) -> str:
    what = f"claim {entry['after'].get('claim_id')}" if entry["action"] == VERDICT else entry["query_id"]
    return f"#{entry['id']} {entry['action']} {what} ({(entry['at'] or '')[:19].replace('T', ' ')})"


def history(db: sqlite_utils.Database, reviewer: Optional[str] = None, limit: int = 10) -> list[dict]:
    """Latest journal entries (newest first), for an audit list or a sidebar."""
    where, params = ("WHERE d.reviewer IS ?", [reviewer]) if reviewer is not None else ("", [])
    result = store.rows(
        db,
        f"""SELECT d.id, d.query_id, d.reviewer, d.at, d.action, d.state, q.text
            FROM decisions d JOIN queries q ON q.id = d.query_id {where}
            ORDER BY d.id DESC LIMIT ?""",
        [*params, limit],
    )
    return result


def queue(db: sqlite_utils.Database, only_pending: bool = False) -> list[dict]:
    """The review queue in order, with each query's current status."""
    where = "WHERE q.status = 'pending'" if only_pending else ""
    return store.rows(
        db,
        f"""SELECT r.query_id, r.position, r.cluster, r.stratum, r.reason, q.status
            FROM review_queue r JOIN queries q ON q.id = r.query_id {where} ORDER BY r.position""",
    )


def progress(db: sqlite_utils.Database) -> dict[str, Any]:
    row = db.execute(
        """SELECT COUNT(*), SUM(q.status != 'pending') FROM review_queue r JOIN queries q ON q.id = r.query_id"""
    ).fetchone()
    return {"queued": row[0] or 0, "reviewed": row[1] or 0}
