"""The combined claim judge (issue 40): three readings of one local model per claim, weighed by a logistic fit.

Readings (curator.core.diagnosis.llm_judge, the product's own code path): P(yes) against the whole contexts
(prompt yes-no-2), P(yes) against the claim's two nearest context sentences, and the claim's lowest context gain
(per claim token, its log-probability after the contexts minus after no context; the lowest of them).

Sets (bench/judge_sets/README.md): the six choice sets choose and fit; the fresh sets only report.
- ``--measure SETS``: reads every claim of the named sets (or ``choice`` / ``fresh`` / ``fresh2``) with ``--judge-model`` and
  appends the readings to bench/judge_sets/readings_<model>.jsonl (one line per claim; claims already there are
  skipped, so a stopped run resumes).
- ``--fit``: leave one choice set out over the feature subsets (which one is adopted was fixed before the fresh
  sets were read: bench/judge_sets/README.md), then fits the adopted subset on all six choice sets and writes it
  as "combined" into curator/resources/judge/llm_calibration.json, with its figures on the fresh sets.
- With neither, prints the figures per set from the readings file.

Usage:
    .venv/bin/python bench/judge_combined.py --judge-model M --measure fresh
    .venv/bin/python bench/judge_combined.py --judge-model M --fit
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from diagnose_route import (FIT, REPORT, balanced, calibrated, faq40, grouped_by_set, hard_heldout,  # noqa: E402
                            judge_set)

from curator.core.diagnosis import llm_judge  # noqa: E402
from curator.core.diagnosis.llm_judge import CALIBRATION, combined_features  # noqa: E402

HERE = Path(__file__).resolve().parent
CHOICE = FIT + REPORT
FRESH = ("fresh_python_howto", "fresh_zsh_manual", "fresh_fetchmail_manual")
FRESH2 = ("fresh2_tar_manual", "fresh2_ssh_config", "fresh2_wget_manual")  # written and read after FRESH
GROUPS = {"choice": CHOICE, "fresh": FRESH, "fresh2": FRESH2}  # what --measure may name instead of sets


def set_names(measure: list[str]) -> list[str]:
    """The claim sets ``--measure`` names, its groups spelled out."""
    return [n for name in measure for n in GROUPS.get(name, (name,))]
SUBSETS = {"whole": [0], "whole+nearest": [0, 1], "whole+min_gain": [0, 2], "whole+nearest+min_gain": [0, 1, 2]}
ADOPTED = "whole+nearest+min_gain"  # fixed before the fresh sets were read (bench/judge_sets/README.md)


def claims_of(name: str) -> list[dict]:
    if name == "hard_heldout":
        return hard_heldout()
    if name == "faq40":
        return faq40()
    return judge_set(name)


def readings_path(model: str) -> Path:
    return HERE / "judge_sets" / f"readings_{Path(model).stem}.jsonl"


def measure(model: str, names: list[str], path: Path) -> None:
    """Read each claim through the product's combined judge (its three readings, no fitted weights) into ``path``."""
    from curator.core.generation.backends import open_backend

    done = {(r["set"], r["claim"]) for r in _load(path)}
    backend = open_backend(model, parallel=1)
    _ = backend.llm  # load before the clock starts
    cache = llm_judge.VerdictCache(Path(tempfile.mkdtemp()) / "v.sqlite")  # every claim read afresh
    judge = llm_judge.LlmJudge(backend, calibration={"models": {}}, cache=cache)
    judge.combined = {"weights": [0.0, 0.0, 0.0], "intercept": 0.0}  # the readings only; weights come from --fit
    with path.open("a", encoding="utf-8") as out:
        for name in names:
            claims = [c for c in claims_of(name) if (c["set"], c["claim"]) not in done]
            for i, (c, v) in enumerate(zip(claims, judge_in_traces(judge, claims))):
                row = {"set": c["set"], "claim": c["claim"], "label": c["label"], "style": c["style"],
                       "whole": v["p_yes"], "nearest": v["p_nearest"], "min_gain": v["min_gain"],
                       "seconds": v["seconds"], "first_of_trace": v["first_of_trace"]}
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(f"  {name} {i + 1}/{len(claims)} whole {v['p_yes']:.2f} nearest {v['p_nearest']:.2f} "
                      f"gain {v['min_gain']:.1f}", file=sys.stderr)
    print(f"prompt tokens {getattr(backend, 'prompt_tokens', {})}")


def judge_in_traces(judge, claims: list[dict]):
    """The verdicts of each trace's claims in order, with the seconds per claim (a trace's time shared evenly)."""
    traces = defaultdict(list)
    for c in claims:
        traces[c["trace"]].append(c)
    by_claim = {}
    for trace in traces.values():
        started = time.perf_counter()
        verdicts = dict(judge.judge([(c["claim"], c["contexts"], c["claim"]) for c in trace]))
        seconds = (time.perf_counter() - started) / len(trace)
        for j, c in enumerate(trace):
            by_claim[c["claim"]] = {**verdicts[c["claim"]], "seconds": round(seconds, 3), "first_of_trace": j == 0}
    return [by_claim[c["claim"]] for c in claims]


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def matrix(rows: list[dict], columns: list[int]) -> np.ndarray:
    return np.array([[combined_features(r)[k] for k in columns] for r in rows])


def labels(rows: list[dict]) -> np.ndarray:
    return np.array([r["label"] == "supported" for r in rows], dtype=int)


def fit_logistic(rows: list[dict], columns: list[int]) -> dict:
    """Weights on the raw features (a standardised, class-balanced logistic regression, unscaled back)."""
    from sklearn.linear_model import LogisticRegression

    x, y = matrix(rows, columns), labels(rows)
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=1.0, class_weight="balanced").fit((x - mean) / scale, y)
    weights = model.coef_[0] / scale
    full = np.zeros(3)
    full[columns] = weights
    return {"weights": [round(float(w), 6) for w in full],
            "intercept": round(float(model.intercept_[0] - (weights * mean).sum()), 6)}


def said_supported(rows: list[dict], fit: dict) -> list[bool]:
    return [llm_judge.combined_probability(r, fit) >= 0.5 for r in rows]


def leave_one_out(rows: list[dict]) -> dict:
    by_set = grouped_by_set(rows)
    out = {}
    print(f"\nleave one choice set out ({len(rows)} claims):")
    for subset, columns in SUBSETS.items():
        accs = {}
        for name in CHOICE:
            fit = fit_logistic([r for r in rows if r["set"] != name], columns)
            accs[name] = balanced(list(labels(by_set[name])), said_supported(by_set[name], fit))
        out[subset] = accs
        print(f"  {subset:<24} " + " ".join(f"{n[:12]}={a:.3f}" for n, a in accs.items())
              + f"  mean {np.mean(list(accs.values())):.3f} min {min(accs.values()):.3f}")
    return out


def report(rows: list[dict], fit: dict, shipped: dict) -> dict:
    """Balanced accuracy per fresh set: the combined judge against the shipped one (calibrated P(yes) whole)."""
    by_set = grouped_by_set(rows)
    figures = {}
    print("\nfresh sets (nothing chosen on them):")
    for name in (*FRESH, *FRESH2):
        part = by_set.get(name)
        if not part:
            continue
        y = list(labels(part))
        combined = balanced(y, said_supported(part, fit))
        whole = balanced(y, [calibrated(r["whole"], shipped) >= 0.5 for r in part])
        raw = balanced(y, [r["whole"] >= 0.5 for r in part])
        figures[name] = round(combined, 4)
        print(f"  {name:<24} combined {combined:.3f}  shipped yes-no-2 calibrated {whole:.3f}  raw P(yes)>=0.5 "
              f"{raw:.3f}  ({len(part)} claims)")
    return figures


def speed(rows: list[dict]) -> None:
    timed = [r for r in rows if "seconds" in r]
    if timed:
        total = sum(r["seconds"] for r in timed)
        print(f"\nspeed: {len(timed)} claims in {total:.0f} s = {len(timed) / total:.2f} claims/s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judge-model", required=True)
    parser.add_argument("--measure", nargs="*", help="sets to read (names, or 'choice' / 'fresh')")
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--readings", type=Path, help="the readings file (default: bench/judge_sets/readings_<model>"
                        ".jsonl); another file measures again without touching the committed readings")
    args = parser.parse_args()
    path = args.readings or readings_path(args.judge_model)
    if args.measure is not None:
        measure(args.judge_model, set_names(args.measure), path)
    rows = _load(path)
    choice = [r for r in rows if r["set"] in CHOICE]
    fresh = [r for r in rows if r["set"] in (*FRESH, *FRESH2)]
    from curator.core.cachefiles import file_sha256

    key = file_sha256(args.judge_model)
    calibration = json.loads(CALIBRATION.read_text(encoding="utf-8"))
    entry = calibration["models"].get(key, {})
    if choice:
        leave_one_out(choice)
    fit = fit_logistic(choice, SUBSETS[ADOPTED]) if choice else entry.get("combined")
    figures = report(fresh, fit, entry) if fit and fresh else {}
    speed(fresh)
    if args.fit and choice:
        entry["combined"] = {**fit, "features": list(llm_judge.COMBINED_FEATURES),
                             "nearest_sentences": llm_judge.NEAREST_SENTENCES, "version": llm_judge.COMBINED_VERSION,
                             "fitted_on": "bench/judge_combined.py --fit: " + ", ".join(CHOICE),
                             "heldout_balanced_accuracy": round(min(figures.values()), 4) if figures else None,
                             "heldout_sets": figures, "fitted_at": time.strftime("%Y-%m-%d")}
        calibration["models"][key] = entry
        CALIBRATION.write_text(json.dumps(calibration, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {CALIBRATION}")


if __name__ == "__main__":
    main()
