"""Realism of a query: does it read like a user's question, or like the passage it was written from?

Measured per row, for every query with gold (generated and real), and stored (table
``query_realism``, migration m009):

- ``chunk_overlap``: share of the query's content words (crudely stemmed, queries.words.word_share, as generation's filters use it)
  found in its gold chunk, the best of its gold chunks. A question written while reading the passage
  reuses its words; a user who does not know the document's wording does not (the DPR paper: BM25
  beats dense retrieval on SQuAD, whose questions were written from the passage, and loses on
  Natural Questions, real search queries);
- ``answer_overlap``: the same share against its reference answer (None without one, as log rows);
- ``words``: length in words; ``stopword_share``: share of its words that are function words
  (Zendel et al., CIKM 2025: LLM-written queries use fewer than people's);
- ``form``: ``question`` (ends in '?' or opens with a question word), ``keywords`` (a short run of
  mostly content words, no sentence end) or ``statement`` (anything else: "printer does not print.").

The figures of the synthetic rows are compared, per query type, with the project's real (log) rows;
without enough of those, with ``BUILTIN_REFERENCE``, measured on real questions (see there).
"""

from __future__ import annotations

import hashlib
import json
from typing import Iterable, Optional, Sequence

import numpy as np
import sqlite_utils

from curator.core import store
from curator.core.queries import words as qwords

VERSION = 1  # part of each row's key: a changed measure re-measures every row
FORMS = ("question", "statement", "keywords")
QUESTION_OPENERS = {"what", "how", "why", "when", "where", "which", "who", "whom", "whose", "can", "could", "do",
                    "does", "did", "is", "are", "was", "were", "should", "would", "will", "shall", "may", "might",
                    "has", "have", "am"}
MAX_KEYWORD_WORDS = 8
MAX_KEYWORD_STOP_SHARE = 0.25
CAP_QUANTILE = 0.75  # a question reusing more of its chunk than three real questions in four is rejected
MIN_REAL_ROWS = 10  # fewer real rows with gold than this: compare with the built-in reference instead
METRICS = ("chunk_overlap", "answer_overlap", "words", "stopword_share")

# Measured on real questions: the 169 questions of the Python 3.11 FAQ (Debian's python3.11-doc, built by
# bench/realq/build.py), each against the chunks of its FAQ answer as gold, chunked with Curator's
# defaults; `.venv/bin/python bench/realism_reference.py --realq /tmp/realq` prints these figures
# (median and quartiles; form shares; 167 rows: the log import merges two). Questions people asked, not written while reading the answer.
# For comparison, the 119 questions of the Debian FAQ (bench/realq/build_debian.py) give overlap
# 0.449 / 0.667 / 1.0, words 7 / 10 / 13, function words 0.417 / 0.5 / 0.542: the same medians.
BUILTIN_REFERENCE = {
    "name": "built-in reference: 167 real questions of the Python FAQ",
    "rows": 167,
    "chunk_overlap": {"q1": 0.5, "median": 0.667, "q3": 0.857},
    "answer_overlap": None,
    "words": {"q1": 8.0, "median": 9.0, "q3": 11.0},
    "stopword_share": {"q1": 0.429, "median": 0.5, "q3": 0.556},
    "forms": {"question": 1.0, "statement": 0.0, "keywords": 0.0},
}


# -- one query -------------------------------------------------------------------------------------

def form_of(text: str) -> str:
    """question / keywords / statement, from the surface alone."""
    words = qwords.tokens(text)
    stripped = (text or "").strip()
    if stripped.endswith("?") or (words and words[0] in QUESTION_OPENERS):
        return "question"
    stop = sum(w in qwords.STOPWORDS for w in words) / len(words) if words else 0.0
    if words and len(words) <= MAX_KEYWORD_WORDS and not stripped.endswith((".", "!")) and stop <= MAX_KEYWORD_STOP_SHARE:
        return "keywords"
    return "statement"


def chunk_overlap(text: str, gold_texts: Iterable[str]) -> Optional[float]:
    """Share of the query's content words in its gold chunk (the best one); None without gold."""
    shares = [qwords.word_share(text, [chunk]) for chunk in gold_texts]
    return max(shares) if shares else None


def measure(text: str, gold_texts: Sequence[str], reference: Optional[str] = None) -> dict:
    """The realism figures of one query (see the module docstring)."""
    words = qwords.tokens(text)
    return {"chunk_overlap": chunk_overlap(text, gold_texts),
            "answer_overlap": qwords.word_share(text, [reference]) if reference else None,
            "words": len(words),
            "stopword_share": sum(w in qwords.STOPWORDS for w in words) / len(words) if words else 0.0,
            "form": form_of(text)}


# -- stored per row --------------------------------------------------------------------------------

def _key(row: dict, texts: dict[str, str]) -> str:
    parts = [str(VERSION), row["text"], row["reference"] or "", *[texts.get(c, "") for c in row["gold"]]]
    return hashlib.sha1("\x00".join(parts).encode("utf-8")).hexdigest()


def _rows_with_gold(db: sqlite_utils.Database, ids: Optional[Sequence[str]] = None) -> list[dict]:
    where = "q.answerable = 1 AND json_array_length(q.gold_chunk_ids) > 0"
    params: list = []
    if ids is not None:
        # one JSON list, not one SQL variable per id: a big log's ids pass SQLite's variable limit
        where += " AND q.id IN (SELECT value FROM json_each(?))"
        params = [json.dumps(list(ids))]
    found = store.rows(db, f"""SELECT q.id, q.text, q.reference, q.gold_chunk_ids, q.source, r.key
                               FROM queries q LEFT JOIN query_realism r ON r.query_id = q.id WHERE {where}""", params)
    for row in found:
        row["gold"] = store.loads(row.pop("gold_chunk_ids"), [])
    return found


def refresh(db: sqlite_utils.Database, ids: Optional[Sequence[str]] = None) -> int:
    """Measure every query with gold whose figures are missing or out of date (text, gold or
    reference changed since); ``ids`` limits it to those queries. Returns how many were measured."""
    rows = _rows_with_gold(db, ids)
    chunk_ids = sorted({c for row in rows for c in row["gold"]})
    texts: dict[str, str] = {}
    for start in range(0, len(chunk_ids), 900):
        batch = chunk_ids[start:start + 900]
        texts.update(db.execute(f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(batch))})", batch))
    measured = 0
    with db.conn:
        for row in rows:
            key = _key(row, texts)
            if key == row["key"]:
                continue
            m = measure(row["text"], [texts[c] for c in row["gold"] if c in texts], row["reference"])
            db.execute("""INSERT OR REPLACE INTO query_realism (query_id, key, chunk_overlap, answer_overlap, words,
                              stopword_share, form, measured_at) VALUES (?,?,?,?,?,?,?,?)""",
                       [row["id"], key, m["chunk_overlap"], m["answer_overlap"], m["words"], m["stopword_share"],
                        m["form"], store.now()])
            measured += 1
    return measured


def stored(db: sqlite_utils.Database, ids: Sequence[str]) -> dict[str, dict]:
    """Query id -> its stored figures, for the given ids (those measured)."""
    found: dict[str, dict] = {}
    for start in range(0, len(ids), 900):
        batch = list(ids[start:start + 900])
        for row in store.rows(db, f"""SELECT query_id, chunk_overlap, answer_overlap, words, stopword_share, form
                                      FROM query_realism WHERE query_id IN ({','.join('?' * len(batch))})""", batch):
            found[row.pop("query_id")] = row
    return found


# -- distributions ---------------------------------------------------------------------------------

def quartiles(values: Sequence[float]) -> Optional[dict]:
    values = [v for v in values if v is not None]
    if not values:
        return None
    q1, median, q3 = np.percentile(np.asarray(values, dtype=float), [25, 50, 75])
    return {"q1": round(float(q1), 3), "median": round(float(median), 3), "q3": round(float(q3), 3)}


def summarize(figures: Sequence[dict]) -> dict:
    """Median and quartiles of each figure, and the share of each form, over some rows."""
    summary: dict = {"rows": len(figures)}
    for name in METRICS:
        summary[name] = quartiles([f[name] for f in figures])
    summary["forms"] = {form: round(sum(f["form"] == form for f in figures) / len(figures), 3) if figures else 0.0
                        for form in FORMS}
    return summary


def overlap_cap(db: sqlite_utils.Database) -> tuple[float, str]:
    """The chunk overlap above which a generated question reuses more of its chunk than real questions
    do: the upper quartile of the project's approved real (log) rows with gold when it has
    MIN_REAL_ROWS of them, else the built-in reference's. Returns (cap, what it was calibrated on)."""
    real = project_real_figures(db)
    if len(real) >= MIN_REAL_ROWS:
        values = [f["chunk_overlap"] for f in real if f["chunk_overlap"] is not None]
        return round(float(np.percentile(values, CAP_QUANTILE * 100)), 3), \
            f"the {len(values)} approved real (log) queries of this project"
    return BUILTIN_REFERENCE["chunk_overlap"]["q3"], BUILTIN_REFERENCE["name"]


# Need-first rows are held to real questions' upper tail of chunk overlap at these points (generation.checks): the
# median, the upper quartile and "every word in the chunk". A single cap at the upper quartile let 69-89% of the
# 1.5B model's need-first rows sit at or above real questions' median overlap (real: 56-61%) and 35-50% at 100%
# (real: 13-29%) on the Debian, Python, zsh and fetchmail FAQs, and every retriever found them more easily than
# the users' questions (docs/benchmarks.md, "Overlap quota"). Measured on the same 167 Python FAQ questions as
# BUILTIN_REFERENCE (bench/realism_reference.py): share of real questions whose overlap is at least the point.
BUILTIN_TAILS = ((0.667, 0.563), (0.857, 0.257), (1.0, 0.24))


def overlap_tails(db: sqlite_utils.Database) -> tuple[tuple[tuple[float, float], ...], str]:
    """tails_of the project's approved real (log) rows with gold when it has MIN_REAL_ROWS of them, else the
    built-in reference's (BUILTIN_TAILS); and what they were measured on."""
    real = [f["chunk_overlap"] for f in project_real_figures(db) if f["chunk_overlap"] is not None]
    if len(real) < MIN_REAL_ROWS:
        return BUILTIN_TAILS, BUILTIN_REFERENCE["name"]
    return tails_of(real), f"the {len(real)} approved real (log) queries of this project"


def tails_of(overlaps: Sequence[float]) -> tuple[tuple[float, float], ...]:
    """((overlap, share of ``overlaps`` at least that overlap), ...) at their median, upper quartile and 1.0."""
    values = np.asarray(overlaps, dtype=float)
    points = sorted({float(np.percentile(values, 50)), float(np.percentile(values, 75)), 1.0})
    return tuple((round(point, 3), share_at_least(values, round(point, 3))) for point in points)


def reaches(overlap: float, point: float) -> bool:
    """Whether an overlap reaches a point rounded to three places (2/3 reaches 0.667)."""
    return overlap >= point - 5e-4


def share_at_least(overlaps: Sequence[float], point: float) -> float:
    return round(float(np.mean([reaches(v, point) for v in overlaps])), 3) if len(overlaps) else 0.0


def project_real_figures(db: sqlite_utils.Database) -> list[dict]:
    """The figures of the project's approved real (log) rows with gold, measured first if need be."""
    ids = [r[0] for r in db.execute("""SELECT id FROM queries WHERE source = 'log' AND status = 'approved'
                                       AND answerable = 1 AND json_array_length(gold_chunk_ids) > 0""")]
    refresh(db, ids)
    return list(stored(db, ids).values())


# -- the report's section --------------------------------------------------------------------------

def _pct(summary: dict, name: str) -> str:
    return f"{summary[name]['median']:.0%}" if summary.get(name) else "n/a"


def _gap_text(query_type: str, mine: dict, ref: dict, ref_label: str) -> str:
    text = f"{query_type} rows reuse {_pct(mine, 'chunk_overlap')} of their chunk's words, {ref_label} {_pct(ref, 'chunk_overlap')}"
    if mine.get("words") and ref.get("words"):
        text += (f"; {mine['words']['median']:g} words long ({ref['words']['median']:g}), "
                 f"{_pct(mine, 'stopword_share')} function words ({_pct(ref, 'stopword_share')})")
    return text


def section(db: sqlite_utils.Database, rows: Sequence[dict]) -> dict:
    """The realism section of the validity report over ``rows`` (id, source, query_type): the real
    rows' distributions (or the built-in reference), each synthetic type's, and the gap in words."""
    ids = [q["id"] for q in rows]
    refresh(db, ids)
    figures = stored(db, ids)
    real = [figures[q["id"]] for q in rows if q["source"] == "log" and q["id"] in figures]
    if len(real) >= MIN_REAL_ROWS:
        reference, label = {"name": f"your {len(real)} real (log) queries", **summarize(real)}, "your users' questions"
    else:
        reference, label = dict(BUILTIN_REFERENCE), "real questions (built-in reference)"
    types: dict[str, dict] = {}
    for query_type in sorted({q["query_type"] for q in rows if q["source"] == "synthetic"}):
        mine = summarize([figures[q["id"]] for q in rows
                          if q["source"] == "synthetic" and q["query_type"] == query_type and q["id"] in figures])
        types[query_type] = {**mine, "text": _gap_text(query_type, mine, reference, label)}
    return {"reference": reference, "reference_basis": "project" if len(real) >= MIN_REAL_ROWS else "builtin",
            "real_rows": len(real), "synthetic": types}
