"""Diagnosis: trace import, ID-based context recall, faithfulness with a scripted judge, the 2x2."""

from __future__ import annotations

import json

import pytest

from curator.core.diagnosis.details import trace_detail
from curator.core.diagnosis.faithfulness import (REFERENCE, STATEMENT_BASIS, claim_verdicts,
                                                 correct_verdict, judge_traces, parse_verdict, split_claims,
                                                 split_statements, unjudged_claims)
from curator.core.diagnosis.quadrants import calibrate, diagnose, mark_trace, quadrant
from curator.core.diagnosis.recall import ChunkMatcher, context_recall
from curator.core.diagnosis.llm_judge import YES_NO_GRAMMAR
from curator.core.diagnosis.traces import import_traces
from curator.core.errors import InputError
from curator.core.generation.backends import FakeBackend
from curator.core.queries.rows import add_query
from curator.core.review.decisions import decide
from scripted import fixed_claim_judge


# -- context recall ---------------------------------------------------------------------------

@pytest.mark.parametrize("reference, retrieved, expected", [
    (["a", "b"], ["b", "c"], 0.5),
    (["a", "b", "c"], ["c", "b", "a", "z"], 1.0),
    (["a", "b", "c"], ["z"], 0.0),
    (["a", "a", "b"], ["a"], 0.5),        # a repeated reference id counts once
    (["a"], [], 0.0),
    ([], ["a"], None),                     # no reference: recall is undefined, not 0 or 1
    (["a", "b", "c", "d"], ["d", "d", "b"], 0.5),
])
def test_id_based_recall_by_hand(reference, retrieved, expected):
    assert context_recall(reference, retrieved) == expected


def test_id_based_recall_matches_ragas():
    ragas_metrics = pytest.importorskip("ragas.metrics")
    from ragas.dataset_schema import SingleTurnSample

    metric = ragas_metrics.IDBasedContextRecall()
    for reference, retrieved in ((["a", "b"], ["b", "c"]), (["a", "b", "c"], ["c"]), (["x"], ["x", "y"])):
        sample = SingleTurnSample(reference_context_ids=reference, retrieved_context_ids=retrieved)
        assert metric.single_turn_score(sample) == pytest.approx(context_recall(reference, retrieved))


def test_texts_are_matched_exact_then_normalised_then_fts(sample_db):
    chunks = [r for r in sample_db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 3")]
    matcher = ChunkMatcher(sample_db)
    (c1, t1), (c2, t2), (c3, t3) = chunks
    assert matcher.match(t1) == {"chunk_id": c1, "how": "exact", "score": 1.0}
    assert matcher.match("  " + t2.upper().replace(" ", "   ") + "!!")["how"] == "normalised"
    cut = " ".join(t3.split()[: max(8, len(t3.split()) // 2)])
    found = matcher.match(cut)
    assert (found["chunk_id"], found["how"]) == (c3, "fts")
    miss = matcher.match("Zebra quasar migration policies for interstellar llamas")
    assert miss["chunk_id"] is None and miss["how"] == "unmatched"


# -- trace import -----------------------------------------------------------------------------

def _gold_query(db, text="How do I rotate an API token?"):
    chunk = db.execute("SELECT id FROM chunks ORDER BY id LIMIT 1").fetchone()[0]
    with db.conn:
        qid = add_query(db, text, "manual", gold_chunk_ids=[chunk])
    decide(db, qid, "approve", "ana")
    return qid, chunk


def _write_jsonl(path, records):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_import_matches_by_id_and_text_keeps_unmatched_and_is_idempotent(sample_db, tmp_path):
    qid, chunk = _gold_query(sample_db)
    other = sample_db.execute("SELECT id FROM chunks ORDER BY id LIMIT 1 OFFSET 5").fetchone()[0]
    path = _write_jsonl(tmp_path / "traces.jsonl", [
        {"query_id": qid, "user_input": "anything", "retrieved_context_ids": [chunk, other], "response": "A. B c d."},
        {"question": "how do i ROTATE an api token", "retrieved_context_ids": [other], "answer": "Rotate it now."},
        {"query": "A question nobody generated", "retrieved_context_ids": [], "response": "No idea at all."},
        "{not json",
        {"response": "no question here"},
    ])
    first = import_traces(sample_db, path)
    assert (first["imported"], first["matched_by_id"], first["matched_by_text"], first["unmatched"]) == (3, 1, 1, 1)
    assert first["skipped"] == 2
    assert first["errors"][0].startswith(f"{path}:4: ") and first["errors"][1].startswith(f"{path}:5: no question")
    recalls = dict(sample_db.execute("SELECT matched_by, context_recall FROM traces"))
    assert recalls == {"query_id": 1.0, "text": 0.0, "none": None}
    log = sample_db.execute("SELECT source, status FROM queries WHERE text = 'A question nobody generated'").fetchall()
    assert log == [("log", "pending")]  # reviewable into the gold set
    before = sample_db.execute("SELECT COUNT(*) FROM queries").fetchone()[0]
    again = import_traces(sample_db, path)
    assert (again["imported"], again["unchanged"]) == (0, 3)
    assert sample_db.execute("SELECT COUNT(*) FROM traces").fetchone()[0] == 3
    assert sample_db.execute("SELECT COUNT(*) FROM queries").fetchone()[0] == before


def test_csv_traces_with_ragas_list_literals_and_text_contexts(sample_db, tmp_path):
    qid, chunk = _gold_query(sample_db)
    text = sample_db.execute("SELECT text FROM chunks WHERE id = ?", [chunk]).fetchone()[0]
    path = tmp_path / "traces.csv"
    import csv

    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["user_input", "retrieved_contexts", "response", "reference"])
        writer.writerow(["How do I rotate an API token?", repr([text, "Unrelated passage about llamas."]),
                         "Tokens rotate.", "Rotate it."])
        writer.writerow(["How do I rotate an API token?", "[broken", "x", "y"])
    result = import_traces(sample_db, path)
    assert result["imported"] == 1 and result["skipped"] == 1 and f"{path}:3:" in result["errors"][0]
    matches, recall = sample_db.execute("SELECT context_matches, context_recall FROM traces").fetchone()
    assert [m["how"] for m in json.loads(matches)] == ["exact", "unmatched"]
    assert recall == 1.0


@pytest.mark.parametrize("content", [
    b"", b"\x00\x01\x02binary\xff\xfe", b'[1, 2, 3]\n"just a string"\nnull\n',
    b'{"user_input": 5, "response": "x"}\n', b'{"user_input": "q", "response": ["list"]}\n',
    b'{"user_input": "q", "retrieved_context_ids": {"a": 1}}\n',
    b'{"user_input": "q", "retrieved_context_ids": "[' + b"[" * 5000 + b'"}\n',
    b'{"user_input": "' + b"w " * 200_000 + b'", "response": "fine."}\n',
])
def test_hostile_trace_files_never_abort_or_corrupt(sample_db, tmp_path, content):
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(content)
    try:
        result = import_traces(sample_db, path)
    except InputError as exc:  # an unreadable file is one clear error naming it
        assert str(path) in str(exc)
        return
    assert result["imported"] + result["skipped"] <= max(1, content.count(b"\n") + 1)
    assert all(str(path) in e for e in result["errors"])
    assert sample_db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_missing_file_is_one_clear_error(sample_db, tmp_path):
    with pytest.raises(InputError, match="no such traces file"):
        import_traces(sample_db, tmp_path / "nope.jsonl")


# -- faithfulness -----------------------------------------------------------------------------

def test_claims_are_sentences_of_three_words_or_more():
    text = "Python was created by Guido, e.g. in 1991. Yes. It is used widely! Is it fast? Not always so fast."
    assert split_claims(text) == ["Python was created by Guido, e.g. in 1991.", "It is used widely!",
                                  "Not always so fast."]
    assert split_claims("") == []


@pytest.mark.parametrize("reply, verdict", [("supported", "supported"), ("not supported", "not supported"),
                                            (" Supported.", "supported"), ("NOT_SUPPORTED", "not supported"),
                                            ("unsupported", "not supported"), ("maybe", None), ("", None),
                                            ("Yes.", "supported"), ("no", "not supported")])
def test_verdicts_parsed(reply, verdict):
    assert parse_verdict(reply) == verdict


def _judged_project(db, tmp_path, judge_reply):
    qid, chunk = _gold_query(db)
    path = _write_jsonl(tmp_path / "t.jsonl", [
        {"query_id": qid, "user_input": "q", "retrieved_context_ids": [chunk],
         "response": "Tokens are rotated weekly by admins. The moon is made of cheese. Keys never expire at all."}])
    import_traces(db, path)
    backend = FakeBackend(judge_reply, parallel=3)
    return judge_traces(db, backend), backend


def test_scripted_judge_scores_and_stores_every_judgement(sample_db, tmp_path):
    reply = lambda messages: "not supported" if "cheese" in messages[-1]["content"].split("Claim:")[1] else "supported"
    summary, backend = _judged_project(sample_db, tmp_path, reply)
    assert summary["claims_judged"] == 3 and summary["unparsed"] == 0
    assert backend.peak_in_flight == 3  # batched through iter_complete
    trace_id, score = sample_db.execute("SELECT id, faithfulness FROM traces").fetchone()
    assert score == pytest.approx(2 / 3)
    claims = claim_verdicts(sample_db, trace_id)
    assert [c["verdict"] for c in claims] == ["supported", "not supported", "supported"]
    assert all(c["context_index"] == 1 for c in claims)
    assert backend.prompts[0][-1]["content"].startswith("Context:\n")  # the context first, the claim last
    assert unjudged_claims(sample_db) == 0
    again = judge_traces(sample_db, FakeBackend(["supported"]))
    assert again["claims_judged"] == 0  # judged claims are not asked again


def test_responses_without_claims_need_no_judge(sample_db, tmp_path):
    import_traces(sample_db, _write_jsonl(tmp_path / "y.jsonl", [{"user_input": "Is it on?", "response": "Yes."},
                                                                 {"user_input": "Is it off?", "response": ""}]))
    assert unjudged_claims(sample_db) == 0
    import_traces(sample_db, _write_jsonl(tmp_path / "z.jsonl", [{"user_input": "Why?", "response": "It is off now."}]))
    assert unjudged_claims(sample_db) == 1


def test_unparsed_reply_leaves_the_trace_unscored(sample_db, tmp_path):
    summary, _ = _judged_project(sample_db, tmp_path, ["supported", "I think so", "supported"])
    assert summary["unparsed"] == 1
    assert sample_db.execute("SELECT faithfulness FROM traces").fetchone()[0] is None


def test_reviewer_correction_is_journaled_and_rescores(sample_db, tmp_path):
    _judged_project(sample_db, tmp_path, ["supported"])
    claim_id = sample_db.execute("SELECT id FROM claims WHERE text LIKE '%cheese%'").fetchone()[0]
    result = correct_verdict(sample_db, claim_id, "not supported", "ana")
    assert result["before"]["verdict"] == "supported" and result["faithfulness"] == pytest.approx(2 / 3)
    rows = sample_db.execute("SELECT verdict, judge, reviewer FROM judgements WHERE claim_id = ? ORDER BY id",
                             [claim_id]).fetchall()
    assert rows == [("supported", "llm-judge:fake", None), ("not supported", "reviewer", "ana")]
    with pytest.raises(InputError):
        correct_verdict(sample_db, claim_id, "maybe", "ana")
    with pytest.raises(InputError):
        correct_verdict(sample_db, 99999, "supported", "ana")


# -- recall from the reference answer, where no ids can be had -----------------------------

def _statement_reply(messages):
    """A scripted judge: 'supported' when the claim's words are all in the passages."""
    content = messages[-1]["content"]
    passages, claim = content.split("\n\nClaim: ")
    claim = claim.split("\n\n")[0]
    words = [w.strip(".,").lower() for w in claim.split()]
    return "supported" if all(w in passages.lower() for w in words) else "not supported"


def test_texts_only_trace_without_gold_gets_recall_from_judged_reference_statements(sample_db, tmp_path):
    path = _write_jsonl(tmp_path / "texts.jsonl", [{
        "user_input": "Who rotates the keys?",
        "retrieved_contexts": ["Keys are rotated weekly by the admins.", "The office opens at nine."],
        "response": "Keys are rotated weekly by the admins.",
        "reference": "Keys are rotated weekly. Only admins hold the master passphrase."}])
    import_traces(sample_db, path)
    tid, recall = sample_db.execute("SELECT id, context_recall FROM traces").fetchone()
    assert recall is None  # no gold ids: recall waits for the judge, it is not 0
    assert unjudged_claims(sample_db) == 1 + 2  # one response claim, two reference statements
    summary = judge_traces(sample_db, FakeBackend(_statement_reply))
    assert summary["claims_judged"] == 3
    statements = claim_verdicts(sample_db, tid, REFERENCE)
    assert [s["verdict"] for s in statements] == ["supported", "not supported"]
    assert [c["verdict"] for c in claim_verdicts(sample_db, tid)] == ["supported"]  # the response's own
    report = diagnose(sample_db)
    row = report["traces"][0]
    assert (row["context_recall"], row["faithfulness"], row["quadrant"]) == (0.5, 1.0, "healthy")
    assert sample_db.execute("SELECT recall_basis FROM traces").fetchone()[0] == STATEMENT_BASIS
    detail = trace_detail(sample_db, tid)
    assert detail["recall_basis"] == STATEMENT_BASIS and len(detail["statements"]) == 2
    # a reviewer's correction of a statement moves recall and is journaled like any verdict
    correct_verdict(sample_db, statements[1]["claim_id"], "supported", "ana")
    assert sample_db.execute("SELECT context_recall FROM traces").fetchone()[0] == 1.0
    assert unjudged_claims(sample_db) == 0
    with sample_db.conn:  # a stale stored copy: the detail shows recall as the statements stand now
        sample_db.execute("UPDATE traces SET context_recall = 0.25")
    assert trace_detail(sample_db, tid)["context_recall"] == 1.0


def test_unmatched_texts_with_gold_use_the_approved_rows_reference(sample_db, tmp_path):
    chunk = sample_db.execute("SELECT id FROM chunks ORDER BY id LIMIT 1").fetchone()[0]
    with sample_db.conn:
        qid = add_query(sample_db, "How often are keys rotated?", "manual", gold_chunk_ids=[chunk],
                        reference="Weekly.")
    decide(sample_db, qid, "approve", "ana")
    # the system's chunking differs from the project's: no retrieved text matches a chunk
    path = _write_jsonl(tmp_path / "other.jsonl", [{
        "query_id": qid, "user_input": "x", "retrieved_contexts": ["Zebra quasar note: rotation happens weekly."],
        "response": ""}])
    import_traces(sample_db, path)
    assert sample_db.execute("SELECT context_recall FROM traces").fetchone()[0] is None  # not a false 0.0
    judge_traces(sample_db, FakeBackend(_statement_reply))
    tid = sample_db.execute("SELECT id FROM traces").fetchone()[0]
    assert [s["text"] for s in claim_verdicts(sample_db, tid, REFERENCE)] == ["Weekly."]  # short answer: one statement
    assert diagnose(sample_db)["traces"][0]["context_recall"] == 1.0


def test_traces_with_ids_never_ask_the_judge_for_recall(sample_db, tmp_path):
    qid, chunk = _gold_query(sample_db)
    import_traces(sample_db, _write_jsonl(tmp_path / "ids.jsonl", [{
        "query_id": qid, "user_input": "q", "retrieved_context_ids": [chunk], "response": "",
        "reference": "Tokens are rotated weekly by admins."}]))
    assert unjudged_claims(sample_db) == 0
    assert sample_db.execute("SELECT context_recall FROM traces").fetchone()[0] == 1.0


def test_statements_of_a_reference():
    assert split_statements("Use pip.") == ["Use pip."]
    assert split_statements("Rotate keys weekly. Admins hold the passphrase.") == [
        "Rotate keys weekly.", "Admins hold the passphrase."]
    assert split_statements("  ") == [] and split_statements("") == []


def test_bundled_model_judges_with_grammar(sample_db, tmp_path, bundled_model):
    from curator.core.generation.backends import open_backend

    qid, chunk = _gold_query(sample_db)
    text = sample_db.execute("SELECT text FROM chunks WHERE id = ?", [chunk]).fetchone()[0]
    first = " ".join(text.split()[:12]) + "."
    path = _write_jsonl(tmp_path / "t.jsonl", [
        {"query_id": qid, "user_input": "q", "retrieved_context_ids": [chunk],
         "response": f"{first} The moon is made of green cheese."}])
    import_traces(sample_db, path)
    claims = len(split_claims(f"{first} The moon is made of green cheese."))
    summary = judge_traces(sample_db, open_backend(bundled_model, parallel=2))
    assert claims >= 2 and summary["claims_judged"] == claims
    assert summary["unparsed"] == 0  # the grammar allows only the two verdicts
    verdicts = [c["verdict"] for c in claim_verdicts(sample_db, sample_db.execute("SELECT id FROM traces").fetchone()[0])]
    assert set(verdicts) <= {"supported", "not supported"}
    score = sample_db.execute("SELECT faithfulness FROM traces").fetchone()[0]
    assert score == verdicts.count("supported") / claims
    assert YES_NO_GRAMMAR.startswith("root ::=")


def test_bundled_model_judges_reference_statements_into_recall(sample_db, tmp_path, bundled_model):
    """A texts-only trace with no gold: the real judge's verdicts on the reference statements are
    the trace's recall, stored and shown with their basis."""
    from curator.core.generation.backends import open_backend

    path = _write_jsonl(tmp_path / "texts.jsonl", [{
        "user_input": "Who rotates the keys?",
        "retrieved_contexts": ["Keys are rotated weekly by the admins."],
        "response": "The admins rotate the keys weekly.",
        "reference": "Keys are rotated weekly by the admins. The moon is made of green cheese."}])
    import_traces(sample_db, path)
    summary = judge_traces(sample_db, open_backend(bundled_model, parallel=2))
    assert summary["unparsed"] == 0 and unjudged_claims(sample_db) == 0
    tid, recall, basis = sample_db.execute("SELECT id, context_recall, recall_basis FROM traces").fetchone()
    verdicts = [s["verdict"] for s in claim_verdicts(sample_db, tid, REFERENCE)]
    assert len(verdicts) == 2 and set(verdicts) <= {"supported", "not supported"}
    assert basis == STATEMENT_BASIS and recall == verdicts.count("supported") / 2
    assert trace_detail(sample_db, tid)["context_recall"] == recall


# -- the 2x2 ----------------------------------------------------------------------------------

@pytest.mark.parametrize("recall, faith, expected", [
    (0.5, 0.7, "healthy"),                 # equal to a threshold counts as high (the seed's `<`)
    (0.4999, 0.7, "retrieval_failure"),
    (0.5, 0.6999, "generation_failure"),
    (0.4999, 0.6999, "both_broken"),
    (1.0, 1.0, "healthy"), (0.0, 0.0, "both_broken"),
    (None, 1.0, "unscored"), (1.0, None, "unscored"),
])
def test_quadrant_edges(recall, faith, expected):
    assert quadrant(recall, faith) == expected


def test_custom_thresholds_move_the_edges():
    assert quadrant(0.6, 0.8, recall_threshold=0.7) == "retrieval_failure"
    assert quadrant(0.6, 0.8, faith_threshold=0.9) == "generation_failure"


def _scored_traces(db, tmp_path, rows):
    """Traces with given (recall via ids, faithfulness via a scripted judge) values."""
    chunks = [r[0] for r in db.execute("SELECT id FROM chunks ORDER BY id LIMIT 4")]
    records = []
    for i, (hits, supported) in enumerate(rows):
        with db.conn:
            qid = add_query(db, f"Question number {i} about tokens", "manual", gold_chunk_ids=chunks[:2],
                            query_type="factoid" if i % 2 else "keyword")
        decide(db, qid, "approve", "ana")
        response = " ".join(f"Claim {'ok' if j < supported else 'bad'} number {j}." for j in range(2))
        records.append({"query_id": qid, "user_input": f"x{i}", "retrieved_context_ids": chunks[:hits] + chunks[3:],
                        "response": response})
    import_traces(db, _write_jsonl(tmp_path / "s.jsonl", records))
    judge_traces(db, FakeBackend(lambda m: "supported" if "Claim: Claim ok" in m[-1]["content"] else "not supported"))


def test_diagnose_counts_slices_and_routes_the_biggest_failure(sample_db, tmp_path):
    # (gold hits of 2, supported claims of 2): recall 1/0.5/0, faithfulness 1/0.5/0
    _scored_traces(sample_db, tmp_path, [(2, 2), (0, 2), (0, 2), (0, 2), (2, 0), (0, 0), (1, 1)])
    report = diagnose(sample_db)
    assert report["counts"] == {"healthy": 1, "retrieval_failure": 3, "generation_failure": 2, "both_broken": 1}
    assert report["by_query_type"]["keyword"] == {"healthy": 1, "retrieval_failure": 1, "generation_failure": 2}
    assert report["by_query_type"]["factoid"] == {"retrieval_failure": 2, "both_broken": 1}
    big = report["biggest_failure"]
    assert big["text"] == ("cluster '(no cluster)': 3 of 6 wrong answers are retrieval failures faithful to bad "
                           "context: fix the retriever")
    strict = diagnose(sample_db, recall_threshold=0.6)
    assert strict["counts"]["both_broken"] == 2  # the (0.5, 0.5) trace falls below the raised edge


def test_calibration_finds_thresholds_that_separate_the_marks(sample_db, tmp_path):
    _scored_traces(sample_db, tmp_path, [(2, 2), (1, 2), (2, 1), (0, 2)])
    ids = {round(r[1], 2): r[0] for r in sample_db.execute("SELECT id, context_recall + faithfulness * 10 FROM traces")}
    # the reviewer calls (recall 0.5, faith 1) wrong: the default recall edge 0.5 calls it healthy
    for key, label in ((11.0, "right"), (10.5, "wrong"), (6.0, "right"), (10.0, "wrong")):
        mark_trace(sample_db, ids[key], label, "ana")
    cal = diagnose(sample_db)["calibration"]
    assert cal["labelled"] == 4 and cal["agreement"] == 1.0 and cal["default_agreement"] == 0.5
    assert 0.5 < cal["recall_threshold"] <= 1.0 and cal["faith_threshold"] <= 0.5
    assert calibrate([]) is None
    with pytest.raises(InputError):
        mark_trace(sample_db, "t_missing", "wrong", "ana")


def test_calibration_counts_the_traces_that_would_change_quadrant(sample_db, tmp_path):
    _scored_traces(sample_db, tmp_path, [(2, 2), (1, 2), (2, 1), (0, 2), (1, 2)])
    ids = {round(r[1], 2): r[0] for r in sample_db.execute("SELECT id, context_recall + faithfulness * 10 FROM traces")}
    for key, label in ((11.0, "right"), (6.0, "right"), (10.0, "wrong")):
        mark_trace(sample_db, ids[key], label, "ana")
    mark_trace(sample_db, sample_db.execute("SELECT id FROM traces WHERE context_recall = 0.5").fetchone()[0], "wrong",
               "ana")
    cal = diagnose(sample_db)["calibration"]
    # the marks move the recall edge above 0.5 and the faithfulness edge to 0.5 or below: both (recall
    # 0.5, faith 1) traces leave 'healthy', the unmarked one too, and (recall 1, faith 0.5) becomes healthy
    moves = sorted((m["from"], m["to"]) for m in cal["moves"])
    assert cal["changes"] == 3 and moves == [("generation_failure", "healthy"), ("healthy", "retrieval_failure"),
                                             ("healthy", "retrieval_failure")]
    assert "3 of 5 scored traces would change quadrant" in cal["text"]
    assert diagnose(sample_db, recall_threshold=cal["recall_threshold"],
                    faith_threshold=cal["faith_threshold"])["calibration"]["changes"] == 0


# A routing table as bench/diagnose_route.py writes one: the default judge reliable below 0.1 and from 0.9.
FIXED_ROUTING = {"reliable_below": 0.1, "reliable_above": 0.9,
                 "bins": [[0.0, 0.1, 40, 0.97], [0.1, 0.9, 60, 0.7], [0.9, 1.0, 40, 0.96]]}


def test_default_judge_first_then_the_llm_only_outside_its_reliable_region(sample_db, tmp_path, monkeypatch):
    from curator.core.diagnosis import routing

    monkeypatch.setattr(routing, "load_routing", lambda path=None: FIXED_ROUTING)
    qid, chunk = _gold_query(sample_db)
    import_traces(sample_db, _write_jsonl(tmp_path / "t.jsonl", [
        {"query_id": qid, "user_input": "q", "retrieved_context_ids": [chunk],
         "response": "Tokens are rotated weekly by admins. The moon is made of cheese. Keys never expire at all."}]))
    judge = fixed_claim_judge({"Tokens": 0.95, "cheese": 0.6, "Keys": 0.05})
    llm = FakeBackend(["not supported"])
    summary = judge_traces(sample_db, llm, judge=judge)
    assert summary["by_default_judge"] == 3 and summary["by_llm"] == 1
    assert len(llm.prompts) == 1 and "cheese" in llm.prompts[0][-1]["content"].split("Claim:")[1]
    trace_id = sample_db.execute("SELECT id FROM traces").fetchone()[0]
    claims = claim_verdicts(sample_db, trace_id)
    assert [c["verdict"] for c in claims] == ["supported", "not supported", "not supported"]
    assert [c["judge"] for c in claims] == ["claim-judge:1", "llm-judge:fake", "claim-judge:1"]
    assert [c["judged_by"] for c in claims] == ["default judge", "LLM judge", "default judge"]
    assert [c["agreement"] for c in claims] == [0.96, None, 0.97]  # per bin; a fake LLM is not measured
    assert [c["unsure"] for c in claims] == [False, True, False]
    assert [c["probability"] for c in claims] == [0.95, 0.6, 0.05]  # the default judge's, kept under the LLM's
    assert all(c["evidence"] for c in claims)
    assert sample_db.execute("SELECT faithfulness FROM traces").fetchone()[0] == pytest.approx(1 / 3)
    again = judge_traces(sample_db, FakeBackend(["supported"]), judge=judge)
    assert again["by_default_judge"] == 0 and again["by_llm"] == 0  # nothing judged twice
    assert trace_detail(sample_db, trace_id)["claim_split"][0]["claims"][0]["rule"] == "sentence"


def test_trace_detail_keeps_each_retrieved_id_at_its_rank_when_one_is_unknown(sample_db, tmp_path):
    """An id the corpus lacks was dropped from the texts only, so later ranks showed the wrong text."""
    (c1, t1), (c2, t2) = sample_db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 2")
    path = _write_jsonl(tmp_path / "ids.jsonl", [{
        "user_input": "q", "reference_context_ids": [c2], "retrieved_context_ids": [c1, "c_gone", c2],
        "response": "r"}])
    import_traces(sample_db, path)
    tid = sample_db.execute("SELECT id FROM traces").fetchone()[0]
    ranks = [(r["rank"], r["chunk_id"], r["text"], r["gold"], r["matched"])
             for r in trace_detail(sample_db, tid)["retrieved"]]
    assert ranks == [(1, c1, t1, False, "id"), (2, "c_gone", "(not in this corpus)", False, "unknown id"),
                     (3, c2, t2, True, "id")]
