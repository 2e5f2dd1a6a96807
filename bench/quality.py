"""Quality bench: generate rows with the bundled model on a held-out corpus and print the inputs of
the usable share (candidates per accepted row, rows/min, echo / enumeration / fragment shares).

Run: PYTHONPATH=. .venv/bin/python bench/quality.py [--corpus /tmp/realq/corpus] [--count 60]
       [--out rows.jsonl] [--labels bench/quality_labels.jsonl]

The corpus is the Python FAQ set (build it with bench/realq/build.py --out /tmp/realq), never the
sample corpus. Accepted rows go to --out, one JSON line each, for a person to label against
bench/quality_rubric.md; with --labels it also prints the usable share of the labelled rows.
The echo / enumeration / fragment shares are measured by fixed patterns below (not by the
generator's own filters), so the same yardstick reads the code before and after a change.
Works on older checkouts too (it only uses generate(), GenerationConfig and ingest()).
Prints figures; asserts nothing.

``--margins P [P ...] --labels bench/quality_labels.jsonl`` measures the quality score on the labelled
answer-first rows (chunk texts read from projects P over their corpora): the AUC of the score and of
each margin for usable against rejected rows, score version 4 against today's (issue 27: the
question_grounding margin rewarded copying the chunk).

``--answer-check --labels bench/quality_labels.jsonl --code no_check`` measures the checks that may
keep an answer-first question (issue 27) on labelled rows generated without any: the usable share
of the rows each check would keep and of those it would reject, at several thresholds. The
candidates are the generating model's likelihood gain (answers.AnswerLikelihood, the default) and,
for comparison only, the MiniLM cosine of question and answer sentence that was the filter before
(MiniLM is the dense retriever under test, so it may not filter; it is measured to show what was lost).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

from curator.core.corpus.ingest import ingest
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.store import open_project

_WORD = re.compile(r"\w+")
_ENUM = re.compile(r"^\W{0,2}\d{1,3}[.)]\s|(^|\s)\d{1,3}[.)]\s+[A-Z]")
_FUNCTION_END = {"the", "a", "an", "of", "to", "in", "on", "for", "with", "by", "and", "or", "via", "is", "are",
                 "this", "that", "as", "at", "from"}


def _words(text: str) -> list[str]:
    return _WORD.findall((text or "").lower())


def is_echo(row: dict) -> bool:
    """The reference answer restates the question: 75%+ of its words are the question's."""
    answer = set(_words(row["reference"])) - _FUNCTION_END
    return bool(answer) and len(answer & set(_words(row["text"]))) / len(answer) >= 0.75


def is_enumeration(row: dict) -> bool:
    return bool(_ENUM.search(row["text"] or "") or _ENUM.search(row["reference"] or ""))


def is_fragment(row: dict) -> bool:
    """Not a query: a question without one final '?', several sentences, or a keyword query ending on 'the'."""
    text = (row["text"] or "").strip()
    words = _words(text)
    if row["query_type"] == "keyword":
        return not words or words[-1] in _FUNCTION_END
    return not text.endswith("?") or text.count("?") != 1 or bool(re.search(r"[.!;:?]\s+\S", text[:-1]))


def run(corpus: Path, count: int, seed: int, threads=None, mix=None) -> tuple[dict, list[dict], float, float]:
    project = Path(tempfile.mkdtemp()) / "quality.curator"
    print(f"project: {project}", flush=True)  # rows are committed as made: --project reads a run cut short
    db = open_project(project, create=True)
    ingest(db, [corpus])
    wall, cpu = time.perf_counter(), time.process_time()
    summary = generate(db, GenerationConfig(count=count, seed=seed, threads=threads, mix=mix))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return summary, _rows(db), wall, cpu


def read_project(project: Path) -> tuple[dict, list[dict], float, float]:
    """The figures of a run from its project file (a run still going or stopped): wall time from the
    first to the last stored candidate, no CPU time."""
    import sqlite3

    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    reasons: dict = {}
    for (reason,) in conn.execute("SELECT reason FROM rejected_candidates"):
        key = reason.split(" (")[0]
        reasons[key] = reasons.get(key, 0) + 1
    rows = _rows(conn)
    stamps = [r[0] for r in conn.execute("SELECT created_at FROM queries WHERE source = 'synthetic' UNION ALL "
                                         "SELECT created_at FROM rejected_candidates")]
    start = conn.execute("SELECT created_at FROM generation_runs ORDER BY id LIMIT 1").fetchone()[0]
    from datetime import datetime

    wall = (datetime.fromisoformat(max(stamps)) - datetime.fromisoformat(start)).total_seconds() if stamps else 0.0
    by_type: dict = {}
    for row in rows:
        by_type[row["query_type"]] = by_type.get(row["query_type"], 0) + 1
    summary = {"status": "read from project", "accepted_this_session": len(rows), "rejected": sum(reasons.values()),
               "rejected_by_reason": reasons, "by_type": by_type}
    return summary, rows, max(wall, 1e-9), 0.0


def _rows(db) -> list[dict]:
    columns = [r[1] for r in db.execute("PRAGMA table_info(queries)")]
    pick = ", ".join(c for c in ("id", "query_type", "text", "reference", "gold_chunk_ids", "quality", "source_chunk_ids",
                                 "quality_signals") if c in columns)
    rows = [dict(zip([c.strip() for c in pick.split(",")], r)) for r in db.execute(
        f"SELECT {pick} FROM queries WHERE source = 'synthetic' ORDER BY created_at, id")]
    chunk_text = dict(db.execute("SELECT id, text FROM chunks"))
    for row in rows:
        row["gold_text"] = " ".join(chunk_text.get(c, "") for c in json.loads(row.pop("gold_chunk_ids") or "[]"))[:600]
        signals = json.loads(row.pop("quality_signals", None) or "{}")
        sources = json.loads(row.pop("source_chunk_ids", None) or "[]")
        if row["query_type"] in ("unanswerable", "multi_hop") and sources:  # what a labeller checks them against
            row["source_chunk_ids"] = sources
            row["evidence"] = signals.get("unanswerable_evidence") or signals.get("multi_hop")
    return rows


def usable_share(labels_path: Path) -> dict:
    labels = [json.loads(line) for line in labels_path.read_text().splitlines() if line.strip()]
    by = {}
    for item in labels:  # one group per code and labelling batch: batches came from different runs
        group = item.get("code", "?") + (f" / {item['batch']}" if item.get("batch") else "")
        by.setdefault(group, {}).setdefault(item["label"], 0)
        by[group][item["label"]] += 1
    return {code: {**counts, "usable_share": round((counts.get("as_is", 0) + counts.get("small_edit", 0))
                                                    / max(1, sum(counts.values())), 3)} for code, counts in by.items()}


def answer_checks(labels_path: Path, code: str) -> None:
    """Usable share of the labelled answer-first rows kept and rejected by each candidate check."""
    from curator.core.embedding.embed import get_embedder
    from curator.core.generation.answers import MIN_ANSWER_GAIN, AnswerLikelihood
    from curator.core.generation.repack import bundled_model_files

    rows = [json.loads(line) for line in labels_path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("code") == code and r["query_type"] in ("factoid", "keyword", "vague")]
    likelihood, minilm = AnswerLikelihood(bundled_model_files().path), get_embedder("minilm")
    for row in rows:
        row["gain"] = likelihood.gain(row["text"], row["reference"])
        vectors = minilm.embed_batch([row["text"], row["reference"]])
        row["cosine"] = float(vectors[0] @ vectors[1])
    usable = [r["label"] != "reject" for r in rows]
    print(f"{len(rows)} labelled answer-first rows of code {code!r}, {sum(usable)} usable ({sum(usable) / len(rows):.0%})")
    for name, floors in (("likelihood gain", sorted({0.1, 0.2, MIN_ANSWER_GAIN, 0.3, 0.4, 0.5, 0.7})),
                         ("MiniLM cosine (not allowed: the dense retriever)", (0.4, 0.5, 0.6, 0.65, 0.7))):
        key = "gain" if name.startswith("likelihood") else "cosine"
        print(f"  {name}:")
        for floor in floors:
            kept = [r["label"] != "reject" for r in rows if r[key] >= floor]
            cut = [r["label"] != "reject" for r in rows if r[key] < floor]
            print(f"    floor {floor:.2f}: keeps {len(kept)} rows, {sum(kept) / max(1, len(kept)):.0%} usable; "
                  f"rejects {len(cut)}, {sum(cut) / max(1, len(cut)):.0%} usable")


def _auc(scored: list[tuple[float, bool]]) -> float:
    """Chance that a usable row scores above a rejected one (ties count half)."""
    pos = [s for s, usable in scored if usable]
    neg = [s for s, usable in scored if not usable]
    return sum((p > n) + 0.5 * (p == n) for p in pos for n in neg) / max(1, len(pos) * len(neg))


def _margins_v4(question: str, answer: str, query_type: str, texts: list[str]) -> dict:
    """The margins of quality score version 4 (before issue 27's change), for comparison."""
    from curator.core.generation import filters as f

    found = {"repetition": 1 - max(f.repetition_share(question), f.repetition_share(answer)) / f.MAX_REPEATED}
    if query_type in ("factoid", "keyword"):
        found["question_grounding"] = (f.question_grounding(question, texts) - f.MIN_QUESTION_GROUNDING) / (
            1 - f.MIN_QUESTION_GROUNDING)
    words = f.content_words(answer)
    share = len(words & f.content_words(" ".join(texts))) / len(words) if words else 0.0
    found["answer_grounding"] = (share - f.MIN_GROUNDING) / (1 - f.MIN_GROUNDING)
    found["not_restated"] = 1 - f.restated_share(question, answer) / f.MAX_RESTATED
    return {name: max(0.0, min(1.0, value)) for name, value in found.items()}


def margin_separation(labels_path: Path, projects: list[Path]) -> None:
    """How well the quality score (mean of the margins) and each margin separate the labelled usable
    answer-first rows from the rejected ones (AUC), score version 4 against today's. The chunk texts
    come from ``projects`` over the labelled rows' corpora (chunk ids are stable)."""
    import sqlite3

    from curator.core.generation import filters

    texts = {}
    for project in projects:
        texts.update(sqlite3.connect(project).execute("SELECT id, text FROM chunks").fetchall())
    rows = [json.loads(line) for line in labels_path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["query_type"] in ("factoid", "keyword", "vague")
            and (r.get("source_chunk_ids") or [None])[0] in texts]
    groups = {"all": rows}
    for row in rows:
        groups.setdefault(row["code"], []).append(row)
    for name, members in groups.items():
        old = [(_margins_v4(r["text"], r["reference"], r["query_type"], [texts[r["source_chunk_ids"][0]]]),
                r["label"] != "reject") for r in members]
        new = [(filters.margins(r["text"], r["reference"], r["query_type"], [texts[r["source_chunk_ids"][0]]],
                                extractive=True), r["label"] != "reject") for r in members]
        usable = sum(u for _, u in new)
        line = (f"{name}: {len(members)} rows, {usable} usable; score AUC v4 "
                f"{_auc([(sum(m.values()) / len(m), u) for m, u in old]):.3f}, now "
                f"{_auc([(sum(m.values()) / len(m), u) for m, u in new]):.3f}")
        if name == "all":
            for label, scored in (("v4", old), ("now", new)):
                for margin in sorted({k for m, _ in scored for k in m}):
                    values = [(m[margin], u) for m, u in scored if margin in m]
                    line += f"\n  {label} margin {margin}: AUC {_auc(values):.3f} on {len(values)} rows"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/realq/corpus"))
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mix", help="type weights as for generate --mix, e.g. unanswerable=1,multi_hop=1")
    parser.add_argument("--out", type=Path, help="accepted rows as JSON lines, for labelling")
    parser.add_argument("--labels", type=Path, help="labelled rows (bench/quality_labels.jsonl)")
    parser.add_argument("--threads", type=int, help="CPU threads (1 wastes least when the machine is oversubscribed)")
    parser.add_argument("--project", type=Path, help="read the figures of an existing run's project instead")
    parser.add_argument("--answer-check", action="store_true",
                        help="with --labels: usable share kept and rejected by each answer check, on rows of --code")
    parser.add_argument("--code", default="no_check", help="which labelled rows --answer-check reads")
    parser.add_argument("--margins", nargs="+", type=Path, metavar="PROJECT",
                        help="with --labels: how well the quality score's margins separate usable labelled "
                             "answer-first rows (AUC), reading chunk texts from these projects")
    args = parser.parse_args()
    if args.margins:
        margin_separation(args.labels, args.margins)
        return
    if args.answer_check:
        answer_checks(args.labels, args.code)
        return
    mix = None
    if args.mix:
        from curator.core.generation.plan import parse_mix

        mix = parse_mix(args.mix)
    if args.labels and not args.out and not args.project:
        print(json.dumps(usable_share(args.labels), indent=1))
        return
    summary, rows, wall, cpu = read_project(args.project) if args.project else run(args.corpus, args.count, args.seed,
                                                                                              args.threads, mix)
    candidates = summary["accepted_this_session"] + summary["rejected_this_session"]
    n = max(1, len(rows))
    figures = {
        "status": summary["status"], "accepted": len(rows), "candidates": candidates,
        "candidates_per_accepted": round(candidates / n, 2), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "rows_per_min_wall": round(60 * len(rows) / wall, 2), "rows_per_cpu_min": round(60 * len(rows) / cpu, 2) if cpu else None,
        "echo_share": round(sum(map(is_echo, rows)) / n, 3),
        "enumeration_share": round(sum(map(is_enumeration, rows)) / n, 3),
        "fragment_share": round(sum(map(is_fragment, rows)) / n, 3),
        "rejected_by_reason": summary["rejected_by_reason"],
        "by_type": summary["by_type"], "kept_surplus": summary.get("kept_surplus"),
        "refilled": summary.get("refilled"), "stopped_short": summary.get("stopped_short"),
    }
    print(json.dumps(figures, indent=1))
    if args.out:
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    if args.labels:
        print(json.dumps(usable_share(args.labels), indent=1))


if __name__ == "__main__":
    main()
