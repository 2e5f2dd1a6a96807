"""Dev/test splits of a gold set, stratified by cluster and deterministic for a seed."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Optional

from curator.core.errors import BadOption


def parse_split(spec: Optional[str]) -> Optional[dict[str, float]]:
    """``dev=0.3,test=0.7`` -> {"dev": 0.3, "test": 0.7}; fractions must be positive and sum to 1."""
    if not spec:
        return None
    fractions: dict[str, float] = {}
    for part in spec.split(","):
        name, _, value = part.strip().partition("=")
        name = name.strip()
        if not name or not name.isidentifier():
            raise BadOption("--split", f"bad split {part.strip()!r}: use NAME=FRACTION, e.g. dev=0.3,test=0.7")
        try:
            fraction = float(value)
        except ValueError:
            raise BadOption("--split", f"bad split fraction in {part.strip()!r}: not a number") from None
        if not 0 < fraction <= 1 or name in fractions:
            raise BadOption("--split", f"bad split {part.strip()!r}: fractions are in (0, 1] and names are unique")
        fractions[name] = fraction
    if abs(sum(fractions.values()) - 1) > 1e-6:
        raise BadOption("--split", f"split fractions sum to {sum(fractions.values()):g}, not 1")
    return fractions


def assign_splits(rows: list[dict], fractions: dict[str, float], seed: int = 0) -> dict[str, str]:
    """Query id -> split name. Each cluster (unclustered rows form one stratum) is shuffled with
    its own seeded generator and cut at the cumulative fractions, so every split gets each
    cluster's share and adding a cluster never reshuffles the others."""
    strata: dict = defaultdict(list)
    for row in rows:
        strata[row.get("cluster")].append(row["id"])
    names = list(fractions)
    cuts, total = [], 0.0
    for name in names:
        total += fractions[name]
        cuts.append(total)
    assignment: dict[str, str] = {}
    for cluster, ids in sorted(strata.items(), key=lambda item: str(item[0])):
        ids = sorted(ids)
        random.Random(f"{seed}:{cluster}").shuffle(ids)
        for index, query_id in enumerate(ids):
            position = (index + 0.5) / len(ids)  # the middle of the row's share of the stratum
            assignment[query_id] = next((n for n, cut in zip(names, cuts) if position < cut), names[-1])
    return assignment
