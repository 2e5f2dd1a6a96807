"""Faithfulness of a trace's response: the share of its claims the retrieved contexts support.

Claims: the response split into sentences. A sentence splitter is the first claim splitter,
chosen for a small judge: asking a 135M model to decompose a response into atomic statements
gives malformed lists, and a sentence is close to one claim in short RAG answers.
Verdicts: each claim is judged against the retrieved contexts by a judge model whose reply is
constrained by a grammar to ``supported`` or ``not supported``; requests go through the
backend's ``iter_complete`` so a batching backend judges several claims at once, and all the
claims of a trace share one prompt prefix (the contexts) for the prompt cache.
The context a verdict relied on is the context sharing the most words with the claim (the
one-word verdict has no room to name one). Every judgement is a ``judgements`` row; a
reviewer's correction is a new row holding the verdict it replaced, so it is journaled.

Where context recall cannot be had from chunk ids (recall.uses_ids), the same judge checks the
statements of the trace's reference answer (its own ``reference``, else its approved gold row's)
against the contexts: recall = supported statements / statements, RAGAS's LLM context recall.
Those statements are claims of kind 'reference', judged and corrected like the response's.
"""

from __future__ import annotations

import re
from typing import Callable, Iterator, Optional

import sqlite_utils

from curator.core import store
from curator.core.corpus.documents import chunk_texts
from curator.core.errors import InputError
from curator.core.generation.backends import Backend, Request
from curator.core.diagnosis.recall import coverage, uses_ids
from curator.core.diagnosis.traces import trace_gold
from curator.core.review.decisions import VERDICT, journal

VERDICTS = ("supported", "not supported")
RESPONSE, REFERENCE = "response", "reference"  # the two kinds of claim
STATEMENT_BASIS = "reference statements (judge)"
VERDICT_GRAMMAR = 'root ::= "supported" | "not supported"\n'
SYSTEM = "You check whether a claim is stated in the given passages. Reply with one verdict."
# Contexts are cut so that prompt + reply fit a 2048-token context split over parallel slots.
MAX_CONTEXT_CHARS = 1800
MIN_CLAIM_WORDS = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Za-z0-9])")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|Dr|Mr|Mrs|Ms|No|Fig)\.$")


def split_claims(response: str) -> list[str]:
    """Sentences of the response with at least three words (a lone "Yes." is not a claim),
    questions left out (a question asserts nothing to check)."""
    pieces, current = [], ""
    for part in _SENTENCE_END.split(" ".join((response or "").split())):
        current = f"{current} {part}".strip()
        if not _ABBREVIATION.search(current):
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return [p for p in pieces if len(p.split()) >= MIN_CLAIM_WORDS and not p.rstrip("\"')").endswith("?")]


def split_statements(reference: str) -> list[str]:
    """The reference answer's sentences; a short answer ("Use pip.") is one statement."""
    return split_claims(reference) or ([" ".join(reference.split())] if reference and reference.strip() else [])


def contexts_block(contexts: list[str], limit: int = MAX_CONTEXT_CHARS) -> str:
    """Numbered passages, each cut to an equal share of the character budget."""
    if not contexts:
        return "(no passages)"
    share = max(200, limit // len(contexts))
    return "\n".join(f"[{i}] {' '.join(text.split())[:share]}" for i, text in enumerate(contexts, 1))


def judge_messages(contexts: list[str], claim: str) -> list[dict]:
    passages = contexts_block(contexts)
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Passages:\n{passages}\n\nClaim: {claim}\n\n"
                                        "Is the claim supported by the passages? Answer supported or not supported."}]


def parse_verdict(text: str) -> Optional[str]:
    """'supported' / 'not supported' from a reply, None when it is neither."""
    words = " ".join((text or "").lower().replace("_", " ").split()).strip(" .!\"'")
    if words.startswith("not supported") or words.startswith("unsupported"):
        return "not supported"
    if words.startswith("supported"):
        return "supported"
    return None


def relied_on(contexts: list[str], claim: str) -> Optional[int]:
    """1-based index of the context sharing most words with the claim (None without contexts)."""
    if not contexts:
        return None
    scores = [coverage(claim, text) for text in contexts]
    return scores.index(max(scores)) + 1


def trace_contexts(db: sqlite_utils.Database, trace: dict) -> list[str]:
    """The texts the system retrieved: as sent, else the chunks its ids name."""
    texts = store.loads(trace["retrieved_texts"], [])
    if texts:
        return texts
    ids = store.loads(trace["retrieved_ids"], [])
    found = chunk_texts(db, ids)
    return [found[i] for i in ids if i in found]


def reference_answer(db: sqlite_utils.Database, trace: dict) -> str:
    """The answer recall's statements come from: the trace's own reference, else its approved gold row's."""
    if trace["reference"]:
        return trace["reference"]
    row = db.execute("SELECT reference FROM queries WHERE id = ? AND status = 'approved'", [trace["query_id"]]).fetchone()
    return (row[0] or "") if row else ""


def needs_statements(db: sqlite_utils.Database, trace: dict) -> bool:
    """Whether the trace's recall must come from the judge: no usable chunk ids."""
    gold, _ = trace_gold(db, trace)
    return not uses_ids(gold, store.loads(trace["retrieved_ids"], []), store.loads(trace["retrieved_texts"], []))


def _missing_claims(db: sqlite_utils.Database, trace: dict) -> dict[str, list[str]]:
    """The claims of each kind the trace has not been split into yet."""
    have = {k for (k,) in db.execute("SELECT DISTINCT kind FROM claims WHERE trace_id = ?", [trace["id"]])}
    wanted = {}
    if RESPONSE not in have and trace["response"]:
        wanted[RESPONSE] = split_claims(trace["response"])
    if REFERENCE not in have and needs_statements(db, trace):
        wanted[REFERENCE] = split_statements(reference_answer(db, trace))
    return {kind: texts for kind, texts in wanted.items() if texts}


def _ensure_claims(db: sqlite_utils.Database, trace: dict) -> list[tuple[int, str]]:
    """Every claim of the trace (response claims, then any reference statements), split on first need."""
    wanted = _missing_claims(db, trace)
    if wanted:
        with db.conn:
            next_ord = db.execute("SELECT COALESCE(MAX(ord) + 1, 0) FROM claims WHERE trace_id = ?",
                                  [trace["id"]]).fetchone()[0]
            for kind, texts in wanted.items():
                for text in texts:
                    db.execute("INSERT OR IGNORE INTO claims (trace_id, ord, text, kind) VALUES (?,?,?,?)",
                               [trace["id"], next_ord, text, kind])
                    next_ord += 1
    return db.execute("SELECT id, text FROM claims WHERE trace_id = ? ORDER BY ord", [trace["id"]]).fetchall()


def _pending_requests(db, traces: list[dict]) -> Iterator[Request]:
    """One request per claim with no judgement yet (so an interrupted run resumes)."""
    for trace in traces:
        contexts = trace_contexts(db, trace)
        for claim_id, text in _ensure_claims(db, trace):
            if db.execute("SELECT 1 FROM judgements WHERE claim_id = ?", [claim_id]).fetchone():
                continue
            yield Request(judge_messages(contexts, text), max_tokens=4, temperature=0.0, grammar=VERDICT_GRAMMAR,
                          tag=(trace["id"], claim_id, relied_on(contexts, text)))


def judge_traces(db: sqlite_utils.Database, backend: Backend, trace_ids: Optional[list[str]] = None,
                 on_progress: Optional[Callable[[int, int, str], None]] = None) -> dict:
    """Judge every unjudged claim of the traces (all by default); each verdict commits at once."""
    traces = _select_traces(db, trace_ids)
    judge = backend_label(backend)
    done = unparsed = 0
    for request, reply in backend.iter_complete(_pending_requests(db, traces)):
        trace_id, claim_id, context_index = request.tag
        verdict = parse_verdict(reply)
        unparsed += verdict is None
        with db.conn:
            db.execute("INSERT INTO judgements (claim_id, verdict, context_index, judge, raw, at) VALUES (?,?,?,?,?,?)",
                       [claim_id, verdict or "unparsed", context_index, judge, reply, store.now()])
        done += 1
        if on_progress:
            on_progress(done, 0, trace_id)
    for trace in traces:
        update_score(db, trace["id"])
        update_statement_recall(db, trace)
    return {"traces": len(traces), "claims_judged": done, "unparsed": unparsed, "judge": judge}


def unjudged_claims(db: sqlite_utils.Database) -> int:
    """Claims without a verdict plus the claims not split yet (a response with no claim, such
    as "Yes.", counts none, so it never makes the judge model load)."""
    claims = db.execute("SELECT COUNT(*) FROM claims c WHERE NOT EXISTS "
                        "(SELECT 1 FROM judgements j WHERE j.claim_id = c.id)").fetchone()[0]
    unsplit = sum(len(texts) for trace in store.rows(db, "SELECT * FROM traces")
                  for texts in _missing_claims(db, trace).values())
    return claims + unsplit


def backend_label(backend: Backend) -> str:
    path = getattr(backend, "model_path", None) or getattr(backend, "endpoint", None)
    return f"{backend.id}:{getattr(path, 'name', path)}" if path else backend.id


def _select_traces(db, trace_ids: Optional[list[str]]) -> list[dict]:
    if trace_ids is None:
        return store.rows(db, "SELECT * FROM traces ORDER BY created_at, id")
    marks = ",".join("?" * len(trace_ids))
    return store.rows(db, f"SELECT * FROM traces WHERE id IN ({marks}) ORDER BY created_at, id", trace_ids)


def claim_verdicts(db: sqlite_utils.Database, trace_id: str, kind: str = RESPONSE) -> list[dict]:
    """Each claim of one kind of a trace with its current (newest) judgement."""
    return store.rows(
        db,
        """SELECT c.id AS claim_id, c.ord, c.text, c.kind, j.verdict, j.context_index, j.judge, j.reviewer
           FROM claims c LEFT JOIN judgements j ON j.id = (SELECT MAX(id) FROM judgements WHERE claim_id = c.id)
           WHERE c.trace_id = ? AND c.kind = ? ORDER BY c.ord""",
        [trace_id, kind],
    )


def supported_share(db: sqlite_utils.Database, trace_id: str, kind: str) -> Optional[float]:
    """Supported / judged claims of the kind; None until every one of them has a verdict."""
    verdicts = [c["verdict"] for c in claim_verdicts(db, trace_id, kind)]
    judged = [v for v in verdicts if v in VERDICTS]
    return (sum(v == "supported" for v in judged) / len(judged)) if judged and len(judged) == len(verdicts) else None


def update_score(db: sqlite_utils.Database, trace_id: str) -> Optional[float]:
    """faithfulness = supported / judged claims of the response."""
    score = supported_share(db, trace_id, RESPONSE)
    with db.conn:
        db.execute("UPDATE traces SET faithfulness = ? WHERE id = ?", [score, trace_id])
    return score


def statement_recall(db: sqlite_utils.Database, trace_id: str) -> tuple[Optional[float], str]:
    """Recall from the judged reference statements, and its basis ('none' without any statement)."""
    if not db.execute("SELECT 1 FROM claims WHERE trace_id = ? AND kind = ?", [trace_id, REFERENCE]).fetchone():
        return None, "none"
    return supported_share(db, trace_id, REFERENCE), STATEMENT_BASIS


def update_statement_recall(db: sqlite_utils.Database, trace: dict) -> None:
    """Store the judged recall of a trace whose recall cannot come from ids."""
    with db.conn:
        _store_statement_recall(db, trace)


def _store_statement_recall(db: sqlite_utils.Database, trace: dict) -> None:
    if needs_statements(db, trace):
        recall, basis = statement_recall(db, trace["id"])
        db.execute("UPDATE traces SET context_recall = ?, recall_basis = ? WHERE id = ?",
                   [recall, basis, trace["id"]])


def _rescore(db: sqlite_utils.Database, trace_id: str) -> None:
    """Both scores of a trace after a verdict changed, inside the caller's transaction."""
    db.execute("UPDATE traces SET faithfulness = ? WHERE id = ?", [supported_share(db, trace_id, RESPONSE), trace_id])
    _store_statement_recall(db, store.rows(db, "SELECT * FROM traces WHERE id = ?", [trace_id])[0])


MAX_ID = 2**63 - 1  # SQLite's largest integer: a larger id names no row (and would overflow the driver)


def correct_verdict(db: sqlite_utils.Database, claim_id: int, verdict: str, reviewer: str) -> dict:
    """A reviewer's verdict for a claim: a new judgement row keeping the one it replaces, journaled
    with the review decisions (action ``verdict``), so ``undo`` takes it back like any decision."""
    if verdict not in VERDICTS:
        raise InputError(f"unknown verdict {verdict!r}; use one of: {', '.join(VERDICTS)}")
    found = db.execute("SELECT c.trace_id, c.kind, t.query_id FROM claims c JOIN traces t ON t.id = c.trace_id "
                       "WHERE c.id = ?", [claim_id]).fetchone() if 0 < claim_id <= MAX_ID else None
    if found is None:
        raise InputError(f"no claim with id {claim_id}; 'curator trace PROJECT TRACE_ID' lists a trace's claims.")
    trace_id, kind, query_id = found
    with db.conn:
        previous = store.rows(db, "SELECT verdict, judge, reviewer, context_index FROM judgements WHERE claim_id = ? "
                                  "ORDER BY id DESC LIMIT 1", [claim_id])
        before = previous[0] if previous else None
        judgement = {"claim_id": claim_id, "verdict": verdict, "context_index": before and before["context_index"],
                     "judge": "reviewer", "reviewer": reviewer, "before": store.dumps(before), "at": store.now()}
        judgement_id = _insert_judgement(db, judgement)
        if query_id is not None:  # every imported trace has a query (an unmatched one adds it)
            journal(db, query_id, reviewer, judgement["at"], VERDICT,
                    {"claim_id": claim_id, "trace_id": trace_id, "verdict": before and before["verdict"]},
                    {"claim_id": claim_id, "trace_id": trace_id, "judgement_id": judgement_id, "judgement": judgement})
        _rescore(db, trace_id)
    score, recall, basis = db.execute("SELECT faithfulness, context_recall, recall_basis FROM traces WHERE id = ?",
                                      [trace_id]).fetchone()
    return {"claim_id": claim_id, "trace_id": trace_id, "kind": kind, "verdict": verdict, "before": before,
            "faithfulness": score, "context_recall": recall, "recall_basis": basis}


def _insert_judgement(db: sqlite_utils.Database, judgement: dict) -> int:
    names = ", ".join(judgement)
    marks = ", ".join("?" * len(judgement))
    return db.execute(f"INSERT INTO judgements ({names}) VALUES ({marks})", list(judgement.values())).lastrowid


def restore_verdict(db: sqlite_utils.Database, decision_id: int, undo: bool) -> None:
    """Undo or redo a journaled verdict (called by review.decisions inside its transaction).

    Undo deletes the judgement the correction added, so the claim's verdict is again exactly what
    it was (the judge's, an earlier correction, or none); the journal row keeps what was undone.
    Redo adds it again as the newest judgement, under a new id recorded in the journal row."""
    after = store.loads(db.execute("SELECT after FROM decisions WHERE id = ?", [decision_id]).fetchone()[0])
    if undo:
        db.execute("DELETE FROM judgements WHERE id = ?", [after["judgement_id"]])
    else:
        after["judgement_id"] = _insert_judgement(db, after["judgement"])
        db.execute("UPDATE decisions SET after = ? WHERE id = ?", [store.dumps(after), decision_id])
    _rescore(db, after["trace_id"])
