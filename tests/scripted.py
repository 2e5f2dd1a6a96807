"""Scripted stand-ins for a model, shared by the fast generation tests (``import scripted``).

Fakes like these are for fast unit tests only: every feature they stand in for is also tested
with the real bundled model.
"""

from __future__ import annotations

import itertools
from typing import Callable

from curator.core.generation import filters
from curator.core.generation import needfirst


def good_reply(messages) -> str:
    """A well-behaved model: asks about the passage's first distinctive words, in each type's format."""
    prompt = messages[-1]["content"]
    if prompt.startswith(("Fact 1:", "About:")):  # multi-hop: words only each fact holds, and the entity named
        entity, _, prompt = prompt.partition("\n") if prompt.startswith("About:") else ("About: it", "", prompt)
        facts = prompt[len("Fact 1:"):].split("Fact 2:", 1)
        name = entity[len("About: "):]
        words = [[w for w in filters.tokens(f) if len(w) > 3 and w not in filters.STOPWORDS and w != name.lower()][:4]
                 for f in facts]
        return (f"Question 1: What is known about {name} and {' '.join(words[0])}?\n"
                f"Question 2: Why does {' '.join(words[1])} matter for {name}?\n")
    if "Passage" not in prompt:  # answer-first: ask with the answer sentence's own first content words
        words = [w for w in filters.tokens(prompt.split("Answer:", 1)[1]) if len(w) > 3 and w not in filters.STOPWORDS]
        if "search box" in messages[0]["content"]:  # a word of its own: all-copied queries are rejected
            return f"Query: {' '.join(words[:3])} trouble\n"
        return f"Question: What is known about {' '.join(words[:4])}?\n"
    words = [w for w in filters.tokens(prompt.split("Passage", 1)[1]) if len(w) > 3 and w not in filters.STOPWORDS]
    words = (words + words)[:8]  # the answer gives other words of the passage than the question asks with
    if "does NOT answer" in prompt:
        return f"Question: Which zebra migration policy applies to {words[0]} quasar flights?\nAnswer: not stated\n"
    if "Query:" in prompt:
        return f"Query: {' '.join(words[:3])}\nAnswer: {' '.join(words[3:7])}\n"
    return f"Question: What about {' '.join(words[:3])} here?\nAnswer: {' '.join(words[3:8])}\n"


def passages_of(messages) -> list[str]:
    """The passages a need-first request shows in its last message (one, or two for a pair)."""
    return [p.split(":\n", 1)[1].split("\n\nReply as")[0] for p in messages[-1]["content"].split("Passage")[1:]]


def need_first_reply(messages) -> str:
    """A capable model's need-first reply: a question in everyday words, then its passage's first sentence quoted
    (curly quotes straightened, as a model often writes them); one quote per passage for a pair."""
    user = messages[-1]["content"]
    passages = passages_of(messages)
    quotes = [needfirst.sentences(p)[0].replace("\u2019", "'") for p in passages]
    words = [w for w in filters.tokens(passages[0]) if len(w) > 4 and w not in filters.STOPWORDS][:2]
    head = (f"Query: fix {' '.join(words)}" if "\nQuery: ..." in user
            else f"Question: How do I sort out my {' '.join(words)} trouble?")
    if len(quotes) == 2:
        return f"{head}\nAnswer 1: {quotes[0]}\nAnswer 2: {quotes[1]}\n"
    return f"{head}\nAnswer: {quotes[0]}\n"


def every_nth_bad(n: int, bad: str = "Sure! Here is a question about the passage.") -> Callable[[list], str]:
    """``good_reply``, except that every n-th reply is not in the expected format."""
    calls = itertools.count(1)
    return lambda messages: bad if next(calls) % n == 0 else good_reply(messages)


def cancel_at_call(cancel, at: int, bad_until: int = 0, bad: str = "no format at all") -> Callable[[list], str]:
    """good_reply that cancels the run on call ``at`` (a kill in mid-run, with the rows so far kept)
    and answers ``bad`` for the first ``bad_until`` calls."""
    calls = itertools.count(1)

    def reply(messages) -> str:
        n = next(calls)
        if n == at:
            cancel.cancel()
        return bad if n <= bad_until else good_reply(messages)

    return reply


class Gains:
    """A stand-in for answers.AnswerLikelihood: every question gains ``value`` nats per answer
    token (a real model's gains are tested in test_answers)."""

    def __init__(self, value: float = 1.0) -> None:
        self.value = value

    def gain(self, question: str, answer: str) -> float:
        return self.value

    def describe(self) -> str:
        return f"scripted gain {self.value}"


def chunk_like(db, fragment: str) -> dict:
    """The first chunk whose text holds ``fragment`` (id, doc_id, title, text): the generation tests
    pick the chunk a scripted reply is about by a phrase of it."""
    return dict(zip(("id", "doc_id", "title", "text"), db.execute(
        "SELECT id, doc_id, title, text FROM chunks WHERE text LIKE ?", [f"%{fragment}%"]).fetchone()))


def fixed_claim_judge(probabilities: dict[str, float]):
    """The default judge with its probability fixed per claim word (no model needed)."""
    import numpy as np

    from curator.core.diagnosis.judge import FEATURES, ClaimJudge

    judge = ClaimJudge(lambda texts: np.eye(len(texts), 8), {"features": list(FEATURES), "mean": [0] * len(FEATURES),
                                                         "scale": [1] * len(FEATURES), "coef": [0] * len(FEATURES),
                                                         "intercept": 0})
    judge.probability = lambda values, p=probabilities: 0.5  # replaced per claim below
    original = judge.judge

    def judge_claims(claims, contexts):
        out = original(claims, contexts)
        for verdict, claim in zip(out, claims):
            p = next(v for word, v in probabilities.items() if word in claim)
            verdict.update(probability=p, verdict="supported" if p >= 0.5 else "not supported")
        return out

    judge.judge = judge_claims
    return judge
