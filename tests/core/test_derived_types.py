"""Unanswerable near misses and multi-hop rows (issue 28): the selection logic on a real SQLite project
over a small corpus written here (fast), and whole runs with the real bundled model (slow)."""

from __future__ import annotations

import json

import pytest

from curator.core.corpus.ingest import ingest
from curator.core.generation import multihop, multihop_rules, prompts, unanswerable
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.generation.plan import plan_tasks
from curator.core.queries.rows import get_query
from curator.core.store import open_project
import scripted
from scripted import chunk_like

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
def small_db(docs_project):
    return docs_project(DOCS)


# The near-miss selection and judging tests are in test_unanswerable.py.


def test_multi_hop_pairs_two_chunks_naming_one_entity(small_db, monkeypatch):
    monkeypatch.setattr(multihop, "MODEL_WRITES_SECOND_PART", True)  # this corpus has no pair made by rule
    chunk = dict(zip(("id", "doc_id", "title", "text"), small_db.execute(
        "SELECT id, doc_id, title, text FROM chunks WHERE text LIKE '%sets how often%'").fetchone()))
    assert "sync_interval" in multihop.entities("The `sync_interval` option sets how often.")
    found = multihop.options(small_db, chunk, seed=0)
    assert found and found[0]["entity"] == "sync_interval"
    assert "metered" in found[0]["sentences"][1] and found[0]["partner"]["id"] != chunk["id"]
    assert found[0]["answer"] == " ".join(found[0]["sentences"])


class _SentenceGains:
    """A stand-in for answers.AnswerLikelihood whose gain depends on the sentence: ``value`` when the
    question and the sentence share one of ``links`` (pairs of question word, sentence word), else ``base``."""

    def __init__(self, links, value=1.0, base=0.05):
        self.links, self.value, self.base = links, value, base

    def gain(self, question: str, answer: str) -> float:
        hit = any(q in question.lower() and a in answer.lower() for q, a in self.links)
        return self.value if hit else self.base


_SYNC = {"entity": "sync_interval", "partner": {"id": "c_b"},
         "sentences": ["The `sync_interval` option sets how often the agent uploads changed files to the server.",
                       "Setting `sync_interval` to ten minutes or more saves bandwidth on metered mobile links."]}


def test_a_multi_hop_question_must_ask_about_both_sentences():
    option = _SYNC
    one, _ = multihop.judge("Question 1: How often does sync_interval upload files?\n"
                            "Question 2: How often does sync_interval upload files to the server?\n", option)
    assert "first sentence only" in one
    pair = "Question 1: What does sync_interval set?\nQuestion 2: Does raising sync_interval save bandwidth?\n"
    assert multihop.joined(pair) == "What does sync_interval set, and does raising sync_interval save bandwidth?"
    # each part leads to its own sentence and not to the other: kept
    own = _SentenceGains([("set", "uploads changed"), ("bandwidth", "bandwidth")])
    both, signals = multihop.judge(pair, option, own)
    assert both is None and signals["words_only_in_first"] and signals["words_only_in_second"]
    assert signals["parts"] == ["What does sync_interval set?", "Does raising sync_interval save bandwidth?"]
    assert signals["sentence_gains"] == [1.0, 1.0] and signals["other_sentence_gains"] == [0.05, 0.05]
    far, _ = multihop.judge(pair, option, _SentenceGains([], base=0.05))
    assert "does not lead to its sentence" in far
    # a part that leads to both sentences alike does not need its own chunk
    alike, _ = multihop.judge(pair, option, _SentenceGains([("sync_interval", "sync_interval")]))
    assert "leads to the other sentence as well" in alike
    assert not multihop.second_fact(option["sentences"][0], option["sentences"][0])


def test_each_part_of_a_multi_hop_question_names_the_entity():
    dropped = "Question 1: What does the option set?\nQuestion 2: Does raising sync_interval save bandwidth?\n"
    reason, _ = multihop.judge(dropped, _SYNC)
    assert reason == "multi-hop: the first question does not name 'sync_interval'"
    assert multihop_rules.names_entity("How do I use `SYNC_INTERVAL`?", "sync_interval")
    assert not multihop_rules.names_entity("How do I use apt-get?", "apt")


def test_the_joined_question_names_the_entity_once():
    assert (multihop.join("What does sync_interval set?", "Does raising sync_interval save bandwidth?", "sync_interval")
            == "What does sync_interval set, and does raising sync_interval save bandwidth?")  # too short to be a loop
    assert (multihop.join("What does the HTTP method do?", "Why does the HTTP method fail?", "HTTP")
            == "What does the HTTP method do, and why does it fail?")
    assert (multihop.join("How do I catch an HTTP error?", "How does the HTTP method GET differ from POST?", "HTTP")
            == "How do I catch an HTTP error, and how does the HTTP method GET differ from POST?")
    assert (multihop.join("What is the `unittest` module?", "How do I run the `unittest` module from a shell?", "unittest")
            == "What is the `unittest` module, and how do I run it from a shell?")
    # a phrase the first part does not hold, or one that opens the question, stays
    assert (multihop.join("What is the GIL?", "GIL locks: where are they taken?", "GIL")
            == "What is the GIL, and gIL locks: where are they taken?")
    assert multihop.join("What is the GIL?", "Where is the GIL guarded?") == "What is the GIL, and where is the GIL guarded?"


def test_entities_are_whole_names_outside_addresses_near_the_start():
    assert multihop.entities("See https://www.gnu.org/software/hurd and www.debian.org/ CD/netinst/ now.") == []
    assert multihop.entities("Use i.e. the `GIL` here.") == ["GIL"]
    # the corpus's own command names, whole words only
    assert multihop.entities("Run apt-get to upgrade, not apt.", frozenset({"apt-get", "apt"})) == ["apt-get", "apt"]
    assert multihop.entities("The adapter was echoed.", frozenset({"apt", "echo"})) == []
    assert not multihop.same_sense("global", "A global interpreter lock is used.", "If `global` was required for all.")
    assert multihop.same_sense("dpkg", "dpkg unpacks the archive.", "Passing the option to dpkg logs it.")
    assert multihop.about("IDLE", "IDLE is a cross-platform IDE for Python that is written using Tkinter.")
    assert not multihop.about("IDE", "Eric is a program for people who write Python code every day, an IDE.")


def test_corpus_names_come_from_manual_pages_and_proper_names(docs_project):
    db = docs_project({"a.md": "# Tools\n\nSee dpkg(1) and apt-get(8) for details. Ask the Hurd team or "
                               "read about the Package format.\n\nA package is an archive.\n"})
    names = multihop.corpus_names(db)
    assert {"dpkg", "apt-get", "Hurd"} <= names
    assert "Package" not in names and "details" not in names  # also written in lower case; not a name


def test_a_sentence_that_points_elsewhere_is_no_fact(small_db):
    assert not multihop._fact("Read the `sync_interval` manual page for more information about the agent.")
    assert multihop._fact(_SYNC["sentences"][0])


def test_plan_gives_derived_tasks_their_own_sentences(small_db, monkeypatch):
    monkeypatch.setattr(multihop, "MODEL_WRITES_SECOND_PART", True)  # this corpus has no pair made by rule
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


def test_scripted_run_stores_both_gold_chunks_and_the_evidence(small_db, monkeypatch):
    monkeypatch.setattr(multihop, "MODEL_WRITES_SECOND_PART", True)  # this corpus has one rule question only
    backend = scripted_backend()
    summary = generate(small_db, GenerationConfig(count=2, mix={"multi_hop": 1}, seed=0), backend=backend)
    rows = [get_query(small_db, r[0]) for r in small_db.execute("SELECT id FROM queries WHERE query_type = 'multi_hop'")]
    assert summary["accepted"] >= 1 and rows, summary["rejected_by_reason"]
    for row in rows:
        assert len(row["gold_chunk_ids"]) >= 2 and row["quality_signals"]["multi_hop"]["entity"]
        assert row["reference"] == " ".join(row["quality_signals"]["multi_hop"]["sentences"])


def test_multi_hop_rows_build_on_kept_answer_first_rows(small_db):
    """With answer-first rows in the project, a multi-hop row's first part is one of their questions
    and the model writes only the second, answer-first, for a sentence of another chunk."""
    backend = scripted_backend()
    generate(small_db, GenerationConfig(count=4, mix={"factoid": 1}, seed=0, answers="extractive"), backend=backend)
    factoid = {r[0]: r[1] for r in small_db.execute("SELECT id, text FROM queries WHERE query_type = 'factoid'")}
    chunk = dict(zip(("id", "doc_id", "title", "text"), small_db.execute(
        "SELECT id, doc_id, title, text FROM chunks WHERE text LIKE '%metered%'").fetchone()))
    # kept but not reviewed: not a first part (the first part is made by rule instead, when the model
    # may write the second)
    # ("Setting `sync_interval` to ten minutes ... saves bandwidth" has a rule question too: a pair by rule)
    by_rule = multihop.options(small_db, chunk, seed=0)
    assert by_rule and all("first_row" not in o and o["first_by"] == "rule" for o in by_rule)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(multihop, "MODEL_WRITES_SECOND_PART", True)
        found = multihop.options(small_db, chunk, seed=0)
        assert found and all("first_row" not in o and o["first_by"] == "rule" for o in found)
    _approve_all(small_db, "factoid")
    found = multihop.options(small_db, chunk, seed=0)
    assert found and found[0]["first_question"] in factoid.values() and found[0]["first_row"] in factoid
    assert found[0]["entity"] == "sync_interval" and "metered" in found[0]["sentences"][1]
    from curator.core.generation.backends import FakeBackend

    asks_one = FakeBackend(lambda messages: "Question: Does raising sync_interval save bandwidth?\n"
                           if "Fact" not in messages[-1]["content"] else "Question 1: x?\nQuestion 2: y?\n")
    summary = generate(small_db, GenerationConfig(count=1, mix={"multi_hop": 1}, seed=0, answers="extractive"),
                       backend=asks_one)
    rows = [get_query(small_db, r[0]) for r in small_db.execute("SELECT id FROM queries WHERE query_type = 'multi_hop'")]
    assert summary["accepted_this_session"] == 1 and len(rows) == 1, summary["rejected_by_reason"]
    signals = rows[0]["quality_signals"]["multi_hop"]
    assert signals["parts"] == [factoid[signals["first_row"]], "Does raising sync_interval save bandwidth?"]
    assert rows[0]["text"].startswith(signals["parts"][0].rstrip("?") + ", and ")
    assert len(rows[0]["gold_chunk_ids"]) >= 2
    # a kept row is the first part of one multi-hop row only
    assert not multihop.built_on_rows(small_db, chunk, seed=0)


def _approve_all(db, query_type):
    from curator.core.review.decisions import decide

    for (query_id,) in db.execute("SELECT id FROM queries WHERE query_type = ?", [query_type]).fetchall():
        decide(db, query_id, "approve", "tester")


def scripted_backend():
    from curator.core.generation.backends import FakeBackend

    return FakeBackend(scripted.good_reply)


@pytest.mark.parametrize("query_type", ["unanswerable", "multi_hop"])
def test_real_bundled_model_writes_derived_rows(sample_db, bundled_model, query_type, monkeypatch):
    """The real model and MiniLM on the sample corpus: whatever it keeps holds together. (Multi-hop rows
    with the model's second part: the sample corpus has no pair made wholly by rule.)"""
    from curator.core.generation.backends import LlamaCppBackend

    monkeypatch.setattr(multihop, "MODEL_WRITES_SECOND_PART", True)

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
            assert row["text"] == multihop.join(*signals["multi_hop"]["parts"], signals["multi_hop"]["entity"])
    json.dumps(summary)  # the summary stays JSON for `generate --json`


def test_the_second_part_grammar_spells_the_entity_and_compiles():
    from llama_cpp import LlamaGrammar

    for entity in ("sync_interval", 'a"quoted\\name', "apt-get"):
        grammar = multihop.second_part_grammar(entity)
        LlamaGrammar.from_string(grammar, verbose=False)  # raises on a grammar llama.cpp cannot read
    assert '" " "apt-get" tail' in multihop.second_part_grammar("apt-get")


def test_real_bundled_model_builds_multi_hop_rows_on_kept_answer_first_rows(small_db, bundled_model):
    """The real model writes the second part of multi-hop rows built on kept factoid rows (scripted
    here, so that one names the entity): every candidate starts with a kept question, and a part
    that does not name the entity is rejected for it (the plain question grammar: multihop.FORCE_ENTITY)."""
    from curator.core.generation.backends import LlamaCppBackend

    generate(small_db, GenerationConfig(count=3, mix={"factoid": 1}, seed=0), backend=scripted_backend())
    _approve_all(small_db, "factoid")
    backend = LlamaCppBackend(bundled_model, n_ctx=2048, parallel=4)
    factoid = {r[0] for r in small_db.execute("SELECT text FROM queries WHERE query_type = 'factoid'")}
    summary = generate(small_db, GenerationConfig(count=1, mix={"multi_hop": 1}, seed=0, retries=3), backend=backend)
    print(factoid, summary["accepted"], summary["rejected_by_reason"])
    assert "output not in the Question/Answer format" not in summary["rejected_by_reason"]
    for text, raw, ids, reason in small_db.execute(
            "SELECT text, raw_output, source_chunk_ids, reason FROM rejected_candidates WHERE query_type = 'multi_hop' "
            "UNION ALL SELECT text, raw_output, source_chunk_ids, NULL FROM queries WHERE query_type = 'multi_hop'"):
        assert len(json.loads(ids)) == 2
        assert any(text.startswith(q.rstrip("?") + ", and ") for q in factoid), text
        # the only entity two chunks of this corpus share: named, or the reason the part was rejected
        assert "sync_interval" in raw or reason == "multi-hop: the second question does not name 'sync_interval'"


# Review findings on the row-based path (issue 28, session 36).

def _ingest_more(db, tmp_path, name, text):
    folder = tmp_path / f"more_{name}"
    folder.mkdir()
    (folder / name).write_text(text)
    ingest(db, [folder])


def test_corpus_names_see_chunks_ingested_later_and_hold_no_connection(tmp_path):
    import gc
    import weakref

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Tools\n\nSee dpkg(1) for details.\n")
    db = open_project(tmp_path / "p.curator", create=True)
    ingest(db, [folder])
    assert "dpkg" in multihop.corpus_names(db) and "apt-get" not in multihop.corpus_names(db)
    _ingest_more(db, tmp_path, "b.md", "# More\n\nSee apt-get(8) for the rest.\n")
    assert "apt-get" in multihop.corpus_names(db)  # a stale per-connection cache missed it
    assert "apt-get" in multihop.RunScope(db).names
    gone = weakref.ref(db)
    db.close()
    del db
    gc.collect()
    assert gone() is None  # nothing module-level keeps a project connection alive


def _approved_first_row(db, tmp_path):
    """A third chunk about sync_interval, and one approved factoid row (about the sync.md sentence)
    that could start a multi-hop row for both tuning.md's and limits.md's chunks."""
    _ingest_more(db, tmp_path, "limits.md", "# Limits\n\nThe free plan of the hosted service limits `sync_interval` to one "
                 "minute or longer.\n\nPaid plans upload changes at once, whatever the setting says about timing.\n")
    generate(db, GenerationConfig(count=6, mix={"factoid": 1}, seed=0, answers="extractive"), backend=scripted_backend())
    from curator.core.review.decisions import decide

    row = db.execute("SELECT id FROM queries WHERE query_type = 'factoid' AND reference LIKE '%sets how often%'").fetchone()
    assert row, "the scripted factoid run kept no row about the sync.md sentence"
    decide(db, row[0], "approve", "tester")
    return row[0]


def test_one_approved_row_starts_one_multi_hop_task_per_run(small_db, tmp_path):
    first_row = _approved_first_row(small_db, tmp_path)
    for like in ("metered", "free plan"):  # each chunk alone would be offered the row
        assert any(o["first_row"] == first_row for o in multihop.options(small_db, chunk_like(small_db, like), seed=0))
    tasks = list(plan_tasks(small_db, {"multi_hop": 3}, 0, answers_mode="extractive"))
    starts = [o["first_row"] for t in tasks for o in t.options]
    assert starts.count(first_row) == 1, [t.chunks[0]["id"] for t in tasks]
    scope = multihop.RunScope(small_db)
    found = [multihop.options(small_db, chunk_like(small_db, like), 0, scope) for like in ("metered", "free plan")]
    assert [o["first_row"] for options in found for o in options] == [first_row]


def test_approved_rows_are_read_once_per_run(small_db, tmp_path):
    _approved_first_row(small_db, tmp_path)
    scope, statements = multihop.RunScope(small_db), []
    small_db.conn.set_trace_callback(statements.append)
    try:
        for like in ("metered", "free plan", "sets how often"):
            multihop.options(small_db, chunk_like(small_db, like), 0, scope)
    finally:
        small_db.conn.set_trace_callback(None)
    # one look whether any approved row exists, one load of them; no LIKE scan per sentence and entity
    reads = [s for s in statements if "FROM queries" in s and "LIKE" not in s]
    assert len(reads) == 2 and not [s for s in statements if "FROM queries" in s and "LIKE" in s], statements


def test_second_part_grammar_shares_the_answer_first_opener_and_length():
    import re

    for entity in ("sync_interval", "apt-get", "x" * 40):
        grammar = multihop.second_part_grammar(entity)
        assert prompts.QUESTION_OPENER_RULE in grammar and prompts.QUESTION_OPENER_RULE in prompts.ASKED_QUESTION_GRAMMAR
        assert '"Will "' in grammar  # the copied opener list lacked it
        units = sum(int(n) for n in re.findall(r"unit\{\d+,(\d+)\}", grammar))
        longest_opener = max(len(w) + 1 for w in prompts.QUESTION_OPENERS)
        # the most the grammar lets the question run: opener, words, space, entity, one tail character, '?'
        assert longest_opener + units + 1 + len(entity) + 1 + 1 <= prompts.QUESTION_CHARS, (entity, units)
