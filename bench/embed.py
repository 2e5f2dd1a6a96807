"""Benchmark the embedders side by side on the same texts, and their clustering quality.

Engines: ``numpy`` (MiniLM reference forward pass), ``llama`` (MiniLM through llama.cpp on the cached
GGUF conversion), ``tfidf``. Texts: 10,000 short queries (pydoc sentences and the Python FAQ
questions) and 1,300 chunks of the Python FAQ corpus (/tmp/realq, built by bench/realq/build.py),
ingested with the default chunker. The numpy path is timed on a subset (it is ~100x slower) and
its rate is the reference of the ratios. Quality: KMeans on the FAQ questions labelled by their
FAQ page (ARI / NMI), per embedder. Prints wall and CPU seconds; the machine is shared, so the
load average is printed too. Usage:
    .venv/bin/python bench/embed.py [--realq /tmp/realq] [--queries 10000] [--chunks 1300] [--numpy-subset 300]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster import sentences  # noqa: E402  (bench/cluster.py: the pydoc sentence pool)

from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.embedding.embed import MiniLMEmbedder, TfidfEmbedder  # noqa: E402
from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder, minilm_gguf_path  # noqa: E402
from curator.core.store import open_project, rows  # noqa: E402


def timed(fn, *args):
    """(result, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - wall, time.process_time() - cpu


def faq_questions(realq: Path) -> list[dict]:
    return [json.loads(line) for line in (realq / "questions.jsonl").read_text().splitlines() if line.strip()]


def query_texts(realq: Path, n: int) -> list[str]:
    """``n`` distinct short queries: the FAQ questions, then pydoc sentences made unique."""
    base = [q["question"] for q in faq_questions(realq)]
    return (base + [t for t, _ in sentences(n)])[:n]


def chunk_texts(realq: Path, n: int) -> list[str]:
    """``n`` chunk texts of the FAQ corpus (cycled with a counter if the corpus has fewer)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = open_project(Path(tmp) / "c.curator", create=True)
        ingest(db, [realq / "corpus"])
        texts = [r["text"] for r in rows(db, "SELECT text FROM chunks WHERE active = 1 ORDER BY id")]
        db.close()
    return [texts[i] if i < len(texts) else f"{texts[i % len(texts)]} {i}" for i in range(n)]


def token_stats(texts: list[str]) -> str:
    from tokenizers import Tokenizer
    import zipfile

    from curator.core.embedding.embed import minilm_zip

    with zipfile.ZipFile(minilm_zip()) as zf:
        tok = Tokenizer.from_str(zf.read("tokenizer.json").decode("utf-8"))
    tok.no_padding()  # the packaged tokenizer pads to 128; the embedders switch that off too
    lengths = np.array([len(e.ids) for e in tok.encode_batch(texts)])
    return f"tokens median={int(np.median(lengths))} mean={lengths.mean():.0f} max={lengths.max()} (truncated at 256)"


def rate_line(name: str, n: int, wall: float, cpu: float, ref_rate: float | None) -> float:
    rate = n / wall
    ratio = f" = {rate / ref_rate:.1f}x numpy" if ref_rate else ""
    print(f"  {name:<7} n={n:<6} wall={wall:7.2f}s cpu={cpu:7.2f}s  {rate:8.0f} texts/s{ratio}")
    return rate


def compare(label: str, texts: list[str], subset: int, llama: MiniLMLlamaEmbedder) -> None:
    """Embed ``texts`` with llama.cpp and tfidf, a subset with numpy; rates, ratios and agreement."""
    print(f"{label}: {len(texts)} texts, {token_stats(texts)}")
    ref, wall, cpu = timed(MiniLMEmbedder().embed_batch, texts[:subset])
    ref_rate = rate_line("numpy", subset, wall, cpu, None)
    fast, wall, cpu = timed(llama.embed_batch, texts)
    rate_line("llama", len(texts), wall, cpu, ref_rate)
    cos = (fast[:subset] * ref).sum(axis=1)
    print(f"  llama vs numpy cosine on {subset}: min={cos.min():.6f} mean={cos.mean():.6f}")
    tfidf, wall, cpu = timed(lambda: TfidfEmbedder().fit(texts).embed_batch(texts))
    rate_line("tfidf", len(texts), wall, cpu, ref_rate)


def quality(realq: Path, llama: MiniLMLlamaEmbedder) -> None:
    """ARI/NMI of KMeans (k = number of FAQ pages) on the FAQ questions, MiniLM vs TF-IDF."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    qs = faq_questions(realq)
    texts, pages = [q["question"] for q in qs], [q["page"] for q in qs]
    k = len(set(pages))
    spaces = {"minilm": llama.embed_batch(texts), "tfidf": TfidfEmbedder().fit(texts).embed_batch(texts)}
    for name, vectors in spaces.items():
        scores = []
        for seed in range(5):  # KMeans varies with its seed on 169 points: report the mean of five
            labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(vectors)
            scores.append((adjusted_rand_score(pages, labels), normalized_mutual_info_score(pages, labels)))
        ari, nmi = np.mean(scores, axis=0)
        print(f"  quality {name:<6} FAQ questions n={len(texts)} pages k={k}: ARI={ari:.3f} NMI={nmi:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--realq", default="/tmp/realq")
    parser.add_argument("--queries", type=int, default=10000)
    parser.add_argument("--chunks", type=int, default=1300)
    parser.add_argument("--numpy-subset", type=int, default=300)
    args = parser.parse_args()
    realq = Path(args.realq)
    print(f"load average at start: {os.getloadavg()}; cores: {os.cpu_count()}")
    _, wall, cpu = timed(minilm_gguf_path)
    print(f"GGUF conversion (cached after the first run): wall={wall:.2f}s cpu={cpu:.2f}s")
    llama = MiniLMLlamaEmbedder()
    _, wall, cpu = timed(llama.embed_batch, ["warm up"])
    print(f"llama.cpp model load: wall={wall:.2f}s cpu={cpu:.2f}s threads={llama.n_threads}")
    compare("short queries", query_texts(realq, args.queries), args.numpy_subset, llama)
    compare("FAQ chunks", chunk_texts(realq, args.chunks), max(20, args.numpy_subset // 6), llama)
    quality(realq, llama)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
