"""Which claims the default judge may answer alone: routing by its measured reliability.

The default judge (judge.ClaimJudge) is right most of the time on claims like the ones it was
fitted to and much less on claims written another way (docs/benchmarks.md, "Diagnosis judge").
So its probability is not trusted by a fixed band: ``curator/resources/judge/routing.json``
(written by bench/diagnose_route.py) holds, for bins of its probability, how often it agreed with
the human label on labelled claims of every style we have (none of them its fitting data), and
the region where it agreed at least RELIABLE_AGREEMENT of the time. A claim whose probability lies
in that region is answered by the default judge alone; any other claim is "unsure": an LLM judge
checks it when one is configured, and without one the report says how often the default judge
was wrong on claims like it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

ROUTING = Path(__file__).resolve().parents[2] / "resources" / "judge" / "routing.json"
RELIABLE_AGREEMENT = 0.95


@lru_cache(maxsize=1)
def load_routing(path: Optional[str] = None) -> dict:
    return json.loads(Path(path or ROUTING).read_text(encoding="utf-8"))


def reliable(probability: float, routing: Optional[dict] = None) -> bool:
    """Whether the default judge answers a claim with this probability alone."""
    r = routing or load_routing()
    return probability < r["reliable_below"] or probability >= r["reliable_above"]


def agreement(probability: float, routing: Optional[dict] = None) -> Optional[float]:
    """How often the default judge agreed with the human label on labelled claims whose probability
    fell in the same bin (None where no labelled claim did)."""
    for low, high, _claims, agreed in (routing or load_routing())["bins"]:
        if low <= probability < high or (high >= 1.0 and probability >= low):
            return agreed
    return None


def expected_wrong(probabilities: Iterable[float], routing: Optional[dict] = None) -> float:
    """Verdicts of the default judge expected to be wrong: the sum of 1 - agreement of each bin."""
    return sum(1.0 - (agreement(p, routing) or 0.5) for p in probabilities)


def fit_routing(scored: list[tuple[float, bool]], edges: tuple[float, ...], fitted_on: str,
                target: float = RELIABLE_AGREEMENT) -> dict:
    """The routing table from (default judge probability, human label 'supported') pairs: agreement
    per bin, and the widest tails [0, below) and [above, 1] whose claims it got right at least
    ``target`` of the time (an empty tail when none holds)."""
    bins = []
    for low, high in zip(edges, edges[1:]):
        inside = [(p, y) for p, y in scored if low <= p < high or (high >= 1.0 and p >= low)]
        right = sum((p >= 0.5) == y for p, y in inside)
        bins.append([low, high, len(inside), round(right / len(inside), 4) if inside else None])
    below = _widest_tail(scored, sorted({e for e in edges if e <= 0.5}, reverse=True), lambda p, t: p < t, target,
                         none=0.0)
    above = _widest_tail(scored, sorted(e for e in edges if e >= 0.5), lambda p, t: p >= t, target, none=1.01)
    return {"reliable_below": below, "reliable_above": above, "target_agreement": target, "bins": bins,
            "region": _region_figures(scored, below, above), "fitted_on": fitted_on}


def _widest_tail(scored, thresholds, inside, target: float, none: float) -> float:
    """The loosest threshold whose tail of claims the judge got right at least ``target`` of the
    time; ``none`` (an empty tail) when no threshold holds."""
    for threshold in thresholds:
        tail = [(p, y) for p, y in scored if inside(p, threshold)]
        if tail and sum((p >= 0.5) == y for p, y in tail) / len(tail) >= target:
            return threshold
    return none


def _region_figures(scored, below: float, above: float) -> dict:
    inside = [(p, y) for p, y in scored if p < below or p >= above]
    right = sum((p >= 0.5) == y for p, y in inside)
    return {"claims": len(scored), "reliable": len(inside),
            "agreement": round(right / len(inside), 4) if inside else None}
