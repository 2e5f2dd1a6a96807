"""Planning a generation run: the rows wanted per type (mix, allocation, resume, shares handed over
when a type cannot build anything here) and the tasks to ask, in order: which chunks, which answer
sentence, which derived option (multi-hop pair, near miss). Nothing here calls a model."""

from __future__ import annotations

import random
from functools import partial
from typing import Iterator, Optional

import sqlite_utils

from curator.core import store
from curator.core.corpus.search import search_chunks
from curator.core.errors import BadOption, InputError, NothingToGenerate
from curator.core.generation import answers
from curator.core.generation import copybias
from curator.core.generation import filters
from curator.core.generation import multihop
from curator.core.generation import needfirst
from curator.core.generation import prompts
from curator.core.generation import unanswerable
from curator.core.generation.config import DEFAULT_MIX, QUERY_TYPES, GenerationConfig, Task

MIN_CHUNK_TOKENS = 30
ATTEMPTS_PER_ROW = 4  # chunks tried per wanted row before a type gives up


def parse_mix(text: str) -> dict:
    """'factoid=0.4,keyword=0.2' -> {'factoid': 0.4, 'keyword': 0.2}."""
    mix = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        if name not in QUERY_TYPES:
            raise BadOption("--mix", f"unknown query type {name!r} in --mix; use {', '.join(QUERY_TYPES)}")
        try:
            mix[name] = float(value)
        except ValueError:
            raise BadOption("--mix", f"--mix {part!r}: the weight must be a number") from None
    if not mix or sum(mix.values()) <= 0 or min(mix.values()) < 0:
        raise BadOption("--mix", "--mix needs non-negative weights with a positive sum")
    return mix


def allocate(count: int, mix: dict) -> dict[str, int]:
    """Rows per type summing to ``count`` (largest remainder; every weighted type gets one if it can)."""
    total = sum(mix.values())
    shares = {t: count * w / total for t, w in mix.items() if w > 0}
    plan = {t: int(s) for t, s in shares.items()}
    for t in sorted(shares, key=lambda t: shares[t] - plan[t], reverse=True)[: count - sum(plan.values())]:
        plan[t] += 1
    for t in [t for t in plan if plan[t] == 0]:
        donor = max(plan, key=plan.get)
        if plan[donor] > 1:
            plan[donor] -= 1
            plan[t] += 1
    return plan


def _is_boilerplate(text: str) -> bool:
    letters = sum(ch.isalpha() for ch in text)
    return letters < 0.55 * max(1, len(text.replace(" ", "")))  # tables, code, tables of contents


# A chunk that goes on under the heading of the chunk before it (the second half of a long FAQ answer, a long
# section's later part) is asked an answer-first question after the chunks that open a section, in each
# document (issue 33; other types keep the seeded order: the evidence is answer-first rows only). On the
# stored answer-first candidates of the Python and Debian FAQs (bench/candidates.py, 2026-12-06, 03:12, every
# project on the machine with such runs: 3,630 not seldom kept), rows from such chunks were kept 27% of the
# time (259 of 959), from the others 38% (1,017 of 2,671); not everywhere (the Debian FAQ's continued answers
# were kept 44% against 40%), and their labelled rows (bench/quality_labels*.jsonl) were usable less often,
# 21% (49 of 236) against 30% (236 of 798; not on the Python FAQ's tutorial pages, 27% against 25%): their
# sentences lean on the part of the answer they continue. Reordered, not skipped: a run that needs more
# chunks still asks them. Never a retriever's choice: only the chunk's place under its heading.
SECTION_STARTS_FIRST = True  # bench/generate.py turns it off for the A/B


def section_openers(db) -> dict[str, bool]:
    """Active chunk id -> whether it opens a section: its document's first active chunk, or a title other
    than the active chunk before it (retired chunks are not the text a run reads). bench/candidates.py
    mines the stored candidates by the same definition."""
    rows = db.execute("""
        SELECT id, ROW_NUMBER() OVER w = 1 OR LAG(title) OVER w IS NOT title
        FROM chunks WHERE active = 1 WINDOW w AS (PARTITION BY doc_id ORDER BY ord)""").fetchall()
    return {chunk_id: bool(opens) for chunk_id, opens in rows}


def eligible_chunks(db: sqlite_utils.Database, seed: int, cluster_chunk_ids: Optional[set] = None,
                    openers_first: bool = False) -> list[dict]:
    """Chunks worth asking about, interleaved across documents so no file dominates. ``openers_first``
    (answer-first questions, SECTION_STARTS_FIRST): in each document the chunks that open a section come
    first, the seeded order kept within each group and across documents."""
    seeded, reordered = chunk_orders(db, seed, cluster_chunk_ids, openers_first)
    return reordered if openers_first else seeded


def chunk_orders(db: sqlite_utils.Database, seed: int, cluster_chunk_ids: Optional[set] = None,
                 openers_first: bool = True) -> tuple[list[dict], list[dict]]:
    """The seeded order of eligible_chunks and, with ``openers_first``, its section-openers-first order
    (else the seeded one again), from one read of the chunks."""
    rows = store.rows(db, "SELECT id, doc_id, title, text, tokens FROM chunks WHERE active = 1 AND tokens >= ? ORDER BY id",
                      [MIN_CHUNK_TOKENS])
    rows = [r for r in rows if not _is_boilerplate(r["text"])]
    if isinstance(cluster_chunk_ids, list):  # an ordered choice (GenerationConfig.chunk_ids): kept in its order
        by_id = {r["id"]: r for r in rows}
        chosen = [by_id[c] for c in dict.fromkeys(cluster_chunk_ids) if c in by_id]
        return chosen, chosen
    if cluster_chunk_ids is not None:
        rows = [r for r in rows if r["id"] in cluster_chunk_ids] or rows
    rng = random.Random(seed)
    by_doc: dict[str, list[dict]] = {}
    for row in rows:
        by_doc.setdefault(row["doc_id"], []).append(row)
    for chunk_list in by_doc.values():
        rng.shuffle(chunk_list)
    docs = sorted(by_doc)
    rng.shuffle(docs)
    seeded = _interleaved(by_doc, docs)
    if not (openers_first and SECTION_STARTS_FIRST):
        return seeded, seeded
    opens_section = section_openers(db)
    # a stable sort of each document's seeded list: the seeded order within each group, the same documents' order
    by_doc = {doc: sorted(chunk_list, key=lambda r: not opens_section[r["id"]]) for doc, chunk_list in by_doc.items()}
    return seeded, _interleaved(by_doc, docs)


def _interleaved(by_doc: dict[str, list[dict]], docs: list[str]) -> list[dict]:
    """Each document's first chunk in ``docs`` order, then each one's second, and so on."""
    ordered, depth, total = [], 0, sum(len(chunks) for chunks in by_doc.values())
    while len(ordered) < total:
        ordered += [by_doc[d][depth] for d in docs if depth < len(by_doc[d])]
        depth += 1
    return ordered


def _used_pairs(db: sqlite_utils.Database) -> set[tuple[str, str]]:
    """(query type, source chunk) pairs already asked in this project, accepted or rejected."""
    used = set()
    for table in ("queries", "rejected_candidates"):
        for qtype, ids in db.execute(f"SELECT query_type, source_chunk_ids FROM {table}"):
            for chunk_id in store.loads(ids, [])[:1]:
                used.add((qtype, chunk_id))
    return used


def _section_of(db: sqlite_utils.Database, chunk: dict) -> list[dict]:
    """The chunks of ``chunk``'s section (its document and heading) in document order, when there are at most
    needfirst.MAX_SECTION_CHUNKS of them; else ``chunk`` alone."""
    section = store.rows(db, "SELECT id, doc_id, title, text, tokens FROM chunks WHERE active = 1 AND doc_id = ? "
                             "AND title = ? ORDER BY ord LIMIT ?", [chunk["doc_id"], chunk["title"],
                                                                    needfirst.MAX_SECTION_CHUNKS + 1])
    return section if 0 < len(section) <= needfirst.MAX_SECTION_CHUNKS else [chunk]


def _partner(db: sqlite_utils.Database, chunk: dict) -> Optional[dict]:
    """The most similar other chunk by bm25 over the chunk's own distinctive words."""
    words = sorted(filters.content_words(chunk["text"]), key=len, reverse=True)[:12]
    for hit in search_chunks(db, " ".join(words), limit=5):
        if hit["id"] != chunk["id"]:
            return {"id": hit["id"], "text": hit["text"], "title": hit["title"]}
    return None


# Answer sentences whose rows were almost always rejected, by type (issue 33: each candidate costs a prompt,
# a reply and a likelihood pass). Counted on 1,168 answer-first candidates of seven stored runs on the Python
# and Debian FAQs (factoid, keyword and vague; bench/generate.py prints a run's own counts): keyword queries
# about a sentence holding code were kept 9 of 192 (5%; 17% otherwise), factoid and vague questions about a
# sentence of 24 or more words 17 of 134 (13%; 42% otherwise), the two together 26 of 326 (8%). Skipped,
# acceptance on the rest was 33% against 26%. A chunk whose sentences are all skipped for a type is not asked
# about for that type; its other sentences still are.
LONG_ANSWER_WORDS = 24
SKIP_SELDOM_KEPT = True  # bench/generate.py turns it off for the A/B


def seldom_kept(query_type: str, sentence: str) -> bool:
    """Whether a row of this type about this answer sentence was almost always rejected (above)."""
    if query_type == "keyword":
        return "`" in sentence or "()" in sentence
    return query_type in ("factoid", "vague") and len(sentence.split()) >= LONG_ANSWER_WORDS


def pick_answer(query_type: str, chunk: dict, attempt: int) -> Optional[str]:
    """The answer sentence an answer-first task of ``query_type`` asks about on its ``attempt``-th try:
    answers.pick_answer's order, without the sentences whose rows of this type were seldom kept."""
    return answers.pick_answer(chunk, attempt, skip=partial(seldom_kept, query_type) if SKIP_SELDOM_KEPT else None)


def answer_first(query_type: str, answers_mode: str) -> bool:
    return answers_mode == "extractive" and query_type in prompts.ANSWER_FIRST_TYPES


def need_first(query_type: str, answers_mode: str) -> bool:
    """A need-first task (generation.needfirst): the model is shown the chunk and quotes its answer; near misses
    and multi-hop rows stay derived from the corpus's sentences in every mode."""
    return answers_mode == "need-first" and query_type in needfirst.NEED_FIRST_TYPES


# Types built from the corpus before the model writes (issue 28): unanswerable rows are near misses
# of an answer-first question (generation.unanswerable), multi-hop rows join two chunks' sentences
# that name one entity (generation.multihop). With --answers free the old prompts ask for both.
DERIVED_TYPES = {"unanswerable": unanswerable, "multi_hop": multihop}


def derived(query_type: str, answers_mode: str) -> bool:
    return query_type in DERIVED_TYPES and answers_mode in ("extractive", "need-first")


def _derived_task(db: sqlite_utils.Database, query_type: str, chunk: dict, seed: int,
                  scope: Optional[multihop.RunScope] = None) -> Optional[Task]:
    """A derived-type task about ``chunk`` (None when the chunk offers nothing for the type).
    ``scope``: what the run's multi-hop tasks share (names read once, approved rows claimed once)."""
    found = (multihop.options(db, chunk, seed, scope) if query_type == "multi_hop"
             else DERIVED_TYPES[query_type].options(db, chunk, seed))
    return task_option(Task(query_type, [chunk], options=found), 0) if found else None


def task_option(task: Task, attempt: int) -> Task:
    """The task asking about its ``attempt``-th option (cycling): the answer, and the partner chunk."""
    option = task.options[attempt % len(task.options)]
    partner = [option["partner"]] if "partner" in option else []
    return Task(task.query_type, task.chunks[:1] + partner, attempt, option["answer"], option, task.options)


def _opener_first(query_type: str, answers_mode: str) -> bool:
    """Whether a type asks section-opening chunks first (SECTION_STARTS_FIRST): answer-first and need-first
    types, whose question is about the chunk's own text (a later chunk leans on the part it continues)."""
    return answer_first(query_type, answers_mode) or need_first(query_type, answers_mode)


def plan_tasks(db: sqlite_utils.Database, plan: dict[str, int], seed: int, cluster_chunk_ids=None,
               answers_mode: str = "free") -> Iterator[Task]:
    """Candidate tasks, types interleaved in proportion; never the same chunk twice per type.
    An answer-first type skips chunks that hold no sentence fit to be an answer."""
    # Answer-first types ask section-opening chunks first (SECTION_STARTS_FIRST); the same chunks, so one
    # cursor position means the same depth in either order.
    chunks, openers_first = chunk_orders(db, seed, cluster_chunk_ids,
                                         openers_first=any(_opener_first(t, answers_mode) for t in plan))
    used = _used_pairs(db)
    multi_hop_scope = multihop.RunScope(db)  # one per run: no two tasks start from one approved row
    # Each type starts at a different point of the interleaved order, so types spread over chunks.
    cursors = {t: i * len(chunks) // max(1, len(plan)) for i, t in enumerate(plan)}
    wanted = {t: n * ATTEMPTS_PER_ROW for t, n in plan.items()}
    while any(wanted.values()):
        for query_type in [t for t in plan if wanted[t] > 0]:
            wanted[query_type] -= 1
            start = cursors[query_type]
            order = openers_first if _opener_first(query_type, answers_mode) else chunks
            while cursors[query_type] < start + len(chunks):
                chunk = order[cursors[query_type] % len(chunks)]
                cursors[query_type] += 1
                if (query_type, chunk["id"]) in used:
                    continue
                used.add((query_type, chunk["id"]))
                if derived(query_type, answers_mode):
                    task = _derived_task(db, query_type, chunk, seed, multi_hop_scope)
                    if task is None:
                        continue
                    yield task
                    break
                extra = _partner(db, chunk) if query_type == "multi_hop" else None
                if query_type == "multi_hop" and extra is None:
                    continue
                if needfirst.WHOLE_SECTION and need_first(query_type, answers_mode):
                    section = _section_of(db, chunk)
                    used.update((query_type, c["id"]) for c in section)
                    yield Task(query_type, section)
                    break
                asks_answer_first = answer_first(query_type, answers_mode)
                answer = pick_answer(query_type, chunk, 0) if asks_answer_first else None
                if asks_answer_first and answer is None:
                    continue
                yield Task(query_type, [chunk] + ([extra] if extra else []), answer=answer)
                break
            else:
                wanted[query_type] = 0


def accepted_by_type(db: sqlite_utils.Database, run_id: int) -> dict[str, int]:
    return {t: n for t, n in db.execute("SELECT query_type, COUNT(*) FROM queries WHERE run_id = ? GROUP BY 1", [run_id])}


# Types that may take the rows a short type could not produce. Unanswerable rows come easiest to
# a small model; letting them fill in would quietly turn a 15% share into half the gold set.
REFILL_TYPES = frozenset({"factoid", "keyword", "vague", "multi_hop"})


def _last_run(db) -> dict:
    rows = store.rows(db, "SELECT * FROM generation_runs ORDER BY id DESC LIMIT 1")
    if not rows:
        raise InputError("nothing to resume: this project has no generation run yet")
    return rows[0]


def adopt_run_settings(db, config: GenerationConfig) -> None:
    """A resumed run goes on with the settings it was started with (seed, sampling, cluster,
    quality floor), so its rows stay one reproducible run whatever the resuming command says."""
    run = _last_run(db)
    params = store.loads(run["params"], {})
    config.seed = run["seed"] if run["seed"] is not None else config.seed
    for name in ("temperature", "max_tokens", "retries", "cluster", "min_quality", "chat_format", "answers",
                 "chunk_ids", "capable"):
        if name in params:
            setattr(config, name, params[name])
    if "copy_bias" in params:  # the same words steered away from, as strongly (or not at all)
        config.copy_bias = copybias.CopyBias.from_record(params["copy_bias"]) if params["copy_bias"] else None


def _why_nothing_to_ask(db, plan: dict[str, int], seed: int, cluster_chunk_ids: Optional[set],
                        answers_mode: str = "free") -> Optional[str]:
    """Why no candidate could be asked for ``plan`` (None when at least one can), in words with
    the next step: checked before the model is loaded, so an empty project fails at once."""
    if sum(plan.values()) == 0:
        return None  # nothing wanted (a resumed run already at its target) is not a failure
    total = db.execute("SELECT COUNT(*) FROM chunks WHERE active = 1").fetchone()[0]
    if total == 0:
        return "no chunks: ingest a corpus first ('curator ingest PROJECT DOCS/'), then generate"
    if not eligible_chunks(db, seed, cluster_chunk_ids):
        return (f"none of the {total} chunks is worth asking about (each needs {MIN_CHUNK_TOKENS}+ tokens of prose, "
                "not tables or code): ingest documents with more running text")
    if next(plan_tasks(db, plan, seed, cluster_chunk_ids, answers_mode), None) is None:
        wanted = [t for t, n in plan.items() if n > 0]
        hints = [_NOTHING_DERIVED[t] for t in wanted if derived(t, answers_mode) and t in _NOTHING_DERIVED]
        if hints and not {t for t, _ in _used_pairs(db)} & set(wanted):  # never asked: nothing to build from
            return "; ".join(hints)
        return (f"every chunk was already used for {', '.join(wanted)} queries (each chunk is asked once per type): "
                "ingest more documents, or ask for other types with --mix")
    return None


# Why a type built from the corpus found nothing to ask (no chunk was ever asked for it).
_NOTHING_DERIVED = {
    "multi_hop": ("no multi-hop row to build: each joins two chunks' sentences about the same specific thing "
                  "(a command, an option, a module), asked by rule where both sentences open with it, else "
                  "with a factoid question a reviewer approved; approve factoid rows that name one, then "
                  "generate again"),
    "unanswerable": ("no near miss to build: no sentence names a setting (platform, editor, init system...) "
                     "with a peer the corpus never mentions; ask for other types with --mix"),
}


def plan_run(db, config: GenerationConfig, chunk_choice) -> tuple[Optional[dict], dict, dict[str, int], dict]:
    """The run resumed (or None), its mix, the rows still wanted per type and the shares handed over at
    plan time (_hand_over); raises NothingToGenerate, before any model is loaded, when no candidate
    could be asked. ``chunk_choice`` is choose_chunks's, computed once a run (a cluster's costs a search
    per real query)."""
    resumed = _last_run(db) if config.resume else None
    if resumed:
        config.count, mix = resumed["target"], store.loads(resumed["mix"])
    else:
        mix = config.mix or DEFAULT_MIX
    done = accepted_by_type(db, resumed["id"]) if resumed else {}
    plan = {t: max(0, n - done.get(t, 0)) for t, n in allocate(config.count, mix).items()}
    plan, handed = _hand_over(db, plan, mix, config, chunk_choice)
    reason = _why_nothing_to_ask(db, plan, config.seed, chunk_choice, config.answers)
    if reason:
        raise NothingToGenerate(reason)
    return resumed, mix, plan, handed


def _unbuildable(db, plan: dict[str, int], config: GenerationConfig, chunk_choice=None) -> dict[str, str]:
    """Types of ``plan`` that cannot make a row in this project, each with why: a type built from the
    corpus with nothing to build from (no unused chunk offers a near miss, a pair made by rule or an
    approved row to join; multihop.options decides which pairs are worth asking)."""
    if config.answers == "free":
        return {}
    found, asked_before = {}, None
    for query_type in [t for t, n in plan.items() if n > 0 and derived(t, config.answers)]:
        if next(plan_tasks(db, {query_type: 1}, config.seed, chunk_choice, config.answers), None) is None:
            asked_before = asked_before if asked_before is not None else {t for t, _ in _used_pairs(db)}
            found[query_type] = (f"every chunk that offers one was already used for {query_type} rows (each chunk "
                                 "is asked once per type)" if query_type in asked_before
                                 else _NOTHING_DERIVED[query_type].split(";")[0])
    return found


def _hand_over(db, plan: dict[str, int], mix: dict, config: GenerationConfig, chunk_choice=None
               ) -> tuple[dict[str, int], dict]:
    """``plan`` with the rows of types that cannot build anything here (_unbuildable) moved to the types
    that can take rows (REFILL_TYPES, by mix weight), before any candidate is asked; and what moved,
    where and why ({type: {"rows", "to", "why"}}). A type no other type can stand in for keeps its rows."""
    unbuildable = _unbuildable(db, plan, config, chunk_choice)
    takers = {t: w for t, w in mix.items() if w > 0 and t in REFILL_TYPES and t not in unbuildable}
    if not unbuildable or not takers:
        return plan, {}
    plan, handed = dict(plan), {}
    for query_type, why in unbuildable.items():
        rows, plan[query_type] = plan[query_type], 0
        moved = {t: n for t, n in allocate(rows, takers).items() if n > 0}
        for taker, n in moved.items():
            plan[taker] = plan.get(taker, 0) + n
        handed[query_type] = {"rows": rows, "to": moved, "why": why}
    return plan, handed


def handed_over_message(handed: dict) -> str:
    """The run's one line about shares handed over at plan time."""
    return "; ".join(f"{t}: its {h['rows']} row(s) go to {', '.join(f'{k} {n}' for k, n in h['to'].items())} "
                     f"({h['why']})" for t, h in handed.items())


def choose_chunks(db, config: GenerationConfig):
    """The chunks to ask about: the ordered list given (coverage), else a cluster's, else None (all)."""
    return config.chunk_ids if config.chunk_ids is not None else _cluster_chunks(db, config.cluster)


def _cluster_chunks(db, cluster: Optional[int]) -> Optional[set]:
    """Chunks that the real queries of a cluster point to, or that search finds for them."""
    if cluster is None:
        return None
    _check_cluster_exists(db, cluster)
    texts = [r[0] for r in db.execute(
        """SELECT q.text FROM query_clusters qc JOIN cluster_runs cr ON cr.id = qc.run_id AND cr.active = 1
           JOIN queries q ON q.id = qc.query_id WHERE qc.cluster = ?""", [cluster])]
    return {hit["id"] for text in texts for hit in search_chunks(db, text, limit=3)}


def _check_cluster_exists(db, cluster: int) -> None:
    """Refuse a cluster the active cluster run does not have: generation used to go on across the whole
    corpus without a word. Compared in Python, so a number too big for SQLite is refused the same way."""
    existing = [r[0] for r in db.execute(
        """SELECT DISTINCT qc.cluster FROM query_clusters qc JOIN cluster_runs cr ON cr.id = qc.run_id
           AND cr.active = 1 ORDER BY qc.cluster""")]
    if cluster in existing:
        return
    known = (f"the active cluster run has clusters {', '.join(map(str, existing))}" if existing
             else "the project has no clusters yet: run 'curator cluster' first")
    raise BadOption("--cluster", f"no cluster {cluster}; {known}.")
