"""Filters that reject bad generated rows; each returns a reason string or None."""

from __future__ import annotations

import re
from typing import Iterable, Optional

from curator.core.generation.prompts import ANSWER_TAIL_CHARS, KEYWORD_WORD_CHARS
from curator.core.queries.realism import BUILTIN_REFERENCE
from curator.core.queries.words import STOPWORDS, content_words, stems as _stems, tokens, word_share

SELF_REFERENCE = re.compile(r"\b(the|this|that|given|above|following)\s+(passage|text|document|context|excerpt|article|paragraph|section)s?\b", re.I)
# "What does the function do?", "optimize the given code": a question about code only the prompt showed.
CODE_REFERENCE = re.compile(r"\b(this|given|above|following)\s+(code|function|example|snippet|program|script|method)s?\b"
                            r"|\bthe\s+(code|function|example|snippet|program|script)\s+(do|does|did|return|returns|work|works"
                            r"|mean|means|print|prints|output|outputs)\b|\bthe\s+(code|example|snippet)\s*\?$", re.I)
LOOP_GRAM = 4  # a question that says the same four words twice is a small model looping
COPY_SPAN_TOKENS = 8
NEAR_DUPLICATE_JACCARD = 0.8
MIN_GROUNDING = 0.5
MAX_RESTATED = 0.75  # share of an answer's content words already in its question
MAX_REPEATED = 0.3  # share of repeated 3-grams
MIN_QUESTION_GROUNDING = 0.5  # share of a factoid/keyword question's content words in its gold chunk


def check_length(question: str, query_type: str) -> Optional[str]:
    n = len(tokens(question))
    low, high = (2, 10) if query_type == "keyword" else (4, 40)
    if n < low:
        return f"too short ({n} words)"
    if n > high:
        return f"too long ({n} words)"
    return None


_PLACEHOLDER = re.compile(r"^\W*\[|\binsert\b.*\bhere\b|^\W*(query|question)\W*$", re.I)


def check_placeholder(question: str) -> Optional[str]:
    """Template echoes such as '[Query]' or 'insert query here' are not queries."""
    return "a placeholder, not a query" if _PLACEHOLDER.search(question) else None


def check_self_reference(question: str) -> Optional[str]:
    match = SELF_REFERENCE.search(question) or CODE_REFERENCE.search(question)
    return f"refers to '{match.group(0)}' instead of standing alone" if match else None


def check_copies_chunk(question: str, chunk_text: str) -> Optional[str]:
    """A question sharing a verbatim span of 8+ tokens with its chunk tests string matching."""
    q, c = tokens(question), tokens(chunk_text)
    if len(q) < COPY_SPAN_TOKENS:
        return None
    chunk_grams = {tuple(c[i : i + COPY_SPAN_TOKENS]) for i in range(len(c) - COPY_SPAN_TOKENS + 1)}
    for i in range(len(q) - COPY_SPAN_TOKENS + 1):
        if tuple(q[i : i + COPY_SPAN_TOKENS]) in chunk_grams:
            return f"copies a {COPY_SPAN_TOKENS}-token span of the chunk"
    return None


def check_grounded(answer: str, gold_texts: Iterable[str]) -> Optional[str]:
    """Most content words of the reference answer must appear in the gold chunk(s)."""
    words = content_words(answer)
    if not (answer or "").strip():
        return "empty reference answer"
    if not words:
        return "answer has no content words"  # "Yes, there is.": nothing a reviewer can check
    source = content_words(" ".join(gold_texts))
    share = len(words & source) / len(words)
    return None if share >= MIN_GROUNDING else f"answer not grounded in the gold chunk ({share:.0%} of its words)"


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


EXACT_DUPLICATE = "exact duplicate of an existing query"  # a rejection reason generate.py does not retry


class DuplicateIndex:
    """Exact (normalised text) and near (content-word Jaccard) duplicates of known queries."""

    def __init__(self, texts: Iterable[str]):
        self.exact: set[str] = set()
        self.word_sets: list[set[str]] = []
        for text in texts:
            self.add(text)

    def add(self, text: str) -> None:
        self.exact.add(" ".join(tokens(text)))
        self.word_sets.append(content_words(text))

    def check(self, text: str) -> Optional[str]:
        if " ".join(tokens(text)) in self.exact:
            return EXACT_DUPLICATE
        words = content_words(text)
        for known in self.word_sets:
            if jaccard(words, known) >= NEAR_DUPLICATE_JACCARD:
                return "near duplicate of an existing query"
        return None


def restated_share(question: str, answer: str) -> float:
    """Share of the answer's content words that the question already holds."""
    words = _stems(answer)
    return len(words & _stems(question)) / len(words) if words else 0.0


def check_restates(question: str, answer: str) -> Optional[str]:
    """An answer that repeats the question ("How do you remove ...?" / "How do you remove ...") answers nothing."""
    share = restated_share(question, answer)
    return f"answer restates the question ({share:.0%} of its words)" if share >= MAX_RESTATED else None


# "1. ", "2) ", "a) ", "- ", "* " at the start, or a new numbered item inside ("... 2. Does a ...").
_ENUM_START = re.compile(r"^\W{0,2}(\d{1,3}|[a-zA-Z])[.)]\s|^\s*[-*\u2022]\s")
_ENUM_INSIDE = re.compile(r"(^|\s)\d{1,3}[.)]\s+[A-Z]")


def check_enumeration(question: str, answer: str) -> Optional[str]:
    """List items are fragments of the chunk's layout, not queries or answers."""
    for label, text in (("question", question), ("answer", answer)):
        if _ENUM_START.search(text or "") or _ENUM_INSIDE.search(text or ""):
            return f"enumeration marker in the {label}"
    return None


def repetition_share(text: str) -> float:
    """Share of the 3-grams that repeat an earlier one: 0 for prose, near 1 for a loop."""
    words = tokens(text)
    grams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    return 1 - len(set(grams)) / len(grams) if len(grams) >= 4 else 0.0


def _repeats_a_phrase(text: str, n: int = LOOP_GRAM) -> bool:
    words = tokens(text)
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return len(grams) != len(set(grams))


def check_repetition(question: str, answer: str) -> Optional[str]:
    """A small model stuck in a loop ("a question about answering a question about ...")."""
    if _repeats_a_phrase(question):
        return f"degenerate repetition in the question (a {LOOP_GRAM}-word phrase twice)"
    for label, text in (("question", question), ("answer", answer)):
        share = repetition_share(text)
        if share >= MAX_REPEATED:
            return f"degenerate repetition in the {label} ({share:.0%} of its 3-grams repeat)"
        top = max((tokens(text).count(w) for w in content_words(text)), default=0)
        if top >= 4:
            return f"degenerate repetition in the {label} (one word {top} times)"
    return None


# A name with a '.' or '_' in it ("os.path", "list_append", "forloose_larkspur_").
_DOTTED_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:[._]\w*)*[._]\w*")
_DIGIT_RUN = re.compile(r"\d{6,}")


def check_invented_names(question: str, chunk_text: str) -> Optional[str]:
    """A small model glues words into names that exist nowhere ("systems.inboundmailrc",
    "forloose_larkspur_"): a name with a '.' or '_' must be one its gold chunk spells, and a run of
    six digits is a loop, not a number a user asks about."""
    if _DIGIT_RUN.search(question):
        return "a run of digits in the question"
    for name in _DOTTED_NAME.findall(question):
        if name.lower() not in chunk_text.lower():
            return f"names something its gold chunk does not ('{name}')"
    return None


# Words the bundled model glues or cuts when it runs on: "tocheckcertsetsupd", "client-side-email-",
# "linux-nvidia-fuchs". 106 of 668 stored keyword queries had one (2026-12-06); among labelled rows
# those were usable 14 times in 50, and mostly only after an edit.
GLUED_LETTERS = 17  # a run of letters this long is rare in English ("internationalization") and common in glue
_EDGE_PUNCTUATION = ".,;:!?()[]\"'`“”‘’"
_LETTER_RUN = re.compile(r"[A-Za-z]+")


def _glued_or_cut(word: str, query_type: str) -> Optional[str]:
    if not re.search(r"[A-Za-z]", word):
        return None  # "-" between numbers, ">&-": not a word
    if word.endswith("-") and not word.startswith("-"):
        return "cut off"
    pieces = word.strip("-").split("-")
    # "linux-nvidia-fuchs" is glue; "up-to-date", "copy-on-write", "20-year-old" join short words
    if sum(len(piece) > 3 for piece in pieces) >= 3:
        return "glued"
    if max(len(run) for run in _LETTER_RUN.findall(word)) >= GLUED_LETTERS:
        return "glued"
    if query_type == "keyword" and len(word) == KEYWORD_WORD_CHARS:
        return "cut off"
    return None


def _suspended(words: list[str], i: int) -> bool:
    """'pre-' in "pre- and post-install": a hyphen that waits for the word after the conjunction."""
    return words[i].endswith("-") and i + 1 < len(words) and words[i + 1].lower() in ("and", "or", "to")


def _words(text: str) -> list[str]:
    return [word for word in (raw.strip(_EDGE_PUNCTUATION) for raw in text.split()) if word]


def check_glued_words(question: str, query_type: str, chunk_text: str) -> Optional[str]:
    """A word its chunk does not spell that is glued from several ("withmostotherunixs",
    "single-byte-cipher-mode") or cut off mid-word ("mailbox-fetchmail-") is the model running on, not
    a term a user types; a long or hyphenated word the chunk spells ("edit-command-line") is kept. The
    chunk must spell the whole word: a cut-off word is mostly the start of one it holds."""
    words = _words(question)
    chunk_words: Optional[set[str]] = None
    for i, word in enumerate(words):
        fault = None if _suspended(words, i) else _glued_or_cut(word, query_type)
        if not fault:
            continue
        if chunk_words is None:
            chunk_words = {w.lower() for w in _words(chunk_text)}
        if word.lower() not in chunk_words:
            return f"a word {fault} ('{word}')"
    return None


_SENTENCE_BREAK = re.compile(r"[.!;:?]\s+\S")


def check_shape(question: str, query_type: str) -> Optional[str]:
    """A question is one sentence ending in one '?'; a keyword query is content words, not a sentence end."""
    if query_type == "keyword":
        words = tokens(question)
        if "?" in question:
            return "keyword query is a question, not search-box words"
        if not content_words(question):
            return "keyword query has no content words"
        if words and words[-1] in STOPWORDS:
            return f"keyword query ends on a function word ('{words[-1]}')"
        repeated = next((w for w in words if w not in STOPWORDS and words.count(w) > 1), None)
        if repeated:  # "floating point floating point issues", "traceback_on traceback_on": a loop
            return f"keyword query repeats a word ('{repeated}')"
        return None
    text = question.strip()
    if not text.endswith("?") or text.count("?") != 1:
        return "question does not end in exactly one '?'"
    if _SENTENCE_BREAK.search(text[:-1]):
        return "question is more than one sentence"
    return None


_SENTENCE_END = re.compile(r"""[.!?)\]"'`]$""")


def check_answer_complete(answer: str, bound: int = ANSWER_TAIL_CHARS) -> Optional[str]:
    """An answer that ran into the grammar's length bound without ending a sentence was cut
    mid-thought ("... a host address ("); a gold set's reference answer must be whole."""
    text = answer.strip()
    tail = text.split(" ", 1)[1] if " " in text else ""
    if len(tail) >= bound - 3 and not _SENTENCE_END.search(text):
        return "answer cut off at the grammar's length bound"
    return None


def question_grounding(question: str, gold_texts: Iterable[str]) -> float:
    """Share of the question's content words found (stemmed) in its gold chunk(s)."""
    return word_share(question, gold_texts)


def check_question_grounded(question: str, query_type: str, gold_texts: list[str]) -> Optional[str]:
    """A factoid or keyword query names what it asks about: its words must be mostly in the gold chunk."""
    if query_type not in ("factoid", "keyword"):
        return None  # vague questions paraphrase by design; multi-hop and unanswerable are checked elsewhere
    share = question_grounding(question, gold_texts)
    return None if share >= MIN_QUESTION_GROUNDING else f"question's words mostly absent from its gold chunk ({share:.0%})"


def check_touches_chunk(question: str, gold_texts: list[str]) -> Optional[str]:
    """An answer-first question must share at least one content word (stemmed) with its gold chunk:
    one that shares none asks about something else (the small model's commonest off-topic reply). A
    floor at the low tail of real questions, which almost all name something their answer holds; a
    lexical floor this low keeps paraphrases a retriever must work for."""
    return None if question_grounding(question, gold_texts) > 0 else "question shares no word with its gold chunk"


MIN_NEW_ANSWER_WORDS = 1  # content words an extracted answer must add to its question ("py_compile")


def check_adds_to_question(question: str, answer: str) -> Optional[str]:
    """An answer sentence taken from the chunk is correct by construction, and a question made from
    it shares many of its words ("What can compile a module manually?" / "The py_compile module can
    manually compile any module."), so the share test of check_restates would reject good rows. What
    still matters is that the answer tells the asker something: words the question does not hold."""
    new = _stems(answer) - _stems(question)
    return None if len(new) >= MIN_NEW_ANSWER_WORDS else f"answer adds nothing to the question ({len(new)} new words)"


def check_row(question: str, answer: str, query_type: str, gold_texts: list[str], source_text: str,
              duplicates: DuplicateIndex, extractive: bool = False,
              answer_bound: int = ANSWER_TAIL_CHARS, quoted: bool = False) -> Optional[str]:
    """The first reason to reject a generated row, or None to keep it.

    ``extractive``: the answer is a sentence of the gold chunk (generation.answers), so the word-overlap
    tests of an answer are moot, and a question only has to touch its chunk (one content word), not
    be mostly made of its words: a paraphrased question that names its subject in its own words ("Who
    coined the name Python?") is what real users write and what the grounding share wrongly rejected.
    ``answer_bound``: the free answer's grammar bound (it grows with the model: generation.capability).
    ``quoted``: the answer is the chunk's sentences that a need-first reply quoted (generation.needfirst), up to
    four of any shape (a list item, a word said four times), so only the question's shape is checked."""
    shaped = "" if quoted else answer
    reason = check_question(question, query_type, gold_texts, source_text, duplicates, shaped, extractive)
    if reason or (query_type == "unanswerable" and not extractive):
        return reason
    if extractive:
        return check_adds_to_question(question, answer)
    checks = [check_answer_complete(answer, answer_bound), check_grounded(answer, gold_texts), check_restates(question, answer)]
    return next((reason for reason in checks if reason), None)


def check_question(question: str, query_type: str, gold_texts: list[str], source_text: str,
                   duplicates: DuplicateIndex, shaped: str = "", extractive: bool = False) -> Optional[str]:
    """The first reason to reject a row for its question alone (check_row's checks that read no answer; ``shaped``:
    the answer whose shape the enumeration and repetition checks read, "" for none), or None. A need-first reply is
    screened with these before its quote is written (checks.screen_need_first)."""
    checks = [check_length(question, query_type), check_placeholder(question), check_self_reference(question),
              check_enumeration(question, shaped), check_shape(question, query_type),
              check_repetition(question, shaped), check_copies_chunk(question, source_text),
              check_invented_names(question, source_text),
              check_glued_words(question, query_type, source_text),
              None if extractive else check_question_grounded(question, query_type, gold_texts),
              duplicates.check(question), check_touches_chunk(question, gold_texts) if extractive else None]
    return next((reason for reason in checks if reason), None)


# Real questions reuse this share of their gold chunk's words (median of the built-in reference,
# queries.realism.BUILTIN_REFERENCE): the question_grounding margin is full here and gives nothing
# more for reusing more, so the score never rewards copying the chunk (issue 27).
REAL_MEDIAN_GROUNDING = BUILTIN_REFERENCE["chunk_overlap"]["median"]


def margins(question: str, answer: str, query_type: str, gold_texts: list[str],
            extractive: bool = False) -> dict[str, float]:
    """How far an accepted row clears each graded filter (0 = at the threshold, 1 = as far as can be).

    question_grounding is full at the real questions' median share of chunk words, not at a copy.
    ``extractive`` (the answer is a sentence of the chunk, generation.answers): its floor is one
    shared word, vague questions are measured too, and the answer's margins are left out: its
    grounding is 1 by construction, and not_restated read the wrong way (on 297 labelled
    answer-first rows a question sharing its answer's words was the usable one more often, AUC
    0.38); bench/quality.py --margins measures this on the labels."""
    found = {"repetition": 1 - max(repetition_share(question), repetition_share(answer)) / MAX_REPEATED}
    if query_type in ("factoid", "keyword") or (extractive and query_type == "vague"):
        floor = 0.0 if extractive else MIN_QUESTION_GROUNDING
        share = min(question_grounding(question, gold_texts), REAL_MEDIAN_GROUNDING)
        found["question_grounding"] = (share - floor) / (REAL_MEDIAN_GROUNDING - floor)
    if query_type != "unanswerable" and not extractive:
        words = content_words(answer)
        share = len(words & content_words(" ".join(gold_texts))) / len(words) if words else 0.0
        found["answer_grounding"] = (share - MIN_GROUNDING) / (1 - MIN_GROUNDING)
        found["not_restated"] = 1 - restated_share(question, answer) / MAX_RESTATED
    return {name: round(max(0.0, min(1.0, value)), 3) for name, value in found.items()}
