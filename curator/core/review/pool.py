"""Fair gold by pooled review: the top results of every retriever under evaluation, offered for grading.

A generated row's gold is its source chunk (widened to the chunks holding the same answer sentence,
store.gold), so a retriever that returns another chunk answering the question equally well is
scored a miss. TREC judges a pool of every system's top results for that reason; this module
builds that pool per query and records the reviewer's grades.

- The pool of a query is the top ``k`` of each retriever: the built-ins (bm25, tfidf, dense,
  hybrid) and the run files of the project's saved eval runs (``curator eval --run FILE``), which
  rank the project's query ids. It is stored in ``pool_hits`` (schema m010) as ranked, gold
  chunks included; what a reviewer is offered is read from it: active chunks that are neither
  gold nor judged, each with which retrievers found it and at which rank.
- k = 5 by default: recall@5 is the cut-off the evaluation routes on (evaluate.k_route, the
  chunks a generator is usually given), so judging each retriever's top 5 settles every recall@5
  and MRR@5 of the pooled retrievers; deeper pools cost the reviewer more chunks per row.
- A grade is a review decision (review.decisions, action "gold") on the one scale of
  store.gold.GRADES: 1 relevant and 2 highly relevant add the chunk to the row's gold with that
  grade; 0 not relevant keeps it out of the gold and records 0 in ``gold_grades`` so it is not
  offered again. Being query fields, grades are journaled and undone like any decision, and reach
  the exports, eval and validate as gold.
- A pool follows the corpus: each records the ``corpus_key`` it was computed against (m012), and a
  re-ingest that adds, retires or edits chunks makes it out of date (``outdated``). What is offered
  is read at once from the active chunks, so a retired chunk is never offered; an out-of-date pool
  is computed again (``refresh``, which the Review tab runs in its worker and ``curator pool`` runs
  anyway). Grades live in the row, not the pool, so they survive: a grade of 1 or 2 is gold and
  goes stale with its passage as any gold label does (store.gold), and a 0 given before the chunk's
  text changed is offered again, marked, until it is graded against today's text.

The retrievers under test only propose chunks here; a person decides. No row is filtered or
scored by a retriever.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

import sqlite_utils

from curator.core import store
from curator.core.errors import InputError
from curator.core.progress import CancelToken, ProgressCallback, report
from curator.core.retrieval import ranking
from curator.core.retrieval.retrievers import (BM25Retriever, DenseRetriever, HybridRetriever, Retriever,
                                               TfidfRetriever)
from curator.core.retrieval.suggest import _texts_of  # one reading of query texts (with its "no query" message)
from curator.core.review.decisions import decide, snapshot
from curator.core.store.gold import GRADES, scale_text, unusable_chunks
from curator.core.store.stats import corpus_key

DEFAULT_K = 5  # see the module docstring: the recall@5 cut-off
BUILT_IN = ("bm25", "tfidf", "dense", "hybrid")
_BATCH = 64

# Rows that get a pool: answerable rows a reviewer may still grade (pending or approved), the
# queued ones in queue order, then (``everywhere``) the rest in creation order.
_TARGETS_SQL = """SELECT q.id, q.text FROM queries q LEFT JOIN review_queue r ON r.query_id = q.id
    WHERE q.status IN ('pending', 'approved') AND q.answerable = 1 AND (r.query_id IS NOT NULL OR :everywhere)
    ORDER BY r.position IS NULL, r.position, q.created_at, q.id"""


# -- which rows, which retrievers ------------------------------------------------------------------

def pool_targets(db: sqlite_utils.Database, everywhere: bool = False) -> list[tuple[str, str]]:
    """(id, text) of the rows that get a pool: the queued ones, or (``everywhere``) every pending or
    approved answerable row."""
    return [(r[0], r[1]) for r in db.execute(_TARGETS_SQL, {"everywhere": int(everywhere)})]


def lacking_pool(db: sqlite_utils.Database, everywhere: bool = False) -> list[str]:
    """Ids of target rows whose pool was never computed."""
    done = {r[0] for r in db.execute("SELECT query_id FROM pool_queries")}
    return [qid for qid, _ in pool_targets(db, everywhere) if qid not in done]


def outdated(db: sqlite_utils.Database, query_ids: Optional[Iterable[str]] = None) -> list[str]:
    """Ids of the pooled rows (all, or those of ``query_ids``) whose pool was computed against
    another corpus than today's (a re-ingest since; a pool from before m012 counts too)."""
    key = corpus_key(db)
    stale = [r[0] for r in db.execute("SELECT query_id FROM pool_queries WHERE corpus_key IS NOT ? ORDER BY query_id",
                                      [key])]
    if query_ids is None:
        return stale
    wanted = set(query_ids)
    return [qid for qid in stale if qid in wanted]


def needing_pool(db: sqlite_utils.Database, everywhere: bool = False) -> list[str]:
    """Target rows whose pool is missing or out of date, in queue order."""
    stale = set(outdated(db))
    done = {r[0] for r in db.execute("SELECT query_id FROM pool_queries")}
    return [qid for qid, _ in pool_targets(db, everywhere) if qid not in done or qid in stale]


class RunFile(Retriever):
    """A saved TREC run (``qid Q0 docid rank score tag``) over the project's query ids: it ranks the
    queries it holds and nothing else, so it pools by query id, not by text."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.name = f"run:{self.path.name}"

    def fit(self, db: sqlite_utils.Database) -> "RunFile":
        from curator.core.evaluation.evaluate import load_run  # the one reader of run files

        self.warnings_: list[str] = []
        self.run_ = load_run(self.path, self.warnings_)
        return self

    def search_ids(self, query_ids: list[str], depth: int) -> list[dict[str, float]]:
        out = []
        for qid in query_ids:
            scores = self.run_.get(qid, {})
            out.append({doc: scores[doc] for doc in ranking.ranked(scores)[:depth]})
        return out


def saved_run_files(db: sqlite_utils.Database) -> list[Path]:
    """Run files of the project's saved eval runs that still exist, newest first, each once."""
    seen: dict[Path, None] = {}
    for (path,) in db.execute("SELECT run_file FROM eval_runs WHERE run_file IS NOT NULL ORDER BY id DESC"):
        resolved = Path(path).resolve()
        if resolved.is_file():
            seen.setdefault(resolved, None)
    return list(seen)


def fit_retrievers(db: sqlite_utils.Database, names: Iterable[str] = BUILT_IN, run_files: Iterable[Path] = (),
                   embedder: Optional[str] = None, cancel: Optional[CancelToken] = None,
                   skipped: Optional[list] = None) -> list[Retriever]:
    """The fitted retrievers to pool, built-ins first. bm25 and dense are fitted once and shared
    with hybrid (fitting dense embeds every chunk: the slow part). A cancel stops between fits."""
    check = cancel.check if cancel is not None else (lambda: None)
    names = list(dict.fromkeys(names))
    unknown = [n for n in names if n not in BUILT_IN]
    if unknown:
        raise InputError(f"unknown retriever {unknown[0]!r} for the pool; use {', '.join(BUILT_IN)}")
    parts: dict[str, Retriever] = {}
    if "bm25" in names or "hybrid" in names:
        parts["bm25"] = BM25Retriever().fit(db)
    if "tfidf" in names:
        check()
        parts["tfidf"] = TfidfRetriever().fit(db)
    if "dense" in names or "hybrid" in names:
        check()
        parts["dense"] = DenseRetriever(embedder).fit(db, cancel=cancel)
    if "hybrid" in names:
        hybrid = HybridRetriever(embedder)
        hybrid.parts_ = [parts["bm25"], parts["dense"]]  # what its fit() would build, already fitted
        parts["hybrid"] = hybrid
    return [parts[n] for n in names] + _run_files(db, run_files, skipped)


def _run_files(db: sqlite_utils.Database, paths: Iterable[Path], skipped: Optional[list]) -> list["RunFile"]:
    """The run files, fitted and each named uniquely ("run:a.trec", or "run:dir/a.trec" when two share
    a name). With a ``skipped`` list (the saved eval runs' files, which may have changed since) one that
    no longer reads as a run is left out and said there, instead of stopping the whole pool."""
    fitted = []
    for path in paths:
        try:
            fitted.append(RunFile(path).fit(db))
        except InputError as exc:
            if skipped is None:
                raise
            skipped.append(f"{path}: left out of the pool: {exc}")
    names = [r.name for r in fitted]
    for run in fitted:
        if names.count(run.name) > 1:
            run.name = f"run:{run.path.parent.name}/{run.path.name}"
    return fitted


# -- computing and storing -------------------------------------------------------------------------

def _hits_of(retriever: Retriever, batch: list[tuple[str, str]], k: int) -> list[dict[str, float]]:
    if isinstance(retriever, RunFile):
        return retriever.search_ids([qid for qid, _ in batch], k)
    return retriever.search_texts([text for _, text in batch], k)


def _store(db: sqlite_utils.Database, query_id: str, found: dict[str, dict[str, float]], k: int,
           key: str) -> None:
    """Replace one query's pool (inside the caller's transaction); ``key``: the corpus it was read from."""
    db.execute("DELETE FROM pool_hits WHERE query_id = ?", [query_id])
    db.conn.executemany(
        "INSERT INTO pool_hits (query_id, retriever, rank, chunk_id, score) VALUES (?,?,?,?,?)",
        [(query_id, name, rank, cid, scores[cid]) for name, scores in found.items()
         for rank, cid in enumerate(ranking.ranked(scores), 1)])
    db.execute("INSERT OR REPLACE INTO pool_queries (query_id, k, retrievers, computed_at, corpus_key) "
               "VALUES (?,?,?,?,?)", [query_id, k, store.dumps(list(found)), store.now(), key])


def compute(db: sqlite_utils.Database, query_ids: Optional[Iterable[str]] = None, k: int = DEFAULT_K,
            retrievers: Iterable[str] = BUILT_IN, run_files: Optional[Iterable[Path]] = None,
            everywhere: bool = False, embedder: Optional[str] = None,
            on_progress: Optional[ProgressCallback] = None, cancel: Optional[CancelToken] = None) -> dict:
    """Compute and store the pool of the given queries (default: every target row, see
    ``pool_targets``), from ``retrievers`` and ``run_files`` (default: the saved eval runs' files).
    Each batch is committed as it is made, so a cancel keeps the pools computed so far."""
    if k < 1:
        raise InputError(f"the pool depth must be at least 1 (got {k})")
    todo = _texts_of(db, query_ids) if query_ids is not None else pool_targets(db, everywhere)
    files = saved_run_files(db) if run_files is None else [Path(p) for p in run_files]
    if not todo:
        return {"queries": 0, "k": k, "retrievers": [], "warnings": []}
    skipped: Optional[list] = [] if run_files is None else None  # a file the user named must read, or fail
    key = corpus_key(db)  # read before the fits: a re-ingest meanwhile leaves the pools out of date, not current
    fitted = fit_retrievers(db, retrievers, files, embedder, cancel, skipped)
    names = [r.name for r in fitted]
    for start in range(0, len(todo), _BATCH):
        if cancel is not None:
            cancel.check()
        batch = todo[start:start + _BATCH]
        results = {r.name: _hits_of(r, batch, k) for r in fitted}
        with db.conn:
            for i, (query_id, _) in enumerate(batch):
                _store(db, query_id, {name: results[name][i] for name in names}, k, key)
        report(on_progress, min(start + _BATCH, len(todo)), len(todo), "pooling retrievers' top results")
    warnings = (skipped or []) + [w for r in fitted if isinstance(r, RunFile) for w in r.warnings_]
    return {"queries": len(todo), "k": k, "retrievers": names, "warnings": warnings}


def fill_missing(db: sqlite_utils.Database, on_progress: Optional[ProgressCallback] = None,
                 cancel: Optional[CancelToken] = None) -> dict:
    """Pools for every queued row that has none or an out-of-date one (the Review tab runs this in a
    worker). An out-of-date pool keeps its depth; retrievers are the built-ins and saved runs."""
    todo = needing_pool(db)
    if not todo:
        return {"queries": 0, "k": DEFAULT_K, "retrievers": [], "warnings": []}
    return compute(db, todo, k=_depth_of(db, todo), on_progress=on_progress, cancel=cancel)


def refresh(db: sqlite_utils.Database, on_progress: Optional[ProgressCallback] = None,
            cancel: Optional[CancelToken] = None) -> dict:
    """Compute again every pool that is out of date (of every pooled row, queued or not, at its
    depth), so no pool offers what the corpus held before a re-ingest."""
    todo = outdated(db)
    if not todo:
        return {"queries": 0, "k": DEFAULT_K, "retrievers": [], "warnings": []}
    return compute(db, todo, k=_depth_of(db, todo), on_progress=on_progress, cancel=cancel)


def _depth_of(db: sqlite_utils.Database, query_ids: list[str]) -> int:
    """The deepest k these rows were pooled at (DEFAULT_K for rows never pooled)."""
    marks = ",".join("?" * len(query_ids[:900]))
    row = db.execute(f"SELECT MAX(k) FROM pool_queries WHERE query_id IN ({marks})", query_ids[:900]).fetchone()
    return int(row[0]) if row and row[0] else DEFAULT_K


# -- reading ---------------------------------------------------------------------------------------

def judged_ids(state: dict) -> set[str]:
    """Chunks a reviewer already decided on for this row: its gold and every graded chunk (grade 0
    included)."""
    return set(state["gold_chunk_ids"]) | set(state["gold_grades"])


def changed_since_judged(db: sqlite_utils.Database, query_id: str, state: dict) -> set[str]:
    """Chunks this row judged not relevant (0) whose text a re-ingest changed since (a ``gold_changes``
    row, as for a gold label): the 0 was given to other text, so the chunk is offered again."""
    zeros = {c for c, g in state["gold_grades"].items() if int(g) == 0 and c not in state["gold_chunk_ids"]}
    if not zeros:
        return set()
    changed = {r[0] for r in db.execute("SELECT chunk_id FROM gold_changes WHERE query_id = ?", [query_id])}
    return zeros & changed


def _grouped(hits: list[dict]) -> list[dict]:
    """One entry per chunk: who found it at which rank, best rank first, then found by more."""
    by_chunk: dict[str, dict] = {}
    for hit in hits:
        entry = by_chunk.setdefault(hit["chunk_id"], {key: hit[key] for key in
                                                      ("chunk_id", "title", "text", "path", "ord")})
        entry.setdefault("found_by", []).append({"retriever": hit["retriever"], "rank": hit["rank"]})
    for entry in by_chunk.values():
        entry["found_by"].sort(key=lambda f: (f["rank"], f["retriever"]))
    return sorted(by_chunk.values(),
                  key=lambda e: (e["found_by"][0]["rank"], -len(e["found_by"]), e["chunk_id"]))


def pooled(db: sqlite_utils.Database, query_id: str, include_judged: bool = False) -> list[dict]:
    """The pooled chunks offered for QUERY_ID: active, not gold, not judged (unless
    ``include_judged``), each with ``found_by`` [{retriever, rank}], path, heading and text;
    numbered from 1 in ``position``."""
    hits = store.rows(
        db, """SELECT h.retriever, h.rank, h.chunk_id, c.title, c.text, c.ord, d.path
               FROM pool_hits h JOIN chunks c ON c.id = h.chunk_id JOIN documents d ON d.id = c.doc_id
               WHERE h.query_id = ? AND c.active = 1""", [query_id])
    state = snapshot(db, query_id)
    again = changed_since_judged(db, query_id, state)
    skip = set() if include_judged else judged_ids(state) - again
    entries = [e for e in _grouped(hits) if e["chunk_id"] not in skip]
    return [{"position": i, **e, "changed_since_judged": e["chunk_id"] in again} for i, e in enumerate(entries, 1)]


def is_computed(db: sqlite_utils.Database, query_id: str) -> bool:
    return db.execute("SELECT 1 FROM pool_queries WHERE query_id = ?", [query_id]).fetchone() is not None


def is_outdated(db: sqlite_utils.Database, query_id: str) -> bool:
    """The row's pool was computed against another corpus than today's."""
    row = db.execute("SELECT corpus_key FROM pool_queries WHERE query_id = ?", [query_id]).fetchone()
    return row is not None and row[0] != corpus_key(db)


def found_by_text(entry: dict) -> str:
    """'bm25 #2, dense #1' for the review row (and why a chunk judged before is offered again)."""
    found = ", ".join(f"{f['retriever']} #{f['rank']}" for f in entry["found_by"])
    return found + ("; judged not relevant before its text changed" if entry.get("changed_since_judged") else "")


# -- grading ---------------------------------------------------------------------------------------

def grade(db: sqlite_utils.Database, query_id: str, chunk_id: str, value: int, reviewer: str) -> dict:
    """Grade one chunk for one query (a journaled, undoable 'gold' decision, committed at once):
    1 or 2 make it gold with that grade, 0 records it as not relevant (and drops it from the gold
    if it was gold); the scale is store.gold.GRADES. Any grade of a chunk whose text changed since
    it was judged settles that change (the reviewer read today's text). Raises GoldMissing
    rather than leave an approved row without gold."""
    if value not in GRADES:
        raise InputError(f"grade {value!r} is not on the scale ({scale_text()})")
    if unusable_chunks(db, [chunk_id]):
        raise InputError(f"no active chunk with id {chunk_id!r} (curator chunks lists them)")
    state = snapshot(db, query_id)
    if value > 0 and state["status"] == "unanswerable":
        raise InputError(f"{query_id} is marked unanswerable, so no chunk answers it; set it back to pending "
                         "(curator label ... pending) before grading a chunk relevant")
    gold = [c for c in state["gold_chunk_ids"] if c != chunk_id or value > 0]
    if value > 0 and chunk_id not in gold:
        gold.append(chunk_id)
    grades = {c: int(g) for c, g in state["gold_grades"].items()}
    grades.update({c: 1 for c in gold if c not in grades})  # a gold chunk without a grade counts 1 (gold_qrels)
    grades[chunk_id] = value
    # any grade is given against today's text, so it settles that chunk's change (journaled)
    return decide(db, query_id, "gold", reviewer, gold=gold, grades=grades, settles=[chunk_id])


def summary(db: sqlite_utils.Database, query_ids: Optional[Iterable[str]] = None) -> dict:
    """How big the pools are and how they were graded: rows pooled, chunks offered now (not gold,
    not judged) per row, and pooled chunks other than the row's source chunk graded relevant
    (>= 1) or not relevant (0)."""
    wanted = list(query_ids) if query_ids is not None else [r[0] for r in db.execute("SELECT query_id FROM pool_queries")]
    offered, relevant, not_relevant = [], 0, 0
    for qid in wanted:
        state = snapshot(db, qid)
        offered.append(len(pooled(db, qid)))
        pool_ids = {r[0] for r in db.execute("SELECT DISTINCT chunk_id FROM pool_hits WHERE query_id = ?", [qid])}
        source = set(store.loads(db.execute("SELECT source_chunk_ids FROM queries WHERE id = ?", [qid]).fetchone()[0], []))
        graded = {c: int(g) for c, g in state["gold_grades"].items() if c in pool_ids - source}
        relevant += sum(1 for g in graded.values() if g > 0)
        not_relevant += sum(1 for g in graded.values() if g == 0)
    ordered = sorted(offered)
    return {"rows": len(wanted), "offered": sum(offered),
            "offered_per_row_mean": round(sum(offered) / len(wanted), 2) if wanted else 0.0,
            "offered_per_row_median": ordered[len(ordered) // 2] if ordered else 0,
            "graded_relevant": relevant, "graded_not_relevant": not_relevant}
