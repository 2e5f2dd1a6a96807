"""A quality score for each accepted generated row, from cheap signals, stored and explained.

Two signals, both free at generation time:
- round trip (InPars / Promptagator consistency filtering): does BM25 over the corpus, given
  the question alone, rank the row's gold chunk in its top k? 1/rank, 0 outside the top k.
  A row a keyword retriever cannot find from its own question is often vague or off-topic.
- filter margins: how far the row clears the graded filters (answer grounding, question
  grounding, not restating the question, no repetition), each 0..1 (``filters.margins``).

The round trip favours rows that BM25 finds: ordering or cutting by this score can make the
set easier for BM25-like retrievers. The retriever is recorded with every score, and
``--min-quality`` is off by default so the score orders review rather than shaping the set.
"""

from __future__ import annotations

import json
from typing import Optional

import sqlite_utils

from curator.core.corpus.search import search_chunks
from curator.core.generation import filters
from curator.core.generation.answers import MIN_ANSWER_MATCH

ROUND_TRIP_K = 10
ROUND_TRIP_RETRIEVER = "fts5-bm25 (corpus.search.search_chunks, any-term match)"
ROUND_TRIP_WEIGHT = 0.5
# An unanswerable row has no gold chunk to find; a neutral round trip keeps its score from
# floating above every answerable row on its one remaining margin (repetition).
UNANSWERABLE_ROUND_TRIP = 0.5
DEFINITION = {
    "version": 2,
    "score": f"{ROUND_TRIP_WEIGHT} * round_trip + {1 - ROUND_TRIP_WEIGHT} * mean(filter margins); "
             f"unanswerable rows (no gold chunk to find): round_trip taken as a neutral {UNANSWERABLE_ROUND_TRIP}",
    "round_trip": f"1/rank of the first gold chunk among the top {ROUND_TRIP_K} of {ROUND_TRIP_RETRIEVER} "
                  "for the question alone, 0 if absent",
    "margins": "repetition, question_grounding (factoid, keyword), answer_grounding, not_restated, and for "
               "answer-first rows answer_match (the cosine of question and answer sentence in the sentence "
               f"embedder, from its floor {MIN_ANSWER_MATCH} to 1): how far each graded filter is cleared, 0 at "
               "its threshold, 1 at best",
    "retriever": ROUND_TRIP_RETRIEVER,
    "range": "0..1, higher is better",
}


def round_trip(db: sqlite_utils.Database, question: str, gold_ids: list[str]) -> tuple[float, Optional[int]]:
    """(1/rank, rank) of the first gold chunk BM25 returns for the question; (0, None) if not in the top k."""
    for rank, hit in enumerate(search_chunks(db, question, limit=ROUND_TRIP_K), 1):
        if hit["id"] in gold_ids:
            return 1.0 / rank, rank
    return 0.0, None


def score_row(db: sqlite_utils.Database, question: str, answer: str, query_type: str,
              gold_chunks: list[dict], answer_match: Optional[float] = None) -> tuple[float, dict]:
    """(score, signals) for one accepted row; the signals explain the score. ``answer_match`` is the
    cosine of an answer-first question and its answer sentence (None for other rows)."""
    margins = filters.margins(question, answer, query_type, [c["text"] for c in gold_chunks])
    if answer_match is not None:
        margins["answer_match"] = round(max(0.0, min(1.0, (answer_match - MIN_ANSWER_MATCH) / (1 - MIN_ANSWER_MATCH))), 3)
    margin_mean = sum(margins.values()) / len(margins) if margins else 0.0
    signals: dict = {"margins": margins, "margin_mean": round(margin_mean, 3)}
    if answer_match is not None:
        signals["answer_cosine"] = round(answer_match, 3)
    if query_type == "unanswerable":
        trip = UNANSWERABLE_ROUND_TRIP
        signals["round_trip_neutral"] = trip
    else:
        trip, rank = round_trip(db, question, [c["id"] for c in gold_chunks])
        signals.update(round_trip=round(trip, 3), round_trip_rank=rank, retriever=ROUND_TRIP_RETRIEVER,
                       k=ROUND_TRIP_K)
    return round(ROUND_TRIP_WEIGHT * trip + (1 - ROUND_TRIP_WEIGHT) * margin_mean, 3), signals


def explain(signals) -> str:
    """One line for a reviewer: what made the score (``signals`` as stored, JSON text, or a dict)."""
    if isinstance(signals, str):
        signals = json.loads(signals or "{}")
    if not signals:
        return "no quality score (not a generated row, or generated before scores existed)"
    parts = ["no gold chunk to find (unanswerable): round trip neutral"] if "round_trip_neutral" in signals else []
    if "round_trip" in signals:
        rank = signals.get("round_trip_rank")
        parts.append(f"BM25 finds the gold chunk at rank {rank}" if rank else
                     f"BM25 misses the gold chunk in its top {signals.get('k', ROUND_TRIP_K)}")
    if "answer_cosine" in signals:
        parts.append(f"question matches its answer sentence at cosine {signals['answer_cosine']:.2f}")
    weakest = min(signals.get("margins", {}).items(), key=lambda kv: kv[1], default=None)
    if weakest:
        parts.append(f"weakest filter margin: {weakest[0]} {weakest[1]:.2f}")
    return "; ".join(parts)
