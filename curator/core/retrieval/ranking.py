"""A run (query id -> {doc id: score}) and the one order every stage reads it in: trec_eval's."""

from __future__ import annotations

Run = dict[str, dict[str, float]]  # query id -> {doc id: score}


def ranked(scores: dict[str, float]) -> list[str]:
    """Documents in trec_eval order: score descending, then document id descending."""
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]
