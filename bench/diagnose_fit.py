"""Fit the default claim judge's weights (curator/resources/judge/claim_judge.json).

Data: bench/diagnose_claims_hard.jsonl (256 hand-written, hand-labelled claims over the Python FAQ
and the Debian FAQ; see its first line) with the entry texts of bench/diagnose_claims_contexts.jsonl.
Each claim is judged against two retrieved contexts, as a RAG trace would give them: its own FAQ
entry and the next entry of the same corpus (a distractor). Only rows with split 'train' are fitted;
the 'heldout' rows are for bench/diagnose.py. Every train claim is also measured against the next
entry alone, labelled 'not supported' (a wrong retrieval: what context recall must catch). Features come from curator.core.diagnosis.judge
(MiniLM cosines through the project's embedder), the model is scikit-learn's LogisticRegression on
standardised features (C=1, chosen by 5-fold cross-validation on the train split; class weights balanced, no randomness), and the fitted numbers are
written as JSON so the judge needs no scikit-learn at run time.

Usage:
    .venv/bin/python bench/diagnose_fit.py [--out curator/resources/judge/claim_judge.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from curator.core.diagnosis.judge import FEATURES, WEIGHTS, default_embed, measure  # noqa: E402

HERE = Path(__file__).resolve().parent
CLAIMS = HERE / "diagnose_claims_hard.jsonl"
CONTEXTS = HERE / "diagnose_claims_contexts.jsonl"
WRONG_CONTEXT_WEIGHT = 0.25


def load_rows(path: Path) -> list[dict]:
    """Rows of a JSONL data file, its 'about' header left out."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if "about" not in r]


def trace_contexts() -> dict[tuple[str, str], list[str]]:
    """(corpus, path) -> [the entry's text, the next entry's text in the same corpus]."""
    by_corpus: dict[str, list[dict]] = {}
    for row in load_rows(CONTEXTS):
        by_corpus.setdefault(row["corpus"], []).append(row)
    out = {}
    for corpus, rows in by_corpus.items():
        rows.sort(key=lambda r: r["context_path"])
        for i, row in enumerate(rows):
            out[(corpus, row["context_path"])] = [row["text"], rows[(i + 1) % len(rows)]["text"]]
    return out


def measured(rows: list[dict], embed, wrong_context: bool = False) -> list[tuple[dict, tuple, dict]]:
    """(row, evidence unit, features) for each row, the claims of one entry measured together.

    With ``wrong_context``, every claim is measured a second time against the next entry alone and
    labelled 'not supported': a retriever that brought back the wrong entry, as context recall meets
    it (the labels of these rows are by construction: one FAQ entry does not state another's claims)."""
    contexts = trace_contexts()
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["corpus"], row["context_path"]), []).append(row)
    out = []
    for key, group in groups.items():
        for row, (unit, values) in zip(group, measure(embed, [r["claim"] for r in group], contexts[key])):
            out.append((row, unit, values))
        if wrong_context:
            for row, (unit, values) in zip(group, measure(embed, [r["claim"] for r in group], contexts[key][1:])):
                out.append(({**row, "label": "not supported", "kind": "wrong context"}, unit, values))
    return out


def fit(items: list[tuple[dict, tuple, dict]]) -> dict:
    from sklearn.linear_model import LogisticRegression

    x = np.array([[values[f] for f in FEATURES] for _, _, values in items])
    y = np.array([row["label"] == "supported" for row, _, _ in items], dtype=int)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    # the wrong-context rows teach topic drift without outvoting the hand-written claims
    weight = np.array([WRONG_CONTEXT_WEIGHT if row.get("kind") == "wrong context" else 1.0 for row, _, _ in items])
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000).fit((x - mean) / scale, y,
                                                                                  sample_weight=weight)
    return {"version": "1", "features": list(FEATURES), "mean": mean.round(6).tolist(),
            "scale": scale.round(6).tolist(), "coef": model.coef_[0].round(6).tolist(),
            "intercept": round(float(model.intercept_[0]), 6), "embedder": "minilm",
            "fitted_on": (f"bench/diagnose_claims_hard.jsonl split=train ({len(items) // 2} claims, each also against "
                          f"the next entry alone as 'not supported': {len(items)} rows, {int(y.sum())} supported)"),
            "fitted_by": "bench/diagnose_fit.py", "fitted_at": datetime.date.today().isoformat()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(WEIGHTS))
    args = parser.parse_args()
    train = [r for r in load_rows(CLAIMS) if r["split"] == "train"]
    weights = fit(measured(train, default_embed(), wrong_context=True))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(weights, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {weights['fitted_on']}")
    for name, coef in sorted(zip(weights["features"], weights["coef"]), key=lambda kv: kv[1]):
        print(f"  {name:>26} {coef:+.3f}")


if __name__ == "__main__":
    main()
