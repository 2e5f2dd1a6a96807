"""A quality score for each accepted generated row, from cheap signals, stored and explained.

The score is the mean of the filter margins: how far the row clears each graded filter (answer
grounding, question grounding, not restating the question, no repetition), each 0..1
(``filters.margins``). Until version 4 answer-first rows also had an answer_match margin, the MiniLM
cosine of question and answer sentence: MiniLM is the dense retriever under test (issue 27), so it
is gone from the score as from the filters.

A BM25 round trip (InPars / Promptagator consistency: does BM25 over the corpus, given the
question alone, rank the row's gold chunk in its top k?) is computed, stored and shown to the
reviewer, but it is not part of the score. It was, until measured: on the Python FAQ rows of the
quality bench, the half of the rows it scored higher had BM25 recall@5 1.00 against dense 0.75,
the other half 0.38 against 0.50, so ordering review or cutting by it built a set on which BM25
wins (``bench/validity.py --labels``). The margins alone split the reviewers' usable rows as well
(47% usable above their median, 29% below) and keep both halves' retriever rankings alike.

Version 5 (issue 27): question_grounding rewarded copying (full margin only when every word of the
question is in its chunk). It is now full at the real questions' median share (0.667) and flat
above; answer-first rows also drop the answer's margins (moot or read the wrong way for an
extracted sentence) and measure vague questions' grounding. On the 297 labelled answer-first rows
of bench/quality_labels.jsonl the score's AUC for usable against rejected rose from 0.60 to 0.65 (on 405 rows
with the 108 labelled in session 36: 0.58 to 0.65)
(bench/quality.py --margins).
"""

from __future__ import annotations

import json
from typing import Optional

import sqlite_utils

from curator.core.corpus.search import search_chunks
from curator.core.generation import filters

ROUND_TRIP_K = 10
ROUND_TRIP_RETRIEVER = "fts5-bm25 (corpus.search.search_chunks, any-term match)"
# An unanswerable row has one margin (repetition), almost always 1: mapped into 0.25..0.75 so that it
# neither floats above every answerable row in the review order nor sinks below them.
UNANSWERABLE_RANGE = (0.25, 0.75)
DEFINITION = {
    "version": 5,
    "score": "mean(filter margins); unanswerable rows (one margin): 0.25 + 0.5 * that margin",
    "margins": "repetition, question_grounding (factoid, keyword; answer-first vague too), answer_grounding and "
               "not_restated (free answers only): how far each graded filter is cleared, 0 at its threshold, 1 "
               "at best; question_grounding is full at the real questions' median share of chunk words, so "
               "copying the chunk earns nothing (no retriever's model in any)",
    "round_trip": f"shown, not scored: 1/rank of the first gold chunk among the top {ROUND_TRIP_K} of "
                  f"{ROUND_TRIP_RETRIEVER} for the question alone, 0 if absent (scoring it biased the set "
                  "towards BM25)",
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
              gold_chunks: list[dict], extractive: bool = False) -> tuple[float, dict]:
    """(score, signals) for one accepted row; the signals explain the score. ``extractive``: the
    answer is a sentence of the chunk (answer-first rows), whose margins differ (filters.margins)."""
    margins = filters.margins(question, answer, query_type, [c["text"] for c in gold_chunks], extractive=extractive)
    margin_mean = sum(margins.values()) / len(margins) if margins else 0.0
    signals: dict = {"margins": margins, "margin_mean": round(margin_mean, 3)}
    if query_type == "unanswerable":
        low, high = UNANSWERABLE_RANGE
        signals["no_gold"] = True
        return round(low + (high - low) * margin_mean, 3), signals
    trip, rank = round_trip(db, question, [c["id"] for c in gold_chunks])
    signals.update(round_trip=round(trip, 3), round_trip_rank=rank, retriever=ROUND_TRIP_RETRIEVER, k=ROUND_TRIP_K)
    return round(margin_mean, 3), signals


def explain(signals) -> str:
    """One line for a reviewer: what made the score (``signals`` as stored, JSON text, or a dict)."""
    if isinstance(signals, str):
        signals = json.loads(signals or "{}")
    if not signals:
        return "no quality score (not a generated row, or generated before scores existed)"
    unanswerable = signals.get("no_gold") or "round_trip_neutral" in signals  # the key of rows before version 3
    parts = ["no gold chunk to find (unanswerable)"] if unanswerable else []
    if "round_trip" in signals:  # shown for the reviewer; scored only in rows made before score version 3
        rank = signals.get("round_trip_rank")
        parts.append(f"BM25 finds the gold chunk at rank {rank}" if rank else
                     f"BM25 misses the gold chunk in its top {signals.get('k', ROUND_TRIP_K)}")
    if "answer_gain" in signals:  # the likelihood answer check (generation.answers.AnswerLikelihood)
        parts.append(f"the question raises the model's likelihood of its answer sentence by "
                     f"{signals['answer_gain']:.2f} nats a token")
    if "answer_cosine" in signals:  # rows made before score version 4
        parts.append(f"question matches its answer sentence at cosine {signals['answer_cosine']:.2f}")
    if signals.get("unanswerable_evidence"):  # issue 28: why a near miss is believed unanswerable
        from curator.core.generation.unanswerable import explain as near_miss

        parts.append(near_miss(signals["unanswerable_evidence"]))
    if signals.get("multi_hop"):  # issue 28: what holds a multi-hop row's two gold chunks together
        from curator.core.generation.multihop import explain as two_facts

        parts.append(two_facts(signals["multi_hop"]))
    weakest = min(signals.get("margins", {}).items(), key=lambda kv: kv[1], default=None)
    if weakest:
        parts.append(f"weakest filter margin: {weakest[0]} {weakest[1]:.2f}")
    return "; ".join(parts)
