"""Filters that reject bad generated rows; each returns a reason string or None."""

from __future__ import annotations

import re
from typing import Iterable, Optional

_WORD = re.compile(r"\w+")
STOPWORDS = set("""a an the and or of to in on for with by at from is are was were be been it its this that
these those what which who whom how when where why do does did can could should would will i you we they
my your our their me us them there here as if than then so not no yes any all some into about after before
over under up down out off just also only very""".split())
SELF_REFERENCE = re.compile(r"\b(the|this|that|given|above|following)\s+(passage|text|document|context|excerpt|article|paragraph|section)s?\b", re.I)
COPY_SPAN_TOKENS = 8
NEAR_DUPLICATE_JACCARD = 0.8
MIN_GROUNDING = 0.5


def tokens(text: str) -> list[str]:
    return _WORD.findall((text or "").lower())


def content_words(text: str) -> set[str]:
    return {t for t in tokens(text) if t not in STOPWORDS and len(t) > 1}


def check_length(question: str, query_type: str) -> Optional[str]:
    n = len(tokens(question))
    low, high = (2, 10) if query_type == "keyword" else (4, 40)
    if n < low:
        return f"too short ({n} words)"
    if n > high:
        return f"too long ({n} words)"
    return None


_PLACEHOLDER = re.compile(r"^\W*\[|\binsert\b.*\bhere\b|^\W*(query|question)\W*$", re.I)


def check_placeholder(question: str) -> Optional[str]:
    """Template echoes such as '[Query]' or 'insert query here' are not queries."""
    return "a placeholder, not a query" if _PLACEHOLDER.search(question) else None


def check_self_reference(question: str) -> Optional[str]:
    match = SELF_REFERENCE.search(question)
    return f"refers to '{match.group(0)}' instead of standing alone" if match else None


def check_copies_chunk(question: str, chunk_text: str) -> Optional[str]:
    """A question sharing a verbatim span of 8+ tokens with its chunk tests string matching."""
    q, c = tokens(question), tokens(chunk_text)
    if len(q) < COPY_SPAN_TOKENS:
        return None
    chunk_grams = {tuple(c[i : i + COPY_SPAN_TOKENS]) for i in range(len(c) - COPY_SPAN_TOKENS + 1)}
    for i in range(len(q) - COPY_SPAN_TOKENS + 1):
        if tuple(q[i : i + COPY_SPAN_TOKENS]) in chunk_grams:
            return f"copies a {COPY_SPAN_TOKENS}-token span of the chunk"
    return None


def check_grounded(answer: str, gold_texts: Iterable[str]) -> Optional[str]:
    """Most content words of the reference answer must appear in the gold chunk(s)."""
    words = content_words(answer)
    if not words:
        return "empty reference answer"
    source = content_words(" ".join(gold_texts))
    share = len(words & source) / len(words)
    return None if share >= MIN_GROUNDING else f"answer not grounded in the gold chunk ({share:.0%} of its words)"


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


class DuplicateIndex:
    """Exact (normalised text) and near (content-word Jaccard) duplicates of known queries."""

    def __init__(self, texts: Iterable[str]):
        self.exact: set[str] = set()
        self.word_sets: list[set[str]] = []
        for text in texts:
            self.add(text)

    def add(self, text: str) -> None:
        self.exact.add(" ".join(tokens(text)))
        self.word_sets.append(content_words(text))

    def check(self, text: str) -> Optional[str]:
        if " ".join(tokens(text)) in self.exact:
            return "exact duplicate of an existing query"
        words = content_words(text)
        for known in self.word_sets:
            if jaccard(words, known) >= NEAR_DUPLICATE_JACCARD:
                return "near duplicate of an existing query"
        return None


def check_row(question: str, answer: str, query_type: str, gold_texts: list[str], source_text: str,
              duplicates: DuplicateIndex) -> Optional[str]:
    """The first reason to reject a generated row, or None to keep it."""
    checks = [check_length(question, query_type), check_placeholder(question), check_self_reference(question),
              check_copies_chunk(question, source_text), duplicates.check(question)]
    if query_type != "unanswerable":
        checks.append(check_grounded(answer, gold_texts))
    return next((reason for reason in checks if reason), None)
