"""Benchmark the embedders side by side on the same texts: speed, and quality on real questions.

Engines: ``static`` (the Tokenlearn table, format 2, curator/core/embedding/static.py), ``static-v1``
(the plain distilled table it was fitted from, quality only), ``minilm``
(MiniLM through llama.cpp on the cached GGUF), ``tfidf``, optionally ``numpy`` (the MiniLM reference
forward pass, on a subset: it is ~100x slower) and ``endpoint`` (``--serve`` starts
``python -m llama_cpp.server`` on the MiniLM GGUF, or ``--endpoint URL`` names a running server).

Speed: 10,000 short queries (the FAQ questions, then pydoc sentences) and 1,300 chunks of the Python
FAQ corpus, ingested with the default chunker. MiniLM can be timed on a subset (``--minilm-subset``)
on a loaded machine; its rate is the reference of the ratios.

Quality, per realq set (``--realq``, repeatable: bench/realq/build.py, bench/realq/build_debian.py):
- clustering: KMeans (k = number of FAQ pages) on the questions, ARI / NMI against the page labels,
  mean of five seeds;
- dense retrieval: exact cosine over the corpus chunks, hit@5 (a chunk of the gold document in the
  top 5) and MRR (cut at 100);
- suggestions: hybrid BM25 + dense with the dense run weighted x4 (the suggestion default), hit@5.
Prints wall and CPU seconds; the machine is shared, so the load average is printed too. Usage:
    .venv/bin/python bench/embed.py [--realq /tmp/realq --realq /tmp/realq-debian] [--queries 10000]
        [--chunks 1300] [--minilm-subset 1000] [--numpy-subset 0] [--serve | --endpoint URL]
        [--skip-speed] [--retrieval static,static-v1,minilm,tfidf] [--minilm-threads 1]
``--minilm-threads 1`` runs MiniLM on one llama.cpp thread: on a busy machine its two threads wait
for each other (one thread was ~15x faster at load 12 while distilling, docs/clustering.md).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this tree's curator, not the installed one
from cluster import sentences  # noqa: E402  (bench/cluster.py: the pydoc sentence pool)
from suggest import gold_chunks, score  # noqa: E402  (hit@5 and MRR of ranked runs)

from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.embedding.embed import MiniLMEmbedder, TfidfEmbedder  # noqa: E402
from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder, minilm_gguf_path  # noqa: E402
from curator.core.embedding.static import StaticEmbedder, static_model_path  # noqa: E402
from curator.core.retrieval.retrievers import DenseRetriever, HybridRetriever  # noqa: E402
from curator.core.retrieval.suggest import DENSE_WEIGHT  # noqa: E402
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
    from curator.core.embedding.static import load_tokenizer

    lengths = np.array([len(e.ids) for e in load_tokenizer().encode_batch(texts)])
    return f"tokens median={int(np.median(lengths))} mean={lengths.mean():.0f} max={lengths.max()}"


def rate_line(name: str, n: int, wall: float, cpu: float, ref_rate: float | None) -> float:
    rate = n / wall
    ratio = f" = {rate / ref_rate:.1f}x minilm" if ref_rate else ""
    print(f"  {name:<9} n={n:<6} wall={wall:7.2f}s cpu={cpu:7.2f}s  {rate:9.0f} texts/s{ratio}", flush=True)
    return rate


def compare(label: str, texts: list[str], engines: dict, minilm_subset: int, numpy_subset: int) -> None:
    """Embed ``texts`` with each engine (MiniLM and numpy on subsets); rates and ratios to MiniLM."""
    print(f"{label}: {len(texts)} texts, {token_stats(texts)}", flush=True)
    sub = texts[:minilm_subset or len(texts)]
    ref, wall, cpu = timed(engines["minilm"].embed_batch, sub)
    ref_rate = rate_line("minilm", len(sub), wall, cpu, None)
    if numpy_subset:
        numpy_ref, wall, cpu = timed(MiniLMEmbedder().embed_batch, texts[:numpy_subset])
        rate_line("numpy", numpy_subset, wall, cpu, ref_rate)
    fast, wall, cpu = timed(engines["static"].embed_batch, texts)
    rate_line("static", len(texts), wall, cpu, ref_rate)
    _, wall, cpu = timed(lambda: TfidfEmbedder().fit(texts).embed_batch(texts))
    rate_line("tfidf", len(texts), wall, cpu, ref_rate)
    if "endpoint" in engines:
        remote, wall, cpu = timed(engines["endpoint"].embed_batch, sub)
        rate_line("endpoint", len(sub), wall, cpu, ref_rate)
        cos = (remote * ref).sum(axis=1)
        print(f"  endpoint vs minilm cosine on {len(sub)}: min={cos.min():.6f} mean={cos.mean():.6f}")


def clustering(texts: list[str], pages: list[str], vectors: np.ndarray) -> tuple[float, float]:
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    k, scores = len(set(pages)), []
    for seed in range(5):  # KMeans varies with its seed on ~150 points: report the mean of five
        labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(vectors)
        scores.append((adjusted_rand_score(pages, labels), normalized_mutual_info_score(pages, labels)))
    return tuple(np.mean(scores, axis=0))


def quality(realq: Path, engines: dict, retrieval: set[str]) -> None:
    """Per embedder on one realq set: clustering ARI/NMI, dense hit@5/MRR, suggestion hit@5/MRR."""
    qs = faq_questions(realq)
    texts, pages = [q["question"] for q in qs], [q["page"] for q in qs]
    with tempfile.TemporaryDirectory() as tmp:
        db = open_project(Path(tmp) / "q.curator", create=True)
        ingest(db, [realq / "corpus"])
        gold = gold_chunks(db, qs)
        n_chunks = db.execute("SELECT COUNT(*) FROM chunks WHERE active = 1").fetchone()[0]
        print(f"quality on {realq}: {len(qs)} questions, {len(set(pages))} pages, {n_chunks} chunks", flush=True)
        spaces = {"static": engines["static"], "static-v1": engines["static-v1"], "minilm": engines["minilm"],
                  "tfidf": "tfidf"}
        for name, emb in spaces.items():
            vectors = (TfidfEmbedder().fit(texts) if emb == "tfidf" else emb).embed_batch(texts)
            ari, nmi = clustering(texts, pages, vectors)
            if name not in retrieval:
                print(f"  {name:<9} cluster ARI={ari:.3f} NMI={nmi:.3f} | retrieval not run", flush=True)
                continue
            dense, wall_d, _ = timed(lambda: DenseRetriever(emb).fit(db).search_texts(texts, 100))
            hybrid, wall_h, _ = timed(lambda: HybridRetriever(emb, dense_weight=DENSE_WEIGHT).fit(db).search_texts(texts, 100))
            (dh, dm), (sh, sm) = score(dense, qs, gold), score(hybrid, qs, gold)
            print(f"  {name:<9} cluster ARI={ari:.3f} NMI={nmi:.3f} | dense hit@5={dh:.3f} MRR={dm:.3f} "
                  f"({wall_d:.1f}s) | suggest hit@5={sh:.3f} MRR={sm:.3f} ({wall_h:.1f}s)", flush=True)
        db.close()


def serve_minilm() -> tuple[str, subprocess.Popen]:
    """``python -m llama_cpp.server`` on 127.0.0.1 (a free port) with the MiniLM GGUF, embeddings on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(minilm_gguf_path()),
                             "--model_alias", "minilm", "--embedding", "true", "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "512", "--n_threads", str(os.cpu_count() or 2)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(240):
        try:
            urllib.request.urlopen(url + "/models", timeout=2).read()
            return url, proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("llama_cpp.server did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--realq", action="append", help="a realq folder (repeatable) [default: /tmp/realq]")
    parser.add_argument("--queries", type=int, default=10000)
    parser.add_argument("--chunks", type=int, default=1300)
    parser.add_argument("--minilm-subset", type=int, default=0, help="time MiniLM on this many texts (0: all)")
    parser.add_argument("--numpy-subset", type=int, default=0)
    parser.add_argument("--serve", action="store_true", help="start llama_cpp.server for the endpoint engine")
    parser.add_argument("--endpoint", help="URL of a running OpenAI-compatible /v1/embeddings server")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--minilm-threads", type=int, default=None, help="llama.cpp threads for MiniLM")
    parser.add_argument("--retrieval", default="static,static-v1,minilm,tfidf",
                        help="embedders whose dense and suggestion figures are measured (MiniLM embeds the "
                             "whole corpus: minutes on a loaded machine)")
    args = parser.parse_args()
    realqs = [Path(p) for p in (args.realq or ["/tmp/realq"])]
    print(f"load average at start: {os.getloadavg()}; cores: {os.cpu_count()}", flush=True)
    _, wall, cpu = timed(minilm_gguf_path)
    print(f"GGUF conversion (cached after the first run): wall={wall:.2f}s cpu={cpu:.2f}s")
    path, wall, cpu = timed(static_model_path)
    print(f"static distillation (cached after the first run): wall={wall:.2f}s cpu={cpu:.2f}s {path.name}")
    engines = {"minilm": MiniLMLlamaEmbedder(n_threads=args.minilm_threads), "static": StaticEmbedder(),
               "static-v1": StaticEmbedder(model_path=static_model_path(fmt=1))}
    for name, emb in engines.items():
        _, wall, cpu = timed(emb.embed_batch, ["warm up"])
        print(f"{name} load: wall={wall:.2f}s cpu={cpu:.2f}s")
    server = None
    if args.serve or args.endpoint:
        from curator.core.embedding.endpoint import EndpointEmbedder

        url = args.endpoint
        if args.serve:
            url, server = serve_minilm()
        engines["endpoint"] = EndpointEmbedder(url)
        print(f"endpoint: {engines['endpoint'].id}")
    try:
        if not args.skip_speed:
            compare("short queries", query_texts(realqs[0], args.queries), engines, args.minilm_subset,
                    args.numpy_subset)
            compare("FAQ chunks", chunk_texts(realqs[0], args.chunks), engines, args.minilm_subset // 3,
                    args.numpy_subset // 6)
        for realq in realqs:
            quality(realq, engines, set(args.retrieval.split(",")))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
