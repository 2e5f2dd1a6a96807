"""Context recall of a trace: the share of reference chunk ids found among the retrieved ones.

This is RAGAS's non-LLM ``IDBasedContextRecall`` (reference ids found in the retrieved set /
reference ids), exact and deterministic. When a trace has only retrieved texts, each text is
matched to a chunk first: exact text, then normalised text, then the best full-text hit whose
words cover enough of the text; how each was matched is recorded. Where no ids can be had
(no reference ids, or texts that match no chunk), recall is the share of the reference
answer's statements a judge finds in the contexts (diagnosis.faithfulness), as RAGAS's
LLM-based context recall does.
"""

from __future__ import annotations

import re
from typing import Optional

import sqlite_utils

from curator.core.corpus.search import search_chunks
from curator.core.queries.rows import normalize_text

# Share of a retrieved text's distinct words that the best FTS hit must contain to count as
# that chunk (a retriever may send a cut or re-wrapped chunk); below it the text is more likely
# another chunk's paraphrase or a passage from outside the corpus.
FTS_MATCH_THRESHOLD = 0.8
_WORD = re.compile(r"\w+")


def context_recall(reference_ids: list[str], retrieved_ids: list[str]) -> Optional[float]:
    """Reference ids found among the retrieved ids / reference ids (None with no reference)."""
    reference = list(dict.fromkeys(reference_ids))
    if not reference:
        return None
    retrieved = set(retrieved_ids)
    return sum(1 for cid in reference if cid in retrieved) / len(reference)


def uses_ids(reference_ids: list[str], retrieved_ids: list[str], retrieved_texts: list[str]) -> bool:
    """Whether recall can be had from ids: reference ids, and retrieved ids (sent, or matched from
    the texts). Retrieved texts none of which matched a chunk say nothing about the ids retrieved,
    so their recall is judged from the reference answer's statements instead."""
    return bool(reference_ids) and (bool(retrieved_ids) or not retrieved_texts)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def coverage(text: str, chunk_text: str) -> float:
    """Share of the text's distinct words that the chunk contains."""
    words = _words(text)
    return len(words & _words(chunk_text)) / len(words) if words else 0.0


class ChunkMatcher:
    """Maps retrieved texts to active chunk ids; built once per import (one pass over chunks)."""

    def __init__(self, db: sqlite_utils.Database, threshold: float = FTS_MATCH_THRESHOLD):
        self.db = db
        self.threshold = threshold
        self._exact: dict[str, str] = {}
        self._norm: dict[str, str] = {}
        for cid, text in db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id"):
            self._exact.setdefault(text.strip(), cid)
            self._norm.setdefault(normalize_text(text), cid)

    def match(self, text: str) -> dict:
        """{'chunk_id', 'how' (exact / normalised / fts / unmatched), 'score'} for one text."""
        if text.strip() in self._exact:
            return {"chunk_id": self._exact[text.strip()], "how": "exact", "score": 1.0}
        norm = normalize_text(text)
        if norm in self._norm:
            return {"chunk_id": self._norm[norm], "how": "normalised", "score": 1.0}
        best, score = None, 0.0
        for hit in search_chunks(self.db, text[:2000], limit=5):
            value = coverage(text, hit["text"])
            if value > score:
                best, score = hit["id"], value
        if best is not None and score >= self.threshold:
            return {"chunk_id": best, "how": "fts", "score": round(score, 3)}
        return {"chunk_id": None, "how": "unmatched", "score": round(score, 3)}

    def match_all(self, texts: list[str]) -> list[dict]:
        return [self.match(text) for text in texts]
