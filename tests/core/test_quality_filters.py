"""The row filters of issue 14, on the rows a reviewer found in an accepted set."""

from __future__ import annotations

import pytest

from curator.core.generation import filters

LIST_CHUNK = ("In Python, pop() with no argument removes the final item of a list and returns it; del a[-1] "
              "deletes the last element without returning it.")
SELF_CHUNK = ("The first argument of a method is called self by convention. The delegation is accomplished "
              "via the __getattr__ method, which lets an object forward attribute lookups to another.")


def _check(question: str, answer: str, query_type: str = "factoid", chunk: str = LIST_CHUNK):
    return filters.check_row(question, answer, query_type, [chunk], chunk, filters.DuplicateIndex([]))


@pytest.mark.parametrize("question, answer, query_type, chunk, reason", [
    ("How do you remove the last element of a list in Python?",
     "How do you remove the last element of a list in Python?", "factoid", LIST_CHUNK, "restates the question"),
    ("1. The delegation is accomplished via the", "the __getattr__ method", "keyword", SELF_CHUNK, "enumeration"),
    ("1. This allows", "forwarding lookups", "keyword", SELF_CHUNK, "enumeration"),
    ("1. What is the purpose of self in Python?", "the first argument of a method", "factoid", SELF_CHUNK,
     "enumeration"),
    ("What does pop() return for a list?", "2. Does a mailbox have the last element", "factoid", LIST_CHUNK,
     "enumeration"),
    ("The method is called self. The delegation uses getattr. Methods forward lookups?",
     "by convention the first argument", "factoid", SELF_CHUNK, "more than one sentence"),
    ("Which method removes the element at the end of a list??", "pop with no argument", "factoid", LIST_CHUNK,
     "exactly one '?'"),
    ("delegation accomplished via the", "the __getattr__ method", "keyword", SELF_CHUNK, "function word"),
    ("How is a question about a question about a question about a question answered?",
     "pop returns the element", "vague", LIST_CHUNK, "repetition"),
    ("How do I configure the mailbox quota for shared calendars?", "pop with no argument returns it", "factoid",
     LIST_CHUNK, "mostly absent from its gold chunk"),
])
def test_issue_rows_are_rejected_with_their_reason(question, answer, query_type, chunk, reason):
    found = _check(question, answer, query_type, chunk)
    assert found and reason in found, found


@pytest.mark.parametrize("question, answer, query_type", [
    ("How do you remove the last element of a list in Python?", "Call pop() with no argument", "factoid"),
    ("remove last list element", "pop() with no argument", "keyword"),
    ("What is the easiest way to get rid of the final thing in a list?", "call pop()", "vague"),
])
def test_good_rows_pass_every_filter(question, answer, query_type):
    assert _check(question, answer, query_type) is None


def test_margins_are_high_for_a_clean_row_and_low_near_the_thresholds():
    clean = filters.margins("How do you remove the last element of a list?", "call pop() with no argument",
                            "factoid", [LIST_CHUNK])
    weak = filters.margins("How do you remove the last element of a list?", "remove the last element with pop",
                           "factoid", [LIST_CHUNK])
    assert set(clean) == {"repetition", "question_grounding", "answer_grounding", "not_restated"}
    assert all(0.0 <= v <= 1.0 for v in clean.values())
    assert clean["not_restated"] > weak["not_restated"]


def test_an_answer_without_content_words_is_named_as_such():
    assert filters.check_grounded("Yes, there is.", [LIST_CHUNK]) == "answer has no content words"
    assert filters.check_grounded("  ", [LIST_CHUNK]) == "empty reference answer"


def test_an_answer_the_grammar_cut_off_is_rejected():
    """Seen on the Python FAQ corpus: the bundled model ran into the answer's length bound."""
    from curator.core.generation import prompts

    cut = "In IP protocol, a host address names one machine on the network, and the rest of this answer goes on ("
    cut = "In " + (cut * 3)[: prompts.ANSWER_TAIL_CHARS]
    assert filters.check_answer_complete(cut) == "answer cut off at the grammar's length bound"
    whole = cut[:-1] + "."  # the same length, ended as a sentence
    assert filters.check_answer_complete(whole) is None
    assert filters.check_answer_complete("It removes and returns the last item") is None  # short and unended is fine
    assert "cut off" in _check("How do you remove the last element of a list in Python?", cut)


@pytest.mark.parametrize("question, reason", [
    ("What does the function do?", "refers to 'the function do'"),
    ("How can we optimize the given code to reduce the number of characters in the output?", "refers to 'given code'"),
    ("How do you make a thread-safe data structure in a thread-safe data structure?", "4-word phrase twice"),
    ("What is the difference between a logger that can log with custom level and a logger that can log with a "
     "custom level?", "4-word phrase twice"),
])
def test_rows_the_blind_labelling_rejected_are_filtered(question, reason):
    """Accepted by the issue-14 filters on the Python FAQ corpus, rejected by a blind labeller."""
    assert reason in (filters.check_self_reference(question) or filters.check_repetition(question, "An answer."))


@pytest.mark.parametrize("question", ["What does the function sum() return?", "How do I read the code of a module?",
                                      "What is the difference between a list and a tuple in Python?"])
def test_named_code_and_plain_questions_pass(question):
    assert filters.check_self_reference(question) is None and filters.check_repetition(question, "An answer.") is None


def test_an_unanswerable_question_a_chunk_mostly_answers_is_rejected(sample_db):
    from curator.core.generation.checks import _unanswerable_check

    chunk_id, text = sample_db.execute("SELECT id, text FROM chunks WHERE active = 1 ORDER BY id LIMIT 1").fetchone()
    words = sorted(filters.content_words(text))[:5]
    mostly = f"Why does {words[0]} {words[1]} {words[2]} need larkspur zeppelin?"  # 3 of 5 words in the chunk
    assert "may be answered by a chunk" in _unanswerable_check(sample_db, mostly)
    assert _unanswerable_check(sample_db, "Why do zeppelins migrate across volcanic tundra?") is None


def test_question_grounding_margin_does_not_reward_copying_the_chunk():
    chunk = ["The scheduler retries a failed backup job three times before it pages the operator on call."]
    answer = chunk[0]
    copied = "Does the scheduler page the operator after a failed backup job?"  # every word from the chunk
    like_real = "When is a failed backup job retried again?"                     # most of its words, as users ask
    off_topic = "Which colour schemes does the editor offer?"                  # none
    margin = {q: filters.margins(q, answer, "factoid", chunk, extractive=True)["question_grounding"]
              for q in (copied, like_real, off_topic)}
    assert filters.question_grounding(copied, chunk) == 1.0
    assert filters.REAL_MEDIAN_GROUNDING <= filters.question_grounding(like_real, chunk) < 1.0
    assert margin[copied] == margin[like_real] == 1.0 and margin[off_topic] == 0.0
    # answer-first rows keep no answer margins: the answer is the chunk's own sentence
    assert set(filters.margins(like_real, answer, "vague", chunk, extractive=True)) == {"repetition", "question_grounding"}
    # free answers keep theirs, and their floor is the grounding filter's threshold
    free = filters.margins(copied, answer, "factoid", chunk)
    assert {"answer_grounding", "not_restated"} <= set(free) and free["question_grounding"] == 1.0
