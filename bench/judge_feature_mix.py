"""The combined claim judge with the default (feature) judge's probability as a fourth input (issue 40).

The two judges miss different styles: on the claim sets so far the feature judge caught added details and changed
numbers more often, the 1.5B model contradictions in the context's own words. This weighs both in one logistic fit.
The rule (bench/judge_sets/README.md, fixed before the run): leave one choice set out; adopt the four-input fit if
its mean beats the shipped three-input one and its minimum is not lower; report both on the first and second fresh
sets either way.

Reads the LLM readings of bench/judge_combined.py (bench/judge_sets/readings_<model>.jsonl) and the feature judge's
probability per claim, computed here (no LLM) and kept in bench/judge_sets/feature_p.jsonl.

Usage:
    .venv/bin/python bench/judge_feature_mix.py [--model-stem qwen2.5-coder-1.5b-instruct-q4_k_m]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from diagnose_route import balanced, feature_scores, grouped_by_set  # noqa: E402
from judge_combined import CHOICE, FRESH, FRESH2, _load, claims_of  # noqa: E402

from curator.core.diagnosis.llm_judge import log_odds  # noqa: E402

HERE = Path(__file__).resolve().parent
FEATURE_P = HERE / "judge_sets" / "feature_p.jsonl"
CANDIDATES = {"combined (shipped)": ("whole", "nearest", "min_gain"),
              "combined + feature judge": ("whole", "nearest", "min_gain", "feature_p")}


def feature_probabilities(names: tuple[str, ...]) -> dict:
    """The feature judge's probability per (set, claim), computed once for the sets not yet in FEATURE_P."""
    stored = _load(FEATURE_P)
    known = {(r["set"], r["claim"]): r["feature_p"] for r in stored}
    done = {r["set"] for r in stored}  # a set's claims are stored together: only new sets are read (and need corpora)
    missing = [c for name in names if name not in done for c in claims_of(name)]
    if missing:
        feature_scores(missing)
        with FEATURE_P.open("a", encoding="utf-8") as out:
            for c in missing:
                out.write(json.dumps({"set": c["set"], "claim": c["claim"], "feature_p": c["feature_p"]}) + "\n")
                known[(c["set"], c["claim"])] = c["feature_p"]
    return known


def features(row: dict, names: tuple[str, ...]) -> list[float]:
    return [row[n] if n == "min_gain" else log_odds(row[n]) for n in names]


def supported(rows: list[dict]) -> list[bool]:
    return [r["label"] == "supported" for r in rows]


def fit_and_say(train: list[dict], test: list[dict], names: tuple[str, ...]) -> list[bool]:
    """A standardised, class-balanced logistic fit on ``train`` (as bench/judge_combined.py); its verdicts on
    ``test``."""
    from sklearn.linear_model import LogisticRegression

    x = np.array([features(r, names) for r in train])
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=1.0, class_weight="balanced").fit((x - mean) / scale, supported(train))
    return [bool(v) for v in model.predict((np.array([features(r, names) for r in test]) - mean) / scale)]


def per_style(rows: list[dict], said: list[bool]) -> str:
    styles = defaultdict(lambda: [0, 0])
    for r, s in zip(rows, said):
        styles[r["style"]][0] += s == (r["label"] == "supported")
        styles[r["style"]][1] += 1
    return ", ".join(f"{style} {right}/{n}" for style, (right, n) in sorted(styles.items()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-stem", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    args = parser.parse_args()
    readings = _load(HERE / "judge_sets" / f"readings_{args.model_stem}.jsonl")
    names = CHOICE + FRESH + FRESH2
    feature_p = feature_probabilities(tuple(n for n in names if any(r["set"] == n for r in readings)))
    rows = [{**r, "feature_p": feature_p[(r["set"], r["claim"])]} for r in readings if r["set"] in names]
    by_set = grouped_by_set(rows)
    choice = [r for r in rows if r["set"] in CHOICE]
    print(f"leave one choice set out ({len(choice)} claims):")
    for label, columns in CANDIDATES.items():
        accs = [balanced(supported(by_set[s]), fit_and_say([r for r in choice if r["set"] != s], by_set[s], columns))
                for s in CHOICE]
        print(f"  {label:<26} " + " ".join(f"{s[:12]}={a:.3f}" for s, a in zip(CHOICE, accs))
              + f"  mean {np.mean(accs):.3f} min {min(accs):.3f}")
    for report in (FRESH, FRESH2):
        present = [s for s in report if s in by_set]
        if not present:
            continue
        print(f"\nfitted on all six choice sets; balanced accuracy on {', '.join(present)}:")
        feature_alone = [balanced(supported(by_set[s]), [r["feature_p"] >= 0.5 for r in by_set[s]]) for s in present]
        print(f"  {'feature judge alone':<26} " + " ".join(f"{a:.3f}" for a in feature_alone))
        for label, columns in CANDIDATES.items():
            said = {s: fit_and_say(choice, by_set[s], columns) for s in present}
            print(f"  {label:<26} " + " ".join(f"{balanced(supported(by_set[s]), said[s]):.3f}" for s in present))
            for s in present:
                print(f"      {s}: {per_style(by_set[s], said[s])}")


if __name__ == "__main__":
    main()
