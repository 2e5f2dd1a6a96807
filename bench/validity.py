"""Benchmark the validity report on a corpus with real questions (the Python FAQ set; prints, asserts nothing).

Real slice: the FAQ questions (``/tmp/realq/questions.jsonl``) imported through curator's log import,
each approved through a core review decision with the chunks of its gold document as gold. Synthetic
slice: ``--count`` rows generated with the bundled model from the same corpus and approved as they
are. Then ``validate`` ranks ``--retrievers`` on both and the report is printed, with wall and CPU
seconds of every stage (the machine is shared, so CPU seconds are the steadier figure).

With ``--labels bench/quality_labels.jsonl`` the synthetic slice is instead the rows that
bench/quality.py generated and a person labelled against bench/quality_rubric.md (``--code``
picks which), in two projects side by side: "as generated" approves every answerable row as it
came, "reviewed" approves only the rows labelled usable, with the reviewer's small edits, and
rejects the rest. So the same generated rows are validated before and after a rubric review.

Usage:
    python3 bench/realq/build.py --out /tmp/realq      # once, builds the FAQ set
    .venv/bin/python bench/validity.py [--realq /tmp/realq] [--project /tmp/validity.curator] [--count 50]
        [--retrievers bm25,tfidf,dense,hybrid] [--embedder minilm] [--metric recall@5]
    .venv/bin/python bench/validity.py --labels bench/quality_labels.jsonl [--code answer_first]
Re-running reuses the project: ingest and log import are idempotent, generation tops up to --count.

``--min-gain X`` also validates a copy in which the approved answer-first rows whose question raises
the bundled model's likelihood of its answer sentence by less than X (answers.AnswerLikelihood) are
rejected: what the answer check would have kept, for rows generated without it.

``--diagnose`` also prints why dense retrieval misses generated rows' gold (issue 27): per approved
row, the dense (MiniLM) and BM25 rank of its gold, and for the answer sentence its place in the
chunk, its wordpiece offset against MiniLM's 256-token truncation, and its centrality (cosine of its
vector to the chunk's); for a real question, the same for the gold-chunk sentence nearest it. Split
by centrality and by chunk overlap, with the hit rates of dense and BM25 on each side.

``--mode need-first|extractive`` (default auto: by the model's size) chooses the generation mode (issue 39).
``--section-gold`` also validates a copy whose synthetic rows hold their source chunk's whole section as gold.
``--section``: need-first rows ask about their chunk's whole section, gold all its chunks (needfirst.WHOLE_SECTION).

``--model FILE [--chat-format NAME]`` generates with a user's own GGUF instead of the bundled model (issue 27:
is the 135M model the reason?).

``--copy-bias B [--rare-share S] [--bias-names]`` generates with answer-first questions steered away from
their answer sentence's rare words by a logit bias of B (generation.copybias).

``--usable-labels FILE --code C`` (with a project already generated) prints recall@5 of every retriever
on the real questions, on the synthetic rows labelled under code C, on those labelled usable, and on
those with the reviewer's small edits: whether the rows a reviewer keeps rank the retrievers like the
real questions, without building the two projects ``--labels`` builds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curator.cli.validate_cmds import _render_validate  # noqa: E402
from curator.core.corpus.ingest import ingest  # noqa: E402
from curator.core.generation import needfirst  # noqa: E402
from curator.core.generation.generate import GenerationConfig, generate  # noqa: E402
from curator.core.queries.logs import import_log  # noqa: E402
from curator.core.queries.rows import add_query, make_query_id  # noqa: E402
from curator.core.review.decisions import decide  # noqa: E402
from curator.core.store import open_project  # noqa: E402
from curator.core.evaluation.validity import score_matrix, validate  # noqa: E402


class Timer:
    def __init__(self, label: str) -> None:
        self.label = label

    def __enter__(self) -> "Timer":
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        print(f"{self.label}: {time.perf_counter() - self.wall:.1f} s wall, CPU {time.process_time() - self.cpu:.1f} s",
              flush=True)


def chunks_by_path(db) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path, chunk in db.execute("SELECT d.path, c.id FROM chunks c JOIN documents d ON d.id = c.doc_id "
                                  "WHERE c.active = 1"):
        found.setdefault(path, []).append(chunk)
    return found


def import_real_questions(db, realq: Path, work: Path) -> int:
    """The FAQ questions as a production log, each approved with its gold document's chunks."""
    questions = [json.loads(line) for line in (realq / "questions.jsonl").read_text().splitlines() if line.strip()]
    log = work / "faq_log.jsonl"
    log.write_text("".join(json.dumps({"query": q["question"]}) + "\n" for q in questions))
    import_log(db, log)
    by_path = chunks_by_path(db)
    approved = 0
    for q in questions:
        qid = make_query_id("log", q["question"])
        status = db.execute("SELECT status FROM queries WHERE id = ?", [qid]).fetchone()
        # ingest keeps the folder's own name in the path ("corpus/faq/..."), gold_path starts below it
        gold = by_path.get(q["gold_path"]) or by_path.get(f"corpus/{q['gold_path']}")
        if status and status[0] == "pending" and gold:
            decide(db, qid, "approve", "bench", gold=gold)
            approved += 1
    return approved


# Usable = as_is or small_edit (bench/quality_rubric.md); every figure here counts it the same way.
USABLE_LABELS = ("as_is", "small_edit")


def is_usable(label_row: dict) -> bool:
    return label_row["label"] in USABLE_LABELS


def load_labels(path, code: str | None) -> list[dict]:
    """The labelled rows of ``code`` (None: of every code) in a labels file (bench/quality_labels*.jsonl);
    a bad line is named."""
    rows = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise SystemExit(f"{path}:{number}: not a JSON object ({error})") from None
        if code is None or row.get("code") == code:
            rows.append(row)
    return rows


def approve_synthetic(db) -> int:
    pending = [r[0] for r in db.execute("SELECT id FROM queries WHERE source = 'synthetic' AND status = 'pending' "
                                        "AND answerable = 1 AND gold_chunk_ids != '[]'")]
    for qid in pending:
        decide(db, qid, "approve", "bench")
    return len(pending)


def import_labelled(db, labels: list[dict], reviewed: bool) -> dict:
    """Labelled generated rows as synthetic queries; approved as generated, or as the rubric review
    decided (usable rows approved with their edits, the rest rejected). Counts by decision."""
    counts: dict = {}
    for row in labels:
        answerable = row["query_type"] != "unanswerable"
        qid = add_query(db, row["text"], "synthetic", query_type=row["query_type"], answerable=answerable,
                        reference=row["reference"], source_chunk_ids=row["source_chunk_ids"],
                        gold_chunk_ids=row["gold_chunk_ids"])
        if db.execute("SELECT status FROM queries WHERE id = ?", [qid]).fetchone()[0] != "pending":
            continue  # decided on an earlier run of this bench
        usable = is_usable(row)
        if not reviewed:
            action = "approve" if answerable else "unanswerable"
        else:
            action = ("approve" if answerable else "unanswerable") if usable else "reject"
        edit = row.get("edit", {}) if reviewed else {}
        decide(db, qid, action, "bench", text=edit.get("text"), reference=edit.get("reference"))
        counts[action] = counts.get(action, 0) + 1
    return counts


def quality_halves(db, labels: list[dict], args) -> None:
    """Does a quality score bias the ranking? Retriever means on the synthetic rows scored above the
    median, against those below it, for the score the rows were stored with ("quality", version 2:
    half a BM25 round trip) and for today's score (version 3: the mean of the stored margins)."""
    rows, names, values, _ = score_matrix(db, [r for r in args.retrievers.split(",") if r], {}, args.metric,
                                          embedder=args.embedder)
    by_id = {make_query_id("synthetic", row["text"]): row for row in labels}
    scores = {"stored score (v2, half BM25 round trip)": lambda row: row.get("quality"),
              "mean of the margins (v3)": lambda row: (sum(row["margins"].values()) / len(row["margins"])
                                                       if row.get("margins") else None)}
    for name, score_of in scores.items():
        scored = [(score_of(by_id[q["id"]]), i) for i, q in enumerate(rows) if q["id"] in by_id]
        scored = [(score, i) for score, i in scored if score is not None]
        if not scored:
            continue
        median = sorted(score for score, _ in scored)[len(scored) // 2]
        print(f"  {name}, split at its median {median:.3f}:")
        for half, keep in (("above", lambda v: v >= median), ("below", lambda v: v < median)):
            members = [i for score, i in scored if keep(score)]
            means = values[members].mean(axis=0)
            usable = sum(is_usable(by_id[rows[i]["id"]]) for i in members) / len(members)
            print(f"    {half} ({len(members)} rows, {usable:.0%} labelled usable): "
                  + ", ".join(f"{n} {m:.3f}" for n, m in zip(names, means))
                  + "; " + " > ".join(names[j] for j in means.argsort()[::-1]))


def validate_labelled(args, realq: Path) -> None:
    labels = [row for row in load_labels(args.labels, args.code) if row.get("gold_chunk_ids") is not None]
    print(f"{len(labels)} labelled rows of code {args.code!r}")
    for name, reviewed in (("as generated", False), ("reviewed", True)):
        project = Path(args.project).with_name(f"{Path(args.project).stem}-{name.replace(' ', '-')}.curator")
        db = open_project(project, create=True)
        ingest(db, [realq / "corpus"])
        import_real_questions(db, realq, project.parent)
        print(f"\n== synthetic slice {name}: {import_labelled(db, labels, reviewed)} ({project})")
        with Timer("validate"):
            result = validate(db, [r for r in args.retrievers.split(",") if r], {}, args.metric, embedder=args.embedder)
        if args.json:
            Path(args.json).with_name(f"{Path(args.json).stem}-{name.replace(' ', '-')}.json").write_text(
                json.dumps(result, indent=2))
        print(_render_validate(result))
        if not reviewed:
            print("\n== the quality score's bias: synthetic rows split at its median")
            quality_halves(db, labels, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--realq", default="/tmp/realq")
    parser.add_argument("--project", default="/tmp/validity-bench.curator")
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--retrievers", default="bm25,tfidf,dense,hybrid")
    parser.add_argument("--embedder")
    parser.add_argument("--metric", default="recall@5")
    parser.add_argument("--json", help="Also write the report as JSON here.")
    parser.add_argument("--min-gain", type=float, help="Also validate the rows the likelihood answer check keeps.")
    parser.add_argument("--diagnose", action="store_true", help="Also print why dense misses generated rows' gold.")
    parser.add_argument("--usable-labels", help="Also print recall@5 on the labelled synthetic rows (--code), "
                                                "the usable ones, and the usable ones as edited.")
    parser.add_argument("--labels", help="Validate labelled generated rows (bench/quality_labels.jsonl) as generated "
                                         "and as reviewed, instead of generating.")
    parser.add_argument("--code", default="answer_first", help="Which labelled rows (their 'code') to use.")
    parser.add_argument("--copy-bias", type=float, help="Steer answer-first questions away from their answer's rare "
                                                        "words with this logit bias (generation.copybias; e.g. -10).")
    parser.add_argument("--rare-share", type=float, default=None, help="With --copy-bias: a word is rare when its "
                                                                       "stem is in at most this share of the chunks.")
    parser.add_argument("--bias-names", action="store_true", help="With --copy-bias: steer away from names too.")
    parser.add_argument("--model", help="Generate with this GGUF instead of the bundled model (issue 27: is it the "
                                        "model?); as `curator generate --model`.")
    parser.add_argument("--chat-format", help="With --model, for a GGUF that holds no chat template: a "
                                              "llama-cpp-python format name (e.g. gemma).")
    parser.add_argument("--mode", default="auto", choices=["auto", "need-first", "extractive"],
                        help="Generation mode (as `curator generate --mode`; issue 39).")
    parser.add_argument("--threads", type=int, help="Generation threads (default: the free cores).")
    parser.add_argument("--parallel", type=int, help="Sequences decoded together (default: the engine choice; a "
                                                     "user's GGUF in extractive mode is probed first).")
    parser.add_argument("--section-gold", action="store_true", help="Also validate a copy whose synthetic rows' gold "
                                                                    "is their source chunk's whole section.")
    parser.add_argument("--section", action="store_true", help="Need-first rows ask about their chunk's section as a "
                                                               "whole, gold all its chunks (needfirst.WHOLE_SECTION).")
    args = parser.parse_args()
    needfirst.WHOLE_SECTION = args.section
    realq, project = Path(args.realq), Path(args.project)
    if args.labels:
        validate_labelled(args, realq)
        return
    db = open_project(project, create=True)
    with Timer("ingest"):
        report = ingest(db, [realq / "corpus"])
    print(f"  {db.execute('SELECT COUNT(*) FROM documents').fetchone()[0]} documents, "
          f"{db.execute('SELECT COUNT(*) FROM chunks WHERE active = 1').fetchone()[0]} chunks"
          + (f", {len(report.errors)} errors" if getattr(report, "errors", None) else ""))
    with Timer("log import + approve"):
        print(f"  {import_real_questions(db, realq, project.parent)} real questions approved now")
    have = db.execute("SELECT COUNT(*) FROM queries WHERE source = 'synthetic'").fetchone()[0]
    if have < args.count:
        with Timer(f"generate {args.count - have} synthetic rows ({Path(args.model).name if args.model else 'bundled model'})"):
            # a resumed run keeps its own target (plan.adopt_run_settings): a higher --count starts a further run
            runs = db.execute("SELECT COUNT(*), MAX(target) FROM generation_runs").fetchone()
            resume = have > 0 and (runs[1] or 0) >= args.count
            summary = generate(db, GenerationConfig(count=args.count if resume or not have else args.count - have,
                                                    seed=0 if resume else runs[0], resume=resume,
                                                    copy_bias=copy_bias_of(args), model_path=args.model,
                                                    chat_format=args.chat_format, mode=args.mode,
                                                    threads=args.threads, parallel=args.parallel))
        print(f"  {json.dumps({k: summary.get(k) for k in ('status', 'accepted', 'rejected', 'rows_per_min', 'seconds', 'rejected_by_reason', 'warnings')})}")
    print(f"  {approve_synthetic(db)} synthetic rows approved as they are")
    retrievers = [r for r in args.retrievers.split(",") if r]
    with Timer("validate (gold as generated: source chunk + every chunk holding the answer sentence)"):
        result = validate(db, retrievers, {}, args.metric, embedder=args.embedder)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    print()
    print(_render_validate(result))
    print_criteria("gold as generated (auto-widened)", result)
    print_rare_copy(db, args.usable_labels, args.code)
    if args.min_gain is not None:
        kept = gain_filtered_copy(db, project, args.min_gain)
        with Timer(f"validate (answer-first rows with likelihood gain >= {args.min_gain})"):
            result = validate(kept, retrievers, {}, args.metric, embedder=args.embedder)
        print(_render_validate(result))
        print_criteria(f"likelihood gain >= {args.min_gain}, gold as generated", result)
    if args.diagnose:
        print_diagnosis(diagnose(db))
    if args.usable_labels:
        print_usable(db, retrievers, args.usable_labels, args.code)
    if args.section_gold:
        whole = section_gold_copy(db, project)
        with Timer("validate (gold widened to the source chunk's whole section)"):
            result = validate(whole, retrievers, {}, args.metric, embedder=args.embedder)
        print(_render_validate(result))
        print_criteria("gold = the source chunk's whole section", result)
    narrow = source_only_copy(db, project)
    with Timer("validate (source chunk only, as before widening)"):
        result = validate(narrow, retrievers, {}, args.metric, embedder=args.embedder)
    print(_render_validate(result))
    print_criteria("source chunk only", result)


def copy_bias_of(args):
    """The copy bias the command line asks for (None: the default, off)."""
    from curator.core.generation.copybias import RARE_SHARE, CopyBias

    if args.copy_bias is None:
        return None
    return CopyBias(args.copy_bias, args.rare_share if args.rare_share is not None else RARE_SHARE,
                    keep_names=not args.bias_names)


def diagnose(db) -> list[dict]:
    """Per approved answerable row: gold rank under dense (MiniLM) and BM25, chunk overlap, and the
    answer sentence's index, wordpiece offset and centrality in its chunk (for a real question, the
    gold-chunk sentence nearest it under MiniLM stands in for the answer sentence)."""
    import zipfile

    from tokenizers import Tokenizer

    from curator.core.embedding.embed import embed_texts
    from curator.core.embedding.minilm import minilm_zip
    from curator.core.generation.answers import answer_sentences
    from curator.core.queries import realism
    from curator.core.retrieval.retrievers import _chunk_text, get_retriever

    with zipfile.ZipFile(minilm_zip()) as zf:
        wordpieces = Tokenizer.from_str(zf.read("tokenizer.json").decode("utf-8"))
    wordpieces.no_truncation()
    chunks = {c["id"]: c for c in db.query("SELECT c.id, c.title, c.text, c.ord FROM chunks c WHERE c.active = 1")}
    rows = [dict(r) for r in db.query("SELECT id, text, source, query_type, reference, gold_chunk_ids, source_chunk_ids "
                                      "FROM queries WHERE status = 'approved' AND answerable = 1")]
    retrievers = {"dense": get_retriever("dense", db, "minilm"), "bm25": get_retriever("bm25", db)}
    dense = retrievers["dense"]
    at = {cid: i for i, cid in enumerate(dense.ids_)}
    runs = {name: r.search_texts([row["text"] for row in rows], len(chunks)) for name, r in retrievers.items()}
    query_vectors = embed_texts(db, dense.embedder_, [row["text"] for row in rows])
    for i, row in enumerate(rows):
        gold = [c for c in json.loads(row["gold_chunk_ids"]) if c in chunks]
        for name, run in runs.items():
            order = sorted(run[i], key=lambda c: -run[i][c])
            row[f"rank_{name}"] = min([order.index(g) + 1 for g in gold if g in order] or [len(chunks)])
        row["overlap"] = realism.chunk_overlap(row["text"], [chunks[c]["text"] for c in gold])
        candidates = json.loads(row["source_chunk_ids"] or "[]")[:1] if row["source"] == "synthetic" else gold
        best = None
        for cid in candidates:
            sentences = answer_sentences(chunks[cid]["text"]) or [chunks[cid]["text"]]
            vectors = embed_texts(db, dense.embedder_, sentences)
            centrality = vectors @ dense.vectors_[at[cid]]
            if row["source"] == "synthetic":
                if row["reference"] not in sentences:
                    continue
                j, near = sentences.index(row["reference"]), None
            else:
                near = vectors @ query_vectors[i]
                j = int(near.argmax())
            if best is None or (near is not None and near[j] > best["near"]):
                whole = _chunk_text(chunks[cid])
                start = whole.find(sentences[j][:40])
                best = {"near": float(near[j]) if near is not None else 0.0, "sentence_index": j,
                        "centrality": float(centrality[j]), "most_central": bool(centrality.argmax() == j),
                        "chunk_ord": chunks[cid]["ord"], "chunk_wordpieces": len(wordpieces.encode(whole).ids),
                        "start_wordpiece": len(wordpieces.encode(whole[:start]).ids) if start >= 0 else None}
        row.update(best or {})
    return rows


def print_diagnosis(rows: list[dict]) -> None:
    import statistics

    def hits(group, name):
        return f"{sum(r[f'rank_{name}'] <= 5 for r in group) / len(group):.2f}" if group else "-"

    def median(group, key):
        values = [r[key] for r in group if r.get(key) is not None]
        return f"{statistics.median(values):.2f}" if values else "-"

    real = [r for r in rows if r["source"] == "log"]
    generated = [r for r in rows if r["source"] == "synthetic" and r["query_type"] in ("factoid", "keyword", "vague")]
    print("\n== why dense misses generated rows (answer-first rows vs real questions; hit = gold in top 5)")
    for label, group in (("real", real), ("generated", generated)):
        central = [r for r in group if r.get("centrality") is not None]
        print(f"  {label}: n={len(group)}, dense hit {hits(group, 'dense')}, bm25 hit {hits(group, 'bm25')}; "
              f"answer sentence: most central in its chunk {sum(r['most_central'] for r in central) / max(len(central), 1):.2f}, "
              f"centrality median {median(group, 'centrality')}, index median {median(group, 'sentence_index')}, "
              f"starts past 254 wordpieces {sum((r.get('start_wordpiece') or 0) > 254 for r in group)}; "
              f"chunk is its document's first {sum(r.get('chunk_ord') == 0 for r in group) / max(len(group), 1):.2f}; "
              f"overlap median {median(group, 'overlap')}")
        for key in ("centrality", "overlap"):
            values = [r[key] for r in group if r.get(key) is not None]
            if not values:
                continue
            cut = statistics.median(values)  # not the rounded figure: 0.667 would fall below "0.67"
            high = [r for r in group if r.get(key) is not None and r[key] >= cut]
            low = [r for r in group if r.get(key) is not None and r[key] < cut]
            print(f"    {key} >= {cut:.2f}: n={len(high)} dense {hits(high, 'dense')} bm25 {hits(high, 'bm25')};"
                  f" below: n={len(low)} dense {hits(low, 'dense')} bm25 {hits(low, 'bm25')}")
        missed = [r for r in group if r["rank_dense"] > 5]
        found = [r for r in group if r["rank_dense"] <= 5]
        print(f"    dense misses vs hits: overlap median {median(missed, 'overlap')} vs {median(found, 'overlap')}, "
              f"centrality {median(missed, 'centrality')} vs {median(found, 'centrality')}")


def print_usable(db, retrievers: list[str], labels_file: str, code: str) -> None:
    """Recall@5 per retriever on the real questions and on the labelled synthetic rows: all, usable,
    usable with the reviewer's small edits (the gold stays the row's)."""
    from curator.core.retrieval.retrievers import get_retriever

    labels = {row["id"]: row for row in load_labels(labels_file, code)}
    rows = [dict(r) for r in db.query("SELECT id, text, source, gold_chunk_ids FROM queries "
                                      "WHERE status = 'approved' AND answerable = 1")]
    labelled = [r for r in rows if r["id"] in labels]
    usable = [r for r in labelled if is_usable(labels[r["id"]])]
    edited = [dict(r, text=(labels[r["id"]].get("edit") or {}).get("text") or r["text"]) for r in usable]
    fitted = {name: get_retriever(name, db) for name in retrievers}
    print(f"\n== recall@5 on the rows labelled {code!r} ({labels_file})")
    for label, group in (("real questions", [r for r in rows if r["source"] == "log"]), ("labelled, as generated", labelled),
                         ("usable, as generated", usable), ("usable, edited", edited)):
        if not group:
            continue
        means = {}
        for name, retriever in fitted.items():
            found = retriever.search_texts([r["text"] for r in group], 5)
            golds = [set(json.loads(r["gold_chunk_ids"])) for r in group]
            means[name] = sum(len(g & set(hits)) / len(g) for g, hits in zip(golds, found)) / len(group)
        print(f"  {label:24s} n={len(group):3d}  " + "  ".join(f"{n} {m:.3f}" for n, m in means.items())
              + "  ranking " + " > ".join(sorted(means, key=lambda n: -means[n])))


def print_rare_copy(db, labels_file=None, code=None) -> None:
    """How rare the words are that queries share with their gold chunk (mean IDF over the corpus's active
    chunks, generation.copybias.CorpusWords: ln((N+1)/(df+0.5)) on queries.words stems; the issue 27 diagnosis:
    usable generated rows shared rarer words than users' questions), for real questions, answer-first rows and,
    with labels, the usable ones; and how many rows steered by the copy bias still hold a word steered from."""
    import statistics

    from curator.core.generation.copybias import CorpusWords
    from curator.core.queries.words import stem, stems

    corpus = CorpusWords.of_project(db)
    chunks = {cid: stems((title or "") + " " + text)
              for cid, title, text in db.execute("SELECT id, title, text FROM chunks WHERE active = 1")}
    usable = {row["id"] for row in load_labels(labels_file, code) if is_usable(row)} if labels_file else set()
    groups: dict = {"real questions": [], "answer-first rows": [], "usable answer-first rows": []}
    steered = leaking = 0
    for qid, text, source, gold, query_type, signals in db.execute(
            "SELECT id, text, source, gold_chunk_ids, query_type, quality_signals FROM queries "
            "WHERE status = 'approved' AND answerable = 1"):
        gold_words = set().union(*[chunks.get(c, set()) for c in json.loads(gold)])
        shared = stems(text) & gold_words
        value = statistics.mean(corpus.stem_idf(w) for w in shared) if shared else None
        if source == "log":
            groups["real questions"].append(value)
        elif query_type in ("factoid", "keyword", "vague"):
            groups["answer-first rows"].append(value)
            if qid in usable:
                groups["usable answer-first rows"].append(value)
            avoided = json.loads(signals or "{}").get("avoided_words")
            if avoided:
                steered += 1
                leaking += bool(stems(text) & {stem(w) for w in avoided})
    print("\n== rarity of the words shared with the gold chunk (mean IDF; higher: rarer, easier for BM25)")
    for label, values in groups.items():
        known = [v for v in values if v is not None]
        if known:
            print(f"  {label:26s} n={len(values):3d}  mean {statistics.mean(known):.2f}  median {statistics.median(known):.2f}")
    if steered:
        print(f"  copy bias: {steered} rows steered, {leaking} still hold a word they were steered from")


def _copy(db, project: Path, suffix: str):
    import sqlite3

    copy = project.with_name(f"{project.stem}-{suffix}.curator")
    copy.unlink(missing_ok=True)
    target = sqlite3.connect(copy)
    db.conn.backup(target)  # the backup API: a file copy would miss what is still in the -wal file
    target.close()
    return open_project(copy)


def gain_filtered_copy(db, project: Path, min_gain: float):
    """A copy of the project whose approved answer-first rows below ``min_gain`` are rejected."""
    from curator.core.generation.answers import AnswerLikelihood
    from curator.core.generation.repack import bundled_model_files

    kept = _copy(db, project, f"gain-{min_gain}")
    check = AnswerLikelihood(bundled_model_files().path)
    rows = list(kept.execute("SELECT id, text, reference FROM queries WHERE source = 'synthetic' AND status = 'approved' "
                             "AND query_type IN ('factoid', 'keyword', 'vague')"))
    cut = [qid for qid, text, reference in rows if check.gain(text, reference) < min_gain]
    for qid in cut:
        decide(kept, qid, "reject", "bench")
    print(f"  likelihood gain >= {min_gain}: {len(rows) - len(cut)} of {len(rows)} answer-first rows kept")
    return kept


def source_only_copy(db, project: Path):
    """A copy of the project whose synthetic rows have only their source chunks as gold (the gold
    before widening), to show what widening changes."""
    narrow = _copy(db, project, "source-only")
    with narrow.conn:
        narrow.execute("UPDATE queries SET gold_chunk_ids = source_chunk_ids, gold_grades = "
                       "(SELECT json_group_object(value, 1) FROM json_each(source_chunk_ids)) "
                       "WHERE source = 'synthetic' AND answerable = 1")
    return narrow


def section_gold_copy(db, project: Path):
    """A copy of the project whose synthetic answerable rows hold as gold every chunk of their first source chunk's
    section (document and heading), the convention of a real FAQ question's gold (its whole answer): what the gold
    convention alone changes, the questions kept as they are."""
    whole = _copy(db, project, "section-gold")
    with whole.conn:
        whole.execute("""UPDATE queries SET gold_chunk_ids = (
                           SELECT json_group_array(id) FROM (SELECT c.id FROM chunks c JOIN chunks s
                             ON s.id = json_extract(queries.source_chunk_ids, '$[0]')
                             WHERE c.active = 1 AND c.doc_id = s.doc_id AND c.title = s.title ORDER BY c.ord)),
                         gold_grades = '{}'
                         WHERE source = 'synthetic' AND answerable = 1 AND source_chunk_ids != '[]'""")
        whole.execute("""UPDATE queries SET gold_grades = (SELECT json_group_object(value, 1) FROM json_each(gold_chunk_ids))
                         WHERE source = 'synthetic' AND answerable = 1""")
    return whole


def print_criteria(label: str, r: dict) -> None:
    """The issue's measures, each said as holds / does not hold."""
    agreement, syn, log = r["agreement"], r["slices"].get("source:synthetic"), r["slices"].get("source:log")
    if not agreement:
        return
    print(f"\n== criteria ({label})")
    print(f"  same winner: {agreement['same_winner']} (real {agreement['real_ranking'][0]}, "
          f"synthetic {agreement['synthetic_ranking'][0]})")
    clear = [p for p in r["pairs"] if p["real"]["clear"]]
    print(f"  clear real pairs agreeing in sign: {sum(bool(p['agrees']) for p in clear)} of {len(clear)}")
    within = {n: abs(syn["means"][n] - log["means"][n]) <= 0.10 for n in r["retrievers"]}
    print("  recall within 0.10 of real: " + ", ".join(
        f"{n} {syn['means'][n]:.3f} vs {log['means'][n]:.3f} {'yes' if ok else 'no'}" for n, ok in within.items()))
    realism_section = r["realism"]
    ref = realism_section["reference"]["chunk_overlap"]
    for query_type, s in realism_section["synthetic"].items():
        median = s["chunk_overlap"]["median"] if s["chunk_overlap"] else None
        inside = median is not None and ref["q1"] <= median <= ref["q3"]
        print(f"  {query_type}: median overlap {median} vs real IQR [{ref['q1']}, {ref['q3']}]: {'yes' if inside else 'no'}")

if __name__ == "__main__":
    main()
