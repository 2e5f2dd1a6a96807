"""Answer-first generation: which sentences may be reference answers, which one a retry takes, the
question-to-answer check (the real bundled model's likelihood gain), and the filters that change for
extracted answers."""

from __future__ import annotations

import json

import pytest

from curator.core.generation import filters, prompts, quality
from curator.core.generation import answers
from curator.core.generation.answers import AnswerLikelihood, answer_sentences, pick_answer
from curator.core.generation.backends import LlamaCppBackend
from curator.core.generation.generate import GenerationConfig, generate

CHUNK = """Van Rossum thought he needed a name that was short, unique, and slightly mysterious, so he decided \
to call the language Python. It was named after a comedy series. See also the history page.

>>> import this
The Zen of Python, by Tim Peters

- a list item that is long enough to be a sentence but is only an item.

The `py_compile` module can manually compile any module from the command line or a script."""


def test_answer_sentences_keep_standalone_prose_only():
    found = answer_sentences(CHUNK)
    assert found == ["Van Rossum thought he needed a name that was short, unique, and slightly mysterious, so he "
                     "decided to call the language Python.",
                     "The `py_compile` module can manually compile any module from the command line or a script."]
    # "It was named ..." leans on the sentence before it; "See also ..." is too short; code and list
    # blocks are never answers.


@pytest.mark.parametrize("text", ["", "Too short to say anything.", "x = [1, 2, 3]; y = {a: b for a, b in z}.",
                                  "What does this sentence ask about the thing it names here?"])
def test_text_without_an_answer_sentence_gives_none(text):
    assert answer_sentences(text) == []
    assert pick_answer({"id": "c1", "text": text}, 0) is None


def test_a_retry_takes_another_sentence_and_skipped_sentences_are_never_asked():
    text = " ".join(f"Sentence number {i} explains how widget {i} is calibrated before the audit." for i in range(5))
    chunk = {"id": "c_1", "text": text}
    first, second = pick_answer(chunk, 0), pick_answer(chunk, 1)
    assert first != second and {first, second} <= set(answer_sentences(text))
    assert pick_answer(chunk, 0) == first  # the same attempt, the same sentence
    assert {pick_answer(chunk, a) for a in range(5)} == set(answer_sentences(text))  # every one in turn
    skipped = {pick_answer(chunk, a, skip=lambda s: "widget 2" in s) for a in range(5)}
    assert len(skipped) == 4 and not any("widget 2" in s for s in skipped)


def test_ranked_answer_sentences_put_stated_facts_first_and_examples_and_pointers_last():
    text = ("For example, the widget can be calibrated by hand with a screwdriver and a level. "
            "Refer to the reference documentation on calibration for more information about widgets. "
            "The widget measures room temperature every ten seconds and stores the readings. "
            "Widget calibration resets the offset that the audit log records for the sensor.")
    chunk = {"id": "c_2", "title": "Sensors > Widget calibration", "text": text}
    ranked = answers.ranked_answer_sentences(chunk)
    assert sorted(ranked) == sorted(answer_sentences(text))
    # names two words of its heading ("widget", "calibration"), then the chunk's order; example and pointer last
    assert ranked[0].startswith("Widget calibration resets")
    assert ranked[1].startswith("The widget measures")
    assert {ranked[2][:10], ranked[3][:10]} == {"For exampl", "Refer to t"}
    assert [pick_answer(chunk, a) for a in (0, 1)] == ranked[:2]


def test_an_extracted_answer_must_add_words_to_its_question():
    answer = "The `py_compile` module can manually compile any module."
    assert filters.check_adds_to_question("How do I compile a module manually?", answer) is None
    assert "adds nothing" in filters.check_adds_to_question("Can the py_compile module compile any module manually?",
                                                           answer)
    duplicates = filters.DuplicateIndex([])
    # The share test of free answers would reject this good row (75% of the answer's words are in the question).
    assert filters.check_row("How do I compile a module manually?", answer, "factoid", [answer], answer, duplicates)
    assert filters.check_row("How do I compile a module manually?", answer, "factoid", [answer], answer, duplicates,
                             extractive=True) is None


def test_real_model_likelihood_gain_separates_a_matching_question_from_an_off_topic_one(bundled_model):
    check = AnswerLikelihood(bundled_model)
    answer = "The most common problem is that the signal handler is declared with the wrong argument list."
    on_topic = check.gain("What is the most common problem with a signal handler?", answer)
    off_topic = check.gain("How do I install Python on Windows?", answer)
    assert on_topic >= answers.MIN_ANSWER_GAIN > off_topic
    assert check.gain("How do I install Python on Windows?", answer) == pytest.approx(off_topic)  # deterministic
    assert check.describe().startswith("answer likelihood gain under ")


class _Gains:
    """Stands in for the model's likelihood check in fast tests: a fixed gain, and the pairs asked."""

    def __init__(self, gain: float):
        self.value, self.asked = gain, []

    def gain(self, question, answer):
        self.asked.append((question, answer))
        return self.value

    def describe(self):
        return "stand-in"


@pytest.mark.parametrize("gain, accepted", [(answers.MIN_ANSWER_GAIN - 0.01, 0), (answers.MIN_ANSWER_GAIN, 1)])
def test_a_question_that_does_not_lead_to_its_answer_is_rejected(sample_db, gain, accepted):
    from curator.core.generation.backends import FakeBackend

    check = _Gains(gain)
    summary = generate(sample_db, GenerationConfig(count=1, mix={"factoid": 1.0}, seed=1, retries=0),
                       backend=FakeBackend(_asking_about_the_answer), answer_check=check)
    sentences = {s for (text,) in sample_db.execute("SELECT text FROM chunks") for s in answer_sentences(text)}
    assert check.asked and all(answer in sentences for _, answer in check.asked)  # scored against the answer sentence
    assert (summary["accepted"] > 0) == bool(accepted)
    if not accepted:
        assert set(summary["rejected_by_reason"]) == {"question does not lead to its answer sentence"}
    else:
        (signals,), = sample_db.execute("SELECT quality_signals FROM queries WHERE source = 'synthetic' LIMIT 1")
        assert json.loads(signals)["answer_gain"] == gain
        assert f"by {gain:.2f} nats a token" in quality.explain(signals)
    (params,), = sample_db.execute("SELECT params FROM generation_runs")
    assert json.loads(params)["answer_check"]["likelihood"] == "stand-in"


def _asking_about_the_answer(messages) -> str:
    answer = messages[-1]["content"].split("Answer:", 1)[1]
    words = [w for w in filters.tokens(answer) if w not in filters.STOPWORDS and len(w) > 3][:2]
    return f"Question: What about {' '.join(words)} then?\n"


def test_answer_first_prompts_end_with_the_answer_and_share_their_examples():
    factoid = prompts.build_answer_first_messages("factoid", "Curses > What is curses?", "Curses draws text UIs.")
    keyword = prompts.build_answer_first_messages("keyword", "entry-017", "Curses draws text UIs.")
    assert factoid[-1]["content"] == "Document: Curses > What is curses?\nAnswer: Curses draws text UIs."
    assert keyword[-1]["content"] == "Answer: Curses draws text UIs."  # a file-name title says nothing
    assert len(factoid) == len(keyword) == 2 + 2 * len(prompts.ANSWER_FIRST_SHOTS)
    assert prompts.parse_query("Query: router factory reset\n") == "router factory reset"


def test_real_bundled_model_writes_answer_first_rows(sample_db, bundled_model):
    """The real model through the real grammar: every accepted factoid/keyword/vague row's reference is
    a sentence of its gold chunk, no embedder scored its question, and the run records how it was checked."""
    backend = LlamaCppBackend(bundled_model, n_ctx=2048, parallel=4)
    summary = generate(sample_db, GenerationConfig(count=4, seed=2, mix={"factoid": 2, "keyword": 1, "vague": 1},
                                                   retries=3), backend=backend)
    assert summary["accepted"] >= 1
    assert summary["rejected_by_reason"].get("output not in the Question/Answer format", 0) == 0
    for text, reference, gold, signals in sample_db.execute(
            "SELECT q.text, q.reference, c.text, q.quality_signals FROM queries q "
            "JOIN chunks c ON c.id = json_extract(q.gold_chunk_ids, '$[0]')"):
        assert reference in answer_sentences(gold)
        assert '"answer_match"' not in signals and "answer_cosine" not in signals
        assert json.loads(signals)["answer_gain"] >= answers.MIN_ANSWER_GAIN  # the model's own check kept it
    (params,), = sample_db.execute("SELECT params FROM generation_runs")
    params = json.loads(params)
    assert params["answers"] == "extractive" and "answer_matcher" not in params
    check = params["answer_check"]
    assert "No embedder" in check["filters"] and params["quality"]["version"] == 5
    assert check["likelihood"].startswith("answer likelihood gain under ") and check["min_gain"] == answers.MIN_ANSWER_GAIN


@pytest.mark.parametrize("question, chunk, reason", [
    ("sendmail location on Linux systems.inboundmailrc", "The location of sendmail varies.", "names something"),
    ("Return tuple containing multiple results.47672232231223233", "return a tuple", "a run of digits"),
    ("How does os.path.join work in Python 3.11?", "Use os.path.join to build paths in Python 3.11.", None),
    ("install larkspur server on macOS forloose_larkspur_", "Install Larkspur Server on macOS.", "names something"),
    ("what does list_append return", "list_append returns None.", None),
])
def test_invented_dotted_names_and_digit_runs_are_rejected(question, chunk, reason):
    found = filters.check_invented_names(question, chunk)
    assert (found is None) if reason is None else (reason in found)


@pytest.mark.parametrize("question, query_type, chunk, reason", [
    # stored bundled-model rows: the grammar cut a word at its length limit, or the model glued words
    ("delete multiple local names from client-side-email-", "keyword", "Delete mail on the server.", "cut off"),
    ("iau1s2s3s4s5s6s7s8 plans", "keyword", "Plans and prices.", "cut off"),
    ("What is the best time tocheckcertsetsupd", "keyword", "Check certificates daily.", "glued"),
    ("compare two strings using the single-byte-cipher", "keyword", "Compare strings.", "glued"),
    # the chunk must spell the whole word: a cut-off word is mostly the start of one it holds
    ("no-install-recomme apt", "keyword", "Pass --no-install-recommends to apt.", "cut off"),
    ("Which driver runs on linux-nvidia-fuchs?", "factoid", "The driver runs on Linux.", "glued"),
    # kept: words the chunk spells, and English that joins short words
    ("How can I use the edit-command-line widget?", "factoid", "The edit-command-line widget edits.", None),
    ("Why is my mirror not up-to-date?", "factoid", "Mirrors sync daily.", None),
    ("Does apt use copy-on-write?", "factoid", "Copy on write is not used.", None),
    ("What do pre- and post-install scripts do?", "factoid", "Maintainer scripts run.", None),
    ("Is a 20-year-old archive still served?", "factoid", "Old archives stay.", None),
    ("1.2 - 1.0 result", "keyword", "Subtraction.", None),
    ("internationalization settings", "keyword", "Internationalization settings live here.", None),
])
def test_glued_and_cut_off_words_are_rejected_unless_the_chunk_spells_them(question, query_type, chunk, reason):
    found = filters.check_glued_words(question, query_type, chunk)
    assert (found is None) if reason is None else (reason in found)
    row_reason = filters.check_row(question, chunk, query_type, [chunk], chunk, filters.DuplicateIndex([]),
                                   extractive=True)
    assert reason is None or row_reason == found  # check_row runs it


def test_the_keyword_grammar_and_the_cut_off_check_share_one_word_length():
    for grammar in (prompts.ASKED_KEYWORD_GRAMMAR, prompts.KEYWORD_GRAMMAR, prompts.CAPABLE_ASKED_KEYWORD_GRAMMAR,
                    prompts.CAPABLE_KEYWORD_GRAMMAR):
        assert "[a-zA-Z0-9'_+#-]{0,%d}" % (prompts.KEYWORD_WORD_CHARS - 1) in grammar


def test_a_keyword_query_that_repeats_a_word_is_a_loop():
    assert "repeats a word ('floating')" in filters.check_shape("floating point floating point issues", "keyword")
    assert filters.check_shape("floating point arithmetic issues", "keyword") is None


@pytest.mark.parametrize("sentence", [
    "That\u2019s because `argparse` treats the options we give it as strings, unless we tell it otherwise.",
    "Once that\u2019s done, the `has_colors()` function returns TRUE if the terminal can display color.",
    "Binary floating-point arithmetic holds many surprises like this.",
    "If you tried to look up the old value it wouldn\u2019t be found either, because the hash differs.",
    "Answer 1: Unfortunately, the interpreter pushes at least one C stack frame for each Python stack frame.",
])
def test_sentences_that_lean_on_their_neighbours_are_not_answers(sentence):
    assert answer_sentences(sentence) == []


def test_a_backend_without_a_model_file_runs_unchecked_and_the_summary_says_so(sample_db):
    """An endpoint has no local file to measure the likelihood with: the run goes on with the
    lexical filters, and says so (the old matcher's warning had no successor)."""
    from curator.core.generation.backends import FakeBackend

    summary = generate(sample_db, GenerationConfig(count=1, mix={"factoid": 1.0}, seed=1, retries=0),
                       backend=FakeBackend(_asking_about_the_answer))
    assert any("no likelihood answer check" in w for w in summary["warnings"])
    free = generate(sample_db, GenerationConfig(count=1, mix={"factoid": 1.0}, seed=2, retries=0, answers="free"),
                    backend=FakeBackend(_asking_about_the_answer))
    assert not any("likelihood" in w for w in free["warnings"])  # free answers have no answer sentence to check


def test_the_check_on_the_generators_own_context_gives_the_gains_of_a_second_load(bundled_model):
    """Issue 33: the likelihood passes run on the generating backend's batch-decoder context (no second
    copy of the model), and measure the same gains as a separate load with every position's logits."""
    backend = LlamaCppBackend(bundled_model, n_ctx=2048, n_threads=1, parallel=2)
    own, separate = AnswerLikelihood(backend=backend), AnswerLikelihood(bundled_model, n_threads=1)
    answer = "The most common problem is that the signal handler is declared with the wrong argument list."
    for question in ("What is the most common problem with a signal handler?", "How do I install Python on Windows?"):
        assert own.gain(question, answer) == pytest.approx(separate.gain(question, answer), abs=1e-3)
    assert own.describe() == separate.describe()
    assert backend._decoder.stats["scored_passes"] == 3  # two questions and one cached baseline


def test_scoring_between_decode_steps_leaves_greedy_replies_unchanged(bundled_model):
    """A pass runs while the generator is suspended between results, on a sequence of its own: the
    replies still decoding must come out token for token as without it."""
    from curator.core.generation.backends import Request

    backend = LlamaCppBackend(bundled_model, n_ctx=2048, n_threads=1, parallel=2)
    sentences = ["Guest accounts expire after seven days unless an administrator extends them.",
                 "The backup job runs every night and keeps the last fourteen copies.",
                 "Invoices above five thousand euros need a second approval before payment."]

    def replies(score_between: bool) -> list[str]:
        requests = [Request(prompts.build_answer_first_messages("factoid", "Manual", s), max_tokens=24,
                            temperature=0.0, grammar=prompts.asked_grammar("factoid")) for s in sentences]
        texts = {}
        for request, text in backend.iter_complete(requests):
            texts[id(request)] = text
            if score_between:
                AnswerLikelihood(backend=backend).gain(text or "What?", sentences[0])
        return [texts[id(r)] for r in requests]

    plain = replies(False)
    assert all(plain) and replies(True) == plain
