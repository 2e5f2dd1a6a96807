"""The worked examples of answer-first prompts: how people who use this corpus ask.

A question written while reading a passage reuses the passage's words; a user who has never seen
the document does not (ARES and Promptagator build few-shot prompts from a handful of real in-domain
queries for this reason; Alaofi et al. 2025: generating from a described need overlaps human queries
far more). So the examples come, in order of preference, from:

1. ``real_gold``: approved real (log) queries with gold. Each example is the real query and the
   sentence of its gold chunks that best answers it (most of the query's content words, then the
   earliest); for each chunk asked about, the examples whose gold chunk is nearest to it (shared
   content words) are shown, so the model sees how people ask about this part of the corpus, but
   never one about the chunk's own document (the model would restate a question the project has);
2. ``real_log``: real log queries without gold yet: shown as a list of how people here ask, with the
   built-in worked examples for the task itself;
3. ``builtin``: the built-in worked examples (prompts.ANSWER_FIRST_SHOTS), none of which copies its
   answer's words.

No retriever under test chooses anything here: nearness is shared content words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import sqlite_utils

from curator.core import store
from curator.core.generation import filters
from curator.core.generation.answers import answer_sentences
from curator.core.queries.realism import form_of

MIN_REAL_EXAMPLES = 3  # fewer approved real queries with gold than this: fall back to the log, then built-ins
SHOTS = 3  # worked examples per prompt (as many as the built-in set holds)
LOG_EXAMPLES = 8  # real queries listed as "how people here ask" when none has gold yet
MAX_EXAMPLES = 400  # real examples kept for the run (the most frequent first)


@dataclass
class Example:
    query_id: str
    query: str
    answer: str
    title: str
    words: set = field(default_factory=set)  # content words of its gold chunks, for nearness
    docs: set = field(default_factory=set)  # documents of its gold chunks


@dataclass
class ExampleSet:
    kind: str  # real_gold, real_log or builtin
    examples: list[Example] = field(default_factory=list)
    log_queries: list[str] = field(default_factory=list)

    def shots(self, query_type: str, chunk: dict) -> Optional[list[tuple[str, str, str]]]:
        """(title, answer, query) worked examples for a prompt about ``chunk``; None: the built-ins.
        An example about the chunk's own document is never shown: the model would restate a question
        the project already has. Keyword prompts take real examples only when enough real queries are
        keyword-shaped."""
        pool = self._pool(query_type, chunk)
        if pool is None:
            return None
        words = filters.content_words(chunk["text"])
        nearest = sorted(pool, key=lambda e: (-filters.jaccard(words, e.words), e.query_id))[:SHOTS]
        # In a fixed order, so prompts about nearby chunks share their cached prefix.
        return [(e.title, e.answer, e.query) for e in sorted(nearest, key=lambda e: e.query_id)]

    def fixed_shots(self, query_type: str, chunk: dict) -> Optional[list[tuple[str, str, str]]]:
        """As ``shots``, but the same examples for every chunk of a run (the first of the pool: the most frequent
        real queries), so the instruction and the examples are one prefix the engine evaluates once and keeps; a
        chunk of one of their documents gets the next example in its place. Need-first prompts use these: the
        examples are about 390 of a prompt's 585 tokens (Debian FAQ, 1.5B model's tokenizer)."""
        pool = self._pool(query_type, chunk)
        if pool is None:
            return None
        return [(e.title, e.answer, e.query) for e in sorted(pool[:SHOTS], key=lambda e: e.query_id)]

    def _pool(self, query_type: str, chunk: dict) -> Optional[list[Example]]:
        """The real examples a prompt about ``chunk`` may show, most frequent first; None: too few (built-ins)."""
        pool = [e for e in self.examples if chunk.get("doc_id") not in e.docs]
        if query_type == "keyword":
            pool = [e for e in pool if form_of(e.query) == "keywords"]
        return pool if self.kind == "real_gold" and len(pool) >= MIN_REAL_EXAMPLES else None

    def describe(self) -> dict:
        """What the run record and manifest keep: the kind and every example that could be shown."""
        return {"kind": self.kind,
                "examples": [{"query_id": e.query_id, "query": e.query, "answer": e.answer} for e in self.examples],
                "log_queries": self.log_queries}


def best_sentence(query: str, texts: list[str]) -> Optional[str]:
    """The answer-like sentence of ``texts`` sharing most of the query's content words (the first on ties)."""
    candidates = [s for text in texts for s in answer_sentences(text)]
    if not candidates:
        return None
    return max(candidates, key=lambda s: filters.question_grounding(query, [s]))


def load(db: sqlite_utils.Database) -> ExampleSet:
    """The project's examples: real queries with gold, else real log queries, else the built-ins."""
    rows = store.rows(db, """SELECT id, text, gold_chunk_ids FROM queries WHERE source = 'log' AND status = 'approved'
                             AND answerable = 1 AND json_array_length(gold_chunk_ids) > 0
                             ORDER BY frequency DESC, id LIMIT ?""", [MAX_EXAMPLES])
    examples = [e for e in (_example(db, row) for row in rows) if e is not None]
    if len(examples) >= MIN_REAL_EXAMPLES:
        return ExampleSet("real_gold", examples)
    logs = [r[0] for r in db.execute("SELECT text FROM queries WHERE source = 'log' AND status != 'rejected' "
                                     "ORDER BY frequency DESC, id LIMIT ?", [LOG_EXAMPLES])]
    if len(logs) >= MIN_REAL_EXAMPLES:
        return ExampleSet("real_log", log_queries=logs)
    return ExampleSet("builtin")


def _example(db: sqlite_utils.Database, row: dict) -> Optional[Example]:
    ids = store.loads(row["gold_chunk_ids"], [])
    chunks = store.rows(db, f"SELECT id, doc_id, title, text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids)
    answer = best_sentence(row["text"], [c["text"] for c in chunks])
    if answer is None:
        return None
    holder = next((c for c in chunks if answer in " ".join(c["text"].split())), chunks[0])
    words = set().union(*(filters.content_words(c["text"]) for c in chunks))
    return Example(row["id"], row["text"], answer, holder["title"] or "", words, {c["doc_id"] for c in chunks})
