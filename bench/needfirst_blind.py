"""Write the generated rows of several runs for labelling blind to the mode (issue 39; prints, asserts nothing).

Each ``--run CORPUS:MODE:PROJECT[:RUN_ID]`` names a bench project (bench/validity.py --mode ...) and the mode its
synthetic rows were generated in (all its synthetic rows, or those of one generation run); a MODE starting with
"refused" takes the candidates the need-first likelihood check refused instead. Every row of every
run is written, shuffled together by ``--seed``, WITHOUT its mode, to ``--rows`` ({"id", "corpus",
"query_type", "question", "reference", "gold"}: gold is the text of the row's gold chunks, in order), and the key
({"id", "mode", "corpus", "project", "query_id"}) to ``--key``: the labeller reads the rows file only, against
bench/quality_rubric.md; bench/needfirst_blind.py --score LABELS then joins labels and key.

Usage:
    .venv/bin/python bench/needfirst_blind.py --run debian:need-first:/tmp/nf/deb/deb.curator \
        --run debian:extractive:/tmp/nf/deb/deb-ex.curator [--rows bench/blind/rows_s39.jsonl] \
        [--key bench/blind/key_s39.jsonl] [--seed 39]
    .venv/bin/python bench/needfirst_blind.py --score LABELS.jsonl [--key ...]   # usable share per corpus, mode, type
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.core.generation.checks import NEED_FIRST_GAIN_REFUSAL  # noqa: E402
from curator.core.store import open_project  # noqa: E402

USABLE = ("as_is", "small_edit")  # bench/quality_rubric.md


def rows_of(corpus: str, mode: str, project: str, run_id: str = "") -> list[tuple[dict, dict]]:
    """(row for the labeller, key entry) per synthetic row of the project (or of one of its runs); for a MODE that
    starts with "refused", the candidates the need-first likelihood check refused instead (their source chunks as
    gold), so the labels say how many of the rows it refuses were usable."""
    db = open_project(Path(project))
    chunks = {cid: text for cid, text in db.execute("SELECT id, text FROM chunks")}
    where, params = ("AND run_id = ?", [int(run_id)]) if run_id else ("", [])
    if mode.startswith("refused"):
        source = "SELECT id, query_type, text, reference, source_chunk_ids FROM rejected_candidates WHERE reason LIKE ?"
        params = [NEED_FIRST_GAIN_REFUSAL + "%"] + params
    else:
        source = "SELECT id, query_type, text, reference, gold_chunk_ids FROM queries WHERE source = 'synthetic'"
    found = []
    for qid, qtype, text, reference, gold in db.execute(f"{source} {where} ORDER BY id", params):
        ids = json.loads(gold or "[]")
        row = {"corpus": corpus, "query_type": qtype, "question": text, "reference": reference,
               "gold": "\n\n---\n\n".join(chunks.get(c, "") for c in ids)}
        found.append((row, {"mode": mode, "corpus": corpus, "project": project, "query_id": qid}))
    return found


def write(args) -> None:
    pairs = [pair for spec in args.run for pair in rows_of(*spec.split(":", 3))]
    random.Random(args.seed).shuffle(pairs)
    Path(args.rows).parent.mkdir(parents=True, exist_ok=True)
    with open(args.rows, "w") as rows, open(args.key, "w") as key:
        for number, (row, entry) in enumerate(pairs, 1):
            rid = f"s{args.seed}-{number:04d}"  # rows files before s43 all used "s39-"
            rows.write(json.dumps({"id": rid, **row}) + "\n")
            key.write(json.dumps({"id": rid, **entry}) + "\n")
    counts: dict = {}
    for _row, entry in pairs:
        counts[(entry["corpus"], entry["mode"])] = counts.get((entry["corpus"], entry["mode"]), 0) + 1
    print(f"{len(pairs)} rows to {args.rows}, key to {args.key}: "
          + ", ".join(f"{c} {m} {n}" for (c, m), n in sorted(counts.items())))


def read_jsonl(path) -> list[dict]:
    """The objects of a JSON-lines file, blank lines skipped."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def score(args) -> None:
    key = {e["id"]: e for e in read_jsonl(args.key)}
    rows = {r["id"]: r for r in read_jsonl(args.rows)}
    tally: dict = {}
    for label in read_jsonl(args.score):
        entry, row = key[label["id"]], rows[label["id"]]
        for group in ((entry["corpus"], entry["mode"], "all"), (entry["corpus"], entry["mode"], row["query_type"])):
            usable, total = tally.get(group, (0, 0))
            tally[group] = (usable + (label["label"] in USABLE), total + 1)
    for (corpus, mode, qtype), (usable, total) in sorted(tally.items()):
        print(f"  {corpus:10s} {mode:11s} {qtype:12s} usable {usable}/{total} ({usable / total:.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", action="append", default=[], help="CORPUS:MODE:PROJECT[:RUN_ID]")
    parser.add_argument("--rows", default="bench/blind/rows_s39.jsonl")
    parser.add_argument("--key", default="bench/blind/key_s39.jsonl")
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument("--score", help="A labels file ({id, label}) to score against the key.")
    args = parser.parse_args()
    score(args) if args.score else write(args)


if __name__ == "__main__":
    main()
