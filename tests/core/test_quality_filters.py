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
