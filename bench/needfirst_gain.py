"""Would the likelihood answer check (answers.AnswerLikelihood, which answer-first rows already pass) sort need-first
rows as blind labels do? For every labelled need-first row (factoid, keyword, vague) of the given blind sets: the
generating model's gain of the reference given the question; then, per threshold, the rows it would refuse, how many
of them the labels reject, and the usable share of the rows it keeps. Prints, asserts nothing; the threshold is a
choice: pick it on one set and read the others.

    .venv/bin/python bench/needfirst_gain.py --model QWEN_1_5B --sets s43,s42,s41 [--thresholds 0,0.03,0.05]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from needfirst_blind import USABLE, read_jsonl  # noqa: E402
from curator.core.generation.answers import AnswerLikelihood  # noqa: E402
from curator.core.generation.needfirst import NEED_FIRST_TYPES  # noqa: E402

BLIND = Path(__file__).resolve().parent / "blind"


def gains(judge: AnswerLikelihood, name: str) -> list[tuple[float, bool]]:
    """(gain, usable) per labelled need-first row of blind set ``name``."""
    rows = {r["id"]: r for r in read_jsonl(BLIND / f"rows_{name}.jsonl")}
    key = {k["id"]: k for k in read_jsonl(BLIND / f"key_{name}.jsonl")}
    found = []
    for label in read_jsonl(BLIND / f"labels_{name}.jsonl"):
        row, mode = rows[label["id"]], key[label["id"]]["mode"]
        if mode == "extractive" or row["query_type"] not in NEED_FIRST_TYPES or not row.get("reference"):
            continue
        found.append((judge.gain(row["question"], row["reference"]), label["label"] in USABLE))
    return found


def report(name: str, scored: list[tuple[float, bool]], thresholds: list[float]) -> None:
    usable = sum(u for _, u in scored)
    print(f"{name}: {len(scored)} need-first rows, {usable} usable ({usable / len(scored):.0%})")
    for threshold in thresholds:
        refused = [u for g, u in scored if g < threshold]
        kept = [u for g, u in scored if g >= threshold]
        print(f"  gain < {threshold:.2f}: refuses {len(refused)} ({len(refused) - sum(refused)} rejected by the labels, "
              f"{sum(refused)} usable); kept rows usable {sum(kept)} of {len(kept)} ({sum(kept) / max(1, len(kept)):.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="the GGUF that generated the rows")
    parser.add_argument("--sets", default="s43,s42,s41", help="blind sets in bench/blind (rows_, key_, labels_ files)")
    parser.add_argument("--thresholds", default="0,0.03,0.05")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    judge = AnswerLikelihood(model_path=args.model, n_threads=args.threads)
    thresholds = [float(t) for t in args.thresholds.split(",")]
    for name in args.sets.split(","):
        report(name, gains(judge, name), thresholds)


if __name__ == "__main__":
    main()
