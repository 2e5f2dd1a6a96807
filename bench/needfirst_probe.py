"""Probe question recipes for a capable model against users' own questions (issue 39; prints, asserts nothing).

For ``--count`` FAQ answers of a real-question corpus (bench/realq), chosen by ``--seed`` among the answers
that have a real question, a capable GGUF (``--model``) writes one question per answer with each recipe of
``--recipes``; then every retriever (curator's bm25, tfidf, dense and hybrid over the project's chunks) ranks
the chunks for the generated questions and for the real questions of the same answers, and recall@5 against the
answer's chunks (the gold the real question has) is printed side by side with the ranking of the retrievers.
Also printed per recipe: the questions' mean length in words, the mean and max IDF of the words they share with
their passage (rarer shared words are easier for lexical retrievers), and seconds per question.

Recipes (what the model is shown and asked; ``RECIPES`` below):
- ``need``: the issue's need-first prompt: a user has the problem this passage resolves and has not read it;
  write what they type.
- ``style``: ``need`` with a list of the project's real queries (other answers' questions, never the ones asked
  about here) as how users of this documentation ask.
- ``rare``: ``style``, then a question carrying a word of the passage rarer than any word real questions share
  with their answers (corpus IDF above ``--rare-idf``, default: the real questions' 90th percentile of max shared
  IDF) is rewritten by the model without those words (one more short call, no passage).
- ``resample``: ``style`` sampled ``--samples`` times; the candidate whose max shared IDF is lowest is kept.
- ``section``: ``style`` shown the answer's whole section (all its chunks, up to ``--section-chars``) rather
  than its first chunk.

Usage:
    nice -n 5 .venv/bin/python bench/needfirst_probe.py --realq /tmp/realq --project /tmp/nf/py.curator \
        --model ~/.cache/curator-bench/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf --recipes need,style \
        [--count 40] [--seed 0] [--threads 2] [--out /tmp/nf/py]
Re-running reuses the project (ingest and log import are idempotent) and, with ``--out``, the questions a recipe
already wrote (``OUT-<recipe>.jsonl``), so a recipe is generated once and scored again for free.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.validity import chunks_by_path, import_real_questions  # noqa: E402
from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.generation.copybias import CorpusWords  # noqa: E402
from curator.core.generation.prompts import _UNIT_RULE, parse_query  # noqa: E402
from curator.core.queries import words as qwords  # noqa: E402
from curator.core.retrieval.retrievers import get_retriever  # noqa: E402
from curator.core.store import open_project  # noqa: E402

RETRIEVERS = ("bm25", "tfidf", "dense", "hybrid")
QUESTION_GRAMMAR = '\nroot ::= "Question: " [A-Z] unit{9,199} "?\\n"\n' + _UNIT_RULE + "\n"
REWRITE_GRAMMAR = QUESTION_GRAMMAR
STYLE_EXAMPLES = 8

NEED = ("You help build a test set for a documentation search engine. A user has the problem or question that the "
        "passage below resolves, and has NOT read it: they do not know its wording, its names for things or its "
        "details. Write what they would type to ask for help: one question, in their own words, about their need "
        "as a whole, not about one detail of the passage.")
STYLE_INTRO = "Users of this documentation ask like this (match their length and wording, not their topics):"
REWRITE = ("Rewrite the user's question without these words: {words}. Keep what they want to know. Use the plain "
           "words of someone who has never read the documentation. Reply with the question only.")


def real_targets(db, realq: Path, count: int, seed: int) -> tuple[list[dict], list[dict]]:
    """(targets, others): ``count`` real questions with gold, each with its answer's chunks; the rest."""
    by_path = chunks_by_path(db)
    found = []
    for line in (realq / "questions.jsonl").read_text().splitlines():
        q = json.loads(line)
        ids = by_path.get(q["gold_path"]) or by_path.get(f"corpus/{q['gold_path']}")
        if ids:
            found.append({"question": q["question"], "gold": ids, "path": q["gold_path"]})
    rng = random.Random(seed)
    rng.shuffle(found)
    for target in found[:count]:
        chunks = [dict(r) for r in db.query(f"SELECT id, title, text, ord FROM chunks WHERE id IN "
                                            f"({','.join('?' * len(target['gold']))}) ORDER BY ord", target["gold"])]
        target["chunks"] = chunks
    return found[:count], found[count:]


def style_examples(others: list[dict], seed: int) -> list[str]:
    """Real questions of other answers, shown as how users ask (a fixed list: the prompt prefix is cached)."""
    pool = [o["question"] for o in others]
    random.Random(seed + 1).shuffle(pool)
    return pool[:STYLE_EXAMPLES]


def passage_of(target: dict, whole: bool, chars: int) -> str:
    """The first chunk of the answer, or its whole section up to ``chars``."""
    text = "\n\n".join(c["text"] for c in target["chunks"]) if whole else target["chunks"][0]["text"]
    return text if len(text) <= chars else text[:chars].rsplit(" ", 1)[0] + " ..."


def need_messages(passage: str, style: list[str]) -> list[dict]:
    system = NEED
    if style:
        system += "\n" + STYLE_INTRO + "\n" + "\n".join(f"- {q}" for q in style)
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"Passage:\n{passage}\n\nReply as: Question: ..."}]


class Shared:
    """Which of a question's words its passage also holds, and how rare they are in the corpus."""

    def __init__(self, corpus: CorpusWords):
        self.corpus = corpus

    def idfs(self, question: str, passage: str) -> dict[str, float]:
        shared = qwords.stems(question) & qwords.stems(passage)
        return {s: self.corpus.stem_idf(s) for s in shared}

    def top(self, question: str, passage: str) -> float:
        return max(self.idfs(question, passage).values(), default=0.0)

    def rare_words(self, question: str, passage: str, cut: float) -> list[str]:
        rare = {s for s, v in self.idfs(question, passage).items() if v > cut}
        return [w for w in qwords.content_words(question) if qwords.stem(w) in rare]


def ask(backend, messages, seed: int, grammar=QUESTION_GRAMMAR) -> str:
    """One reply through the backend's batch decoder (as generation runs it: only the sampled token is checked
    against the grammar; llama-cpp-python's own API filters Qwen's 151k-token vocabulary by it at every step)."""
    from curator.core.generation.backends import Request

    request = Request(messages, max_tokens=120, temperature=0.7, seed=seed, grammar=grammar)
    raw = next(iter(backend.iter_complete([request])))[1]
    return parse_query(raw) or ""


def write(recipe: str, target: dict, i: int, backend, style: list[str], shared: Shared, args) -> dict:
    whole = recipe == "section"
    passage = passage_of(target, whole, args.section_chars if whole else args.passage_chars)
    shown_style = style if recipe != "need" else []
    seed = args.seed * 1000 + i
    note = {}
    if recipe == "resample":
        candidates = [ask(backend, need_messages(passage, shown_style), seed + 7919 * k) for k in range(args.samples)]
        candidates = [c for c in candidates if c] or [""]
        question = min(candidates, key=lambda c: shared.top(c, passage))
        note["candidates"] = candidates
    else:
        question = ask(backend, need_messages(passage, shown_style), seed)
    if recipe == "rare" and question:
        rare = shared.rare_words(question, passage, args.rare_idf)
        if rare:
            note["before"], note["rare"] = question, rare
            rewritten = ask(backend, [{"role": "system", "content": REWRITE.format(words=", ".join(rare))},
                                      {"role": "user", "content": f"Question: {question}"}], seed)
            question = rewritten or question
    return {"question": question, "gold": target["gold"], "path": target["path"], "real": target["question"],
            "passage": passage, **note}


def recall_at_5(retrievers: dict, rows: list[dict], key: str) -> dict[str, float]:
    means = {}
    for name, retriever in retrievers.items():
        found = retriever.search_texts([r[key] or "?" for r in rows], 5)
        means[name] = statistics.mean(len(set(r["gold"]) & set(hits)) / len(r["gold"]) for r, hits in zip(rows, found))
    return means


def line(label: str, means: dict[str, float], extra: str = "") -> str:
    ranking = " > ".join(sorted(means, key=lambda n: -means[n]))
    return f"  {label:26s} " + " ".join(f"{n} {m:.3f}" for n, m in means.items()) + f"  [{ranking}] {extra}"


def describe(rows: list[dict], key: str, shared: Shared) -> str:
    texts = [(r[key], r["passage"]) for r in rows if r[key]]
    words = statistics.mean(len(q.split()) for q, _ in texts)
    mean_idf = statistics.mean(statistics.mean(shared.idfs(q, p).values() or [0.0]) for q, p in texts)
    top_idf = statistics.mean(shared.top(q, p) for q, p in texts)
    return f"words {words:.1f}, shared IDF mean {mean_idf:.2f} max {top_idf:.2f}"


_BACKEND: list = []


def generated(recipe: str, targets: list[dict], style: list[str], shared: Shared, args) -> tuple[list[dict], Optional[float]]:
    """The recipe's questions for the targets, and seconds per question (None: read back from --out)."""
    out = Path(f"{args.out}-{recipe}.jsonl") if args.out else None
    rows = [json.loads(x) for x in out.read_text().splitlines() if x.strip()] if out and out.is_file() else []
    if len(rows) >= len(targets):
        return rows[:len(targets)], None
    if not _BACKEND:
        from curator.core.generation.backends import LlamaCppBackend

        backend = LlamaCppBackend(args.model, n_ctx=4096, n_threads=args.threads, seed=args.seed)
        backend.decoder_for_one = True
        _BACKEND.append(backend)
    started, done_before = time.perf_counter(), len(rows)
    for i, target in enumerate(targets[done_before:], done_before):  # each row kept as written: a killed run resumes
        rows.append(write(recipe, target, i, _BACKEND[0], style, shared, args))
        print(f"  {recipe} {i + 1}/{len(targets)}: {rows[-1]['question']}", flush=True)
        if out:
            with out.open("a") as f:
                f.write(json.dumps(rows[-1]) + "\n")
    return rows, (time.perf_counter() - started) / max(1, len(rows) - done_before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--realq", default="/tmp/realq")
    parser.add_argument("--project", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--recipes", default="need,style")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--rare-idf", type=float, help="default: the real questions' 90th percentile of max shared IDF")
    parser.add_argument("--passage-chars", type=int, default=1500, help="a passage is cut to this many characters")
    parser.add_argument("--section-chars", type=int, default=3000)
    parser.add_argument("--out", help="OUT-<recipe>.jsonl keeps each recipe's questions (reused when present)")
    args = parser.parse_args()
    realq, project = Path(args.realq), Path(args.project)
    project.parent.mkdir(parents=True, exist_ok=True)
    db = open_project(project, create=True)
    ingest(db, [realq / "corpus"])
    import_real_questions(db, realq, project.parent)
    targets, others = real_targets(db, realq, args.count, args.seed)
    style = style_examples(others, args.seed)
    shared = Shared(CorpusWords.of_project(db))
    for t in targets:
        t["passage"] = passage_of(t, False, args.passage_chars)
    real_rows = [{"question": t["question"], "gold": t["gold"], "passage": t["passage"]} for t in targets]
    real_top = sorted(shared.top(t["question"], t["passage"]) for t in targets)
    if args.rare_idf is None:
        args.rare_idf = real_top[int(0.9 * (len(real_top) - 1))]
    written = {recipe: generated(recipe, targets, style, shared, args) for recipe in args.recipes.split(",") if recipe}
    retrievers = {name: get_retriever(name, db) for name in RETRIEVERS}  # after the model: dense embeds the corpus
    print(f"{realq}: {len(targets)} answers (seed {args.seed}); rare-word cut IDF {args.rare_idf:.2f}")
    print(line("real questions", recall_at_5(retrievers, real_rows, "question"), describe(real_rows, "question", shared)))
    for recipe, (rows, seconds) in written.items():
        extra = describe(rows, "question", shared) + (f", {seconds:.1f} s/question" if seconds else "")
        print(line(recipe, recall_at_5(retrievers, rows, "question"), extra), flush=True)
        if recipe == "rare":
            print(f"    rewritten: {sum('before' in r for r in rows)} of {len(rows)}")
    if args.out:
        print(f"questions in {args.out}-<recipe>.jsonl")


if __name__ == "__main__":
    main()
