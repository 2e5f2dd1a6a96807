"""Unanswerable near misses and multi-hop rows (issue 28): the selection logic on a real SQLite project
over a small corpus written here (fast), and whole runs with the real bundled model (slow)."""

from __future__ import annotations

import json

import pytest

from curator.core.corpus.ingest import ingest
from curator.core.generation import multihop, prompts, unanswerable
from curator.core.generation.generate import GenerationConfig, generate, plan_tasks
from curator.core.queries.rows import get_query
from curator.core.store import open_project
import scripted

DOCS = {
    "install.md": "# Installing\n\nThe agent installs on Windows with the MSI package from the downloads page.\n\n"
                  "Version 4.2 added silent installs for whole fleets of office laptops and desktop machines at once.\n",
    "sync.md": "# Sync\n\nThe `sync_interval` option sets how often the agent uploads changed files to the server.\n\n"
               "Uploads pause while the laptop runs on battery below twenty percent charge.\n",
    "tuning.md": "# Tuning\n\nSetting `sync_interval` to ten minutes or more saves bandwidth on metered mobile links.\n\n"
                 "Logs of every upload are written to the agent folder under the user profile.\n",
    "faq.md": "# Questions\n\nThe agent keeps deleted files in a trash folder for thirty days before purging them.\n",
}


@pytest.fixture
def small_db(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    db = open_project(tmp_path / "p.curator", create=True)
    ingest(db, [folder])
    yield db
    db.close()


# The near-miss selection and judging tests are in test_unanswerable.py.


def test_multi_hop_pairs_two_chunks_naming_one_entity(small_db):
    chunk = dict(zip(("id", "doc_id", "title", "text"), small_db.execute(
        "SELECT id, doc_id, title, text FROM chunks WHERE text LIKE '%sets how often%'").fetchone()))
    assert "sync_interval" in multihop.entities("The `sync_interval` option sets how often.")
    found = multihop.options(small_db, chunk, seed=0)
    assert found and found[0]["entity"] == "sync_interval"
    assert "metered" in found[0]["sentences"][1] and found[0]["partner"]["id"] != chunk["id"]
    assert found[0]["answer"] == " ".join(found[0]["sentences"])


def test_a_multi_hop_question_must_ask_about_both_sentences():
    option = {"entity": "sync_interval", "partner": {"id": "c_b"},
              "sentences": ["The `sync_interval` option sets how often the agent uploads changed files to the server.",
                            "Setting `sync_interval` to ten minutes or more saves bandwidth on metered mobile links."]}
    one, _ = multihop.judge("Question 1: How often does sync_interval upload files?\n"
                            "Question 2: How often does sync_interval upload files to the server?\n", option)
    assert "first sentence only" in one
    pair = "Question 1: What does sync_interval set?\nQuestion 2: Does raising sync_interval save bandwidth?\n"
    assert multihop.joined(pair) == "What does sync_interval set, and does raising sync_interval save bandwidth?"
    both, signals = multihop.judge(pair, option, scripted.Gains())
    assert both is None and signals["words_only_in_first"] and signals["words_only_in_second"]
    assert signals["parts"] == ["What does sync_interval set?", "Does raising sync_interval save bandwidth?"]
    far, _ = multihop.judge(pair, option, scripted.Gains(0.05))
    assert "does not lead to its sentence" in far
    assert not multihop.second_fact(option["sentences"][0], option["sentences"][0])


def test_plan_gives_derived_tasks_their_own_sentences(small_db):
    tasks = list(plan_tasks(small_db, {"unanswerable": 1, "multi_hop": 1}, 0, answers_mode="extractive"))
    kinds = {t.query_type: t for t in tasks}
    assert kinds["unanswerable"].answer == kinds["unanswerable"].option["sentence"]  # the model reads the real one
    assert len(kinds["multi_hop"].chunks) == 2 and kinds["multi_hop"].option["entity"]


def test_multi_hop_prompt_ends_with_both_facts_and_asks_two_questions():
    messages = prompts.build_multi_hop_messages("First fact.", "Second fact.")
    assert messages[-1]["content"] == "Fact 1: First fact.\nFact 2: Second fact."
    assert len(messages) == 2 * len(prompts.MULTI_HOP_SHOTS) + 2
    assert all(prompts.parse_question_pair(m["content"]) for m in messages if m["role"] == "assistant")
    assert prompts.parse_question_pair("Question: one?") is None


def test_scripted_run_stores_both_gold_chunks_and_the_evidence(small_db):
    backend = scripted_backend()
    summary = generate(small_db, GenerationConfig(count=2, mix={"multi_hop": 1}, seed=0), backend=backend)
    rows = [get_query(small_db, r[0]) for r in small_db.execute("SELECT id FROM queries WHERE query_type = 'multi_hop'")]
    assert summary["accepted"] >= 1 and rows
    for row in rows:
        assert len(row["gold_chunk_ids"]) >= 2 and row["quality_signals"]["multi_hop"]["entity"]
        assert row["reference"] == " ".join(row["quality_signals"]["multi_hop"]["sentences"])


def scripted_backend():
    from curator.core.generation.backends import FakeBackend

    return FakeBackend(scripted.good_reply)


@pytest.mark.parametrize("query_type", ["unanswerable", "multi_hop"])
def test_real_bundled_model_writes_derived_rows(sample_db, bundled_model, query_type):
    """The real model and MiniLM on the sample corpus: whatever it keeps holds together."""
    from curator.core.generation.backends import LlamaCppBackend

    backend = LlamaCppBackend(bundled_model, n_ctx=2048, parallel=4)
    summary = generate(sample_db, GenerationConfig(count=2, mix={query_type: 1}, seed=0, retries=3), backend=backend)
    print(summary["accepted"], summary["rejected_by_reason"])
    assert summary["accepted"] + summary["rejected"] >= 1
    # the grammar and the parser agree: every reply the real model gave was read
    assert "output not in the Question/Answer format" not in summary["rejected_by_reason"]
    for (ids,) in sample_db.execute("SELECT source_chunk_ids FROM rejected_candidates WHERE query_type = ?", [query_type]):
        assert len(json.loads(ids)) == (2 if query_type == "multi_hop" else 1)
    for (qid,) in sample_db.execute("SELECT id FROM queries WHERE query_type = ?", [query_type]):
        row = get_query(sample_db, qid)
        signals = row["quality_signals"]
        if query_type == "unanswerable":
            found = signals["unanswerable_evidence"]
            assert not row["answerable"] and row["gold_chunk_ids"] == []
            assert found["replacement"].lower() in row["text"].lower() and found["replacement_mentions"] == 0
            assert found["nearest_dense"] and found["nearest_fts"]
        else:
            assert len(row["source_chunk_ids"]) == 2 and set(row["source_chunk_ids"]) <= set(row["gold_chunk_ids"])
            assert signals["multi_hop"]["words_only_in_first"] and signals["multi_hop"]["words_only_in_second"]
            assert row["text"] == multihop.join(*signals["multi_hop"]["parts"])
    json.dumps(summary)  # the summary stays JSON for `generate --json`
