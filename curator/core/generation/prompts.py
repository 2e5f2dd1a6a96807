"""Prompt templates and the output format of reverse generation.

The fixed instructions come first and the passage last, so llama.cpp reuses the cached
prompt prefix from one row to the next. Output is constrained by a small GBNF grammar to two
labelled lines (``Question:``/``Answer:``), which a parser cannot misread. We chose this over
llama-cpp-python's JSON-schema ``response_format`` because that grammar is larger and its
sampler scans the whole vocabulary per token (measured 1.6x slower than free text on the
bundled model); the two-line grammar keeps the guarantee at a lower cost.
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

SYSTEM = ("You write test questions for evaluating a search engine over a company's documentation. "
          "Write exactly in the requested format.")

INSTRUCTIONS = {
    "factoid": ("Write one specific factual question that the passage answers completely, and the short answer "
                "taken from the passage. The question must make sense on its own, without the passage."),
    "keyword": ("Write a short search-box query of 3 to 6 words that someone would type to find this passage "
                "(no question mark), and the short answer the passage gives."),
    "vague": ("Write one vague, loosely worded question that a confused user might ask, which this passage "
              "answers. Use your own words, not the passage's wording. Then give the short answer."),
    "multi_hop": ("Write one question that needs BOTH passages to answer, and the short answer combining them."),
    "unanswerable": ("Write one question on the same topic as the passage that the passage does NOT answer "
                     "(ask about a detail it never mentions). Then write: Answer: not stated."),
}

# The grammars also shape the reply where a small model goes wrong most. Measured on the
# bundled model (30 rows, sample corpus, bench-style run), the older grammar let 9 of 117
# candidates through as "empty reference answer" ("...", "1", '"', "2. 1. 2. 3.") or "not in
# the Question/Answer format". The second kind ran out of max_tokens (96) inside the question:
# 30 words of 30 characters allowed a run of digits ("1.1.2.4.2.1...", one token a digit) or
# an inline "... hours. Answer: [#1] [#2] ..." to fill the budget before the Answer line. Now:
# - printable ASCII only, and each part bounded in characters: every token spells at least
#   one character, so MAX_REPLY_TOKENS (the longest reply the grammar admits) never cuts one;
# - a question starts with a capital letter (no "1. What ..." enumeration), is one sentence
#   (no ':', ';', '!' or '?' inside, and '.' only before a lowercase letter or digit, as in
#   "os.path" or "3.11": no ". Then" or ".Question" second sentence and no inline "Answer:")
#   and ends in exactly one '?';
# - an answer starts with a letter or a quote and has a second word: "...", '"', "1.1" (a
#   section number, the commonest empty answer once the question was bounded), a lone "Yes"
#   and "2. Does ..." (an enumeration) are not answers;
# - a keyword query is 2 to 8 words, each starting with a letter (no "1.2.2.1" runs, no dates);
# - no '[' anywhere, which is how template echoes such as '[Insert query here]' begin.
QUESTION_CHARS = 150
ANSWER_CHARS = 160
ANSWER_TAIL_CHARS = ANSWER_CHARS - 29  # the most the grammar lets an answer run after its first word
_ANSWER_RULE = r"""
answer ::= [A-Za-z"'(`] [!-Z\]-~]{0,24} " " [!-Z\]-~] [ -Z\]-~]{0,ANSWER}
""".replace("ANSWER", str(ANSWER_TAIL_CHARS - 1))  # a second word's first character, then the rest

# One character of a question, or '.' before a lowercase letter or digit ("os.path", "3.11").
_UNIT_RULE = r"""unit ::= [a-zA-Z0-9 '"(),/_+*=<>%#&$-] | "." [a-z0-9]"""

QUESTION_GRAMMAR = (f'\nroot ::= "Question: " [A-Z] unit{{9,{QUESTION_CHARS - 1}}} "?\\nAnswer: " answer "\\n"\n'
                    + _UNIT_RULE + _ANSWER_RULE)
KEYWORD_WORD_CHARS = 18  # a keyword word's longest: one this long was cut there (filters.check_glued_words)
# The most words a keyword grammar lets a capable model's query run to: past filters.check_length's 10, so a
# query that reaches it is rejected as too long. At 8 (free) and 6 (answer-first) a model that wanted one word more
# found the space forbidden and wrote the word on without one: "anerror", "oldercurls", "andSCPURLs" from the 1.5B
# model (issue 39), accepted because each is too short to look glued (filters.check_glued_words). The small model
# keeps its measured bounds: at 16 words the bundled model rambled into queries rejected as too long (the demo: 31
# of 69 rejections, one row fewer, ~20% more CPU), and filters.check_glued_words catches what it glues.
KEYWORD_GRAMMAR_WORDS = 16
SMALL_KEYWORD_WORDS, SMALL_ASKED_KEYWORD_WORDS = 8, 6


def _keyword_words(words: int) -> str:
    return '"Query: " kword (" " kword){1,%d}' % (words - 1)


KEYWORD_WORD_RULE = "kword ::= [a-zA-Z] [a-zA-Z0-9'_+#-]{0,%d}" % (KEYWORD_WORD_CHARS - 1)


def _keyword_grammar(words: int) -> str:
    return (f'\nroot ::= {_keyword_words(words)} "\\nAnswer: " answer "\\n"\n'
            + KEYWORD_WORD_RULE + ' ("." [a-z0-9_]{1,17})?' + _ANSWER_RULE)


KEYWORD_GRAMMAR = _keyword_grammar(SMALL_KEYWORD_WORDS)
CAPABLE_KEYWORD_GRAMMAR = _keyword_grammar(KEYWORD_GRAMMAR_WORDS)
# The longest reply the question grammar admits ('.' units are two characters), in
# characters and so in tokens, plus the end of turn.
MAX_REPLY_TOKENS = len("Question: ") + 2 * QUESTION_CHARS + len("?\nAnswer: ") + ANSWER_CHARS + 8

# Greedy to the end of the line (stripped afterwards): a lazy group followed by \s*$ was
# quadratic on a long run of spaces (2.7 s for 20,000), which a server ignoring max_tokens sends.
_QUESTION_LINE = re.compile(r"^\s*(?:Question|Query)\s*:\s*(\S[^\n]*)", re.I | re.M)
_ANSWER_LINE = re.compile(r"^\s*Answer\s*:\s*(\S[^\n]*)", re.I | re.M)


# Answer-first generation (generation.answers): the reference answer is a sentence of the chunk and
# the model writes only the query that sentence answers, after three worked examples from other
# domains (so no example leaks into a user's corpus). The examples are a fixed prompt prefix, so
# llama.cpp evaluates them once per sequence and every later request reuses them.
ANSWER_FIRST_TYPES = ("factoid", "keyword", "vague")
# The instructions ask for the user's need in everyday words: a question written from the answer's
# own words reuses them, and such rows were easier for BM25 than real questions (issue 27). They also
# ask about what the answer says and to name its subject: told only "everyday words", the small model
# asked about something else most of the time on the Python FAQ ("How do you change a string to upper
# or lower case?" for "Hexadecimal digits can be specified in lower or uppercase."; 38 of 53 rows
# unusable, mostly a question the gold chunk does not answer).
ANSWER_FIRST_INSTRUCTIONS = {
    "factoid": "Write the question a user would ask to get the given answer. Ask about what the answer says, "
               "and name the thing it is about (the program, command, function or setting). The user has not "
               "read the document: they describe the rest of their need in their own everyday words, not the "
               "answer's wording. The question must make sense on its own.",
    "keyword": "Write the 2 to 6 words a user who has not read the document would type into a search box to "
               "find the given answer: the name of the thing it is about, and their own everyday words for the "
               "need, not the answer's wording.",
    "vague": "Write a short, loosely worded question, in everyday words, that a user unsure of the right terms "
             "might ask and that the given answer answers. Ask about what the answer says. Do not reuse the "
             "answer's wording.",
}
# Written so that none copies its answer: each query names the need as someone who has not read the
# answer would ("quits halfway" for "stops with error E24"), sharing at most the product's name.
ANSWER_FIRST_SHOTS = [  # (document title, answer sentence, {type: query})
    ("Dishwasher manual", "A missing filter lets food particles block the drain pump, and the machine stops with "
     "error E24.", {"factoid": "Why does my dishwasher quit halfway through a wash?",
                    "keyword": "dishwasher quits halfway",
                    "vague": "Why won't my dishwasher finish?"}),
    ("Travel expense policy", "Receipts must be uploaded within 30 days of the trip, or the claim is closed.",
     {"factoid": "How long after travelling for work can I still get my money back?",
      "keyword": "late reimbursement work travel", "vague": "Is it too late to get paid back for last month's trip?"}),
    ("Router setup guide", "To return the router to factory settings, hold the reset button for ten seconds until "
     "the light blinks.", {"factoid": "How do I wipe everything I changed on my router?",
                           "keyword": "wipe router start over", "vague": "How do I start over with my internet box?"}),
]
# The words an answer-first question may open with: one rule for every grammar that asks one
# (ASKED_QUESTION_GRAMMAR and the second part of a multi-hop row, generation.multihop).
QUESTION_OPENERS = ("What", "How", "Why", "When", "Which", "Where", "Who", "Can", "Does", "Do", "Is", "Are", "Should",
                    "Will")
QUESTION_OPENER_RULE = "opener ::= " + " | ".join(f'"{word} "' for word in QUESTION_OPENERS) + "\n"
ASKED_QUESTION_UNITS = QUESTION_CHARS - 10  # after the opener: the opener and the '?' keep it within QUESTION_CHARS
ASKED_QUESTION_GRAMMAR = (
    f'\nroot ::= "Question: " opener unit{{6,{ASKED_QUESTION_UNITS}}} "?\\n"\n' + QUESTION_OPENER_RULE + _UNIT_RULE + "\n")
ASKED_VAGUE_GRAMMAR = f'\nroot ::= "Question: " [A-Z] unit{{9,{QUESTION_CHARS - 1}}} "?\\n"\n' + _UNIT_RULE + "\n"
# No dotted names in an answer-first keyword query: given the chance, the bundled model glued words
# into names that exist nowhere ("systems.inboundmailrc"), 60 of 337 rejections in one quality-bench
# run; a search-box query spells "os path join" just as well.
ASKED_KEYWORD_GRAMMAR = f'\nroot ::= {_keyword_words(SMALL_ASKED_KEYWORD_WORDS)} "\\n"\n' + KEYWORD_WORD_RULE + "\n"
# A capable model's keyword reply may end at its end-of-turn token without the newline: the 1.5B model ends its
# turn right after the words, and with the newline required the decoder kept sampling words the grammar allowed,
# so all 44 of its answer-first keyword candidates ran to the 16-word bound in loops ("alternative alternative
# ...") on the Debian FAQ (bench/validity.py --mode extractive, 2026-12-07).
CAPABLE_ASKED_KEYWORD_GRAMMAR = f'\nroot ::= {_keyword_words(KEYWORD_GRAMMAR_WORDS)} "\\n"?\n' + KEYWORD_WORD_RULE + "\n"
ASKED_MAX_TOKENS = len("Question: ") + 2 * QUESTION_CHARS + 8


def asked_grammar(query_type: str, capable: bool = False) -> str:
    """The grammar of an answer-first reply: one query line of the type's shape (a capable model's keyword
    query may run longer: KEYWORD_GRAMMAR_WORDS)."""
    keyword = CAPABLE_ASKED_KEYWORD_GRAMMAR if capable else ASKED_KEYWORD_GRAMMAR
    return {"keyword": keyword, "vague": ASKED_VAGUE_GRAMMAR}.get(query_type, ASKED_QUESTION_GRAMMAR)


def shown_title(title: Optional[str]) -> Optional[str]:
    """The title an answer-first prompt shows, or None. A one-word title is a file name ("entry-017"),
    which says nothing of the topic and which the small model then asks about; a heading path
    ("Curses > What is curses?") helps it name the subject."""
    return title if " " in (title or "").strip() else None


def _answer_turn(title: str, answer: str) -> str:
    shown = shown_title(title)
    return f"Document: {shown}\nAnswer: {answer}" if shown else f"Answer: {answer}"


def build_answer_first_messages(query_type: str, title: str, answer: str,
                                shots: Optional[list[tuple[str, str, str]]] = None,
                                log_queries: Sequence[str] = ()) -> list[dict]:
    """Chat messages for answer-first generation: instruction, worked examples, the answer.

    ``shots`` are (title, answer, query) examples from the project's real queries (generation.examples),
    else the built-in ones; ``log_queries`` are real queries without gold, listed as how people ask."""
    label = "Query" if query_type == "keyword" else "Question"
    system = ANSWER_FIRST_INSTRUCTIONS[query_type]
    if log_queries:
        system += "\nThis is how users of this documentation ask:\n" + "\n".join(f"- {q}" for q in log_queries)
    messages = [{"role": "system", "content": system}]
    examples = shots or [(t, a, queries[query_type]) for t, a, queries in ANSWER_FIRST_SHOTS]
    for shot_title, shot_answer, query in examples:
        messages += [{"role": "user", "content": _answer_turn(shot_title, shot_answer)},
                     {"role": "assistant", "content": f"{label}: {query}"}]
    return messages + [{"role": "user", "content": _answer_turn(title, answer)}]


def parse_query(raw: str) -> Optional[str]:
    """The query of an answer-first reply (its 'Question:' or 'Query:' line), or None."""
    found = _QUESTION_LINE.search(raw or "")
    return found.group(1).strip().strip('"') if found else None


# Multi-hop rows (generation.multihop): two answer sentences from two chunks that name one entity. Asked
# for one question needing both facts, the bundled model wrote a question about one of them or a
# muddle (0 of 6 usable in the first labelled run); it writes a good question for one answer sentence
# about half the time (answer-first). So it writes the question each fact answers, two lines the
# grammar enforces, and generation.multihop joins them into one two-part question ("How do I reset
# my router, and what is the Wi-Fi password afterwards?") whose answer needs both chunks.
MULTI_HOP_INSTRUCTION = ("You are given two facts about the same thing. For each fact, write the question a user "
                         "would ask to get that fact, in everyday words. Each question must make sense on its own "
                         "and name the thing the facts are about.")
MULTI_HOP_SHOTS = [  # (what both facts are about, first fact, second fact, question 1, question 2)
    ("dishwasher",
     "A missing filter lets food particles block the drain pump, and the dishwasher stops with error E24.",
     "The drain pump sits behind the dishwasher's kickplate, which comes off after removing two screws.",
     "What makes my dishwasher stop with error E24?", "How do I get to the dishwasher's drain pump?"),
    ("Expenses app",
     "Travel receipts must be uploaded to the Expenses app within 30 days of the trip, or the claim is closed.",
     "In the Expenses app, receipts go under My Trips.",
     "What is the deadline for uploading travel receipts to the Expenses app?",
     "Where in the Expenses app do receipts go?"),
    ("router",
     "To return the router to factory settings, hold the reset button for ten seconds until the light blinks.",
     "After a factory reset the Wi-Fi password is the one printed on the label under the router.",
     "What do I press to reset my router to factory settings?", "Where is the router's Wi-Fi password after a reset?"),
]
# The two questions open with words of two different sets: in the second labelled run the model
# wrote the first question again as the second in 43 of 138 candidates, all rejected as repetition.
_OPENER_RULE = ('opener1 ::= "What " | "Which " | "Who " | "When "\n'
                'opener2 ::= "How " | "Why " | "Where " | "Can " | "Does " | "Do " | "Is " | "Are " | "Should "\n')
MULTI_HOP_PART_CHARS = 100  # each question of the pair; joined they stay within QUESTION_CHARS + a little
MULTI_HOP_GRAMMAR = (f'\nroot ::= "Question 1: " opener1 unit{{6,{MULTI_HOP_PART_CHARS}}} "?\\nQuestion 2: " opener2 '
                     f'unit{{6,{MULTI_HOP_PART_CHARS}}} "?\\n"\n' + _OPENER_RULE + _UNIT_RULE + "\n")
MULTI_HOP_MAX_TOKENS = 2 * (len("Question 1: ") + 2 * MULTI_HOP_PART_CHARS + 2) + 8
_PAIR = re.compile(r"Question 1:\s*(\S[^\n]*)\n\s*Question 2:\s*(\S[^\n]*)", re.I)


def _facts_turn(first: str, second: str, entity: Optional[str]) -> str:
    about = f"About: {entity}\n" if entity else ""
    return f"{about}Fact 1: {first}\nFact 2: {second}"


def build_multi_hop_messages(first: str, second: str, entity: Optional[str] = None) -> list[dict]:
    """Chat messages for a multi-hop pair: instruction, worked examples, the two facts and, when
    given, the entity both name (each question must name it: generation.multihop; told nothing,
    the model dropped it from 41 of 93 candidates' questions)."""
    messages = [{"role": "system", "content": MULTI_HOP_INSTRUCTION}]
    for shot_entity, shot_first, shot_second, question_1, question_2 in MULTI_HOP_SHOTS:
        messages += [{"role": "user", "content": _facts_turn(shot_first, shot_second, shot_entity if entity else None)},
                     {"role": "assistant", "content": f"Question 1: {question_1}\nQuestion 2: {question_2}"}]
    return messages + [{"role": "user", "content": _facts_turn(first, second, entity)}]


def parse_question_pair(raw: str) -> Optional[tuple[str, str]]:
    """The two questions of a multi-hop reply, or None."""
    found = _PAIR.search(raw or "")
    return (found.group(1).strip(), found.group(2).strip()) if found else None


def grammar_for(query_type: str, question_chars: int = QUESTION_CHARS, answer_chars: int = ANSWER_CHARS) -> str:
    """The grammar of a free-answer reply; the bounds grow with the model (generation.capability.Bounds)."""
    if (question_chars, answer_chars) == (QUESTION_CHARS, ANSWER_CHARS):
        return KEYWORD_GRAMMAR if query_type == "keyword" else QUESTION_GRAMMAR
    rule = _ANSWER_RULE.replace(f"{{0,{ANSWER_TAIL_CHARS - 1}}}", f"{{0,{answer_tail(answer_chars) - 1}}}")
    if query_type == "keyword":
        return CAPABLE_KEYWORD_GRAMMAR.replace(_ANSWER_RULE, rule)
    return (f'\nroot ::= "Question: " [A-Z] unit{{9,{question_chars - 1}}} "?\\nAnswer: " answer "\\n"\n'
            + _UNIT_RULE + rule)


def answer_tail(answer_chars: int) -> int:
    """The most a free answer may run after its first word (filters.check_answer_complete's bound)."""
    return answer_chars - 29


def max_reply_tokens(question_chars: int, answer_chars: int) -> int:
    """The longest free-answer reply a grammar of these bounds admits, in tokens (as MAX_REPLY_TOKENS)."""
    return len("Question: ") + 2 * question_chars + len("?\nAnswer: ") + answer_chars + 8


def build_messages(query_type: str, passages: list[str]) -> list[dict]:
    """Chat messages: fixed instruction and format first, passages last (prefix caching)."""
    label = "Query" if query_type == "keyword" else "Question"
    body = [INSTRUCTIONS[query_type], f"Reply in exactly this format:\n{label}: ...\nAnswer: ...", ""]
    for i, passage in enumerate(passages, 1):
        body.append(f"Passage {i}:\n{passage}" if len(passages) > 1 else f"Passage:\n{passage}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(body)}]


def parse_output(raw: str) -> Optional[tuple[str, str]]:
    """(question, answer) from a model reply, or None when either line is missing."""
    question = _QUESTION_LINE.search(raw or "")
    answer = _ANSWER_LINE.search(raw or "")
    if not question or not answer:
        return None
    text = question.group(1).strip().strip('"')
    if "?" not in text and _QUESTION_LINE.search(raw).group(0).lower().lstrip().startswith("question"):
        text += "?"
    return text, answer.group(1).strip().strip('"')


def templates() -> dict:
    """Everything that shapes the prompts, stored with each generation run."""
    return {"system": SYSTEM, "instructions": INSTRUCTIONS, "grammars": {"question": QUESTION_GRAMMAR,
                                                                          "keyword": KEYWORD_GRAMMAR},
            "answer_first": {"instructions": ANSWER_FIRST_INSTRUCTIONS, "examples": ANSWER_FIRST_SHOTS,
                             "grammars": {t: asked_grammar(t) for t in ANSWER_FIRST_TYPES}},
            # issue 28: unanswerable rows are near misses made from an answer-first factoid question
            # (generation.unanswerable); multi-hop rows ask about two facts (generation.multihop).
            "multi_hop": {"instruction": MULTI_HOP_INSTRUCTION, "examples": MULTI_HOP_SHOTS,
                          "grammar": MULTI_HOP_GRAMMAR},
            "unanswerable": "the factoid answer-first prompt, then a key detail swapped (generation.unanswerable)"}


def cut_at_word(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters cut back to a word's end and marked " ..." when it is longer."""
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."
