"""How far a judge built on one model's readings can go (issue 40): every reading's best threshold and the logistic
weighing of all of them, each fitted on the very set it is scored on.

Fitting on the scored set is cheating on purpose: it is an upper bound for any calibration or weighing of these
readings, so where it stays below a target no choice of weights, thresholds or feature subsets can reach it; only
other readings (another prompt, another model) can. Reads what bench/judge_combined.py and bench/judge_fewshot.py
stored (bench/judge_sets/readings_<model>.jsonl, fewshot_<model>.jsonl); runs no model.

Usage:
    .venv/bin/python bench/judge_ceiling.py [--model-stem qwen2.5-coder-1.5b-instruct-q4_k_m] [--target 0.85]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from judge_combined import CHOICE, FRESH, FRESH2, _load, labels, matrix  # noqa: E402
from diagnose_route import balanced  # noqa: E402

from curator.core.diagnosis.llm_judge import log_odds  # noqa: E402

HERE = Path(__file__).resolve().parent / "judge_sets"
READINGS = ("whole", "nearest", "min_gain")
COLUMNS = (*READINGS, "three readings", "fewshot", "four readings")


def best_threshold(y: np.ndarray, scores: np.ndarray) -> float:
    """Balanced accuracy at the threshold that is best on these very claims."""
    return max(balanced(list(y), list(scores >= t)) for t in np.unique(scores))


def fitted_on_itself(x: np.ndarray, y: np.ndarray) -> float:
    """Balanced accuracy of a class-balanced logistic regression fitted and scored on the same claims."""
    from sklearn.linear_model import LogisticRegression

    z = (x - x.mean(axis=0)) / (x.std(axis=0) + 1e-9)
    model = LogisticRegression(C=100.0, class_weight="balanced", max_iter=5000).fit(z, y)
    return balanced(list(y), list(model.predict(z) == 1))


def ceiling(rows: list[dict], fewshot: dict) -> dict:
    y = labels(rows)
    figures = {name: best_threshold(y, np.array([r[name] for r in rows])) for name in READINGS}
    x = matrix(rows, [0, 1, 2])
    figures["three readings"] = fitted_on_itself(x, y)
    shots = [fewshot.get((r["set"], r["claim"])) for r in rows]
    if all(s is not None for s in shots):
        figures["fewshot"] = best_threshold(y, np.array(shots))
        figures["four readings"] = fitted_on_itself(np.c_[x, [log_odds(s) for s in shots]], y)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-stem", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--target", type=float, default=0.85)
    args = parser.parse_args()
    rows = _load(HERE / f"readings_{args.model_stem}.jsonl")
    fewshot = {(r["set"], r["claim"]): r["fewshot"] for r in _load(HERE / f"fewshot_{args.model_stem}.jsonl")}
    print(f"balanced accuracy fitted on the scored set itself (an upper bound), {args.model_stem}:")
    print(f"  {'set':<26} {'role':<7} " + " ".join(f"{c:>14}" for c in COLUMNS))
    for name in (*CHOICE, *FRESH, *FRESH2):
        part = [r for r in rows if r["set"] == name]
        if not part:
            continue
        figures = ceiling(part, fewshot)
        role = "choice" if name in CHOICE else "fresh"
        cells = " ".join(f"{figures[c]:>14.3f}" if c in figures else f"{'-':>14}" for c in COLUMNS)
        best = max(figures.values())
        print(f"  {name:<26} {role:<7} {cells}" + ("" if best >= args.target else f"   < {args.target} at best"))


if __name__ == "__main__":
    main()
