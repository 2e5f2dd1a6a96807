"""Reverse generation: turn chunks into (query, reference answer, gold chunk ids) rows.

Each accepted row is committed the moment it exists, so an interrupted run loses at most the
row in flight; ``resume`` continues the last run to its target without duplicates.
"""

from __future__ import annotations

import math
import random
import time
import zlib
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterator, Optional

import sqlite_utils

from curator.core import store
from curator.core.generation import answers
from curator.core.generation import copybias
from curator.core.generation import examples as examples_mod
from curator.core.generation import filters
from curator.core.generation import multihop
from curator.core.generation import prompts
from curator.core.generation import quality
from curator.core.generation import unanswerable
from curator.core.generation.backends import Backend, Request, check_gguf, open_backend
from curator.core.generation.repack import file_sha256
from curator.core.errors import BadOption, InputError, NothingToGenerate
from curator.core.queries import realism
from curator.core.queries.rows import add_query, get_query
from curator.core.store import gold as gold_store
from curator.core.corpus.search import search_chunks
from curator.core.progress import CancelToken, Cancelled, ProgressCallback, report

QUERY_TYPES = ("factoid", "keyword", "vague", "multi_hop", "unanswerable")
DEFAULT_MIX = {"factoid": 0.4, "keyword": 0.2, "vague": 0.15, "multi_hop": 0.1, "unanswerable": 0.15}
MIN_CHUNK_TOKENS = 30
MAX_PASSAGE_CHARS = 2400  # keeps prompt + answer inside n_ctx=2048 for two passages
ATTEMPTS_PER_ROW = 4  # chunks tried per wanted row before a type gives up
# A rejected candidate is asked again, this many times: on the same prompt with another seed, whose
# cells are still cached then (llama-cpp-python keeps the last prompt, the batch decoder every
# finished sequence's), so a retry costs only its reply, while a fresh chunk costs a prompt
# evaluation that takes about 70% of a row's time on the bundled model. An answer-first retry asks
# about the chunk's next answer sentence instead: its prompt shares the cached worked examples.
RETRIES_PER_CHUNK = 2
MIN_ACCEPT_RATE = 0.25  # floor of the acceptance estimate that sizes the requests in flight
UNANSWERABLE_REFERENCE = "The corpus does not answer this question."


@dataclass
class GenerationConfig:
    count: int = 20
    mix: Optional[dict] = None
    seed: int = 0
    model_path: Optional[str] = None
    endpoint: Optional[str] = None
    threads: Optional[int] = None
    n_ctx: int = 2048
    resume: bool = False
    cluster: Optional[int] = None
    temperature: float = 0.7
    max_tokens: int = prompts.MAX_REPLY_TOKENS  # the grammars bound a reply: it is never cut short
    parallel: Optional[int] = None  # requests generated together (default: the backend's own)
    retries: int = RETRIES_PER_CHUNK  # new seeds for a rejected (type, chunk) before moving on
    min_quality: float = 0.0  # rows scoring below it are rejected (generation.quality); 0 keeps all
    repack: bool = True  # run the bundled model from its cached Q8_0 copy (generation.repack); False: the Q4_1 file
    chat_format: Optional[str] = None  # a llama-cpp-python chat format for a GGUF that holds no chat template
    # "extractive": factoid, keyword and vague rows take a sentence of the chunk as their reference
    # answer and the model writes the query it answers (generation.answers); "free": the model writes both.
    answers: str = "extractive"
    # Coverage-aimed generation (issue 28, curator.core.clustering.coverage.target_chunks): chunk ids
    # asked about in this order, instead of the shuffled corpus; replaces ``cluster``'s choice.
    chunk_ids: Optional[list] = None
    # Answer-first questions steered at decoding time away from their answer's rare words (issue 27,
    # generation.copybias); None: off.
    copy_bias: Optional[copybias.CopyBias] = None


def _ignore(*_args) -> None:
    """The default of every generation event: nothing listens."""


@dataclass
class GenerationEvents:
    """What a front end hears while ``generate`` runs, called in the generating thread at the
    moment each thing happens (the row is already committed); a GUI turns them into signals."""

    accepted: Callable[[dict], None] = _ignore  # the stored query row, as get_query reads it
    rejected: Callable[[str, Optional[str], str], None] = _ignore  # query type, candidate text, reason
    progress: Callable[[int, int, str], None] = _ignore  # accepted so far, rows wanted, message


NO_EVENTS = GenerationEvents()


@dataclass
class Task:
    query_type: str
    chunks: list[dict]  # the source chunk first; multi_hop adds its partner
    attempt: int = 0  # retries of this (type, chunk) so far, each with another seed
    answer: Optional[str] = None  # answer-first: the chunk's sentence the query must be answered by
    # Derived types (issue 28, DERIVED_TYPES): what the corpus gave the task (a sentence with a detail
    # to swap, or a sentence pair), one of ``options``; a retry takes the next option.
    option: Optional[dict] = None
    options: Optional[list] = None
    # The copy bias's words for this task's request (set by _request, read by _judge to show on the row).
    avoid: Optional[copybias.Avoid] = None


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


# Types built from the corpus before the model writes (issue 28): unanswerable rows are near misses
# of an answer-first question (generation.unanswerable), multi-hop rows join two chunks' sentences
# that name one entity (generation.multihop). With --answers free the old prompts ask for both.
DERIVED_TYPES = {"unanswerable": unanswerable, "multi_hop": multihop}


def derived(query_type: str, answers_mode: str) -> bool:
    return answers_mode == "extractive" and query_type in DERIVED_TYPES


def _derived_task(db: sqlite_utils.Database, query_type: str, chunk: dict, seed: int,
                  scope: Optional[multihop.RunScope] = None) -> Optional[Task]:
    """A derived-type task about ``chunk`` (None when the chunk offers nothing for the type).
    ``scope``: what the run's multi-hop tasks share (names read once, approved rows claimed once)."""
    found = (multihop.options(db, chunk, seed, scope) if query_type == "multi_hop"
             else DERIVED_TYPES[query_type].options(db, chunk, seed))
    return _task_option(Task(query_type, [chunk], options=found), 0) if found else None


def _task_option(task: Task, attempt: int) -> Task:
    """The task asking about its ``attempt``-th option (cycling): the answer, and the partner chunk."""
    option = task.options[attempt % len(task.options)]
    partner = [option["partner"]] if "partner" in option else []
    return Task(task.query_type, task.chunks[:1] + partner, attempt, option["answer"], option, task.options)


def plan_tasks(db: sqlite_utils.Database, plan: dict[str, int], seed: int, cluster_chunk_ids=None,
               answers_mode: str = "free") -> Iterator[Task]:
    """Candidate tasks, types interleaved in proportion; never the same chunk twice per type.
    An answer-first type skips chunks that hold no sentence fit to be an answer."""
    # Answer-first types ask section-opening chunks first (SECTION_STARTS_FIRST); the same chunks, so one
    # cursor position means the same depth in either order.
    chunks, openers_first = chunk_orders(db, seed, cluster_chunk_ids,
                                         openers_first=any(answer_first(t, answers_mode) for t in plan))
    used = _used_pairs(db)
    multi_hop_scope = multihop.RunScope(db)  # one per run: no two tasks start from one approved row
    # Each type starts at a different point of the interleaved order, so types spread over chunks.
    cursors = {t: i * len(chunks) // max(1, len(plan)) for i, t in enumerate(plan)}
    wanted = {t: n * ATTEMPTS_PER_ROW for t, n in plan.items()}
    while any(wanted.values()):
        for query_type in [t for t in plan if wanted[t] > 0]:
            wanted[query_type] -= 1
            start = cursors[query_type]
            order = openers_first if answer_first(query_type, answers_mode) else chunks
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
                asks_answer_first = answer_first(query_type, answers_mode)
                answer = pick_answer(query_type, chunk, 0) if asks_answer_first else None
                if asks_answer_first and answer is None:
                    continue
                yield Task(query_type, [chunk] + ([extra] if extra else []), answer=answer)
                break
            else:
                wanted[query_type] = 0


def _source_model(db: sqlite_utils.Database, described: dict) -> dict:
    """The file a repacked model was made from, with its hash (empty when the model ran as it is)."""
    source = described.get("source_model_path")
    if not source:
        return {}
    return {"source_model_path": source, "source_model_sha256": file_sha256(source),
            "source_model_size": Path(source).stat().st_size}


def _start_run(db: sqlite_utils.Database, config: GenerationConfig, backend: Backend, mix: dict,
               checks: Optional["_Checks"] = None) -> int:
    described = backend.describe()
    model_path = described.get("model_path")
    size = sha = None
    if model_path:
        size, sha = Path(model_path).stat().st_size, file_sha256(model_path)
    # model_path/model_sha256 name the file that ran; a repacked copy's original is in params too.
    params = {"temperature": config.temperature, "max_tokens": config.max_tokens, "n_ctx": config.n_ctx,
              "retries": config.retries, "threads": described.get("n_threads"), "cluster": config.cluster,
              "chunk_ids": config.chunk_ids,
              "min_quality": config.min_quality, "quality": quality.DEFINITION, "answers": config.answers,
              **(_checks_record(checks) if checks else {}),
              **described, **_source_model(db, described)}
    with db.conn:
        cursor = db.execute(
            """INSERT INTO generation_runs (created_at, backend, model_path, model_size, model_sha256, params, seed,
                   prompts, mix, target, status, counts) VALUES (?,?,?,?,?,?,?,?,?,?, 'running', '{}')""",
            [store.now(), backend.id, model_path, size, sha, store.dumps(params), config.seed,
             store.dumps(prompts.templates()), store.dumps(mix), config.count],
        )
    return cursor.lastrowid


def _accepted_by_type(db: sqlite_utils.Database, run_id: int) -> dict[str, int]:
    return {t: n for t, n in db.execute("SELECT query_type, COUNT(*) FROM queries WHERE run_id = ? GROUP BY 1", [run_id])}


def _reason_key(reason: str) -> str:
    """A rejection reason without its particulars ("too long (142 words)" -> "too long"), for counting."""
    return reason.split(" (")[0]


def _rejected_by_reason(db: sqlite_utils.Database, run_id: int) -> dict[str, int]:
    """Rejected candidates of the run (all its sessions, like the accepted counts), by reason key."""
    counts: dict[str, int] = {}
    for reason, n in db.execute("SELECT reason, COUNT(*) FROM rejected_candidates WHERE run_id = ? GROUP BY 1", [run_id]):
        key = _reason_key(reason or "")
        counts[key] = counts.get(key, 0) + n
    return counts


def _truncate(text: str) -> str:
    return text if len(text) <= MAX_PASSAGE_CHARS else text[:MAX_PASSAGE_CHARS].rsplit(" ", 1)[0] + " ..."


# An 'unanswerable' question is rejected when one chunk holds this share of its content words.
# All of them (the first rule) let "global vs nonlocal" and "how does sum() work" through in the
# quality bench on the Python FAQ corpus although a chunk answered each.
UNANSWERABLE_MAX_OVERLAP = 0.6


def _unanswerable_check(db: sqlite_utils.Database, question: str) -> Optional[str]:
    """Reject an 'unanswerable' question whose content words mostly co-occur in one chunk."""
    words = filters.content_words(question) - {"larkspur"}
    if len(words) < 2:
        return "unanswerable question has too few distinguishing words to check"
    for hit in search_chunks(db, question, limit=5):
        share = len(words & filters.content_words(hit["title"] + " " + hit["text"])) / len(words)
        if share >= UNANSWERABLE_MAX_OVERLAP:
            return f"may be answered by a chunk ({hit['id']}: {share:.0%} of its terms co-occur there)"
    return None


def _request(task: Task, config: GenerationConfig, shown: Optional[examples_mod.ExampleSet] = None,
             steering: Optional[copybias.Steering] = None) -> Request:
    """The completion a task needs; the task rides along as the request's tag. ``shown``: the
    project's examples of how people ask (answer-first prompts); ``steering``: the run's copy bias."""
    seed = config.seed + zlib.crc32(task.chunks[0]["id"].encode()) % 10_000 + 10_000 * task.attempt
    if task.query_type == "multi_hop" and task.option and task.option.get("first_question"):
        # the first part is given (a kept row's question, or one made by rule); the model asks for the
        # second sentence, answer-first, the entity in the heading it is shown (a heading path helps it
        # name the subject)
        title = task.option.get("second_title") or task.chunks[0]["title"]
        shown_chunk = {**task.chunks[0], "title": f"{title} > {task.option['entity']}"}
        request = _request(Task("factoid", [shown_chunk], task.attempt, task.option["sentences"][1]), config, shown)
        request.tag, request.messages = task, multihop.second_part_messages(task.option, shown_chunk["title"])
        request.grammar = multihop.part_grammar(task.option) or request.grammar
        return request
    if task.query_type == "multi_hop" and task.option:
        return Request(prompts.build_multi_hop_messages(*task.option["sentences"], task.option.get("entity")),
                       max_tokens=max(config.max_tokens, prompts.MULTI_HOP_MAX_TOKENS), temperature=config.temperature,
                       seed=seed, grammar=prompts.MULTI_HOP_GRAMMAR, tag=task)
    if task.answer:
        # A near miss is the factoid question its swapped sentence answers (generation.unanswerable).
        asked_type = "factoid" if task.query_type == "unanswerable" else task.query_type
        shots = shown.shots(asked_type, task.chunks[0]) if shown else None
        log_queries = shown.log_queries if shown else ()
        title = (task.option or {}).get("title") or task.chunks[0]["title"]  # a near miss names its setting
        task.avoid = _avoid(task, steering)
        return Request(prompts.build_answer_first_messages(asked_type, title, task.answer, shots, log_queries),
                       max_tokens=min(config.max_tokens, prompts.ASKED_MAX_TOKENS), temperature=config.temperature,
                       seed=seed, grammar=_asked_grammar(task, asked_type), tag=task, avoid=task.avoid)
    passages = [_truncate(c["text"]) for c in task.chunks]
    return Request(prompts.build_messages(task.query_type, passages), max_tokens=config.max_tokens,
                   temperature=config.temperature, seed=seed, grammar=prompts.grammar_for(task.query_type), tag=task)


def _avoid(task: Task, steering: Optional[copybias.Steering]) -> Optional[copybias.Avoid]:
    """The words a plain answer-first question should not copy (a derived type's question must name its
    sentence's details, so it is not steered); None when the backend cannot apply the bias (an endpoint):
    no words are computed for a request that would ignore them."""
    if steering is None or not steering.applied or task.option is not None:
        return None
    return steering.avoid(task.answer, prompts.shown_title(task.chunks[0]["title"]))


# A near miss about a sentence that names its own setting ("... on Windows") must ask in that setting, or it
# is rejected (unanswerable.near_miss_question): shown the setting in the heading, the bundled model left it
# out of 6 of 24 near-miss candidates on the Python FAQ (bench/generate.py, 2026-12-05). The grammar spells
# the setting as a word of the question, as it spells a multi-hop second part's entity.
NEAR_MISS_NAMES_SETTING = True  # bench/generate.py turns it off for the A/B


def _asked_grammar(task: Task, asked_type: str) -> str:
    option = task.option or {}
    if NEAR_MISS_NAMES_SETTING and task.query_type == "unanswerable" and option.get("scope") == "sentence":
        return multihop.second_part_grammar(option["original"])
    return prompts.asked_grammar(asked_type)


@dataclass
class _Checks:
    """What a reply is judged against besides its own task: the queries already known (duplicates),
    the quality floor, the overlap cap and the examples shown. No retriever under test (BM25, MiniLM)
    judges a row: a filter by one keeps the rows that retriever finds (issue 27)."""

    duplicates: filters.DuplicateIndex
    min_quality: float = 0.0
    # The generating model's likelihood check of answer-first questions (answers.AnswerLikelihood);
    # None for a backend without a local model file (an endpoint) or with free answers.
    answer_check: Optional[answers.AnswerLikelihood] = None
    # Answer-first questions reusing more of their chunk's words than this are rejected: the upper
    # quartile of real questions' overlap (queries.realism.overlap_cap), and what it was measured on.
    overlap_cap: Optional[float] = None
    overlap_basis: str = ""
    examples: Optional[examples_mod.ExampleSet] = None
    _evidence: Optional[list] = None  # [the sentence embedder or None], loaded on the first near miss
    evidence_threads: Optional[int] = None  # the generating engine's threads (None: MiniLM's default)
    steering: Optional[copybias.Steering] = None  # the copy bias of answer-first requests (None: off)

    def evidence_embedder(self):
        """The sentence embedder (MiniLM) that finds a near miss's nearest chunks for the reviewer to
        see; never a filter. None without its package."""
        if self._evidence is None:
            self._evidence = [unanswerable.evidence_embedder(self.evidence_threads)]
        return self._evidence[0]


def _checks_record(checks: "_Checks") -> dict:
    """What the run record (and so the manifest) keeps of the checks: the examples shown and the cap."""
    return {"examples": checks.examples.describe() if checks.examples else None,
            "overlap_cap": {"cap": checks.overlap_cap, "calibrated_on": checks.overlap_basis,
                            "measure": "share of the question's content words in its chunk (queries.realism)",
                            "not_below_content_words": OVERLAP_CAP_MIN_WORDS},
            "answer_check": {"filters": ANSWER_CHECK,
                             "likelihood": checks.answer_check.describe() if checks.answer_check else None,
                             # where its passes ran: the generator's own context, or a second load of the file
                             "likelihood_passes": _passes_on(checks.answer_check),
                             "min_gain": answers.MIN_ANSWER_GAIN if checks.answer_check else None},
            "copy_bias": checks.steering.describe() if checks.steering else None}


def _passes_on(check) -> Optional[str]:
    if check is None:
        return None
    if getattr(check, "backend", None) is not None:
        return "the generating backend's batch decoder context (scoring sequence, logits at answer positions only)"
    return "a second load of the model file (all positions' logits)" if isinstance(check, answers.AnswerLikelihood) else None


def _parse(task: Task, raw: str) -> Optional[tuple[str, str]]:
    """(query, reference answer) of a reply: an answer-first reply holds the query only."""
    if task.query_type == "multi_hop" and task.option:  # two questions, joined (generation.multihop)
        query = multihop.joined(raw, task.option)
        return (query, task.answer) if query else None
    if task.answer:
        query = prompts.parse_query(raw)
        return (query, task.answer) if query else None
    return prompts.parse_output(raw)


def _judge(db, task: Task, raw: str, checks: _Checks) -> tuple[dict, Optional[str]]:
    """The candidate in a model reply and the reason to reject it (None = keep)."""
    candidate = {"raw": raw, "text": None, "reference": None}
    parsed = _parse(task, raw)
    if parsed is None:
        return candidate, "output not in the Question/Answer format"
    candidate["text"], candidate["reference"] = question, answer = parsed
    plain = task.option is None  # a derived task's module checks the question against its sentences
    gold_texts = [c["text"] for c in task.chunks]
    if plain:
        reason = filters.check_row(question, answer, task.query_type, gold_texts, " ".join(gold_texts),
                                   checks.duplicates, extractive=bool(task.answer))
    else:  # the reference is the corpus's own sentences (none for a near miss): only the question is checked
        reason = filters.check_row(question, "", "unanswerable", gold_texts, " ".join(gold_texts), checks.duplicates)
    if reason is None and task.answer and checks.overlap_cap is not None:  # a multi-hop row: the model's part only
        capped = multihop.capped_text(task.option, raw, question) if task.query_type == "multi_hop" else question
        reason = _overlap_check(capped, gold_texts, checks.overlap_cap) if capped else None
    gain = None
    if reason is None and plain and task.answer and checks.answer_check is not None:  # after the cheap checks: it costs a pass
        gain = checks.answer_check.gain(question, answer)
        if gain < answers.MIN_ANSWER_GAIN:
            reason = f"question does not lead to its answer sentence (likelihood gain {gain:.2f})"
    extra: dict = {}
    if reason is None and not plain:
        reason, extra = _judge_derived(db, task, candidate, checks)
    elif reason is None and task.query_type == "unanswerable":
        reason = _unanswerable_check(db, question)
    if reason is None:
        candidate["quality"], candidate["signals"] = quality.score_row(db, candidate["text"], answer, task.query_type,
                                                                       task.chunks, extractive=bool(task.answer))
        if gain is not None:  # shown, not scored
            candidate["signals"]["answer_gain"] = round(gain, 3)
        candidate["signals"].update(extra)
        if task.avoid:  # what the question was steered away from (set by _request), shown with the row
            candidate["signals"]["avoided_words"] = list(task.avoid.words)
        if candidate["quality"] < checks.min_quality:
            reason = f"quality below --min-quality ({candidate['quality']:.2f})"
    return candidate, reason


# What the run record says checks an answer-first question against its answer sentence.
ANSWER_CHECK = ("filters.check_row with extractive=True: shape, copying, invented names, duplicates, one content "
                "word shared with the chunk, and the answer must add a content word; then the generating model's "
                "likelihood gain of the answer sentence given the question (answers.AnswerLikelihood). No "
                "embedder: the MiniLM cosine floor filtered with the dense retriever under test (issue 27)")
# A question with fewer content words than this is not capped: its overlap moves in steps of a third
# or more, and naming its subject already makes it 1.0 ("How do I exit Python?" against a chunk
# about exiting Python); the cap rejected such natural short questions.
OVERLAP_CAP_MIN_WORDS = 4


def _answer_check_for(backend: Backend) -> Optional[answers.AnswerLikelihood]:
    """The likelihood check on the model file the backend runs (None for an endpoint or a fake): on
    the backend's own context when it can score (a LlamaCppBackend), not a second load of the file."""
    described = backend.describe()
    path = described.get("model_path")
    if not path or not Path(path).is_file():
        return None
    if callable(getattr(backend, "score", None)):
        return answers.AnswerLikelihood(backend=backend)
    return answers.AnswerLikelihood(path, n_threads=described.get("n_threads") or 1)


def _answer_check_warnings(config: GenerationConfig, checks: _Checks) -> list[str]:
    """Say so when answer-first questions go unchecked against their sentence (no local model file
    to measure the likelihood with: an endpoint), as the run summary and the Generate tab show."""
    if config.answers != "extractive" or checks.answer_check is not None:
        return []
    return ["no likelihood answer check (it needs a local model file; this backend has none): answer-first "
            "questions are checked by the lexical filters only, so expect more rows off their answer in review"]


def _judge_derived(db, task: Task, candidate: dict, checks: _Checks) -> tuple[Optional[str], dict]:
    """(reason or None, signals to store) of a derived task's reply: for a near miss, the evidence
    that the corpus does not answer it; for a multi-hop row, what each sentence gives the question.
    Whether a question is about its sentence is the likelihood check's call, as for answer-first rows;
    the sentence embedder only finds the nearest chunks a reviewer is shown as evidence."""
    if task.query_type == "unanswerable":
        reason, found = unanswerable.judge(db, candidate["text"], task.option, checks.answer_check,
                                           checks.evidence_embedder())
        if found:  # the model wrote for the original sentence; the row asks in the swapped setting
            candidate["text"] = found["question"]
        return reason, {"unanswerable_evidence": found} if found else {}
    reason, found = multihop.judge(candidate["raw"], task.option, checks.answer_check)
    return reason, {"multi_hop": found}


def _overlap_check(question: str, gold_texts: list[str], cap: float) -> Optional[str]:
    """A question written from its answer reuses the passage's words, real users' questions do not
    as much (issue 27): reject one above what real questions show, unless it is too short for its
    overlap to say anything."""
    if len(filters.content_words(question)) < OVERLAP_CAP_MIN_WORDS:
        return None
    overlap = realism.chunk_overlap(question, gold_texts) or 0.0
    if overlap > cap:
        return f"reuses its chunk's words more than real questions do ({overlap:.0%} of its words; real up to {cap:.0%})"
    return None


def _gold_of(db, task: Task, reference: Optional[str]) -> tuple[list[str], dict]:
    """The gold of a new answerable row: its source chunks, and every other chunk that holds its
    reference answer (store.gold.widened), all graded 1 like the source."""
    source_ids = [c["id"] for c in task.chunks]
    return gold_store.widened(db, reference, source_ids, {c: 1 for c in source_ids})


def _store(db, run_id: int, task: Task, candidate: dict, reason: Optional[str]) -> Optional[str]:
    """Commit the candidate; the id of the query it became (None when rejected)."""
    source_ids = [c["id"] for c in task.chunks]
    with db.conn:
        if reason:
            db.execute(
                """INSERT INTO rejected_candidates (run_id, query_type, source_chunk_ids, text, reference, reason,
                       raw_output, created_at) VALUES (?,?,?,?,?,?,?,?)""",
                [run_id, task.query_type, store.dumps(source_ids), candidate["text"], candidate["reference"], reason,
                 candidate["raw"], store.now()])
            return None
        answerable = task.query_type != "unanswerable"
        gold = _gold_of(db, task, candidate["reference"])[0] if answerable else []
        query_id = add_query(db, candidate["text"], "synthetic", query_type=task.query_type, answerable=answerable,
                             reference=candidate["reference"] if answerable else UNANSWERABLE_REFERENCE,
                             source_chunk_ids=source_ids, gold_chunk_ids=gold,
                             run_id=run_id, raw_output=candidate["raw"])
        db.execute("UPDATE queries SET quality = ?, quality_signals = ? WHERE id = ? AND quality IS NULL",
                   [candidate.get("quality"), store.dumps(candidate.get("signals", {})), query_id])
    realism.refresh(db, [query_id])
    return query_id


@dataclass
class _Progress:
    accepted: int = 0
    rejected: int = 0
    surplus: int = 0  # answers that arrived after their type had all its rows
    spares: list = field(default_factory=list)  # surplus (task, candidate) that passed every filter, not yet stored
    kept_surplus: dict = field(default_factory=dict)  # spares stored because another type fell short, by type
    refilled: dict = field(default_factory=dict)  # rows moved to other types in a second pass, by type
    reasons: dict = field(default_factory=dict)
    truncated: set = field(default_factory=set)  # ids of chunks cut to fit the context
    warnings: list = field(default_factory=list)  # the backend's (a model without a chat template)
    handed_over: dict = field(default_factory=dict)  # shares moved at plan time (_hand_over), by type


def _finish(db, run_id: int, status: str, progress: _Progress, started: float) -> dict:
    by_type = _accepted_by_type(db, run_id)
    seconds = time.perf_counter() - started
    by_reason = _rejected_by_reason(db, run_id)
    counts = {"accepted": sum(by_type.values()), "rejected": sum(by_reason.values()), "by_type": by_type,
              "rejected_by_reason": by_reason, "truncated_chunks": sorted(progress.truncated), "warnings": progress.warnings,
              "surplus": progress.surplus, "kept_surplus": progress.kept_surplus, "refilled": progress.refilled}
    if progress.handed_over:
        counts["handed_over"] = progress.handed_over
    counts["seconds"] = round(_earlier_seconds(db, run_id) + seconds, 2)  # all sessions: rows/min per model
    with db.conn:
        db.execute("UPDATE generation_runs SET status = ?, counts = ? WHERE id = ?", [status, store.dumps(counts), run_id])
    if status == "exhausted":
        counts["stopped_short"] = _why_short(counts, progress)
    return {"run_id": run_id, "status": status, **counts, "accepted_this_session": progress.accepted,
            "rejected_this_session": progress.rejected,
            "seconds": round(seconds, 2), "rows_per_min": round(60 * progress.accepted / seconds, 2) if seconds else 0.0}


def _earlier_seconds(db, run_id: int) -> float:
    """The working seconds a resumed run's earlier sessions recorded (0 for a new run)."""
    earlier = store.loads(db.execute("SELECT counts FROM generation_runs WHERE id = ?", [run_id]).fetchone()[0], {})
    value = earlier.get("seconds") if isinstance(earlier, dict) else None
    return float(value) if isinstance(value, (int, float)) else 0.0


def _why_short(counts: dict, progress: _Progress) -> str:
    """In words: why a run stopped before its target, and what to try."""
    tried = progress.accepted + progress.rejected
    top = max(progress.reasons, key=progress.reasons.get) if progress.reasons else None
    text = (f"stopped at {counts['accepted']} rows: every type that could still take rows ran out of new chunks or "
            f"of attempts ({tried} candidates judged, {progress.accepted} kept).")
    if top and progress.accepted < 0.25 * max(1, tried):
        text += f" Most candidates were rejected (mostly: {top}); a bigger instruct model (--model) helps most."
    return text + " Try: ingest more documents, another --mix (fewer rows of the short types), or --retries 3+."


def _announce(db, events: GenerationEvents, query_id: str) -> None:
    """Tell the listener about a stored row; it is read back only when someone listens."""
    if events.accepted is not _ignore:
        events.accepted(get_query(db, query_id))


# Types that may take the rows a short type could not produce. Unanswerable rows come easiest to
# a small model; letting them fill in would quietly turn a 15% share into half the gold set.
REFILL_TYPES = frozenset({"factoid", "keyword", "vague", "multi_hop"})


def _keep_spare(db, task: Task, raw: str, progress: _Progress, checks: _Checks) -> None:
    """Judge an answer whose type is full; keep it (unstored) in case another type falls short."""
    progress.surplus += 1
    if not raw or task.query_type not in REFILL_TYPES:
        return  # abandoned by the backend (never decoded to the end), or a type that takes no extra rows
    candidate, reason = _judge(db, task, raw, checks)
    if reason is None:
        progress.spares.append((task, candidate))
        checks.duplicates.add(candidate["text"])


def _store_spares(db, run_id: int, plan: dict, progress: _Progress, events: GenerationEvents) -> None:
    """Store kept spares in place of the rows that short types could not produce."""
    while progress.spares and sum(plan.values()) > 0:
        task, candidate = progress.spares.pop(0)
        query_id = _store(db, run_id, task, candidate, None)
        _announce(db, events, query_id)
        short = next(t for t, n in plan.items() if n > 0)
        plan[short] -= 1
        progress.accepted += 1
        progress.kept_surplus[task.query_type] = progress.kept_surplus.get(task.query_type, 0) + 1


def _refill_plan(plan: dict, mix: dict, progress: _Progress) -> dict:
    """The rows short types still owe, moved to the types that filled their share (by mix weight)."""
    short = sum(plan.values())
    donors = {t: w for t, w in mix.items() if w > 0 and plan.get(t, 0) == 0 and t in REFILL_TYPES}
    if not short or not donors:
        return {}
    refill = {t: n for t, n in allocate(short, donors).items() if n > 0}
    for query_type, n in refill.items():
        progress.refilled[query_type] = progress.refilled.get(query_type, 0) + n
    return refill


def _last_run(db) -> dict:
    rows = store.rows(db, "SELECT * FROM generation_runs ORDER BY id DESC LIMIT 1")
    if not rows:
        raise InputError("nothing to resume: this project has no generation run yet")
    return rows[0]


def _adopt_run_settings(db, config: GenerationConfig) -> None:
    """A resumed run goes on with the settings it was started with (seed, sampling, cluster,
    quality floor), so its rows stay one reproducible run whatever the resuming command says."""
    run = _last_run(db)
    params = store.loads(run["params"], {})
    config.seed = run["seed"] if run["seed"] is not None else config.seed
    for name in ("temperature", "max_tokens", "retries", "cluster", "min_quality", "chat_format", "answers",
                 "chunk_ids"):
        if name in params:
            setattr(config, name, params[name])
    if "copy_bias" in params:  # the same words steered away from, as strongly (or not at all)
        config.copy_bias = copybias.CopyBias.from_record(params["copy_bias"]) if params["copy_bias"] else None


def _open_engine(config: GenerationConfig, resumed: Optional[dict],
                 on_progress: Optional[ProgressCallback] = None, cancel: Optional[CancelToken] = None) -> Backend:
    """The backend a run uses: an endpoint as given; a local model with the file and sequences decoded
    together that the user named, else the fastest for this mode on this machine (optimize.choose_engine),
    and a resumed run with the file and sequences it started with. Which ran, and why, is in describe()."""
    if config.endpoint:
        return open_backend(None, config.endpoint, parallel=config.parallel)
    from curator.core.generation.backends import LlamaCppBackend, free_cores
    from curator.core.generation.backends.llama_cpp import template_warnings
    from curator.core.generation.optimize import choose_engine

    threads = config.threads or free_cores()
    if config.model_path:  # before a probe of minutes, not in the summary at the end (the summary repeats it)
        for warning in template_warnings(config.model_path, chat_format=config.chat_format):
            report(on_progress, 0, config.count, "warning: " + warning)
    measured = _measured_default(config, resumed)
    if measured is not None:
        chosen, why = measured
    else:
        chosen, why = choose_engine(_engine_candidates(config, resumed), config.answers, threads, config.n_ctx,
                                    config.chat_format, on_probe=lambda text: report(on_progress, 0, config.count, text),
                                    cancel=cancel)
    backend = LlamaCppBackend(chosen.path, n_ctx=config.n_ctx, n_threads=threads, seed=config.seed,
                              parallel=chosen.parallel, source_model_path=chosen.source, chat_format=config.chat_format)
    backend.engine_choice, backend.decoder_for_one = why, True
    return backend


# Why answer-first rows with the bundled model run its Q4_1 file, one sequence, without a probe (issue 33):
# a request evaluates ~77 new prompt tokens to write ~17, and the likelihood check and the rest of the
# pipeline are ~25% of a row's time, so neither Q8_0's faster prompt nor batching paid. Measured in one
# run, alternating, same seeds (docs/benchmarks.md): the probe's choice (Q8_0 x1, or x4 under heavy load)
# made 0.87x (Python FAQ) and 1.06x (Debian FAQ) this setting's accepted rows/min at lower acceptance, and
# 0.88x and 0.55x in a second run at load 4-9; the probe cost 2.5-4.5 minutes on first use, and its cached
# choice flipped with the machine's load. The same file with 2 or 4 sequences decoded together made 0.67x and
# 0.92x its accepted rows/min (Python FAQ, 1 thread, load 3.4-5.7, 2026-12-06): on this CPU a decode step of
# 2-4 sequences costs about as much as 2-4 steps of one (free-running decode: 63-74 tokens/s aggregate for x2
# and x4 against 70-78 for one sequence), and a request's prompt and likelihood pass, which batching does not
# shorten, are two thirds of its time.
MEASURED_DEFAULT = ("answer-first rows with the bundled model: its Q4_1 file, one sequence, no probe; measured "
                    "at least as fast as the probe's choices (Q8_0 copy x1/x4) and as the Q4_1 file with 2 or 4 "
                    "sequences at no lower acceptance, without the first-use probe (docs/generate.md, Speed and "
                    "quality)")


def _measured_default(config: GenerationConfig, resumed: Optional[dict]) -> Optional[tuple]:
    """(candidate, why) when the run takes the measured default without a probe: answer-first rows with
    the bundled model, no --parallel and not a resumed run (which keeps its own file and parallel);
    None when the probe decides (--answers free, a user's GGUF, or --parallel N over both files)."""
    from curator.core.generation.optimize import EngineCandidate
    from curator.core.generation.repack import bundled_model_files

    if config.model_path or config.answers != "extractive" or config.parallel or resumed:
        return None
    chosen = EngineCandidate(bundled_model_files(repack=False).path, 1)
    return chosen, {"chosen": chosen.label, "chosen_by": MEASURED_DEFAULT, "mode": config.answers}


def _engine_candidates(config: GenerationConfig, resumed: Optional[dict]) -> list:
    """Engine settings a run may use: a user's GGUF as it is, or the bundled model's Q4_1 file and (unless
    --no-repack) its Q8_0 copy; each with --parallel, else each of optimize.PARALLEL_CHOICES. A resumed run
    keeps the file and the parallel it started with."""
    from curator.core.generation.optimize import PARALLEL_CHOICES, EngineCandidate
    from curator.core.generation.repack import bundled_model_files

    if config.model_path:
        files = [(check_gguf(config.model_path), None)]  # a missing or damaged file: one line, before any probe
    else:
        files = [(bundled_model_files(repack=False).path, None)]
        if config.repack:
            copy = bundled_model_files(repack=True)
            files.append((copy.path, copy.source))
    parallels = [config.parallel] if config.parallel else list(PARALLEL_CHOICES)
    if resumed:
        params = store.loads(resumed["params"], {})
        files = [f for f in files if str(f[0]) == resumed["model_path"]] or files  # another file is refused later
        parallels = [config.parallel or params.get("parallel") or parallels[0]]
    return [EngineCandidate(path, parallel, source) for path, source in files for parallel in parallels]


def _check_same_model(db, run: dict, backend: Backend) -> None:
    """Refuse to resume a run on another backend or model file: its rows would mix two models
    under one run record (and one manifest line)."""
    described = backend.describe()
    if backend.id != run["backend"]:
        raise InputError(f"run {run['id']} was made with the {run['backend']} backend, not {backend.id}: "
                         "resume it with the same --model or --endpoint, or start a new run without --resume")
    model_path = described.get("model_path")
    if model_path and run["model_sha256"] and file_sha256(model_path) != run["model_sha256"]:
        raise InputError(f"run {run['id']} was made with {run['model_path']} (sha256 {run['model_sha256'][:12]}), "
                         f"not {model_path}: resume it with that model file, or start a new run without --resume")
    recorded = store.loads(run["params"], {}).get("endpoint")
    if recorded and described.get("endpoint") and described["endpoint"] != recorded:
        raise InputError(f"run {run['id']} was made against {recorded}, not {described['endpoint']}: resume it "
                         "with the same --endpoint, or start a new run without --resume")


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


def _plan(db, config: GenerationConfig, chunk_choice) -> tuple[Optional[dict], dict, dict[str, int], dict]:
    """The run resumed (or None), its mix, the rows still wanted per type and the shares handed over at
    plan time (_hand_over); raises NothingToGenerate, before any model is loaded, when no candidate
    could be asked. ``chunk_choice`` is _chunk_choice's, computed once a run (a cluster's costs a search
    per real query)."""
    resumed = _last_run(db) if config.resume else None
    if resumed:
        config.count, mix = resumed["target"], store.loads(resumed["mix"])
    else:
        mix = config.mix or DEFAULT_MIX
    done = _accepted_by_type(db, resumed["id"]) if resumed else {}
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
    if config.answers != "extractive":
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


def _chunk_choice(db, config: GenerationConfig):
    """The chunks to ask about: the ordered list given (coverage), else a cluster's, else None (all)."""
    return config.chunk_ids if config.chunk_ids is not None else _cluster_chunks(db, config.cluster)


def _cluster_chunks(db, cluster: Optional[int]) -> Optional[set]:
    """Chunks that the real queries of a cluster point to, or that search finds for them."""
    if cluster is None:
        return None
    texts = [r[0] for r in db.execute(
        """SELECT q.text FROM query_clusters qc JOIN cluster_runs cr ON cr.id = qc.run_id AND cr.active = 1
           JOIN queries q ON q.id = qc.query_id WHERE qc.cluster = ?""", [cluster])]
    return {hit["id"] for text in texts for hit in search_chunks(db, text, limit=3)}


class _Scheduler:
    """Decides which task to ask the backend for next, from the results so far.

    The backend pulls a request only when it can start one (a free sequence or thread), so
    a type with enough rows in flight to meet its need (at the observed acceptance rate)
    waits, and a type that is done gets nothing more: a batch never runs far past the target.
    """

    def __init__(self, tasks: Iterator[Task], plan: dict[str, int], progress: _Progress, config: GenerationConfig,
                 cancel: Optional[CancelToken]):
        self.tasks, self.plan, self.progress, self.config, self.cancel = tasks, plan, progress, config, cancel
        self.in_flight: dict[str, list[Request]] = {t: [] for t in plan}
        self.deferred: list[Task] = []  # planned tasks whose type had enough in flight
        self.retries: list[Task] = []  # rejected tasks to ask again, before any new chunk
        self.examples: Optional[examples_mod.ExampleSet] = None  # how people ask (answer-first prompts)
        self.steering: Optional[copybias.Steering] = None  # the run's copy bias (answer-first prompts)

    def wanted(self, query_type: str) -> bool:
        done = self.progress.accepted + self.progress.rejected
        rate = max(MIN_ACCEPT_RATE, (self.progress.accepted + 1) / (done + 2))
        need = self.plan[query_type]
        return need > 0 and len(self.in_flight[query_type]) < math.ceil(need / rate)

    def _next(self) -> Optional[Task]:
        """A task to start now, or None when every type still short has enough in flight."""
        for waiting in (self.retries, self.deferred):  # retries first: their prompts are cached
            waiting[:] = [t for t in waiting if self.plan[t.query_type] > 0]
            for i, task in enumerate(waiting):
                if self.wanted(task.query_type):
                    return waiting.pop(i)
        for task in self.tasks:
            if self.plan[task.query_type] <= 0:
                continue
            if self.wanted(task.query_type):
                return task
            self.deferred.append(task)
            short = {t for t, n in self.plan.items() if n > 0}
            if short <= {t.query_type for t in self.deferred}:
                return None
        return None

    def requests(self) -> Iterator[Optional[Request]]:
        """Backend requests; None means 'wait for a result', the end means no task is left."""
        while True:
            if self.cancel is not None:
                self.cancel.check()
            task = self._next()
            if task is None:
                if not any(self.in_flight.values()):
                    return
                yield None
                continue
            # A passage over the prompt budget is cut (_truncate); the run summary says which.
            if not task.answer:  # an answer-first prompt holds one sentence, never a passage
                self.progress.truncated.update(c["id"] for c in task.chunks if len(c["text"]) > MAX_PASSAGE_CHARS)
            request = _request(task, self.config, self.examples, self.steering)
            self.in_flight[task.query_type].append(request)
            yield request

    def answered(self, request: Request) -> None:
        self.in_flight[request.tag.query_type].remove(request)

    def rejected(self, task: Task) -> None:
        """Ask a rejected (type, chunk) again with another seed, a bounded number of times."""
        if task.attempt < self.config.retries and task.options:
            if multihop.made_by_rule(task.option) and task.attempt + 1 >= len(task.options):
                return  # a row made by rule comes out the same when asked again
            self.retries.append(_task_option(task, task.attempt + 1))
        elif task.attempt < self.config.retries:
            answer = pick_answer(task.query_type, task.chunks[0], task.attempt + 1) if task.answer else None
            self.retries.append(Task(task.query_type, task.chunks, task.attempt + 1, answer))

    def abandon_full_types(self) -> None:
        """Tell the backend to stop decoding answers that can no longer be used."""
        for query_type, requests in self.in_flight.items():
            if self.plan[query_type] <= 0:
                for request in requests:
                    request.abandoned = True


def _record(db, run_id: int, task: Task, raw: str, plan: dict, progress: _Progress, checks: _Checks,
            events: GenerationEvents = NO_EVENTS) -> Optional[str]:
    """Judge one reply and commit it at once (accepted row or rejected candidate); the reason
    it was rejected, or None."""
    candidate, reason = _judge(db, task, raw, checks)
    query_id = _store(db, run_id, task, candidate, reason)
    if reason:
        progress.rejected += 1
        key = _reason_key(reason)
        progress.reasons[key] = progress.reasons.get(key, 0) + 1
        events.rejected(task.query_type, candidate["text"], reason)
    else:
        progress.accepted += 1
        plan[task.query_type] -= 1
        checks.duplicates.add(candidate["text"])
        _announce(db, events, query_id)
    return reason


def _run_pass(db, run_id: int, config: GenerationConfig, backend: Backend, plan: dict, progress: _Progress,
              checks: _Checks, target: int, on_progress: Optional[ProgressCallback], cancel: Optional[CancelToken],
              events: GenerationEvents, chunk_choice=None) -> None:
    """Ask the backend until ``plan`` is met or no task is left; each reply is committed as it comes."""
    scheduler = _Scheduler(plan_tasks(db, plan, config.seed, chunk_choice, config.answers), plan, progress,
                           config, cancel)
    scheduler.examples, scheduler.steering = checks.examples, checks.steering
    results = backend.iter_complete(scheduler.requests())
    try:
        for request, raw in results:
            task = request.tag
            scheduler.answered(request)
            if plan[task.query_type] <= 0:
                _keep_spare(db, task, raw, progress, checks)
                continue
            if _record(db, run_id, task, raw, plan, progress, checks, events):
                scheduler.rejected(task)
            scheduler.abandon_full_types()
            message = f"accepted {progress.accepted}, rejected {progress.rejected}"
            report(on_progress, progress.accepted, target, message)
            events.progress(progress.accepted, target, message)
            if sum(plan.values()) == 0:
                break
            if cancel is not None:
                cancel.check()
    finally:
        results.close()  # frees the backend's sequences or threads at once, not at garbage collection


def generate(db: sqlite_utils.Database, config: GenerationConfig, backend: Optional[Backend] = None,
             on_progress: Optional[ProgressCallback] = None, cancel: Optional[CancelToken] = None,
             events: GenerationEvents = NO_EVENTS, answer_check: Optional[answers.AnswerLikelihood] = None) -> dict:
    """Generate ``config.count`` accepted rows (or continue the last run with ``resume``).

    Replies come back in completion order (several at once from a batching backend); each
    is judged and committed as it arrives, so a crash loses only the rows still in flight.
    ``events`` hears each accepted row, each rejected candidate and each progress step.
    ``answer_check`` judges answer-first questions (default: the backend's own model file, when it has one).
    """
    if config.resume:
        _adopt_run_settings(db, config)
    chunk_choice = _chunk_choice(db, config)
    resumed, mix, plan, handed = _plan(db, config, chunk_choice)
    backend = backend or _open_engine(config, resumed, on_progress, cancel)
    if resumed:
        _check_same_model(db, resumed, backend)
    checks = _Checks(filters.DuplicateIndex(r[0] for r in db.execute("SELECT text FROM queries")), config.min_quality,
                     evidence_threads=getattr(backend, "n_threads", None))
    if config.answers == "extractive":
        checks.overlap_cap, checks.overlap_basis = realism.overlap_cap(db)
        checks.examples = examples_mod.load(db)
        checks.answer_check = answer_check or _answer_check_for(backend)
        if config.copy_bias is not None:
            checks.steering = copybias.Steering(db, config.copy_bias, applied=backend.biases_logits)
    run_id = resumed["id"] if resumed else _start_run(db, config, backend, mix, checks)
    warnings = backend.warnings() + _answer_check_warnings(config, checks) + (checks.steering.warnings() if checks.steering else [])
    progress, started = _Progress(warnings=warnings), time.perf_counter()
    target = sum(plan.values())
    if handed:  # said once, before the first candidate; the run record keeps it (counts.handed_over)
        progress.handed_over = handed
        said = "handed over at plan time: " + handed_over_message(handed)
        report(on_progress, 0, target, said)
        events.progress(0, target, said)
    try:
        _run_pass(db, run_id, config, backend, plan, progress, checks, target, on_progress, cancel, events,
                  chunk_choice)
        _store_spares(db, run_id, plan, progress, events)
        refill = _refill_plan(plan, {t: w for t, w in mix.items() if t not in handed}, progress)
        if refill:  # a type could not fill its share: the types that could take its rows
            plan.update({t: 0 for t in plan}, **refill)
            _run_pass(db, run_id, config, backend, plan, progress, checks, target, on_progress, cancel, events,
                      chunk_choice)
            _store_spares(db, run_id, plan, progress, events)
    except (Cancelled, KeyboardInterrupt):
        return _finish(db, run_id, "cancelled", progress, started)
    except Exception:
        _finish(db, run_id, "failed", progress, started)  # a run that stopped must not stay 'running'
        raise
    status = "complete" if sum(plan.values()) == 0 else "exhausted"
    return _finish(db, run_id, status, progress, started)
