"""How often a project's rows reach real questions' median, upper quartile and 100% chunk overlap, real (log) rows
against synthetic ones (issue 39's overlap quota), and how often a row shares a rare word (one that at most RARE_DF
active chunks hold) with its gold: what lexical retrievers find it by. Prints, asserts nothing.

    .venv/bin/python bench/overlap_tails.py P [P ...]     # projects built by bench/validity.py
    .venv/bin/python bench/overlap_tails.py --recall P ...  # also recall@5 of each retriever on the rows that share a
                                                            # rare word and on the rest (runs the retrievers on a copy)
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.core.queries import realism  # noqa: E402
from curator.core.queries.words import content_words  # noqa: E402


def gold_rows(db, source: str) -> list[tuple[str, list[str]]]:
    """(question, gold chunk texts) of every approved answerable row of ``source`` (multi-hop rows: made by rule)."""
    texts = dict(db.execute("SELECT id, text FROM chunks"))
    found = []
    for text, gold, kind in db.execute("""SELECT text, gold_chunk_ids, query_type FROM queries WHERE source = ?
                                          AND status = 'approved' AND answerable = 1""", [source]):
        gold_texts = [texts[c] for c in json.loads(gold) if c in texts]
        if gold_texts and kind != "multi_hop":
            found.append((text, gold_texts))
    return found


def overlaps(db: sqlite3.Connection, source: str) -> np.ndarray:
    return np.asarray([realism.chunk_overlap(text, gold) for text, gold in gold_rows(db, source)], dtype=float)


RARE_DF = 3


def word_frequency(db) -> dict[str, int]:
    """How many active chunks hold each content word."""
    frequency: dict[str, int] = {}
    for (text,) in db.execute("SELECT text FROM chunks WHERE active = 1"):
        for word in _content(text):
            frequency[word] = frequency.get(word, 0) + 1
    return frequency


def rare_share(db, source: str, frequency: dict[str, int]) -> float:
    """Share of the rows whose question shares with its gold a content word that at most RARE_DF active chunks hold."""
    shares = [_shares_rare(q, gold, frequency) for q, gold in gold_rows(db, source)]
    return float(np.mean(shares)) if shares else float("nan")


def _content(text: str) -> set[str]:
    return {w for w in content_words(text) if len(w) > 2}


def _shares_rare(question: str, gold: list[str], frequency: dict[str, int]) -> bool:
    return any(frequency.get(w, 0) <= RARE_DF for w in _content(question) & set().union(*map(_content, gold)))


def recall_by_rare_word(path: str, frequency: dict[str, int]) -> None:
    """Recall@5 of each retriever on the rows (real and synthetic, not multi-hop) that share a rare word with their
    gold, and on the rest: which retrievers such a question favours, for users' questions and for generated ones."""
    import shutil
    import tempfile

    from curator.core.evaluation.validity import score_matrix
    from curator.core.store import open_project

    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "copy.curator"
        shutil.copy(path, copy)  # the dense retriever caches vectors in the project: never in the bench's own file
        db = open_project(copy)
        texts = dict(db.execute("SELECT id, text FROM chunks"))
        rows, names, values, _ = score_matrix(db, ["bm25", "tfidf", "dense", "hybrid"], {}, "recall@5")
        for source in ("log", "synthetic"):
            for shares in (True, False):
                members = [i for i, q in enumerate(rows) if q["source"] == source and q["query_type"] != "multi_hop"
                           and _shares_rare(q["text"], [texts[c] for c in q["gold_chunk_ids"]], frequency) == shares]
                figures = " ".join(f"{n} {values[members, j].mean():.2f}" for j, n in enumerate(names)) if members else ""
                print(f"  {source:<9} {'shares a rare word' if shares else 'shares none':<18} {len(members):>3} rows  "
                      f"{figures}")
        print_gold_cosines(db)
        db.close()


def print_gold_cosines(db) -> None:
    """Quartiles of each row's MiniLM cosine to its nearest gold chunk, real against synthetic (not multi-hop)."""
    from curator.core.embedding.embed import embed_texts, get_embedder

    embedder = get_embedder(None, db)
    for source in ("log", "synthetic"):
        rows = gold_rows(db, source)
        vectors = embed_texts(db, embedder, [q for q, _ in rows])
        cosines = [float(np.max(embed_texts(db, embedder, gold) @ v)) for (_, gold), v in zip(rows, vectors)]
        quartiles = np.percentile(cosines, [25, 50, 75]) if cosines else []
        print(f"  {source:<9} cosine to nearest gold chunk, quartiles " + " / ".join(f"{x:.2f}" for x in quartiles))


def main() -> None:
    paths = [a for a in sys.argv[1:] if a != "--recall"]
    for path in paths:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        real, synthetic = overlaps(db, "log"), overlaps(db, "synthetic")
        shares = " | ".join(f">= {point:.2f}: real {share:.0%}, synthetic "
                            f"{realism.share_at_least(synthetic, point):.0%}" for point, share in realism.tails_of(real))
        frequency = word_frequency(db)
        print(f"{Path(path).name} ({len(real)} real, {len(synthetic)} synthetic): {shares} | shares a rare word: "
              f"real {rare_share(db, 'log', frequency):.0%}, synthetic {rare_share(db, 'synthetic', frequency):.0%}")
        if "--recall" in sys.argv:
            recall_by_rare_word(path, frequency)


if __name__ == "__main__":
    main()
