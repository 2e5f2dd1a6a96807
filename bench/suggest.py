"""Benchmark suggested gold on real questions (prints figures, asserts nothing).

Ingests the Python FAQ set (``/tmp/realq``, built by ``bench/realq/build.py``: FAQ answers as .md
files with the question removed, plus tutorial/howto pages as distractors), then ranks the
chunks for every question in ``questions.jsonl`` and prints, per ranking, hit@5 (the share of
questions with a chunk of their gold document among the top 5) and MRR (of the first gold chunk,
cut at 100), with wall and CPU seconds (the machine is shared, CPU time is the steadier figure).

Rankings: bm25, tfidf, dense (MiniLM), hybrid (plain RRF k=60) and hybrid with the dense run
weighted up (the suggestion default, ``--weights`` lists the weights to try).
Usage:
    .venv/bin/python bench/suggest.py [--realq /tmp/realq] [--weights 1.5,2,3,4] [--skip dense]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from eval import Timer  # noqa: E402  bench/eval.py's wall + CPU seconds of a block

from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.retrieval import ranking  # noqa: E402
from curator.core.retrieval.retrievers import (BM25Retriever, DenseRetriever, HybridRetriever,  # noqa: E402
                                               TfidfRetriever, rrf)
from curator.core.store import open_project  # noqa: E402

DEPTH = 100


def gold_chunks(db, questions: list[dict]) -> dict[str, set[str]]:
    """question id -> the chunk ids of its gold document."""
    by_path: dict[str, set[str]] = {}
    for path, cid in db.execute("SELECT d.path, c.id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.active = 1"):
        by_path.setdefault(path, set()).add(cid)
    # ingest stores paths under the ingested folder's own name ("corpus/faq/..."); gold_path omits it
    return {q["id"]: by_path.get(q["gold_path"], set()) | by_path.get(f"corpus/{q['gold_path']}", set())
            for q in questions}


def score(runs: list[dict[str, float]], questions: list[dict], gold: dict[str, set[str]]) -> tuple[float, float]:
    hits, rr = 0, 0.0
    for q, scores in zip(questions, runs):
        order = ranking.ranked(scores)
        hits += any(c in gold[q["id"]] for c in order[:5])
        rank = next((i for i, c in enumerate(order, 1) if c in gold[q["id"]]), None)
        rr += 1.0 / rank if rank else 0.0
    return hits / len(questions), rr / len(questions)


def line(name: str, runs, questions, gold, timer) -> None:
    hit, mrr = score(runs, questions, gold)
    print(f"{name:<28} hit@5 {hit:.3f}  MRR {mrr:.3f}  {timer}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--realq", default="/tmp/realq")
    ap.add_argument("--weights", default="1.5,2,3,4")
    ap.add_argument("--skip", default="")
    args = ap.parse_args()
    root = Path(args.realq)
    questions = [json.loads(x) for x in (root / "questions.jsonl").read_text().splitlines() if x.strip()]
    skip = set(filter(None, args.skip.split(",")))
    with tempfile.TemporaryDirectory() as tmp:
        db = open_project(Path(tmp) / "realq.curator", create=True)
        with Timer() as t:
            ingest(db, [root / "corpus"])
        n_chunks = db.execute("SELECT COUNT(*) FROM chunks WHERE active = 1").fetchone()[0]
        gold = gold_chunks(db, questions)
        missing = sum(1 for g in gold.values() if not g)
        print(f"{len(questions)} questions ({missing} without a gold document in the corpus), "
              f"{n_chunks} chunks, ingest {t}")
        texts = [q["question"] for q in questions]
        runs: dict[str, list[dict[str, float]]] = {}
        makers = {"bm25": BM25Retriever, "tfidf": TfidfRetriever, "dense": lambda: DenseRetriever("minilm")}
        for name, make in makers.items():
            if name in skip:
                continue
            with Timer() as t:
                runs[name] = make().fit(db).search_texts(texts, DEPTH)
            line(name + (" (MiniLM, fit+search)" if name == "dense" else ""), runs[name], questions, gold, t)
        if "bm25" in runs and "dense" in runs:
            for weight in [1.0] + [float(w) for w in args.weights.split(",") if w]:
                with Timer() as t:
                    fused = [rrf([b, d], weights=[1.0, weight]) for b, d in zip(runs["bm25"], runs["dense"])]
                line(f"hybrid rrf dense x{weight:g}", fused, questions, gold, t)
            with Timer() as t:  # the shipped retriever end to end (embeddings now cached in the project)
                shipped = HybridRetriever("minilm", dense_weight=2.0).fit(db).search_texts(texts, DEPTH)
            line("suggest default (cached)", shipped, questions, gold, t)
        db.close()


if __name__ == "__main__":
    main()
