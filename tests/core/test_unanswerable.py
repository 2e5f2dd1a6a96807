"""Unanswerable near misses (issue 28, generation.unanswerable): which sentences a near miss may use,
how the model's question is put in the swapped setting, and the evidence stored with the row. On a
real SQLite project over a small corpus written here (fast); the whole run with the real bundled
model is tests/core/test_derived_types.py::test_real_bundled_model_writes_derived_rows."""

from __future__ import annotations

import pytest

from curator.core.corpus.ingest import ingest
from curator.core.generation import unanswerable
from curator.core.generation.backends import FakeBackend
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.generation.plan import plan_tasks
from curator.core.generation.unanswerable import Detail
from curator.core.queries.rows import get_query
import scripted
from scripted import chunk_like

DOCS = {
    # a chunk about Windows: its sentences that do not name it hold there too
    "install.md": "# Installing\n\nOn Windows, the agent installs with the MSI package from the downloads page.\n\n"
                  "Silent installs need the administrator account and a restart of the machine afterwards.\n\n"
                  "The Windows service of the agent starts again after every reboot of the machine.\n",
    "sync.md": "# Sync\n\nThe `sync_interval` option sets how often the agent uploads changed files to the server.\n\n"
               "Uploads pause while the laptop runs on battery below twenty percent charge.\n",
    "editors.md": "# Editors\n\nThe agent keeps its configuration syntax highlighting in a plugin for Emacs users.\n\n"
                  "The command line client is only provided on Linux servers with a recent kernel version.\n",
    "screen.md": "# Screen\n\nWindows remember where the cursor was left after the last operation on the screen.\n",
}


@pytest.fixture
def small_db(docs_project):
    return docs_project(DOCS)


def test_details_are_named_things_not_versions_nor_parts_of_longer_names():
    found = unanswerable.details("Does it run on Windows and Arch Linux with C++ and version 3.11?")
    assert Detail("Windows", "platform") in found and Detail("Arch Linux", "distribution") in found
    assert Detail("Linux", "platform") not in found  # inside "Arch Linux"
    assert not any(d.text == "C" or d.text == "3.11" for d in found)  # versions are never swapped


def test_mentions_are_counted_again_after_an_ingest_on_the_same_connection(small_db, tmp_path):
    """The window ingests and generates on one connection: a replacement the corpus mentions since
    must not still count as absent (its near misses would be answerable)."""
    assert unanswerable.corpus_mentions(small_db, "ChromeOS") == 0
    (tmp_path / "docs" / "chromeos.md").write_text("# ChromeOS\n\nPython runs on ChromeOS in the Linux container.\n")
    ingest(small_db, [tmp_path / "docs"])
    assert unanswerable.corpus_mentions(small_db, "ChromeOS") == 1


def test_a_replacement_is_a_peer_the_corpus_never_mentions(small_db):
    windows = Detail("Windows", "platform")
    assert unanswerable.corpus_mentions(small_db, "Windows") == 2
    choices = unanswerable.replacements(small_db, windows)
    assert choices[0] == "macOS" and "Windows" not in choices and "Linux" not in choices  # best-known first
    assert all(unanswerable.corpus_mentions(small_db, c) == 0 for c in choices)


def test_only_a_setting_is_swapped(small_db):
    assert unanswerable.swappable(small_db, "On Windows, the agent installs with the MSI package.") == \
        [Detail("Windows", "platform")]
    assert unanswerable.setting_preposition("a plugin for Emacs users", Detail("Emacs", "editor")) == "for"
    # what the sentence is about, not where it holds: "curses windows", "Windows requires the DLL"
    assert unanswerable.swappable(small_db, "Windows remember where the cursor was left on the screen.") == []
    # a sentence that says only (or any) answers the swapped question itself
    assert unanswerable.swappable(small_db, "The client is only provided on Windows servers.") == []
    assert unanswerable.swappable(small_db, "It works with any init system, not just with systemd.") == []
    # two of a kind: swapping one leaves the other, which the corpus answers
    assert unanswerable.swappable(small_db, "The agent installs on Windows or macOS.") == []


def test_the_corpus_subject_is_not_swapped(small_db):
    with small_db.conn:  # every chunk names Windows: the corpus's subject
        small_db.execute("UPDATE chunks SET text = text || ' On Windows.'")
        small_db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    unanswerable._MENTIONS.pop(small_db, None)
    assert unanswerable.swappable(small_db, "On Windows, the agent installs with the MSI package.") == []


def test_options_show_the_original_sentence_in_its_setting_or_its_chunks(small_db):
    chunk = chunk_like(small_db, "MSI")
    assert unanswerable.chunk_setting(small_db, chunk) == Detail("Windows", "platform")
    found = {o["sentence"]: o for o in unanswerable.options(small_db, chunk, seed=0)}
    named = found["On Windows, the agent installs with the MSI package from the downloads page."]
    assert named["scope"] == "sentence" and named["answer"] == named["sentence"]  # the model reads the real one
    assert named["setting"] == "on macOS" and "macOS" in named["swapped"] and "Windows" not in named["swapped"]
    silent = found["Silent installs need the administrator account and a restart of the machine afterwards."]
    assert silent["scope"] == "chunk" and silent["original"] == "Windows" and silent["replacement"] == "macOS"
    assert list(found.values()) == unanswerable.options(small_db, chunk, seed=0)  # seeded
    # a chunk naming a setting once, or only as "only on Linux", offers nothing beyond its own sentence
    editors = unanswerable.options(small_db, chunk_like(small_db, "Emacs"), seed=0)
    assert [(o["original"], o["scope"], o["replacement"]) for o in editors] == [("Emacs", "sentence", "VS Code")]
    assert unanswerable.options(small_db, chunk_like(small_db, "cursor"), seed=0) == []


@pytest.mark.parametrize("question, near, made", [
    ("How do I install the agent on Windows?", "How do I install the agent on macOS?", "swapped"),
    ("How do I install the agent on windows?", "How do I install the agent on macOS?", "swapped"),
    ("Does the agent install on macOS?", "Does the agent install on macOS?", "kept"),
])
def test_the_models_question_is_put_in_the_swapped_setting(question, near, made):
    option = {"original": "Windows", "kind": "platform", "replacement": "macOS", "setting": "on macOS",
              "scope": "sentence"}
    assert unanswerable.near_miss_question(question, option) == (near, made)
    # a question that leaves out the setting its sentence names did not ask about it
    assert unanswerable.near_miss_question("What do silent installs need?", option) is None
    # a sentence of a chunk about the setting need not name it: the setting is added
    assert unanswerable.near_miss_question("What do silent installs need ?", {**option, "scope": "chunk"}) == \
        ("What do silent installs need on macOS?", "added")


def test_a_near_miss_is_about_its_sentence_and_carries_its_evidence(small_db):
    option = {"answer": "On Windows, the agent installs with the MSI package.", "original": "Windows",
              "sentence": "On Windows, the agent installs with the MSI package.", "kind": "platform",
              "replacement": "FreeBSD"}
    reason, _ = unanswerable.judge(small_db, "Does the agent install on Linux?", option, scripted.Gains())
    assert "names another platform ('Linux')" in reason
    reason, _ = unanswerable.judge(small_db, "How do I install the agent on Windows?", option, scripted.Gains(0.1))
    assert "does not lead to its answer sentence" in reason
    reason, _ = unanswerable.judge(small_db, "How do I install the agent?", option, scripted.Gains())
    assert "left out its setting ('Windows')" in reason
    reason, found = unanswerable.judge(small_db, "How do I install the agent on windows?", option, scripted.Gains())
    assert reason is None and found["question"] == "How do I install the agent on FreeBSD?"
    assert found["model_question"] == "How do I install the agent on windows?" and found["setting_made"] == "swapped"
    assert found["replacement_mentions"] == 0 and found["original_mentions"] == 2
    assert found["nearest_fts"] and found["nearest_fts"][0]["holds_original"]
    assert "'Windows' swapped for 'FreeBSD'" in unanswerable.explain(found)


def test_plan_asks_the_model_about_the_original_sentence(small_db):
    tasks = [t for t in plan_tasks(small_db, {"unanswerable": 3}, 0, answers_mode="extractive")]
    assert tasks and all(t.answer == t.option["sentence"] and t.option["original"] in DOCS["install.md"] + DOCS["editors.md"]
                         for t in tasks)


def test_a_scripted_run_stores_the_question_in_the_swapped_setting(small_db):
    """The scripted model asks 'What is known about <the sentence's first words>?', which names
    Windows for "On Windows, the agent installs ...": the stored row asks about the replacement
    instead, and the model's own question is kept as evidence."""
    summary = generate(small_db, GenerationConfig(count=3, mix={"unanswerable": 1}, seed=0),
                       backend=FakeBackend(scripted.good_reply))
    rows = [get_query(small_db, r[0]) for r in small_db.execute("SELECT id FROM queries WHERE query_type = 'unanswerable'")]
    assert summary["accepted"] == len(rows) >= 1
    for row in rows:
        found = row["quality_signals"]["unanswerable_evidence"]
        assert row["text"] == found["question"] and found["replacement"] in row["text"]
        assert found["model_question"] != row["text"] and found["replacement"] not in found["model_question"]
        assert not row["answerable"] and row["gold_chunk_ids"] == [] and found["replacement_mentions"] == 0


def test_a_question_off_its_sentence_is_not_a_near_miss(small_db):
    """From a labelled run: questions sharing no word with their sentence but the setting or a
    generic verb were off the sentence ("check if my home network is connected" from virus scanners)."""
    option = {"sentence": "Try checking the configuration of virus scanning software on your systems.",
              "original": "Windows", "replacement": "Android", "kind": "platform"}
    assert unanswerable.shared_words("How can I check if my home network is connected?", option) == set()
    reason, _ = unanswerable.judge(small_db, "How can I check if my home network is connected on Windows?", option,
                                   scripted.Gains())
    assert "shares no word with its sentence" in reason
    assert unanswerable.shared_words("Why do virus scanners slow Windows down?", option) == {"viru", "scann"}  # crude stems


def test_the_scope_of_the_option_is_in_the_evidence(small_db):
    option = {"sentence": "On Windows, the agent installs with the MSI package.", "original": "Windows",
              "replacement": "FreeBSD", "kind": "platform", "scope": "sentence"}
    reason, found = unanswerable.judge(small_db, "How does the agent install on Windows?", option, scripted.Gains())
    assert reason is None and found["question"] == "How does the agent install on FreeBSD?" and found["scope"] == "sentence"


def test_a_corpus_naming_no_software_swaps_countries_and_languages(docs_project, small_db):
    db = docs_project({"leave.md": "# Leave\n\nStaff employed in Germany get thirty days of paid leave each year.\n\n"
                                   "Requests for leave go to the team lead two weeks before the first day off.\n"},
                      "handbook")
    assert unanswerable.setting_kinds(db) == unanswerable.FALLBACK_KINDS
    found = unanswerable.options(db, chunk_like(db, "thirty days"), seed=0)
    assert [(o["original"], o["replacement"], o["swapped"]) for o in found] == [
        ("Germany", "United States", "Staff employed in the United States get thirty days of paid leave each year.")]
    # a technical corpus keeps to its technical settings: a country there is a fact, not a setting
    assert unanswerable.setting_kinds(small_db) == unanswerable.SETTING_KINDS
    assert unanswerable.swappable(small_db, "The agent company is based in Germany.") == []
    assert unanswerable.swap_in("Staff in the United States get ten days.", Detail("United States", "country"),
                                "Canada") == "Staff in Canada get ten days."
    assert unanswerable.swap_in("Staff in Germany get ten days.", Detail("Germany", "country"),
                                "United States") == "Staff in the United States get ten days."


def test_a_thing_supported_or_built_on_is_not_a_setting():
    eric = "Eric is an IDE built on PyQt and the Scintilla editing component."
    assert unanswerable.setting_preposition(eric, Detail("PyQt", "gui_toolkit")) is None
    m68k = "Support for the m68k architecture was dropped in the Etch release."
    assert unanswerable.setting_preposition(m68k, Detail("m68k", "architecture")) is None
    both = "Support for Windows was added; on Windows, use the installer."  # a later setting phrase still counts
    assert unanswerable.setting_preposition(both, Detail("Windows", "platform")) == "on"


def test_a_near_miss_names_what_the_corpus_is_about(small_db):
    assert unanswerable.corpus_subject(small_db) == "agent"  # in most chunks of the small corpus
    option = {"sentence": "On Windows, the agent installs with the MSI package.", "original": "Windows",
              "replacement": "FreeBSD", "kind": "platform", "scope": "sentence"}
    reason, _ = unanswerable.judge(small_db, "How does the MSI package install on Windows?", option, scripted.Gains())
    assert "does not name what the corpus is about ('agent')" in reason
    reason, found = unanswerable.judge(small_db, "How do agents install with the MSI package on Windows?", option,
                                       scripted.Gains())
    assert reason is None and found["question"] == "How do agents install with the MSI package on FreeBSD?"


def test_the_model_is_shown_the_setting_in_the_title(small_db):
    from curator.core.generation.asking import build_request

    task = next(plan_tasks(small_db, {"unanswerable": 1}, 0, answers_mode="extractive"))
    # a one-word title is a file name the prompt leaves out: the corpus's subject stands in
    assert " " not in task.chunks[0]["title"] and task.option["title"] == f"Agent {task.option['setting'].split()[0]} {task.option['original']}"
    prompt = build_request(task, GenerationConfig(count=1, seed=0)).messages[-1]["content"]
    assert task.option["title"] in prompt and task.option["sentence"] in prompt


def test_a_near_miss_asks_to_do_something_that_depends_on_its_setting(small_db):
    """Opening a file or exiting a script works alike everywhere: the corpus answers it in general."""
    option = {"sentence": "On Windows, the agent installs with the MSI package and opens its log.", "original": "Windows",
              "replacement": "FreeBSD", "kind": "platform", "scope": "sentence"}
    reason, _ = unanswerable.judge(small_db, "How does the agent open its log on Windows?", option, scripted.Gains())
    assert "asks nothing that depends on its setting" in reason
    reason, found = unanswerable.judge(small_db, "How do I set up the agent on Windows?", option, scripted.Gains())
    assert reason is None and found["question"] == "How do I set up the agent on FreeBSD?"


def test_a_near_miss_the_project_already_asks_in_other_words_is_a_repeat(small_db):
    """The labelled runs asked "install Python on ChromeOS" five times in 14 rows, in other words
    each time; the run's duplicate check saw only the model's question, in the original setting."""
    from curator.core.queries.rows import add_query

    option = {"sentence": "On Windows, the agent installs with the MSI package and starts its service.",
              "original": "Windows", "replacement": "FreeBSD", "kind": "platform", "scope": "sentence"}
    reason, found = unanswerable.judge(small_db, "How do I install the agent on Windows?", option, scripted.Gains())
    assert reason is None
    add_query(small_db, found["question"], "synthetic", query_type="unanswerable", answerable=False)
    for variant in ("How can I install the agent on my Windows PC?", "How to install agents on Windows?"):
        reason, _ = unanswerable.judge(small_db, variant, option, scripted.Gains())
        assert reason == "unanswerable: asks what an earlier near miss asks ('How do I install the agent on FreeBSD?')"
    # two words apart is another question; an answerable row asking it does not count
    add_query(small_db, "How do I start the agent service on FreeBSD?", "synthetic", query_type="factoid")
    reason, found = unanswerable.judge(small_db, "How do I start the agent service on Windows?", option,
                                       scripted.Gains())
    assert reason is None and found["question"] == "How do I start the agent service on FreeBSD?"

def test_the_evidence_embedder_runs_on_the_engines_threads_and_is_loaded_once(small_db):
    """MiniLM finds the nearest chunks on the generating engine's thread count (on a busy 2-core
    machine its default of every core was up to 10x slower) and is loaded once per process; the
    nearest chunks it finds are those MiniLM finds on every core (the real MiniLM)."""
    from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder

    one = unanswerable.evidence_embedder(1)
    if one is None:
        pytest.skip("MiniLM package not installed")
    assert one.n_threads == 1 and unanswerable.evidence_embedder(1) is one
    assert unanswerable.evidence_embedder(2) is not one and unanswerable.evidence_embedder(2).n_threads == 2
    option = {"original": "Windows", "replacement": "FreeBSD", "kind": "platform",
              "sentence": "On Windows, the agent installs with the MSI package from the downloads page."}
    question = "How do I install the agent on FreeBSD?"
    on_one = unanswerable.evidence(small_db, question, option, one)
    small_db.execute("DELETE FROM embeddings")  # every vector made again, on all cores
    on_all = unanswerable.evidence(small_db, question, option, MiniLMLlamaEmbedder())
    assert on_one["nearest_dense"] and on_one["embedder"] == on_all["embedder"]
    assert [c["chunk"] for c in on_one["nearest_dense"]] == [c["chunk"] for c in on_all["nearest_dense"]]
    assert [c["cosine"] for c in on_one["nearest_dense"]] == pytest.approx([c["cosine"] for c in on_all["nearest_dense"]], abs=1e-3)


def test_a_run_finds_near_miss_evidence_on_its_engines_threads(small_db, monkeypatch):
    """generate() asks for the evidence embedder with the backend's thread count."""
    asked = []
    monkeypatch.setattr(unanswerable, "evidence_embedder", lambda n_threads=None: asked.append(n_threads))
    backend = FakeBackend(scripted.good_reply)
    backend.n_threads = 1
    generate(small_db, GenerationConfig(count=2, mix={"unanswerable": 1}, seed=0), backend=backend)
    assert asked == [1]
