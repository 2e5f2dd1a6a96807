"""Questions written like users write them: examples from real queries, the built-in examples that
copy no answer, the overlap cap calibrated on real questions, and what the run record keeps."""

from __future__ import annotations

import json

import pytest

from curator.core import store
from curator.core.generation import examples, filters, prompts
from curator.core.generation.backends import FakeBackend
from curator.core.generation import checks
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.queries import realism
from curator.core.queries.logs import import_log
from curator.core.resources import resources_dir
from curator.core.review.decisions import decide


def _import_sample_log(db) -> list[str]:
    import_log(db, resources_dir() / "sample_logs" / "queries.jsonl")
    return [r[0] for r in db.execute("SELECT id FROM queries WHERE source = 'log' ORDER BY id")]


def _approve_with_gold(db, ids: list[str]) -> None:
    """Each log query approved with the chunk that shares most of its words (a stand-in for review)."""
    chunks = db.execute("SELECT id, text FROM chunks WHERE active = 1").fetchall()
    for qid in ids:
        text = db.execute("SELECT text FROM queries WHERE id = ?", [qid]).fetchone()[0]
        best = max(chunks, key=lambda c: (filters.question_grounding(text, [c[1]]), c[0]))
        decide(db, qid, "approve", "ana", gold=[best[0]])


@pytest.mark.parametrize("query_type", prompts.ANSWER_FIRST_TYPES)
def test_built_in_examples_do_not_copy_their_answers(query_type):
    for title, answer, queries in prompts.ANSWER_FIRST_SHOTS:
        words = filters.content_words(queries[query_type]) - filters.content_words(title)
        assert words, queries[query_type]
        assert filters.question_grounding(" ".join(words), [answer]) <= 0.34, (queries[query_type], answer)


def test_without_real_queries_the_built_in_examples_are_used(sample_db):
    chosen = examples.load(sample_db)
    assert chosen.kind == "builtin" and chosen.shots("factoid", {"text": "x", "doc_id": "d"}) is None


def test_real_log_queries_without_gold_are_shown_as_how_people_ask(sample_db):
    _import_sample_log(sample_db)
    chosen = examples.load(sample_db)
    assert chosen.kind == "real_log" and len(chosen.log_queries) == examples.LOG_EXAMPLES
    backend = FakeBackend(["Question: Why does my thing never finish the job?\n"])
    generate(sample_db, GenerationConfig(count=1, mix={"factoid": 1.0}, seed=1), backend=backend)
    system = backend.prompts[0][0]["content"]
    assert "This is how users of this documentation ask:" in system
    assert all(f"- {q}" in system for q in chosen.log_queries)


def test_approved_real_queries_with_gold_become_nearby_worked_examples(sample_db):
    ids = _import_sample_log(sample_db)
    _approve_with_gold(sample_db, ids[:12])
    chosen = examples.load(sample_db)
    assert chosen.kind == "real_gold" and len(chosen.examples) >= examples.MIN_REAL_EXAMPLES
    example = chosen.examples[0]
    gold = store.loads(sample_db.execute("SELECT gold_chunk_ids FROM queries WHERE id = ?",
                                         [example.query_id]).fetchone()[0])
    gold_text = " ".join(" ".join(sample_db.execute("SELECT text FROM chunks WHERE id = ?", [g]).fetchone()[0].split())
                         for g in gold)
    assert example.answer in gold_text  # the answer shown is a sentence of its gold chunk
    chunk = store.rows(sample_db, "SELECT id, doc_id, text FROM chunks WHERE id = ?", [gold[0]])[0]
    shots = chosen.shots("factoid", chunk)
    assert len(shots) == examples.SHOTS
    assert example.query not in [q for _, _, q in shots]  # never an example about the chunk's own document

    backend = FakeBackend(["Question: Why does my thing never finish the job?\n"])
    generate(sample_db, GenerationConfig(count=1, mix={"factoid": 1.0}, seed=1), backend=backend)
    shown = [m["content"] for m in backend.prompts[0] if m["role"] == "assistant"]
    real = {e.query for e in chosen.examples}
    assert shown and all(s.removeprefix("Question: ") in real for s in shown)
    params = store.loads(sample_db.execute("SELECT params FROM generation_runs").fetchone()[0])
    assert params["examples"]["kind"] == "real_gold"
    assert {e["query"] for e in params["examples"]["examples"]} == real
    assert params["overlap_cap"]["calibrated_on"] == "the 12 approved real (log) queries of this project"


def test_a_question_copying_its_chunk_is_rejected_with_the_reason_counted(sample_db):
    def copying(messages) -> str:
        answer = messages[-1]["content"].split("Answer:", 1)[1]
        # four distinct words: a repeated one ("billing billing") leaves three, which the cap spares
        words = list(dict.fromkeys(w for w in filters.tokens(answer) if w not in filters.STOPWORDS and len(w) > 3))[:4]
        return f"Question: What is {' '.join(words)}?\n"

    summary = generate(sample_db, GenerationConfig(count=2, mix={"factoid": 1.0}, seed=1, retries=0),
                       backend=FakeBackend(copying))
    reason = "reuses its chunk's words more than real questions do"
    assert summary["accepted"] == 0 and summary["rejected_by_reason"].get(reason, 0) == summary["rejected"] > 0
    stored = sample_db.execute("SELECT reason FROM rejected_candidates LIMIT 1").fetchone()[0]
    assert stored.startswith(reason) and "real up to 86%" in stored


def test_the_cap_is_calibrated_on_the_projects_real_rows_when_it_has_enough(sample_db):
    assert realism.overlap_cap(sample_db) == (realism.BUILTIN_REFERENCE["chunk_overlap"]["q3"],
                                              realism.BUILTIN_REFERENCE["name"])
    ids = _import_sample_log(sample_db)
    _approve_with_gold(sample_db, ids)
    cap, basis = realism.overlap_cap(sample_db)
    figures = realism.project_real_figures(sample_db)
    assert basis == f"the {len(figures)} approved real (log) queries of this project" and len(figures) >= 10
    assert min(f["chunk_overlap"] for f in figures) <= cap <= max(f["chunk_overlap"] for f in figures)


def test_generated_rows_are_measured_as_they_are_stored(sample_db):
    generate(sample_db, GenerationConfig(count=2, mix={"factoid": 1.0}, seed=1),
             backend=FakeBackend(_asking(1, "Why does my dumb gadget never finish the job with")))
    ids = [r[0] for r in sample_db.execute("SELECT id FROM queries WHERE source = 'synthetic'")]
    figures = realism.stored(sample_db, ids)
    assert len(ids) == 2 and set(figures) == set(ids)
    assert all(f["form"] == "question" and f["chunk_overlap"] < 0.5 for f in figures.values())


def _asking(words_of_answer: int, prefix: str = "What is"):
    """A reply asking about the first content words of the answer it was shown."""
    def reply(messages) -> str:
        answer = messages[-1]["content"].split("Answer:", 1)[1]
        words = [w for w in filters.tokens(answer) if w not in filters.STOPWORDS and len(w) > 3][:words_of_answer]
        return f"Question: {prefix} {' '.join(words)}?\n"
    return reply


def test_a_short_question_is_not_capped_for_naming_its_subject(sample_db):
    """Two content words, both the chunk's: overlap 1.0, yet that is how a short real question looks."""
    summary = generate(sample_db, GenerationConfig(count=2, mix={"factoid": 1.0}, seed=1, retries=0),
                       backend=FakeBackend(_asking(2)))
    assert summary["accepted"] == 2
    assert not any("reuses its chunk's words" in r for r in summary["rejected_by_reason"])
    (params,), = sample_db.execute("SELECT params FROM generation_runs")
    assert json.loads(params)["overlap_cap"]["not_below_content_words"] == checks.OVERLAP_CAP_MIN_WORDS == 4


def test_a_question_sharing_no_word_with_its_chunk_is_rejected(sample_db):
    summary = generate(sample_db, GenerationConfig(count=1, mix={"factoid": 1.0}, seed=1, retries=0),
                       backend=FakeBackend(["Question: Which zebra quasar hums the loudest tonight?\n"]))
    assert summary["accepted"] == 0
    assert summary["rejected_by_reason"] == {"question shares no word with its gold chunk": summary["rejected"]}


def test_no_retrievers_model_judges_a_generated_row(sample_db, monkeypatch):
    """Issue 27: a filter or score by a retriever under test keeps the rows that retriever finds. Any
    use of the sentence embedder (MiniLM, the dense retriever) during generation fails this test."""
    from curator.core.embedding import embed

    def refuse(*_args, **_kwargs):
        raise AssertionError("generation used the sentence embedder")

    monkeypatch.setattr(embed, "get_embedder", refuse)
    summary = generate(sample_db, GenerationConfig(count=2, mix={"factoid": 1.0}, seed=1),
                       backend=FakeBackend(["Question: Why does my thing never finish the job?\n",
                                            "Question: Where did all my old stuff go?\n"]))
    assert summary["accepted"] >= 1
    for (signals,) in sample_db.execute("SELECT quality_signals FROM queries WHERE source = 'synthetic'"):
        assert set(json.loads(signals)["margins"]) <= {"repetition", "question_grounding", "answer_grounding",
                                                       "not_restated"}
