"""The gold invariant: an approved, answerable row has at least one gold chunk, and every one of
its gold chunks exists and is active (not retired by a re-ingest).

A row that breaks it would be exported as ``answerable: true`` with no usable
``reference_context_ids`` and silently dropped by evaluate, which quietly corrupts a gold set.
``decide`` refuses to create such a row (``gold_problem``); export, evaluate and stats use
``broken_gold_ids`` to keep rows that broke it later (a re-ingest retired their chunk, an older
project) out of the gold set and to count them as needing attention.
"""

from __future__ import annotations

import json
import re
from typing import Iterable, Optional

import sqlite_utils

from curator.core.errors import InputError
from curator.core.store.records import dumps, now

# -- the graded-relevance scale ---------------------------------------------------------------------
# One scale for every grade a reviewer gives (the pooled review's keys, the suggestions' Shift+1-5, the
# gold dialog, ``curator grade``), written as the qrels level by every exporter and used as nDCG's gain:
# 0 not relevant, 1 relevant, 2 highly relevant. It is the scale of the TREC ad hoc and Web tracks and of
# TREC-COVID, the graded collection in BEIR (whose qrels score a BEIR user reads as the same levels); a
# finer top level (TREC DL's 3 "perfectly relevant") asks a reviewer to tell apart two kinds of "this
# chunk answers it", where judges agree least, for a gain difference nDCG barely shows. Projects graded
# 3 before (the gold dialog and Shift+1-5 allowed it) read 2: migration m011.
GRADES = {0: "not relevant", 1: "relevant", 2: "highly relevant"}
NOT_RELEVANT, RELEVANT, HIGHLY_RELEVANT = 0, 1, 2
MAX_GRADE = max(GRADES)
GOLD_GRADES = tuple(g for g in GRADES if g > 0)  # the grades that make a chunk gold


def grade_name(value: int) -> str:
    """'2 highly relevant' for messages and hints."""
    return f"{value} {GRADES[value]}"


def scale_text(grades: Iterable[int] = GRADES) -> str:
    """'0 not relevant, 1 relevant, 2 highly relevant' (or the given part of the scale)."""
    return ", ".join(grade_name(g) for g in grades)


def check_grades(grades: Optional[dict]) -> None:
    """Raise InputError naming the chunk whose grade is not on the scale."""
    for chunk_id, value in (grades or {}).items():
        if isinstance(value, bool) or not isinstance(value, int) or value not in GRADES:
            raise InputError(f"grade {value!r} of {chunk_id} is not on the scale ({scale_text()})")


def grades_on_scale(grades: dict) -> dict:
    """``grades`` with a grade above the scale read as its top (what m011 did to the project's own rows),
    for a project copy read as it is (a merge reads the other copy without migrating it)."""
    return {c: min(int(g), MAX_GRADE) for c, g in grades.items()}


def next_gold_grade(value: Optional[int]) -> int:
    """The grade after ``value`` when a reviewer cycles a gold chunk's grade (Shift+1-5): up the gold
    grades and round again; a chunk not gold yet starts at the top one."""
    if value not in GOLD_GRADES:
        return MAX_GRADE
    return GOLD_GRADES[(GOLD_GRADES.index(value) + 1) % len(GOLD_GRADES)]


# One row breaks the invariant when this holds (``q`` is the queries row).
BROKEN_GOLD_SQL = """q.status = 'approved' AND q.answerable = 1 AND (
    json_array_length(q.gold_chunk_ids) = 0
    OR EXISTS (SELECT 1 FROM json_each(q.gold_chunk_ids) g LEFT JOIN chunks c ON c.id = g.value
               WHERE c.id IS NULL OR c.active = 0))"""


class GoldMissing(InputError):
    """``decide`` refused an approval whose gold chunks are missing or retired."""

    def __init__(self, query_id: str, unusable: list[str]) -> None:
        self.query_id, self.unusable = query_id, unusable
        if unusable:
            text = (f"{query_id} has retired or unknown gold chunk(s) {', '.join(unusable)}: replace them with "
                    "--gold c_..., or label it unanswerable")
        else:
            text = f"{query_id} has no gold chunk: add one with --gold c_..., or label it unanswerable"
        super().__init__(text)


def unusable_chunks(db: sqlite_utils.Database, chunk_ids: Iterable[str]) -> list[str]:
    """The ids among ``chunk_ids`` that are unknown or retired, in their given order."""
    ids = list(dict.fromkeys(chunk_ids))
    active: set[str] = set()
    for start in range(0, len(ids), 900):
        batch = ids[start : start + 900]
        marks = ",".join("?" * len(batch))
        active.update(r[0] for r in db.execute(f"SELECT id FROM chunks WHERE active = 1 AND id IN ({marks})", batch))
    return [i for i in ids if i not in active]


def gold_problem(db: sqlite_utils.Database, query_id: str, state: dict) -> Optional[GoldMissing]:
    """The reason ``state`` (a row's reviewable fields) breaks the invariant, or None."""
    if state.get("status") != "approved" or not state.get("answerable"):
        return None
    gold = list(state.get("gold_chunk_ids") or [])
    if not gold:
        return GoldMissing(query_id, [])
    unusable = unusable_chunks(db, gold)
    return GoldMissing(query_id, unusable) if unusable else None


def broken_gold_ids(db: sqlite_utils.Database) -> set[str]:
    """Ids of the rows that break the invariant now (one query, for export, evaluate and stats)."""
    return {r[0] for r in db.execute(f"SELECT q.id FROM queries q WHERE {BROKEN_GOLD_SQL}")}


# -- fair gold: every chunk that holds the reference answer ------------------------------------------
# A generated row's reference answer is a sentence of its source chunk (answer-first generation), and
# chunks overlap (32 tokens) and FAQ-like corpora repeat answers, so other chunks often hold the same
# sentence. Scoring only the source chunk as relevant counts a retriever that returns such a chunk as
# a miss; TREC judges a pool of every system's results for the same reason. Widening adds each active
# chunk holding the whole reference (same words in the same order, case and punctuation aside) with
# the source chunk's grade. It needs no retriever: the FTS5 phrase match only narrows the candidates.

_WORD = re.compile(r"\w+", re.UNICODE)
MIN_WIDEN_WORDS = 8  # a shorter reference ("Python 3.11") is a phrase many chunks hold, not an answer sentence
WIDEN_REVIEWER = "curator-widen"


def _words(text: str) -> list[str]:
    return _WORD.findall((text or "").lower())


def chunks_holding(db: sqlite_utils.Database, sentence: str) -> list[str]:
    """Active chunks whose text holds every word of ``sentence`` in order (ids by chunk order); [] for a
    sentence shorter than MIN_WIDEN_WORDS words."""
    words = _words(sentence)
    if len(words) < MIN_WIDEN_WORDS:
        return []
    needle = " " + " ".join(words) + " "
    phrase = '"' + " ".join(words) + '"'
    found = db.execute(
        """SELECT c.id, c.text FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid
           WHERE chunks_fts MATCH ? AND c.active = 1 ORDER BY c.doc_id, c.ord""", [f"text : {phrase}"]).fetchall()
    return [cid for cid, text in found if needle in " " + " ".join(_words(text)) + " "]


def judged_not_relevant(grades: dict, gold: Iterable[str]) -> dict[str, int]:
    """The chunks a reviewer graded 0 (not relevant, in the pooled review) outside ``gold``, as
    {chunk id: 0}: every change of a row's gold keeps them, so they are not offered or added again."""
    gold = set(gold)
    return {c: 0 for c, g in grades.items() if int(g) == 0 and c not in gold}


def widened(db: sqlite_utils.Database, reference: Optional[str], gold: list[str], grades: dict) -> tuple[list[str], dict]:
    """(gold ids, grades) with every chunk holding ``reference`` added at the source chunk's grade
    (the first gold chunk's), except a chunk a reviewer judged not relevant (grade 0: kept as judged);
    unchanged when none is new."""
    judged_out = judged_not_relevant(grades, gold)
    extra = [cid for cid in chunks_holding(db, reference or "") if cid not in gold and cid not in judged_out]
    if not extra or not gold:
        return gold, grades
    grade = int(grades.get(gold[0], 1))
    return gold + extra, {**judged_out, **{c: int(grades.get(c, 1)) for c in gold}, **{c: grade for c in extra}}


def widen_gold(db: sqlite_utils.Database, ids: Optional[Iterable[str]] = None, source: str = "synthetic") -> dict:
    """Widen the gold of existing answerable rows of ``source`` (all of them, or ``ids``), journaled as
    a 'gold' decision by WIDEN_REVIEWER that keeps the row's status and reviewer (so undo and the audit
    show it, and an approved row stays approved by whoever approved it). Counts rows and chunks added."""
    sql = ("SELECT id, reference, gold_chunk_ids, gold_grades FROM queries WHERE answerable = 1 AND source = ? "
           "AND json_array_length(gold_chunk_ids) > 0")
    rows = db.execute(sql, [source]).fetchall()
    wanted = set(ids) if ids is not None else None
    counts = {"rows_checked": 0, "rows_widened": 0, "chunks_added": 0}
    for query_id, reference, gold_text, grades_text in rows:
        if wanted is not None and query_id not in wanted:
            continue
        counts["rows_checked"] += 1
        gold, grades = json.loads(gold_text or "[]"), json.loads(grades_text or "{}")
        new_gold, new_grades = widened(db, reference, gold, grades)
        if len(new_gold) == len(gold):
            continue
        _journal_widening(db, query_id, new_gold, new_grades)
        counts["rows_widened"] += 1
        counts["chunks_added"] += len(new_gold) - len(gold)
    return counts


def _journal_widening(db: sqlite_utils.Database, query_id: str, gold: list[str], grades: dict) -> None:
    fields = ("status", "text", "reference", "gold_chunk_ids", "gold_grades", "answerable", "note", "reviewer",
              "reviewed_at")
    with db.conn:
        before = dict(zip(fields, db.execute(f"SELECT {', '.join(fields)} FROM queries WHERE id = ?", [query_id]).fetchone()))
        before["gold_chunk_ids"] = json.loads(before["gold_chunk_ids"] or "[]")
        before["gold_grades"] = json.loads(before["gold_grades"] or "{}")
        after = {**before, "gold_chunk_ids": gold, "gold_grades": grades}
        db.execute("UPDATE queries SET gold_chunk_ids = ?, gold_grades = ? WHERE id = ?",
                   [dumps(gold), dumps(grades), query_id])
        db.execute("INSERT INTO decisions (query_id, reviewer, at, action, before, after, state) VALUES (?,?,?,?,?,?,'done')",
                   [query_id, WIDEN_REVIEWER, now(), "gold", dumps(before), dumps(after)])


# A row is stale while one of its gold chunks is gone, retired, or holds other text than the one it
# was labelled against (a ``gold_changes`` row, written when a passage is edited under its id).
STALE_SQL = """(SELECT COUNT(*) > 0 FROM json_each(queries.gold_chunk_ids) g
                LEFT JOIN chunks c ON c.id = g.value
                WHERE c.id IS NULL OR c.active = 0
                   OR EXISTS (SELECT 1 FROM gold_changes x WHERE x.query_id = queries.id AND x.chunk_id = g.value))"""


def labelled_changes(db: sqlite_utils.Database, query_id: str) -> list[list]:
    """The row's pending text changes: [chunk id, text hash it was labelled against, when]."""
    return [list(r) for r in db.execute(
        "SELECT chunk_id, labelled_sha, changed_at FROM gold_changes WHERE query_id = ? ORDER BY chunk_id", [query_id])]


def clear_labelled_changes(db: sqlite_utils.Database, query_id: str, changes: list[list]) -> None:
    """Drop these pending changes of the row (a reviewer labelled it against today's text), and let
    its stale flag follow. Changes recorded since (a later re-ingest) are not among them and stay."""
    for chunk_id, labelled_sha, *_ in changes:
        db.execute("DELETE FROM gold_changes WHERE query_id = ? AND chunk_id = ? AND labelled_sha = ?",
                   [query_id, chunk_id, labelled_sha])
    _refresh_stale(db, query_id)


def restore_labelled_changes(db: sqlite_utils.Database, query_id: str, changes: list[list]) -> None:
    """Put back pending changes a decision cleared (its undo), keeping any recorded since."""
    for chunk_id, labelled_sha, changed_at, *_ in changes:
        db.execute("""INSERT INTO gold_changes (query_id, chunk_id, labelled_sha, changed_at) VALUES (?, ?, ?, ?)
                      ON CONFLICT(query_id, chunk_id) DO NOTHING""", [query_id, chunk_id, labelled_sha, changed_at])
    _refresh_stale(db, query_id)


def _refresh_stale(db: sqlite_utils.Database, query_id: str) -> None:
    db.execute(f"UPDATE queries SET stale = {STALE_SQL} WHERE id = ?", [query_id])
