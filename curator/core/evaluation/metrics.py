"""Retrieval metrics under trec_eval's conventions.

A run is re-sorted by score (descending) with ties broken by document id (descending, as
trec_eval does); the ranks in a run file are ignored. Relevance is graded: a qrel with
grade > 0 is relevant; nDCG uses gain = grade and discount log2(rank + 1).
"""

from __future__ import annotations

import math

from curator.core.errors import InputError
from curator.core.retrieval.ranking import Run, ranked  # noqa: F401 (part of this module's API)

Qrels = dict[str, dict[str, int]]  # query id -> {doc id: grade}
DEFAULT_KS = "1,3,5,10,20"


def parse_ks(text: str) -> tuple[int, ...]:
    """'5, 1,1' -> (1, 5): the cut-offs of Recall@k, sorted, each once (the CLI's --k, the GUI's field)."""
    try:
        ks = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise InputError("use whole numbers such as 1,5,10") from None
    if not ks or min(ks) < 1:
        raise InputError("use whole numbers of at least 1")
    return tuple(sorted(ks))


def recall_at(ranking: list[str], relevant: dict[str, int], k: int) -> float:
    wanted = {d for d, g in relevant.items() if g > 0}
    return len(wanted & set(ranking[:k])) / len(wanted) if wanted else 0.0


def hit_at(ranking: list[str], relevant: dict[str, int], k: int) -> float:
    return float(any(relevant.get(d, 0) > 0 for d in ranking[:k]))


def reciprocal_rank(ranking: list[str], relevant: dict[str, int]) -> float:
    for rank, doc in enumerate(ranking, 1):
        if relevant.get(doc, 0) > 0:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranking: list[str], relevant: dict[str, int], k: int) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:k]) if relevant.get(d, 0) > 0)
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def per_query(run: Run, qrels: Qrels, ks: tuple[int, ...]) -> dict[str, dict[str, float]]:
    """Metrics per query for every query that has relevant documents (others are not averaged)."""
    result = {}
    for qid, relevant in qrels.items():
        if not any(g > 0 for g in relevant.values()):
            continue
        ranking = ranked(run.get(qid, {}))
        scores = {"mrr": reciprocal_rank(ranking, relevant)}
        for k in ks:
            scores[f"recall@{k}"] = recall_at(ranking, relevant, k)
            scores[f"hit@{k}"] = hit_at(ranking, relevant, k)
            scores[f"ndcg@{k}"] = ndcg_at(ranking, relevant, k)
        result[qid] = scores
    return result


def mean(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {name: sum(r[name] for r in rows) / len(rows) for name in rows[0]}
