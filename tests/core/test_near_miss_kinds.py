"""Near misses whose setting is of a kind the corpus itself shows (issue 28, session 38): names it
lists together are learned as one kind (generation.kinds), a sentence naming one of them as its
setting may be swapped to a listed peer, and the peer is kept only when no chunk names it with what
is asked. On a real SQLite project over a small corpus written here; the last test runs the real
bundled model."""

from __future__ import annotations

import pytest

from curator.core.generation import kinds, unanswerable
from curator.core.generation.backends import FakeBackend
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.queries.rows import get_query
from scripted import chunk_like

# A shell manual whose settings are terminals, a kind no fixed family knows.
DOCS = {
    "terminals.md": "# Terminals\n\nThe zed shell runs in XTerm, Rxvt9 and KonsoleX without any changes, and its "
                    "prompt looks the same in each of them on every desktop we tried over the years.\n",
    "keys.md": "# Keys\n\nIn XTerm, configure the zed shell backspace key with the stty erase command.\n\n"
               "Open a new window afterwards and the change takes effect for every program you start there.\n",
    "rxvt.md": "# Rxvt9\n\nIn Rxvt9, the backspace key sends the erase character of the zed shell by default, "
               "so nothing needs to change in the startup file of your account or anywhere else.\n",
    "prompt.md": "# Prompt\n\nThe zed shell prompt shows the current directory and the time of day, and a "
                 "percent sign when the shell runs as an ordinary user rather than as the administrator.\n",
}


@pytest.fixture
def term_db(docs_project):
    return docs_project(DOCS)


def test_names_listed_together_are_lists_and_a_qualified_last_name_is_left_out():
    assert kinds.lists("It runs in XTerm, Rxvt9 and KonsoleX without changes.") == [["XTerm", "Rxvt9", "KonsoleX"]]
    assert kinds.lists("Get it as DVI, PostScript, PDF, or GNU info.") == [["DVI", "PostScript", "PDF"]]
    assert kinds.lists("Use `dpkg`, `apt-get` or apt(8).") == [["dpkg", "apt-get", "apt"]]
    assert kinds.lists("A sentence without any list.") == []


def test_a_kind_is_a_group_of_listed_names_one_of_which_fills_a_setting_slot():
    texts = ["The shell runs in XTerm, Rxvt9 and KonsoleX.", "Colours work in XTerm since release 4."]
    assert list(kinds.learn_kinds(texts).values()) == [frozenset({"XTerm", "Rxvt9", "KonsoleX"})]
    # no name of the group fills a setting slot: a list, not a kind of setting
    assert kinds.learn_kinds(["The shell supports XTerm, Rxvt9 and KonsoleX."]) == {}
    # a group holding a name a fixed family already knows is left to that family
    assert kinds.learn_kinds(texts, known=frozenset({"XTerm"})) == {}
    # mostly `code`: functions or types, what sentences are about, not where they hold
    assert kinds.learn_kinds(["Pass `int`, `str` and `bytes` in Python."]) == {}
    # lists of everyday words are no kind ("time, energy and money")
    assert kinds.learn_kinds(["It saves time, energy and money in most offices."]) == {}


def test_an_acronyms_plural_is_also_spelled_singular():
    assert kinds.singular("CDs") == "CD" and kinds.singular("DVDs") == "DVD"
    assert kinds.singular("Windows") is None and kinds.singular("xterm") is None


def test_lower_case_names_are_told_from_everyday_words_by_the_bundled_tokenizer(bundled_model):
    assert kinds.name_like("xterm") and kinds.name_like("rxvt") and kinds.name_like("contrib")
    assert not kinds.name_like("server") and not kinds.name_like("money") and not kinds.name_like("other")
    assert kinds.name_like("Konsole") and kinds.name_like("ext4") and kinds.name_like("xy", frozenset({"xy"}))


def test_a_learned_setting_is_swapped_to_a_peer_no_chunk_names_with_what_is_asked(term_db):
    assert list(unanswerable.learned_kinds(term_db).values()) == [frozenset({"XTerm", "Rxvt9", "KonsoleX"})]
    sentence = "In XTerm, configure the zed shell backspace key with the stty erase command."
    found = unanswerable.swappable(term_db, sentence)
    assert [d.text for d in found] == ["XTerm"] and found[0].kind.startswith(unanswerable.LEARNED)
    # Rxvt9 is named with "backspace", "key" and "erase" (rxvt.md): it may answer; KonsoleX is not
    assert unanswerable.replacements(term_db, found[0], sentence) == ["KonsoleX"]
    options = unanswerable.options(term_db, chunk_like(term_db, "stty erase"), seed=0)
    assert [(o["original"], o["replacement"], o["setting"]) for o in options] == [("XTerm", "KonsoleX", "in KonsoleX")]


def test_a_near_miss_to_a_learned_peer_is_judged_and_carries_its_evidence(term_db):
    option = unanswerable.options(term_db, chunk_like(term_db, "stty erase"), seed=0)[0]
    reason, found = unanswerable.judge(term_db, "How do I configure the zed shell backspace key in XTerm?", option)
    assert reason is None, reason
    assert found["question"] == "How do I configure the zed shell backspace key in KonsoleX?"
    assert found["replacement_mentions"] == 1 and found["replacement_with_question_words"] == 0
    assert found["learned_kind"] == ["KonsoleX", "Rxvt9", "XTerm"] and "lists" in found["method"]
    assert "listed with it in the corpus" in unanswerable.explain(found)
    # a question naming another peer of the kind: the corpus speaks of that one
    reason, _ = unanswerable.judge(term_db, "How do I configure the backspace key of the zed shell in XTerm or Rxvt9?",
                                   option)
    assert reason and "another" in reason


def test_a_peer_a_chunk_names_with_the_question_words_is_rejected(term_db):
    option = dict(unanswerable.options(term_db, chunk_like(term_db, "stty erase"), seed=0)[0], replacement="Rxvt9")
    reason, found = unanswerable.judge(term_db, "How do I configure the backspace key erase of the zed shell in XTerm?",
                                       option)
    assert found is None and "names 'Rxvt9' with what the question asks" in reason


def test_a_scripted_run_stores_a_learned_near_miss(term_db):
    backend = FakeBackend(lambda messages: "Question: How do I set up my backspace to erase in the shell when I use XTerm?\n")
    summary = generate(term_db, GenerationConfig(count=1, mix={"unanswerable": 1}, seed=0, answers="extractive"),
                       backend=backend)
    assert summary["accepted_this_session"] == 1, summary["rejected_by_reason"]
    (qid,) = term_db.execute("SELECT id FROM queries WHERE query_type = 'unanswerable'").fetchone()
    row = get_query(term_db, qid)
    assert row["text"] == "How do I set up my backspace to erase in the shell when I use KonsoleX?" and not row["answerable"]
    assert row["quality_signals"]["unanswerable_evidence"]["learned_kind"] == ["KonsoleX", "Rxvt9", "XTerm"]


def test_real_bundled_model_writes_a_learned_near_miss_or_says_why_not(term_db, bundled_model):
    """The real model writes the question the XTerm sentence answers; kept, it is asked of KonsoleX and
    carries the learned kind; rejected, the reason is one of the near-miss checks (never the format)."""
    from curator.core.generation.backends import LlamaCppBackend

    backend = LlamaCppBackend(bundled_model, n_ctx=2048, parallel=2)
    summary = generate(term_db, GenerationConfig(count=1, mix={"unanswerable": 1}, seed=0, retries=3), backend=backend)
    print(summary["accepted"], summary["rejected_by_reason"])
    assert summary["accepted"] + summary["rejected"] >= 1
    assert "output not in the Question/Answer format" not in summary["rejected_by_reason"]
    for (qid,) in term_db.execute("SELECT id FROM queries WHERE query_type = 'unanswerable'"):
        row = get_query(term_db, qid)
        found = row["quality_signals"]["unanswerable_evidence"]
        assert "KonsoleX" in row["text"] and "XTerm" not in row["text"] and found["replacement_with_question_words"] == 0
        assert found["learned_kind"] == ["KonsoleX", "Rxvt9", "XTerm"]


def test_each_peer_is_searched_once_from_options_to_evidence(term_db, monkeypatch):
    """swappable, _option, judge and evidence all ask about the same peers of one sentence: each
    peer's chunks are found by one full-text search, and the first peer that fits ends the search."""
    searched = []
    execute = term_db.execute

    def counting(sql, params=None):
        if "SELECT c.id, c.text FROM chunks_fts" in sql:
            searched.append(params[0])
        return execute(sql, params) if params is not None else execute(sql)

    monkeypatch.setattr(term_db, "execute", counting)
    option = unanswerable.options(term_db, chunk_like(term_db, "stty erase"), seed=0)[0]
    reason, found = unanswerable.judge(term_db, "How do I configure the zed shell backspace key in XTerm?", option)
    assert reason is None and found["replacement_with_question_words"] == 0
    assert sorted(searched) == ['"konsolex"', '"rxvt9"']  # Rxvt9 rejected, KonsoleX kept: once each


def test_loading_the_bundled_tokenizer_prints_nothing(bundled_model, capfd):
    kinds._vocab.cache_clear()
    kinds._split_by_model.cache_clear()
    assert kinds._vocab() is not None
    assert "llama_context" not in capfd.readouterr().err
