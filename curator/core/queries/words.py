"""The words of a query or passage, shared by generation's filters and the realism measures: tokens,
function words and a crude stem (no NLP library offline). Here, in the queries stage, because
queries may not import generation and both need the same yardstick."""

from __future__ import annotations

import re
from typing import Iterable

_WORD = re.compile(r"\w+")
STOPWORDS = set("""a an the and or of to in on for with by at from is are was were be been it its this that
these those what which who whom how when where why do does did can could should would will i you we they
my your our their me us them there here as if than then so not no yes any all some into about after before
over under up down out off just also only very""".split())


def tokens(text: str) -> list[str]:
    return _WORD.findall((text or "").lower())


def content_words(text: str) -> set[str]:
    return {t for t in tokens(text) if t not in STOPWORDS and len(t) > 1}


def stem(word: str) -> str:
    """A crude stem so "lists"/"list" and "configure"/"configuration" meet."""
    return word[:5] if len(word) > 5 else word.rstrip("s")


def stems(text: str) -> set[str]:
    return {stem(w) for w in content_words(text)}


def word_share(question: str, texts: Iterable[str]) -> float:
    """Share of the question's content words found (stemmed) in ``texts``."""
    words = stems(question)
    return len(words & stems(" ".join(texts))) / len(words) if words else 0.0
