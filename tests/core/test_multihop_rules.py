"""Multi-hop rows made by rule (issue 28): the questions a rule writes for sentences whose subject is
the shared entity, the pairs it joins, and a whole run with the real bundled model (which checks the
likelihood margins and is spelled the second part by grammar)."""

from __future__ import annotations

import pytest

from curator.core.generation import multihop, multihop_rules
from curator.core.generation.generate import GenerationConfig, generate
from curator.core.generation.plan import plan_tasks
from curator.core.queries.rows import get_query

DOCS = {
    "sync.md": "# Sync settings\n\nThe `sync_interval` option sets how often the agent uploads changed files to "
               "the central server.\n\nUploads pause while the laptop runs on battery below twenty percent charge.\n",
    "metered.md": "# Metered links\n\nBandwidth on metered mobile connections is saved by the `sync_interval` "
                  "option.\n\nLogs of every upload are written to the agent folder under the user profile.\n",
    "faq.md": "# Questions\n\nThe agent keeps deleted files in a trash folder for thirty days before purging them.\n",
}


@pytest.mark.parametrize("sentence, entity, question", [
    ("IDLE is a cross-platform IDE for Python that is written in Python using Tkinter.", "IDLE", "What is IDLE?"),
    ("The `gc` module provides functions to perform a garbage collection.", "gc", "What does the gc module provide?"),
    ("The `select` module is commonly used to help with asynchronous I/O on sockets.", "select",
     "What is the select module used for?"),
    ("Changes to the refcount are guarded by the GIL.", "GIL", "What is guarded by the GIL?"),
    ("To prevent the TCP connect from blocking, you can set the socket to non-blocking mode.", "TCP",
     "How can I prevent the TCP connect from blocking?"),
    ("You can use aptitude through a visual interface or directly from the command line.", "aptitude",
     "How can I use aptitude?"),
    ("Cython compiles a modified version of Python with optional annotations into C extensions.", "Cython",
     "What does Cython compile?"),
    ("The `re` module matches patterns against strings.", "re", "What does the re module match?"),
    ("The `lru` decorator caches results of calls.", "lru", "What does the lru decorator cache?"),
])
def test_a_rule_writes_the_question_a_subject_first_sentence_answers(sentence, entity, question):
    assert multihop_rules.rule_question(sentence, entity) == question


@pytest.mark.parametrize("sentence, entity", [
    ("On Windows, use the Add/Remove Programs icon in the Control Panel.", "Windows"),  # not the subject
    ("The end of the RE has now been reached, and it has matched 'abcb'.", "RE"),  # "of": another subject
    ("Sometimes using the `re` module is a mistake.", "re"),
    ("The `select` call is blocking, but you can give it a timeout.", "select"),  # "is" + no noun phrase
    ("The `HTTPError` instance raised will have an integer code attribute.", "HTTPError"),
    ("Every logging event is represented by a `LogRecord` instance.", "GIL"),  # the entity is not named
])
def test_no_rule_question_for_other_sentences(sentence, entity):
    assert multihop_rules.rule_question(sentence, entity) is None


def test_pairs_made_by_rule_ask_two_different_things():
    assert not multihop_rules.rule_pair_differs("What does the operator module have?", "What does it contain?")
    assert multihop_rules.rule_pair_differs("What is the GIL used for?", "What is guarded by the GIL?")
    assert not multihop_rules.spelled_alike("APT", "The apt tool merges apt-get and apt-cache.", "APT is a tool.")


@pytest.fixture
def rule_db(docs_project):
    return docs_project(DOCS)


def test_plan_asks_pairs_made_by_rule_without_approved_rows(rule_db):
    tasks = list(plan_tasks(rule_db, {"multi_hop": 2}, 0, answers_mode="extractive"))
    assert tasks, "two chunks with a rule question each about `sync_interval`"
    option = tasks[0].option
    assert multihop.made_by_rule(option) and option["entity"] == "sync_interval"
    assert {option["first_question"], option["second_question"]} == {
        "What does the sync_interval option set?", "What is saved by the sync_interval option?"}
    assert len(tasks[0].chunks) == 2 and tasks[0].chunks[0]["id"] != tasks[0].chunks[1]["id"]
    assert multihop.capped_text(option, "Question: x?\n", "joined?") is None  # no model part to cap


def test_real_bundled_model_keeps_a_row_made_by_rule(rule_db, bundled_model):
    """The real model is spelled the second rule question by grammar; the row is the two rule questions
    joined, its gold both chunks, and the likelihood margins it passed are stored with it."""
    from curator.core.generation.backends import LlamaCppBackend

    backend = LlamaCppBackend(bundled_model, n_ctx=2048, parallel=2)
    summary = generate(rule_db, GenerationConfig(count=1, mix={"multi_hop": 1}, seed=0), backend=backend)
    asked = summary["accepted"] + summary["rejected"]
    assert 1 <= asked <= 2, summary  # one task from each chunk at most: a rule-made row is not asked again
    rows = [get_query(rule_db, r[0]) for r in rule_db.execute("SELECT id FROM queries WHERE query_type = 'multi_hop'")]
    print(summary["accepted"], summary["rejected_by_reason"], [r["text"] for r in rows])
    reasons = [r[0] for r in rule_db.execute("SELECT reason FROM rejected_candidates")]
    assert rows or all("likelihood" in r or "near duplicate" in r for r in reasons), reasons
    for row in rows:
        signals = row["quality_signals"]["multi_hop"]
        assert signals["made_by"] == "rule" and row["text"] == multihop.join(*signals["parts"], "sync_interval")
        assert set(row["source_chunk_ids"]) <= set(row["gold_chunk_ids"]) and len(row["source_chunk_ids"]) == 2
        if "likelihood_note" in signals:  # the check's verdict is shown, not applied, on rows made by rule
            assert signals["likelihood_note"].startswith("multi-hop: the ") and signals["sentence_gains"]
        else:
            own, other = signals["sentence_gains"], signals["other_sentence_gains"]
            assert min(own) >= multihop.MIN_SENTENCE_GAIN and all(o > x for o, x in zip(own, other))


# Session 38: the wider shapes a rule reads (multihop_rules.WIDER_SHAPES), all from the Python and Debian FAQs.
@pytest.mark.parametrize("sentence, entity, question", [
    ("For instance, the built-in `range()` function expects separate *start* and *stop* arguments.", "range()",
     "What does the built-in range() function expect?"),
    ("In Python’s string literals, `\\b` is the backspace character, ASCII value 8.", "\\b",
     "What is \\b in Python’s string literals?"),
    ("To read or write complex binary data formats, it’s best to use the `struct` module.", "struct",
     "What can I use the struct module for?"),
    ("If you want to return a new list, use the built-in `sorted()` function instead.", "sorted()",
     "What can I use the built-in sorted() function for?"),
    ("For a one-line description of the installation status of package foo, use the command dpkg --list foo.", "dpkg",
     "What can I use dpkg --list for?"),
    ("In Python 3.2 and later, `LogRecord` creation is done through a factory, which you can specify.", "LogRecord",
     "How is LogRecord creation done in Python 3.2 and later?"),
    ("In the case of most packages, dpkg will unpack the archive file of a package.", "dpkg",
     "What will dpkg unpack in the case of most packages?"),
    ("Passing the --log-option to dpkg makes dpkg log status change updates and actions.", "dpkg",
     "What does passing the --log-option to dpkg do?"),
    ("An alternative to aptitude is apt-get which is an APT-based command-line tool.", "aptitude",
     "What is an alternative to aptitude?"),
    ("For usage in scripts or advanced use cases, apt-get is still preferable or needed.", "apt-get",
     "What is apt-get preferable for?"),
    ("Cython and its relative Pyrex are compilers that accept a slightly modified form of Python.", "Cython",
     "What are Cython and its relative Pyrex?"),
    ("In contrast, the `sorted()` function accepts any iterable.", "sorted()", "What does the sorted() function accept?"),
])
def test_a_rule_reads_wider_sentence_shapes(sentence, entity, question):
    assert multihop_rules.rule_question(sentence, entity) == question


@pytest.mark.parametrize("sentence, entity", [
    ("Actually, `select` can be handy even with blocking sockets.", "select"),  # "can be handy" says nothing it does
    ("As you can see, the `finally` clause is executed in any event.", "finally"),  # "in any event" is no place
    ("The `HTTPError` instance raised will have an integer code attribute.", "HTTPError"),
    ("To loop over a sequence, use `collections.deque` in place of a list.", "collections"),  # another name
    ("The first argument of the call to the Enum constructor of the module is the name.", "Enum"),  # copies a span
])
def test_no_rule_question_from_the_wider_shapes_for_these(sentence, entity):
    assert multihop_rules.rule_question(sentence, entity) is None


def test_two_rule_parts_that_differ_by_one_word_ask_one_thing():
    assert not multihop_rules.rule_pair_differs("What can I use the sorted() function for?",
                                           "What can I use the built-in sorted() function for?")
    assert multihop_rules.rule_pair_differs("What does the struct module provide?", "What can I use the struct module for?")


WIDER = {
    "struct.md": "# Binary data\n\nThe `fmtpack` module provides functions for packing records into bytes and back "
                 "again, with one format string per record layout.\n\nEach format string names the byte order "
                 "first and then the size of every field in the record.\n",
    "files.md": "# Files\n\nTo read or write binary files of fixed-size records, it is best to use the `fmtpack` "
                "module.\n\nText files are opened in text mode by default on every platform.\n",
}


def test_a_use_for_sentence_pairs_with_a_subject_first_one(docs_project):
    db = docs_project(WIDER, "wider")
    tasks = list(plan_tasks(db, {"multi_hop": 2}, 0, answers_mode="extractive"))
    assert tasks and multihop.made_by_rule(tasks[0].option)
    assert {tasks[0].option["first_question"], tasks[0].option["second_question"]} == {
        "What does the fmtpack module provide?", "What can I use the fmtpack module for?"}


class _Gains:
    """An answer check whose gains make the second part lead to the first sentence more than its own."""

    def gain(self, question: str, sentence: str) -> float:
        return 0.9 if "option sets" in sentence else 0.5


def test_the_likelihood_check_is_shown_not_applied_on_rows_made_by_rule(rule_db):
    option = next(iter(plan_tasks(rule_db, {"multi_hop": 1}, 0, answers_mode="extractive"))).option
    raw = f"Question: {option['second_question']}\n"
    reason, signals = multihop.judge(raw, option, _Gains())
    assert reason is None and "leads to the other sentence" in signals["likelihood_note"]
    assert len(signals["sentence_gains"]) == 2
    model_part = {**option, "first_by": "model"}  # not made wholly by rule: the check rejects it
    reason, _ = multihop.judge(raw, model_part, _Gains())
    assert reason and "leads to the other sentence" in reason


def test_one_sentence_makes_one_multi_hop_row(rule_db):
    scope = multihop.RunScope(rule_db)
    chunk = dict(zip(("id", "doc_id", "title", "text"), rule_db.execute(
        "SELECT id, doc_id, title, text FROM chunks WHERE text LIKE '%sets how often%'").fetchone()))
    first = multihop.options(rule_db, chunk, 0, scope)
    assert first and set(first[0]["sentences"]) <= scope.used_sentences
    partner = dict(zip(("id", "doc_id", "title", "text"), rule_db.execute(
        "SELECT id, doc_id, title, text FROM chunks WHERE id = ?", [first[0]["partner"]["id"]]).fetchone()))
    assert multihop.options(rule_db, partner, 0, scope) == []  # the same pair from the other side: claimed
    generate(rule_db, GenerationConfig(count=1, mix={"multi_hop": 1}, seed=0), backend=_rule_backend(first[0]))
    assert set(first[0]["sentences"]) <= multihop.RunScope(rule_db).used_sentences  # and in the next run


def _rule_backend(option):
    from curator.core.generation.backends import FakeBackend

    return FakeBackend(lambda messages: f"Question: {option['second_question']}\n")


# Review findings of session 38 (s38 h5): shapes the wider rules misread; each wrote a wrong question.
@pytest.mark.parametrize("sentence, entity", [
    ("dpkg will fail if the package is broken.", "dpkg"),  # a verb with no object: not "What will dpkg fail?"
    ("The `server` will start automatically when you boot.", "server"),
    ("apt-get will complain about unmet dependencies.", "apt-get"),
    ("The `server` will start automatically.", "server"),
    ("Coordinates are always passed in the order *y,x*, and the corner is (0,0).", "Coordinates"),  # no place
    ("The `os.fork()` and `pty` modules are always available on Unix.", "pty"),  # an adverb, no plural noun
    ("Cython and Pyrex are dangerous to mix.", "Cython"),
    ("Since the GIL is held, the `gc` module is a no-op.", "gc"),  # "since" a cause, not a version
    ("In the example above, the `gc` module is a no-op.", "gc"),  # a setting that points back
    ("The `__del__()` method is called for every object.", "__del__()"),  # "for every": no purpose
])
def test_no_rule_question_for_shapes_the_review_found(sentence, entity):
    assert multihop_rules.rule_question(sentence, entity) is None


@pytest.mark.parametrize("sentence, entity, question", [
    ("Installing Debian packages requires root.", "Debian", "What does installing Debian packages do?"),
    ("Setting `sync_interval` flags enables uploads.", "sync_interval", "What does setting sync_interval flags do?"),
    ("The syntax of Python's `lambda` is limited.", "lambda", "What is the syntax of Python's lambda?"),
    ("The first argument to `--install' option is the symlink.", "--install",
     "What is the first argument to --install option?"),
    ("Since Python 3.8, the `gc` module is a no-op.", "gc", "What is the gc module since Python 3.8?"),
    ("The `__del__()` method is called for cleanup.", "__del__()", "What is the __del__() method called for?"),
    ("dpkg will unpack the archive file of a package.", "dpkg", "What will dpkg unpack?"),
    ("The `syslog` handler will write only complete lines.", "syslog", "What will the syslog handler write?"),
    ("The `divmod()` function will return 2 numbers.", "divmod()", "What will the divmod() function return?"),
])
def test_the_shapes_the_review_found_still_read_their_good_sentences(sentence, entity, question):
    assert multihop_rules.rule_question(sentence, entity) == question


def test_a_gerund_subjects_verb_after_an_adverb_is_read():
    sentence = "Applying `iter()` to a dictionary always loops over its keys, but dictionaries have other methods."
    assert multihop_rules.rule_question(sentence, "iter()") == "What does applying iter() to a dictionary do?"


@pytest.mark.parametrize("sentence, entity, question", [
    ("Using `set()` on a sequence eliminates duplicate elements.", "set()", "What does using set() on a sequence do?"),
    ("Installing Debian packages with dpkg requires root.", "dpkg", "What does installing Debian packages with dpkg do?"),
])
def test_a_gerund_subjects_verb_in_s_is_told_from_a_plural_noun(sentence, entity, question):
    assert multihop_rules.rule_question(sentence, entity) == question


def test_a_plural_noun_before_the_sentences_own_verb_is_no_gerund_verb():
    sentence = "Using escape sequences for code points greater than 127 is fine in small doses."
    assert multihop_rules.rule_question(sentence, "escape") is None
