"""Faithfulness of a trace's response: the share of its claims the retrieved contexts support.

Claims: the response split into sentences and coordinated clauses by rules (claims.py), shown
with the rule that cut each one; no LLM is asked to decompose (a 135M model returns malformed lists).
Verdicts, in two passes:
- the default judge (judge.ClaimJudge: evidence sentence, features, fitted logistic regression)
  judges every claim; its row keeps the probability, the evidence sentence, the reasons, whether
  the probability lies in the region where it is measured reliable (routing.reliable) and its
  measured agreement there, in ``raw`` (JSON), and its ``context_index`` names the context holding
  the evidence;
- an LLM judge, only when one is given (a user's GGUF or endpoint), judges the claims outside
  that region (or every claim, ``every_claim``): llm_judge.LlmJudge, the model's calibrated
  probability of "yes" from its token log-probabilities, the sampled yes/no where an endpoint
  gives none. Its row is newer, so its verdict counts.
The bundled 135M model is not a judge by default: on the held-out claims it does no better than
chance (docs/diagnose.md). Every judgement is a ``judgements`` row; a reviewer's correction is a
new row holding the verdict it replaced, so it is journaled.

Where context recall cannot be had from chunk ids (recall.uses_ids), the same judge checks the
statements of the trace's reference answer (its own ``reference``, else its approved gold row's)
against the contexts: recall = supported statements / statements, RAGAS's LLM context recall.
Those statements are claims of kind 'reference', judged and corrected like the response's.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterator, Optional

import sqlite_utils

from curator.core import store
from curator.core.corpus.documents import chunk_texts
from curator.core.errors import InputError
from curator.core.generation.backends import Backend
from curator.core.diagnosis.claims import split_claims, split_statements  # noqa: F401 (importable from here too)
from curator.core.diagnosis.judge import JUDGE_ID, ClaimJudge
from curator.core.diagnosis.llm_judge import LLM_JUDGE_ID, LlmJudge, parse_yes_no as parse_verdict  # noqa: F401
from curator.core.diagnosis.routing import agreement, reliable
from curator.core.diagnosis.recall import coverage, uses_ids
from curator.core.diagnosis.traces import trace_gold
from curator.core.review.decisions import VERDICT, journal, rescore_traces_with

VERDICTS = ("supported", "not supported")
RESPONSE, REFERENCE = "response", "reference"  # the two kinds of claim
STATEMENT_BASIS = "reference statements (judge)"


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


def _unjudged(db, trace: dict) -> list[tuple[int, str]]:
    """The trace's claims (split on first need) that have no judgement yet, so a run resumes."""
    return [(cid, text) for cid, text in _ensure_claims(db, trace)
            if not db.execute("SELECT 1 FROM judgements WHERE claim_id = ?", [cid]).fetchone()]


def _insert_verdict(db, claim_id: int, verdict: str, context_index, judge: str, raw: str) -> None:
    with db.conn:
        db.execute("INSERT INTO judgements (claim_id, verdict, context_index, judge, raw, at) VALUES (?,?,?,?,?,?)",
                   [claim_id, verdict, context_index, judge, raw, store.now()])


def _default_pass(db, traces: list[dict], judge: ClaimJudge, on_progress) -> int:
    """The default judge on every unjudged claim; each trace's verdicts commit together."""
    done = 0
    for trace in traces:
        pending = _unjudged(db, trace)
        if not pending:
            continue
        verdicts = judge.judge([text for _, text in pending], trace_contexts(db, trace))
        for (claim_id, _), v in zip(pending, verdicts):
            raw = store.dumps({"probability": v["probability"], "evidence": v["evidence"], "reasons": v["reasons"],
                               "reliable": reliable(v["probability"]), "agreement": agreement(v["probability"])})
            _insert_verdict(db, claim_id, v["verdict"], v["context_index"], judge.id, raw)
        done += len(pending)
        if on_progress:
            on_progress(done, 0, trace["id"])
    return done


def _unsure_claims(db, trace: dict) -> list[tuple[int, str, Optional[int]]]:
    """Claims whose newest verdict is the default judge's, outside the region where it is measured
    reliable: the ones an LLM judge checks."""
    rows = db.execute(
        """SELECT c.id, c.text, j.context_index, j.raw FROM claims c
           JOIN judgements j ON j.id = (SELECT MAX(id) FROM judgements WHERE claim_id = c.id)
           WHERE c.trace_id = ? AND j.judge LIKE ? ORDER BY c.ord""", [trace["id"], JUDGE_ID + "%"]).fetchall()
    return [(cid, text, index) for cid, text, index, raw in rows
            if not reliable(store.loads(raw, {"probability": 0.5})["probability"])]


def _llm_items(db, traces: list[dict], every_claim: bool, after_default: bool) -> Iterator[tuple]:
    """(tag, contexts, claim) for each claim the LLM judges, a trace's claims together: the unjudged
    ones, or (after the default judge) the ones outside its reliable region, or all of them."""
    for trace in traces:
        contexts = trace_contexts(db, trace)
        if every_claim and after_default:
            todo = _default_judged(db, trace)
        elif after_default:
            todo = _unsure_claims(db, trace)
        else:
            todo = [(cid, text, relied_on(contexts, text)) for cid, text in _unjudged(db, trace)]
        for claim_id, text, context_index in todo:
            yield (trace["id"], claim_id, context_index), contexts, text


def _default_judged(db, trace: dict) -> list[tuple[int, str, Optional[int]]]:
    """Claims whose newest verdict is the default judge's (every one it judged, none a reviewer set)."""
    return db.execute(
        """SELECT c.id, c.text, j.context_index FROM claims c
           JOIN judgements j ON j.id = (SELECT MAX(id) FROM judgements WHERE claim_id = c.id)
           WHERE c.trace_id = ? AND j.judge LIKE ? ORDER BY c.ord""", [trace["id"], JUDGE_ID + "%"]).fetchall()


def _llm_pass(db, traces: list[dict], llm: LlmJudge, every_claim: bool, after_default: bool,
              on_progress) -> tuple[int, int]:
    done = unparsed = 0
    for (trace_id, claim_id, context_index), verdict in llm.judge(list(_llm_items(db, traces, every_claim,
                                                                                   after_default))):
        unparsed += verdict["verdict"] == "unparsed"
        _insert_verdict(db, claim_id, verdict["verdict"], context_index, llm.id,
                        store.dumps({**verdict, "agreement": llm.agreement()}))
        done += 1
        if on_progress:
            on_progress(done, 0, trace_id)
    return done, unparsed


def judge_traces(db: sqlite_utils.Database, backend: Optional[Backend] = None, trace_ids: Optional[list[str]] = None,
                 on_progress: Optional[Callable[[int, int, str], None]] = None,
                 judge: Optional[ClaimJudge] = None, every_claim: bool = False,
                 llm: Optional[LlmJudge] = None) -> dict:
    """Judge every unjudged claim of the traces (all by default); each verdict commits at once.

    With ``judge`` (the default judge) every claim gets its verdict, and a ``backend`` (an LLM judge,
    or ``llm`` ready made) then judges the claims outside the default judge's reliable region, or
    every claim it judged with ``every_claim``; with a backend alone, the LLM judges every claim."""
    traces = _select_traces(db, trace_ids)
    by_default = _default_pass(db, traces, judge, on_progress) if judge else 0
    llm = llm or (LlmJudge(backend) if backend else None)
    by_llm, unparsed = _llm_pass(db, traces, llm, every_claim, judge is not None, on_progress) if llm else (0, 0)
    for trace in traces:
        update_score(db, trace["id"])
        update_statement_recall(db, trace)
    names = [n for n, used in ((judge and judge.id, judge), (llm and llm.id, llm)) if used]
    summary = {"traces": len(traces), "claims_judged": by_default or by_llm, "by_default_judge": by_default,
               "by_llm": by_llm, "unparsed": unparsed, "judge": " + ".join(names) or "none"}
    if llm:
        summary.update(llm_method="log-probabilities" if llm.logprobs else "sampled yes/no (no log-probabilities)",
                       llm_cache_hits=llm.hits, llm_seconds=round(llm.seconds, 2))
    return summary


def unjudged_claims(db: sqlite_utils.Database) -> int:
    """Claims without a verdict plus the claims not split yet (a response with no claim, such
    as "Yes.", counts none, so it never makes the judge model load)."""
    claims = db.execute("SELECT COUNT(*) FROM claims c WHERE NOT EXISTS "
                        "(SELECT 1 FROM judgements j WHERE j.claim_id = c.id)").fetchone()[0]
    unsplit = sum(len(texts) for trace in store.rows(db, "SELECT * FROM traces")
                  for texts in _missing_claims(db, trace).values())
    return claims + unsplit


def _select_traces(db, trace_ids: Optional[list[str]]) -> list[dict]:
    if trace_ids is None:
        return store.rows(db, "SELECT * FROM traces ORDER BY created_at, id")
    marks = ",".join("?" * len(trace_ids))
    return store.rows(db, f"SELECT * FROM traces WHERE id IN ({marks}) ORDER BY created_at, id", trace_ids)


def claim_verdicts(db: sqlite_utils.Database, trace_id: str, kind: str = RESPONSE) -> list[dict]:
    """Each claim of one kind of a trace with its current (newest) judgement, and the default
    judge's evidence sentence, probability of 'supported' and reasons (None where it did not judge)."""
    rows = store.rows(
        db,
        """SELECT c.id AS claim_id, c.ord, c.text, c.kind, j.verdict, j.context_index, j.judge, j.reviewer,
                  j.raw AS verdict_raw, d.raw AS default_raw
           FROM claims c LEFT JOIN judgements j ON j.id = (SELECT MAX(id) FROM judgements WHERE claim_id = c.id)
           LEFT JOIN judgements d ON d.id = (SELECT MAX(id) FROM judgements WHERE claim_id = c.id AND judge LIKE ?)
           WHERE c.trace_id = ? AND c.kind = ? ORDER BY c.ord""",
        [JUDGE_ID + "%", trace_id, kind],
    )
    for row in rows:
        found = store.loads(row.pop("default_raw"), None) or {}
        said = store.loads(row.pop("verdict_raw"), None) if row["judge"] != "reviewer" else None
        row.update({"probability": found.get("probability"), "evidence": found.get("evidence"),
                    "reasons": found.get("reasons", []), **verdict_origin(row["judge"], found, said or {})})
    return rows


def verdict_origin(judge: Optional[str], default: dict, said: dict) -> dict:
    """Who made a claim's verdict and how far it is trusted: ``judged_by`` (default judge, LLM
    judge, reviewer), ``agreement`` (the measured agreement with human labels of that judge on
    claims like this one: the default judge's per probability bin, the LLM's balanced accuracy on
    held-out sets; None when not measured), ``unsure`` (the default judge's probability lies outside
    the region where it is measured reliable) and the LLM's probability and method."""
    kind = ("reviewer" if judge == "reviewer" else "default judge" if (judge or "").startswith(JUDGE_ID)
            else "LLM judge" if judge else None)
    out = {"judged_by": kind, "agreement": said.get("agreement") if kind != "reviewer" else None,
           "unsure": (not reliable(default["probability"])) if default.get("probability") is not None else None,
           "llm_probability": said.get("probability") if kind == "LLM judge" else None,
           "llm_method": said.get("method") if kind == "LLM judge" else None}
    if kind == "default judge" and out["agreement"] is None and default.get("probability") is not None:
        out["agreement"] = agreement(default["probability"])  # a verdict stored before routing was measured
    return out


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


rescore_traces_with(_rescore)  # undo and redo of a verdict (review.decisions) rescore the trace with it


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
        scores_before = _scores(db, trace_id)
        judgement_id = db.execute(f"INSERT INTO judgements ({', '.join(judgement)}) "
                                  f"VALUES ({', '.join('?' * len(judgement))})", list(judgement.values())).lastrowid
        _rescore(db, trace_id)
        scores = _scores(db, trace_id)
        if query_id is not None:  # every imported trace has a query (an unmatched one adds it)
            journal(db, query_id, reviewer, judgement["at"], VERDICT,
                    {"claim_id": claim_id, "trace_id": trace_id, "verdict": before and before["verdict"],
                     "scores": scores_before},
                    {"claim_id": claim_id, "trace_id": trace_id, "judgement_id": judgement_id, "judgement": judgement,
                     "scores": scores})
    return {"claim_id": claim_id, "trace_id": trace_id, "kind": kind, "verdict": verdict, "before": before, **scores}


def _scores(db: sqlite_utils.Database, trace_id: str) -> dict:
    """The trace's stored scores, as the journal keeps them for undo."""
    return store.rows(db, "SELECT faithfulness, context_recall, recall_basis FROM traces WHERE id = ?", [trace_id])[0]


UNSURE_LISTED = 50  # unsure claims listed by name in the report (all are counted)


def judge_summary(db: sqlite_utils.Database) -> dict:
    """Who made the current verdicts and how far to trust them: verdicts per judge, the default
    judge's verdicts outside its reliable region ("unsure", listed), and how many of its verdicts
    are expected to be wrong, from its measured agreement on labelled claims like these."""
    claims = [c for (tid,) in db.execute("SELECT id FROM traces ORDER BY created_at, id")
              for kind in (RESPONSE, REFERENCE) for c in ({**v, "trace_id": tid} for v in claim_verdicts(db, tid, kind))]
    by_judge = dict(Counter(c["judged_by"] or "unjudged" for c in claims))
    alone = [c for c in claims if c["judged_by"] == "default judge"]
    unsure = [c for c in alone if c["unsure"]]
    wrong = round(sum(1 - (c["agreement"] if c["agreement"] is not None else 0.5) for c in alone), 1)
    listed = [{k: c[k] for k in ("claim_id", "trace_id", "kind", "text", "verdict", "probability", "agreement")}
              for c in unsure[:UNSURE_LISTED]]
    text = (f"{len(claims)} claims: " + ", ".join(f"{n} by the {j}" if j != "unjudged" else f"{n} unjudged"
                                                 for j, n in sorted(by_judge.items())))
    if alone:
        text += (f"; of the default judge's {len(alone)} verdicts about {wrong:g} are expected to be wrong "
                 f"(its measured agreement on labelled claims like these); unsure verdicts: {len(unsure)}")
        text += " (an LLM judge, --judge-model, checks those)" if unsure else ""
    return {"claims": len(claims), "by_judge": by_judge, "default_expected_wrong": wrong, "unsure": len(unsure),
            "unsure_claims": listed, "text": text}
