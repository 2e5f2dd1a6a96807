"""The claim judges on claim sets nothing was fitted to: feature judge, routed judge, LLM on every
claim, plain yes/no; and the fits the routing and the LLM calibration come from (issue 40).

Claim sets (every claim hand-labelled; bench/judge_sets/*.jsonl say how each was written):
- fit sets: the held-out split of bench/diagnose_claims_hard.jsonl (its contexts: own entry and the
  next, as bench/diagnose.py), bench/diagnose_claims.jsonl (its contexts read from /tmp/realq),
  bench/judge_sets/python_mixed.jsonl. The routing region (curator/resources/judge/routing.json)
  and the LLM's calibration (curator/resources/judge/llm_calibration.json) are fitted on these
  only, with --fit.
- report sets: bench/judge_sets/zsh_contradictions.jsonl, fetchmail_added_details.jsonl,
  debian_numbers_scope.jsonl. Nothing is fitted or chosen on them; figures are reported on them.
Each claim of the judge_sets files is judged against two contexts: its own entry and the next
entry of its set (a distractor), as a RAG trace would give them.

With --judge-model PATH, every claim is also scored by that LLM (llm_judge.LlmJudge, uncalibrated:
the raw share of "yes"), in trace order so a trace's claims reuse the context prefix; the scores,
the greedy first word and the seconds per claim go to bench/judge_sets/scores_<model>.jsonl
(committed, so the calibration can be refitted without the model: --scores FILE).

Usage:
    nice -n 5 .venv/bin/python bench/diagnose_route.py [--judge-model PATH | --scores FILE] [--fit]
        [--no-prefix-reuse --limit N]
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

from diagnose_fit import CLAIMS, load_rows, trace_contexts  # noqa: E402

from curator.core.diagnosis.judge import ClaimJudge, default_embed  # noqa: E402
from curator.core.diagnosis import llm_judge  # noqa: E402
from curator.core.diagnosis.llm_judge import CALIBRATION, LlmJudge, VerdictCache  # noqa: E402
from curator.core.diagnosis.routing import ROUTING, fit_routing, reliable  # noqa: E402

HERE = Path(__file__).resolve().parent
SETS = HERE / "judge_sets"
FIT = ("hard_heldout", "faq40", "python_mixed")
REPORT = ("zsh_contradictions", "fetchmail_added_details", "debian_numbers_scope")
EDGES = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)


def balanced(labels: list[bool], said: list[bool]) -> float:
    pos = [s for y, s in zip(labels, said) if y]
    neg = [not s for y, s in zip(labels, said) if not y]
    return float((np.mean(pos) + np.mean(neg)) / 2)


def hard_heldout() -> list[dict]:
    contexts = trace_contexts()
    return [{"set": "hard_heldout", "claim": r["claim"], "label": r["label"], "style": r["kind"],
             "trace": f"{r['corpus']}:{r['context_path']}", "contexts": contexts[(r["corpus"], r["context_path"])]}
            for r in load_rows(CLAIMS) if r["split"] == "heldout"]


def faq40(root: Path = Path("/tmp/realq/corpus")) -> list[dict]:
    rows = load_rows(HERE / "diagnose_claims.jsonl")
    paths = list(dict.fromkeys(r["context_path"] for r in rows))
    text = {p: (root / p).read_text(encoding="utf-8") for p in paths}
    nxt = {p: paths[(i + 1) % len(paths)] for i, p in enumerate(paths)}
    return [{"set": "faq40", "claim": r["claim"], "label": r["label"], "style": "issue-29 set",
             "trace": r["context_path"], "contexts": [text[r["context_path"]], text[nxt[r["context_path"]]]]}
            for r in rows]


def judge_set(name: str) -> list[dict]:
    rows = load_rows(SETS / f"{name}.jsonl")
    paths = list(dict.fromkeys(r["context_path"] for r in rows))
    text = {r["context_path"]: r["context"] for r in rows}
    nxt = {p: paths[(i + 1) % len(paths)] for i, p in enumerate(paths)}
    return [{"set": name, "claim": r["claim"], "label": r["label"], "style": r["style"], "trace": r["context_path"],
             "contexts": [text[r["context_path"]], text[nxt[r["context_path"]]]]} for r in rows]


def all_claims() -> list[dict]:
    return hard_heldout() + faq40() + [c for name in FIT[2:] + REPORT for c in judge_set(name)]


def feature_scores(claims: list[dict]) -> None:
    """Each claim's default-judge probability, a trace's claims judged together."""
    judge = ClaimJudge(default_embed())
    groups = defaultdict(list)
    for c in claims:
        groups[(c["set"], c["trace"])].append(c)
    for group in groups.values():
        for c, v in zip(group, judge.judge([c["claim"] for c in group], group[0]["contexts"])):
            c["feature_p"] = v["probability"]


def llm_scores(claims: list[dict], model: str, reuse: bool, evidence: int = 0) -> None:
    """Each claim's raw P(yes), greedy word and seconds under the LLM, asked in trace order."""
    from curator.core.generation.backends import open_backend

    backend = open_backend(model, parallel=1)
    with tempfile.TemporaryDirectory() as tmp:
        llm = LlmJudge(backend, calibration={"models": {}}, cache=VerdictCache(Path(tmp) / "v.sqlite"),
                       evidence=evidence)
        for i, c in enumerate(claims):
            if not reuse:
                backend.llm.n_tokens = 0  # forget the previous prompt: every claim pays for its whole prompt
            if i == 0:
                _ = backend.llm  # load the model before the clock starts
            before = llm.seconds
            (_, v), = llm.judge([(i, c["contexts"], c["claim"])])
            c.update(p_yes=v["p_yes"], sampled=v["sampled"], seconds=round(llm.seconds - before, 3),
                     yes_no_mass=v["yes_no_mass"])
            print(f"  {i + 1}/{len(claims)} {c['set']} p_yes={v['p_yes']:.3f} {c['seconds']:.2f}s", file=sys.stderr)
    tokens = getattr(backend, "prompt_tokens", {})
    print(f"prompt tokens evaluated {tokens.get('evaluated')}, reused from the previous prompt {tokens.get('reused')}")


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def platt(claims: list[dict]) -> dict:
    from sklearn.linear_model import LogisticRegression

    x = logit(np.array([c["p_yes"] for c in claims]))[:, None]
    y = np.array([c["label"] == "supported" for c in claims], dtype=int)
    model = LogisticRegression(C=1e4).fit(x, y)
    return {"a": round(float(model.coef_[0][0]), 6), "b": round(float(model.intercept_[0]), 6)}


def calibrated(p_yes: float, fit: dict) -> float:
    return float(1 / (1 + np.exp(-(fit["a"] * logit(np.array([p_yes]))[0] + fit["b"]))))


def verdicts(claims: list[dict], fit: dict, routing: dict) -> dict[str, list[bool]]:
    """Each judge's 'supported' per claim."""
    out = {"feature judge alone": [c["feature_p"] >= 0.5 for c in claims]}
    if "p_yes" in claims[0]:
        llm = [calibrated(c["p_yes"], fit) >= 0.5 for c in claims]
        out["routed (feature where reliable, else LLM)"] = [
            (c["feature_p"] >= 0.5) if reliable(c["feature_p"], routing) else v for c, v in zip(claims, llm)]
        out["LLM on every claim, calibrated P(yes)"] = llm
        out["LLM on every claim, raw P(yes) >= 0.5"] = [c["p_yes"] >= 0.5 for c in claims]
        out["plain yes/no (greedy first token)"] = [c["sampled"] == "yes" for c in claims]
    return out


def grouped_by_set(claims: list[dict]) -> dict[str, list[dict]]:
    by_set = defaultdict(list)
    for c in claims:
        by_set[c["set"]].append(c)
    return by_set


def report(claims: list[dict], fit: dict, routing: dict) -> dict:
    """Balanced accuracy per set and judge; returns the LLM's (calibrated) figures on the report sets."""
    by_set = grouped_by_set(claims)
    heldout = {}
    for name in FIT + REPORT:
        part = by_set[name]
        if not part:  # --limit left it out
            continue
        labels = [c["label"] == "supported" for c in part]
        unsure = sum(not reliable(c["feature_p"], routing) for c in part)
        print(f"\n{name} ({'fit' if name in FIT else 'REPORT: nothing fitted here'}): {len(part)} claims, "
              f"{sum(labels)} supported, {unsure} outside the feature judge's reliable region")
        for judge, said in verdicts(part, fit, routing).items():
            print(f"  {judge:<45} {balanced(labels, said):.3f}")
            if name in REPORT and judge.startswith("LLM on every claim, calibrated"):
                heldout[name] = round(balanced(labels, said), 4)
    return heldout


def per_style(claims: list[dict], routing: dict) -> None:
    """The feature judge's agreement with the labels per claim style, every set pooled."""
    styles = defaultdict(list)
    for c in claims:
        styles[c["style"]].append((c["feature_p"] >= 0.5) == (c["label"] == "supported"))
    print("\nfeature judge, right per claim style (all sets):")
    for style, right in sorted(styles.items(), key=lambda kv: sum(kv[1]) / len(kv[1])):
        print(f"  {style:<22} {sum(right)}/{len(right)} = {sum(right) / len(right):.2f}")
    inside = [c for c in claims if reliable(c["feature_p"], routing)]
    for role, names in (("fit", FIT), ("report", REPORT)):
        part = [c for c in inside if c["set"] in names]
        total = sum(c["set"] in names for c in claims)
        right = sum((c["feature_p"] >= 0.5) == (c["label"] == "supported") for c in part)
        print(f"  reliable region on {role} sets: {len(part)}/{total} claims, right {right}/{len(part)}")


def speed(claims: list[dict]) -> None:
    timed = [c for c in claims if "seconds" in c]
    if not timed:
        return
    first, rest, seen = [], [], set()
    for c in timed:
        (rest if (c["set"], c["trace"]) in seen else first).append(c["seconds"])
        seen.add((c["set"], c["trace"]))
    total = sum(first) + sum(rest)
    print(f"\nLLM speed: {len(timed)} claims in {total:.1f} s = {len(timed) / total:.2f} claims/s; first claim of a "
          f"trace {np.mean(first):.2f} s (whole prompt), later claims {np.mean(rest) if rest else 0:.2f} s "
          f"(prefix reused); {len(seen)} traces, {len(timed) / len(seen):.1f} claims a trace")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--judge-model")
    parser.add_argument("--scores", help="a scores file written by an earlier --judge-model run")
    parser.add_argument("--fit", action="store_true", help="write routing.json (and the model's calibration)")
    parser.add_argument("--no-prefix-reuse", action="store_true", help="measure every prompt evaluated whole")
    parser.add_argument("--limit", type=int, help="only the first N claims (a speed check)")
    parser.add_argument("--question", help="try another last line of the prompt (chosen on the fit sets only)")
    parser.add_argument("--evidence", type=int, default=0, help="show the LLM the N context sentences nearest each "
                        "claim (with their neighbours) instead of the whole contexts")
    args = parser.parse_args()
    if args.question:  # the calibration a --fit writes then records this prompt, not the shipped one
        llm_judge.QUESTION, llm_judge.PROMPT_VERSION = args.question, f"question: {args.question}"
    claims = all_claims()[: args.limit]
    feature_scores(claims)
    model_name, model_key = None, None
    if args.scores:
        saved = {(c["set"], c["claim"]): c for c in map(json.loads, Path(args.scores).read_text().splitlines()[1:])}
        meta = json.loads(Path(args.scores).read_text().splitlines()[0])
        model_name, model_key = meta["model"], meta["sha256"]
        for c in claims:
            c.update({k: saved[(c["set"], c["claim"])][k] for k in ("p_yes", "sampled", "seconds")})
    elif args.judge_model:
        from curator.core.cachefiles import file_sha256

        model_name, model_key = Path(args.judge_model).name, file_sha256(args.judge_model)
        llm_scores(claims, args.judge_model, reuse=not args.no_prefix_reuse, evidence=args.evidence)
        if not args.limit and not args.no_prefix_reuse:
            variant = ("_question" if args.question else "") + (f"_evidence{args.evidence}" if args.evidence else "")
            write_scores(claims, model_name, model_key, variant)
    routing = fit_routing([(c["feature_p"], c["label"] == "supported") for c in claims if c["set"] in FIT], EDGES,
                          fitted_on="bench/diagnose_route.py --fit: " + ", ".join(FIT)) if args.fit else None
    routing = routing or json.loads(ROUTING.read_text())
    fit = platt([c for c in claims if c["set"] in FIT]) if model_key and not args.limit else {"a": 1.0, "b": 0.0}
    print(f"routing: reliable below {routing['reliable_below']}, at or above {routing['reliable_above']}; "
          f"LLM calibration {fit}")
    heldout = report(claims, fit, routing)
    per_style(claims, routing)
    speed(claims)
    if args.fit and not args.limit:
        write_fits(routing, fit, heldout, model_name, model_key)


def write_scores(claims: list[dict], model_name: str, model_key: str, variant: str = "") -> None:
    path = SETS / f"scores_{Path(model_name).stem}{variant}.jsonl"
    head = {"model": model_name, "sha256": model_key, "about": "raw P(yes) (share of yes/no mass of the first "
            "reply token), the greedy first word and seconds per claim, by bench/diagnose_route.py"}
    lines = [json.dumps(head)] + [json.dumps({k: c[k] for k in ("set", "claim", "p_yes", "sampled", "seconds")})
                                  for c in claims]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def write_fits(routing: dict, fit: dict, heldout: dict, model_name, model_key) -> None:
    ROUTING.write_text(json.dumps(routing, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {ROUTING}")
    if not model_key:
        return
    calibration = json.loads(CALIBRATION.read_text()) if CALIBRATION.exists() else {"models": {}}
    calibration["models"][model_key] = {
        "name": model_name, **fit, "fitted_on": "bench/diagnose_route.py --fit: " + ", ".join(FIT),
        "heldout_balanced_accuracy": round(min(heldout.values()), 4), "heldout_sets": heldout,
        "fitted_at": time.strftime("%Y-%m-%d"), "prompt": llm_judge.PROMPT_VERSION}
    CALIBRATION.write_text(json.dumps(calibration, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {CALIBRATION}")


if __name__ == "__main__":
    main()
