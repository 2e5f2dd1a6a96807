"""Issue 33, less engine work per accepted row: a type that cannot build anything in the project hands its
share to the other types at plan time (said once, kept in the run record), answer sentences whose rows of a
type were almost always rejected are not asked about, and a near miss spells its setting by grammar."""

from __future__ import annotations

import json

from curator.core.generation import asking
from curator.core.generation import multihop
from curator.core.generation import plan as plan_mod
from curator.core.generation.backends import FakeBackend
from curator.core.generation.config import Task
from curator.core.generation.generate import DEFAULT_MIX, GenerationConfig, GenerationEvents, generate
from curator.core.generation.plan import allocate, pick_answer, seldom_kept
import scripted


def test_multi_hop_without_approved_rows_hands_its_share_over_at_plan_time(sample_db):
    """The sample corpus has no pair a rule can join and no approved factoid row (the model writing parts
    itself is off: 3 of 15 usable): no multi-hop candidate is asked, its rows go to the other types at
    once, and the run says so once, in its progress and its record."""
    heard = []
    events = GenerationEvents(progress=lambda done, wanted, message: heard.append(message))
    summary = generate(sample_db, GenerationConfig(count=10, seed=3), backend=FakeBackend(scripted.good_reply),
                       events=events, answer_check=scripted.Gains(1.0))
    wanted = allocate(10, DEFAULT_MIX)["multi_hop"]
    handed = summary["handed_over"]["multi_hop"]
    assert handed["rows"] == wanted >= 1 and sum(handed["to"].values()) == wanted
    assert set(handed["to"]) <= {"factoid", "keyword", "vague"} and "approve" in handed["why"]
    asked = {t for (t,) in sample_db.execute("SELECT query_type FROM queries UNION SELECT query_type FROM rejected_candidates")}
    assert "multi_hop" not in asked and {"factoid", "keyword", "vague"} <= asked
    assert [m for m in heard if "handed over" in m] == [heard[0]] and "multi_hop" in heard[0]
    assert summary["accepted"] == 10 and summary["status"] == "complete" and "multi_hop" not in summary["refilled"]
    (counts,) = sample_db.execute("SELECT counts FROM generation_runs").fetchone()
    assert json.loads(counts)["handed_over"]["multi_hop"]["rows"] == wanted


def test_a_share_stays_where_the_type_can_build_or_nobody_can_take_it(sample_db, monkeypatch):
    """With the model writing second parts, the sample corpus's sentence pairs can be asked: multi-hop keeps
    its rows. A mix of multi-hop alone has no type to take them: they stay, as the user asked. The old
    prompts (--answers free) ask every type of the model: nothing moves."""
    plan = allocate(10, DEFAULT_MIX)
    config = GenerationConfig(count=10)
    alone = {"multi_hop": 3}
    assert plan_mod._hand_over(sample_db, alone, {"multi_hop": 1.0}, config) == (alone, {})
    free = GenerationConfig(count=10, answers="free")
    assert plan_mod._hand_over(sample_db, plan, DEFAULT_MIX, free)[1] == {}
    assert "multi_hop" in plan_mod._hand_over(sample_db, plan, DEFAULT_MIX, config)[1]
    monkeypatch.setattr(multihop, "MODEL_WRITES_SECOND_PART", True)
    assert plan_mod._hand_over(sample_db, plan, DEFAULT_MIX, config) == (plan, {})


def test_unanswerable_rows_without_near_miss_material_go_to_the_others(docs_project):
    """A corpus that names no setting with an unmentioned peer offers no near miss: its share moves at plan
    time instead of failing (no unanswerable share is taken by a type that does not fill in for others)."""
    db = docs_project({"trash.md": "# Trash\n\nThe agent keeps deleted files in a trash folder for thirty days "
                                   "before purging them for good.\n\nEach purge writes one line to the activity "
                                   "log with the number of files and bytes it freed.\n"})
    plan, handed = plan_mod._hand_over(db, {"factoid": 2, "unanswerable": 1}, {"factoid": 0.8, "unanswerable": 0.2},
                                           GenerationConfig(count=3))
    assert plan == {"factoid": 3, "unanswerable": 0}
    assert handed["unanswerable"]["to"] == {"factoid": 1} and "no near miss" in handed["unanswerable"]["why"]
    # once near misses were asked in this project, finding none left says so, not "nothing to build from"
    (chunk_id,) = db.execute("SELECT id FROM chunks LIMIT 1").fetchone()
    with db.conn:
        db.execute("INSERT INTO rejected_candidates (query_type, source_chunk_ids, text, reason) VALUES (?, ?, ?, ?)",
                   ["unanswerable", json.dumps([chunk_id]), "How do I purge on ChromeOS?", "answered"])
    why = plan_mod._hand_over(db, {"factoid": 2, "unanswerable": 1}, {"factoid": 0.8, "unanswerable": 0.2},
                                  GenerationConfig(count=3))[1]["unanswerable"]["why"]
    assert why.startswith("every chunk that offers one was already used for unanswerable rows")


LONG = ("The agent uploads every changed file to the server in the background and retries a failed upload "
        "three times, waiting a minute longer each time, before it marks the file as failed.")
CODE = "Setting `sync_interval` to ten minutes or more saves bandwidth on metered mobile links."
PLAIN = "Uploads pause while the laptop runs on battery with less than twenty percent charge."


def test_sentences_seldom_kept_for_a_type_are_not_asked_about():
    """Keyword queries about code and factoid or vague questions about sentences of 24+ words were kept
    5% and 13% of the time in stored runs: a task asks about the chunk's other sentences instead."""
    assert len(LONG.split()) >= plan_mod.LONG_ANSWER_WORDS
    assert seldom_kept("keyword", CODE) and not seldom_kept("factoid", CODE)
    assert seldom_kept("factoid", LONG) and seldom_kept("vague", LONG) and not seldom_kept("keyword", LONG)
    assert not any(seldom_kept(t, PLAIN) for t in ("factoid", "keyword", "vague"))
    chunk = {"id": "c1", "title": "Sync", "text": f"{LONG} {CODE} {PLAIN}"}
    assert [pick_answer("factoid", chunk, attempt) for attempt in range(3)] == [CODE, PLAIN, CODE]
    assert [pick_answer("keyword", chunk, attempt) for attempt in range(2)] == [LONG, PLAIN]
    assert pick_answer("vague", {"id": "c2", "title": "Sync", "text": LONG}, 0) is None  # nothing left to ask


def test_the_switch_asks_every_sentence_again(monkeypatch):
    from curator.core.generation import answers

    chunk = {"id": "c1", "title": "Sync", "text": f"{LONG} {CODE} {PLAIN}"}
    monkeypatch.setattr(plan_mod, "SKIP_SELDOM_KEPT", False)
    assert [pick_answer("factoid", chunk, a) for a in range(3)] == [answers.pick_answer(chunk, a) for a in range(3)]


def test_a_near_miss_about_a_sentence_naming_its_setting_must_spell_it(grammar_accepts):
    """The grammar puts the setting in the question (a question without it is rejected after the fact);
    a chunk-wide setting may still be added afterwards, so that task keeps the plain grammar."""
    from curator.core.generation import prompts

    chunk = {"id": "c1", "title": "Installing", "text": "The agent installs on Windows with the MSI package."}
    sentence_task = Task("unanswerable", [chunk], answer=chunk["text"],
                         option={"scope": "sentence", "original": "Windows", "answer": chunk["text"]})
    grammar = asking._asked_grammar(sentence_task, "factoid")
    assert '"Windows"' in grammar
    chunk_task = Task("unanswerable", [chunk], answer=chunk["text"], option={"scope": "chunk", "original": "Windows"})
    assert asking._asked_grammar(chunk_task, "factoid") == prompts.asked_grammar("factoid")

    assert grammar_accepts(grammar, "Question: How do I install the agent on Windows?\n")
    assert not grammar_accepts(grammar, "Question: How do I install the agent with a package?\n")


def test_real_bundled_model_run_asks_no_seldom_kept_sentence(sample_db, bundled_model):
    """A real run on the sample corpus: no answer-first candidate is about a sentence seldom kept for its type."""
    from curator.core.generation.backends import LlamaCppBackend

    backend = LlamaCppBackend(bundled_model, n_threads=1)
    backend.decoder_for_one = True
    generate(sample_db, GenerationConfig(count=4, seed=1, mix={"factoid": 1, "keyword": 1}, retries=1), backend=backend)
    asked = list(sample_db.execute("SELECT query_type, reference FROM queries UNION ALL "
                                   "SELECT query_type, reference FROM rejected_candidates"))
    assert asked and all(reference for _, reference in asked)
    assert [(t, r) for t, r in asked if seldom_kept(t, r)] == []
