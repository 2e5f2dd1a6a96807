"""Checking a reply: parse it, run the row filters, the overlap cap and the likelihood answer check,
a derived type's own judge (near miss, multi-hop), and the quality score; the reason to reject it
or None. What the run record keeps of these checks (checks_record)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import sqlite_utils

from curator.core.corpus.search import search_chunks
from curator.core.generation import answers
from curator.core.generation import copybias
from curator.core.generation import examples as examples_mod
from curator.core.generation import filters
from curator.core.generation import multihop
from curator.core.generation import needfirst
from curator.core.generation import prompts
from curator.core.generation import quality
from curator.core.generation import unanswerable
from curator.core.generation.backends import Backend
from curator.core.generation.config import GenerationConfig, Task
from curator.core.queries import realism


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


@dataclass
class Checks:
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
    answer_tail: int = prompts.ANSWER_TAIL_CHARS  # a free answer's grammar bound (capability.Bounds)
    need_first: bool = False  # factoid, keyword, vague and multi-hop replies quote their answer (generation.needfirst)
    # Need-first rows are held to real questions' upper tail of overlap instead (queries.realism.overlap_tails):
    # ((overlap, real share at or above it), ...); the rows kept so far, and how many of them are at or above each.
    overlap_tails: tuple = ()
    need_first_kept: int = 0
    need_first_at_least: dict = field(default_factory=dict)

    def evidence_embedder(self):
        """The sentence embedder (MiniLM) that finds a near miss's nearest chunks for the reviewer to
        see; never a filter. None without its package."""
        if self._evidence is None:
            self._evidence = [unanswerable.evidence_embedder(self.evidence_threads)]
        return self._evidence[0]


def checks_record(checks: Checks) -> dict:
    """What the run record (and so the manifest) keeps of the checks: the examples shown and the cap."""
    return {"examples": checks.examples.describe() if checks.examples else None,
            "overlap_cap": {"cap": checks.overlap_cap, "calibrated_on": checks.overlap_basis,
                            "measure": "share of the question's content words in its chunk (queries.realism)",
                            "not_below_content_words": OVERLAP_CAP_MIN_WORDS,
                            "need_first_rows_at_least": [{"overlap": point, "real_share": share}
                                                         for point, share in checks.overlap_tails]},
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


def judge(db, task: Task, raw: str, checks: Checks) -> tuple[dict, Optional[str]]:
    """The candidate in a model reply and the reason to reject it (None = keep)."""
    candidate = {"raw": raw, "text": None, "reference": None}
    if is_need_first(task, checks):
        return _judge_need_first(db, task, candidate, checks)
    parsed = _parse(task, raw)
    if parsed is None:
        return candidate, "output not in the Question/Answer format"
    candidate["text"], candidate["reference"] = question, answer = parsed
    plain = task.option is None  # a derived task's module checks the question against its sentences
    gold_texts = [c["text"] for c in task.chunks]
    if plain:
        reason = filters.check_row(question, answer, task.query_type, gold_texts, " ".join(gold_texts),
                                   checks.duplicates, extractive=bool(task.answer), answer_bound=checks.answer_tail)
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
        if task.avoid:  # what the question was steered away from (set by build_request), shown with the row
            candidate["signals"]["avoided_words"] = list(task.avoid.words)
        if candidate["quality"] < checks.min_quality:
            reason = f"quality below --min-quality ({candidate['quality']:.2f})"
    return candidate, reason


def _judge_need_first(db, task: Task, candidate: dict, checks: Checks) -> tuple[dict, Optional[str]]:
    """A need-first reply (generation.needfirst): its quotes located in its chunks give the reference, then the
    answer-first filters (the reference is the chunks' own sentences), the overlap cap, and with
    NEED_FIRST_ANSWER_CHECK the likelihood check at its own threshold (NEED_FIRST_MIN_GAIN)."""
    parsed = needfirst.parse(candidate["raw"])
    if parsed is None:  # no quote: a reply stopped at its question by the screen (FirstLineGate), or malformed
        candidate["text"] = needfirst.parse_query(candidate["raw"])
        return candidate, screen_need_first(task, candidate["raw"], checks) or "output not in the Question/Answer format"
    question, quotes = parsed
    gold_texts = [c["text"] for c in task.chunks]
    reference = needfirst.reference(quotes, gold_texts)
    candidate.update(text=question, reference=reference or " / ".join(quotes))
    if reference is None:
        return candidate, "quoted answer not found in its chunk"
    reason = filters.check_row(question, reference, task.query_type, gold_texts, " ".join(gold_texts),
                               checks.duplicates, extractive=True, quoted=True)
    if reason is None:
        reason = _need_first_overlap(question, gold_texts, checks)
    gain = None
    if reason is None and NEED_FIRST_ANSWER_CHECK and checks.answer_check is not None:  # last: it costs two passes
        gain = checks.answer_check.gain(question, reference)
        if gain < NEED_FIRST_MIN_GAIN:
            reason = f"{NEED_FIRST_GAIN_REFUSAL} (likelihood gain {gain:.2f})"
    if reason is None:
        candidate["quality"], candidate["signals"] = quality.score_row(db, question, reference, task.query_type,
                                                                       task.chunks, extractive=True)
        candidate["signals"]["mode"] = "need-first"
        if gain is not None:  # shown, not scored
            candidate["signals"]["answer_gain"] = round(gain, 3)
        if candidate["quality"] < checks.min_quality:
            reason = f"quality below --min-quality ({candidate['quality']:.2f})"
    if reason is None:
        _count_need_first(question, gold_texts, checks)
    return candidate, reason


# The likelihood check of need-first rows (answers.AnswerLikelihood: how much the question raises the generating
# model's likelihood of the sentence it quoted). Blind labels reject most need-first rows for a quote that does not
# answer the question; at a gain below 0.03 nats a token (chosen on one labelled set, read on two others) the usable
# share of kept rows rose 67% -> 75% and 75% -> 79% (bench/needfirst_gain.py; docs/benchmarks.md). Far below
# answer-first rows' MIN_ANSWER_GAIN: a need-first question is about the user's need, not the sentence's words.
# Off: run in generation (blind set s44, Debian and fetchmail FAQs) its kept rows were usable no more often than
# without it (21 of 32 both) at 0.76-0.83x the accepted rows/min (docs/benchmarks.md).
NEED_FIRST_MIN_GAIN = 0.03
NEED_FIRST_ANSWER_CHECK = False
NEED_FIRST_GAIN_REFUSAL = "quoted answer does not follow from its question"


def is_need_first(task: Task, checks: Checks) -> bool:
    """Whether ``task``'s reply is a need-first one (a question, then a quote; generation.needfirst)."""
    return checks.need_first and task.query_type in needfirst.NEED_FIRST_TYPES and task.option is None


def screen_need_first(task: Task, raw: str, checks: Checks) -> Optional[str]:
    """Why a need-first reply is rejected for its question alone, or None: the checks that read no answer and the
    overlap quota, the same ones _judge_need_first runs. The batch decoder asks this at the end of the question line
    (backends.FirstLineGate), before the quote: in three need-first runs with the 1.5B model (Debian, zsh, fetchmail
    FAQs, 2026-12-07) 68 of 69 rejected need-first candidates were rejected for the question alone (the quota, a
    copied span, "the passage", a duplicate), and the quote is most of a reply's decoded tokens."""
    question = needfirst.parse_query(raw)
    if not question:
        return "output not in the Question/Answer format"
    gold_texts = [c["text"] for c in task.chunks]
    return (filters.check_question(question, task.query_type, gold_texts, " ".join(gold_texts), checks.duplicates,
                                   extractive=True)
            or _need_first_overlap(question, gold_texts, checks))


# A kept row may take its tail one row past the real share: the first rows of a run are not refused for being
# first, and a 20-row set ends at most one row over.
OVERLAP_TAIL_SLACK = 1


def _tails_reached(question: str, gold_texts: list[str], checks: Checks) -> list[tuple[float, float]]:
    """The (overlap, real share) points of checks.overlap_tails this question's chunk overlap reaches."""
    overlap = realism.chunk_overlap(question, gold_texts) or 0.0
    return [(point, share) for point, share in checks.overlap_tails if realism.reaches(overlap, point)]


def _need_first_overlap(question: str, gold_texts: list[str], checks: Checks) -> Optional[str]:
    """Why a need-first question reuses too much of its chunk, or None. Real questions reuse their chunk's words to a
    spread of degrees (a quarter of them more than the upper quartile, a sixth to a quarter every word): a need-first
    row is kept while the kept rows reaching each point of that upper tail stay within real questions' share there,
    so the set reuses its chunks' words as users' questions do. A cap rejecting every row above the upper quartile
    cost 21 of the first 35 fetchmail rejections (plain questions among them); a share kept only above the upper
    quartile left the 1.5B model's rows far above real questions at the median and at 100% (realism.BUILTIN_TAILS)."""
    for point, share in _tails_reached(question, gold_texts, checks):
        if checks.need_first_at_least.get(point, 0) + 1 > share * (checks.need_first_kept + 1) + OVERLAP_TAIL_SLACK:
            return (f"reuses its chunk's words like only {share:.0%} of real questions (at least {point:.0%} of its "
                    "words); rows like it already make up that share")
    return None


def count_kept_need_first(db: sqlite_utils.Database, run_id: int, checks: Checks) -> None:
    """A resumed run's need-first rows kept before, counted as _need_first_overlap counts them."""
    for row in db.query("""SELECT q.text, q.source_chunk_ids FROM queries q WHERE q.run_id = ? AND q.source = 'synthetic'
                           AND json_extract(q.quality_signals, '$.mode') = 'need-first'""", [run_id]):
        ids = json.loads(row["source_chunk_ids"])
        texts = [r[0] for r in db.execute(f"SELECT text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids)]
        _count_need_first(row["text"], texts, checks)


def _count_need_first(question: str, gold_texts: list[str], checks: Checks) -> None:
    checks.need_first_kept += 1
    for point, _share in _tails_reached(question, gold_texts, checks):
        checks.need_first_at_least[point] = checks.need_first_at_least.get(point, 0) + 1


# What the run record says checks an answer-first question against its answer sentence.
ANSWER_CHECK = ("filters.check_row with extractive=True: shape, copying, invented names, duplicates, one content "
                "word shared with the chunk, and the answer must add a content word; then the generating model's "
                "likelihood gain of the answer sentence given the question (answers.AnswerLikelihood). No "
                "embedder: the MiniLM cosine floor filtered with the dense retriever under test (issue 27)")
# A question with fewer content words than this is not capped: its overlap moves in steps of a third
# or more, and naming its subject already makes it 1.0 ("How do I exit Python?" against a chunk
# about exiting Python); the cap rejected such natural short questions.
OVERLAP_CAP_MIN_WORDS = 4


def answer_check_for(backend: Backend) -> Optional[answers.AnswerLikelihood]:
    """The likelihood check on the model file the backend runs (None for an endpoint or a fake): on
    the backend's own context when it can score (a LlamaCppBackend), not a second load of the file."""
    described = backend.describe()
    path = described.get("model_path")
    if not path or not Path(path).is_file():
        return None
    if callable(getattr(backend, "score", None)):
        return answers.AnswerLikelihood(backend=backend)
    return answers.AnswerLikelihood(path, n_threads=described.get("n_threads") or 1)


def answer_check_warnings(config: GenerationConfig, checks: Checks) -> list[str]:
    """Say so when answer-first questions go unchecked against their sentence (no local model file
    to measure the likelihood with: an endpoint), as the run summary and the Generate tab show."""
    if config.answers != "extractive" or checks.answer_check is not None:
        return []
    return ["no likelihood answer check (it needs a local model file; this backend has none): answer-first "
            "questions are checked by the lexical filters only, so expect more rows off their answer in review"]


def _judge_derived(db, task: Task, candidate: dict, checks: Checks) -> tuple[Optional[str], dict]:
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
