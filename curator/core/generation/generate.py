"""Reverse generation: turn chunks into (query, reference answer, gold chunk ids) rows.

Each accepted row is committed the moment it exists, so an interrupted run loses at most the
row in flight; ``resume`` continues the last run to its target without duplicates.

This module runs the loop (the scheduler, progress, storing each row, the run record); the steps
are their own modules: generation.plan chooses the chunks and tasks, generation.engine the backend,
generation.asking writes each request, generation.checks judges each reply.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

import sqlite_utils

from curator.core import store
from curator.core.generation import answers
from curator.core.generation import capability
from curator.core.generation import checks as checking
from curator.core.generation import copybias
from curator.core.generation import engine
from curator.core.generation import examples as examples_mod
from curator.core.generation import filters
from curator.core.generation import multihop
from curator.core.generation import prompts
from curator.core.generation import quality
from curator.core.generation.asking import MAX_PASSAGE_CHARS, build_request, quote_line_tokens
from curator.core.generation.backends import Backend, FirstLineGate, Request
# GenerationConfig, GenerationEvents, NO_EVENTS, QUERY_TYPES, DEFAULT_MIX and RETRIES_PER_CHUNK are
# imported from here by the CLI, the GUI and scripts: this module is generation's entry point.
from curator.core.generation.config import (DEFAULT_MIX, NO_EVENTS, QUERY_TYPES, RETRIES_PER_CHUNK,  # noqa: F401
                                            GenerationConfig, GenerationEvents, Task, ignore_event)
from curator.core.generation.plan import (REFILL_TYPES, accepted_by_type, adopt_run_settings, allocate,
                                          choose_chunks, handed_over_message, pick_answer, plan_run, plan_tasks,
                                          task_option)
from curator.core.generation.repack import file_sha256
from curator.core.progress import CancelToken, Cancelled, ProgressCallback, report
from curator.core.queries import realism
from curator.core.queries.rows import add_query, get_query
from curator.core.store import gold as gold_store

MIN_ACCEPT_RATE = 0.25  # floor of the acceptance estimate that sizes the requests in flight
# Need-first replies are screened at the end of their question and their quote bounded (FirstLineGate);
# bench/needfirst_prefix.py turns it off for the A/B against whole replies.
SCREEN_NEED_FIRST = True
UNANSWERABLE_REFERENCE = "The corpus does not answer this question."


def _source_model(db: sqlite_utils.Database, described: dict) -> dict:
    """The file a repacked model was made from, with its hash (empty when the model ran as it is)."""
    source = described.get("source_model_path")
    if not source:
        return {}
    return {"source_model_path": source, "source_model_sha256": file_sha256(source),
            "source_model_size": Path(source).stat().st_size}


def _start_run(db: sqlite_utils.Database, config: GenerationConfig, backend: Backend, mix: dict,
               checks: Optional[checking.Checks] = None, mode: Optional[capability.ModeChoice] = None) -> int:
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
              "mode": {"requested": config.mode, "chosen": config.answers, "why": mode.why if mode else None},
              "capable": config.capable, "bounds": vars(capability.bounds(bool(config.capable))),
              # need-first replies stopped at a question the checks refuse, their quote held to its bound
              "need_first_screen": ({"question_screened": SCREEN_NEED_FIRST, "quote_line_tokens": quote_line_tokens(config)}
                                    if config.answers == "need-first" else None),
              **(checking.checks_record(checks) if checks else {}),
              **described, **_source_model(db, described)}
    with db.conn:
        cursor = db.execute(
            """INSERT INTO generation_runs (created_at, backend, model_path, model_size, model_sha256, params, seed,
                   prompts, mix, target, status, counts) VALUES (?,?,?,?,?,?,?,?,?,?, 'running', '{}')""",
            [store.now(), backend.id, model_path, size, sha, store.dumps(params), config.seed,
             store.dumps(prompts.templates()), store.dumps(mix), config.count],
        )
    return cursor.lastrowid


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
    mode: str = ""  # the mode the run writes in, and why (capability.resolve)


def _finish(db, run_id: int, status: str, progress: _Progress, started: float) -> dict:
    by_type = accepted_by_type(db, run_id)
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
    return {"run_id": run_id, "status": status, **counts, "mode": progress.mode, "accepted_this_session": progress.accepted,
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
    if events.accepted is not ignore_event:
        events.accepted(get_query(db, query_id))


def _keep_spare(db, task: Task, raw: str, progress: _Progress, checks: checking.Checks) -> None:
    """Judge an answer whose type is full; keep it (unstored) in case another type falls short."""
    progress.surplus += 1
    if not raw or task.query_type not in REFILL_TYPES:
        return  # abandoned by the backend (never decoded to the end), or a type that takes no extra rows
    candidate, reason = checking.judge(db, task, raw, checks)
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
        self.screen: Optional[checking.Checks] = None  # need-first questions are screened before their quote

    def _gate(self, task: Task) -> FirstLineGate:
        """Stop a need-first reply at its question when the question alone is rejected (checks.screen_need_first);
        else bound its quote to the reply budget capability.Bounds gives a quote."""
        checks = self.screen
        return FirstLineGate(lambda text: checking.screen_need_first(task, text, checks) is None,
                             rest_tokens=quote_line_tokens(self.config))

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
            request = build_request(task, self.config, self.examples, self.steering)
            if self.screen is not None and checking.is_need_first(task, self.screen):
                request.gate = self._gate(task)
            self.in_flight[task.query_type].append(request)
            yield request

    def answered(self, request: Request) -> None:
        self.in_flight[request.tag.query_type].remove(request)

    def rejected(self, task: Task) -> None:
        """Ask a rejected (type, chunk) again with another seed, a bounded number of times."""
        if task.attempt < self.config.retries and task.options:
            if multihop.made_by_rule(task.option) and task.attempt + 1 >= len(task.options):
                return  # a row made by rule comes out the same when asked again
            self.retries.append(task_option(task, task.attempt + 1))
        elif task.attempt < self.config.retries:
            answer = pick_answer(task.query_type, task.chunks[0], task.attempt + 1) if task.answer else None
            self.retries.append(Task(task.query_type, task.chunks, task.attempt + 1, answer))

    def abandon_full_types(self) -> None:
        """Tell the backend to stop decoding answers that can no longer be used."""
        for query_type, requests in self.in_flight.items():
            if self.plan[query_type] <= 0:
                for request in requests:
                    request.abandoned = True


# A reply that is word for word a query the project already has is not asked again: the model wrote what users
# already ask about this chunk, and asked again it writes it again (the 1.5B model wrote "How can I use fetchmail
# with InterChange?", a real question, on all three attempts: bench/validity.py on the fetchmail FAQ, 2026-12-06).
NOT_RETRIED = (filters.EXACT_DUPLICATE,)


def _record(db, run_id: int, task: Task, raw: str, plan: dict, progress: _Progress, checks: checking.Checks,
            events: GenerationEvents = NO_EVENTS) -> Optional[str]:
    """Judge one reply and commit it at once (accepted row or rejected candidate); the reason
    it was rejected, or None."""
    candidate, reason = checking.judge(db, task, raw, checks)
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
              checks: checking.Checks, target: int, on_progress: Optional[ProgressCallback],
              cancel: Optional[CancelToken], events: GenerationEvents, chunk_choice=None) -> None:
    """Ask the backend until ``plan`` is met or no task is left; each reply is committed as it comes."""
    scheduler = _Scheduler(plan_tasks(db, plan, config.seed, chunk_choice, config.answers), plan, progress,
                           config, cancel)
    scheduler.examples, scheduler.steering = checks.examples, checks.steering
    scheduler.screen = checks if checks.need_first and SCREEN_NEED_FIRST else None
    results = backend.iter_complete(scheduler.requests())
    try:
        for request, raw in results:
            task = request.tag
            scheduler.answered(request)
            if plan[task.query_type] <= 0:
                _keep_spare(db, task, raw, progress, checks)
                continue
            reason = _record(db, run_id, task, raw, plan, progress, checks, events)
            if reason and not reason.startswith(NOT_RETRIED):
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
        adopt_run_settings(db, config)
    mode = capability.resolve(config)  # before planning: the mode decides which tasks there are
    chunk_choice = choose_chunks(db, config)
    resumed, mix, plan, handed = plan_run(db, config, chunk_choice)
    backend = backend or engine.open_engine(config, resumed, on_progress, cancel)
    if resumed:
        engine.check_same_model(db, resumed, backend)
    known = filters.DuplicateIndex(r[0] for r in db.execute("SELECT text FROM queries"))
    checks = checking.Checks(known, config.min_quality, evidence_threads=getattr(backend, "n_threads", None),
                             answer_tail=prompts.answer_tail(capability.bounds(bool(config.capable)).answer_chars),
                             need_first=config.answers == "need-first")
    if config.answers in ("extractive", "need-first"):
        checks.overlap_cap, checks.overlap_basis = realism.overlap_cap(db)
        checks.overlap_tails = realism.overlap_tails(db)[0] if checks.need_first else ()
        checks.examples = examples_mod.load(db)
        checks.answer_check = answer_check or checking.answer_check_for(backend)
        if config.copy_bias is not None:
            checks.steering = copybias.Steering(db, config.copy_bias, applied=backend.biases_logits)
    if checks.need_first and hasattr(backend, "prompt_keep"):
        from curator.core.generation.backends.llama_batch import NEED_FIRST_KEEP  # it needs llama-cpp-python

        backend.prompt_keep = NEED_FIRST_KEEP  # one kept prompt per kind of need-first request
    run_id = resumed["id"] if resumed else _start_run(db, config, backend, mix, checks, mode)
    if resumed and checks.overlap_tails:
        checking.count_kept_need_first(db, run_id, checks)
    warnings = (backend.warnings() + checking.answer_check_warnings(config, checks)
                + (checks.steering.warnings() if checks.steering else []))
    progress, started = _Progress(warnings=warnings, mode=mode.why), time.perf_counter()
    target = sum(plan.values())
    if handed:  # said once, before the first candidate; the run record keeps it (counts.handed_over)
        progress.handed_over = handed
        said = "handed over at plan time: " + handed_over_message(handed)
        report(on_progress, 0, target, said)
        events.progress(0, target, said)
    report(on_progress, 0, target, f"mode {mode.why}")  # said once, before the first candidate
    events.progress(0, target, f"mode {mode.why}")
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
