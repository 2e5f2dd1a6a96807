"""Need-first rows for a capable model (issue 39): shown a chunk, the model writes what a user who has the need
this chunk meets would ask without having read it, then quotes the chunk's sentences that answer; the reference
answer is those sentences as the chunk spells them (located here, never the model's paraphrase), and gold is the
chunk plus every chunk holding that reference (store.gold.widened). Multi-hop rows and near misses stay made by
rule from the corpus's sentences (generation.multihop, generation.unanswerable).

Why not answer-first for such a model: a question written from one answer sentence asks about that sentence's
rare words, which lexical retrievers love, while users ask about the problem a passage solves; on the real
questions of the FAQ corpora dense retrieval wins, and answer-first rows put it last even from a 1.5B model
(docs/benchmarks.md, "Need-first questions"). The bundled 135M model cannot write from a whole passage
(issue 14), so it keeps answer-first rows; generation.capability chooses.
"""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher
from typing import Optional, Sequence

from curator.core.generation.answers import _BLOCK, _SENTENCE_END
from curator.core.queries.words import stems
from curator.core.generation.prompts import (_UNIT_RULE, ANSWER_FIRST_SHOTS, KEYWORD_GRAMMAR_WORDS, KEYWORD_WORD_RULE,
                                             cut_at_word)

# Multi-hop rows stay made by rule (generation.multihop) in every mode: written by the 1.5B model from two passages,
# 0 of 6 were usable by blind labels on three FAQs (a question one passage answers, or references that answer
# neither part), where its rule-made multi-hop rows were 4 of 5 (bench/blind/labels_s41.jsonl, 2026-12-07).
NEED_FIRST_TYPES = ("factoid", "keyword", "vague")
# "Has not read it" and "their need as a whole, not one detail": a question about one sentence carries that
# sentence's rare words (issue 39).
TASKS = {
    "factoid": "write the question they would type to get help: one question, in their own words, about their "
               "need as a whole, not about one detail of the passage",
    "keyword": "write the 2 to 6 words they would type into a search box (no question mark), in their own words",
    "vague": "write the short, loosely worded question they would ask while unsure of the right terms",
}
SYSTEM = ("You help build a test set for a documentation search engine. A user has the problem or question that "
          "the {what} resolves, and has NOT read it: they do not know its wording, its names for things or its "
          "details. Read the {what}, then {task}. Then quote, word for word, the sentence or sentences of the "
          "{what} that answer it.")
STYLE_INTRO = "Users of this documentation ask like this (match their length and wording, not their topics):"
STYLE_EXAMPLES = 8  # real log queries listed when none has gold yet (a fixed list: the prompt prefix stays cached)
# How people ask is shown as worked examples (a passage, then the user's query and the quote that answers it) rather
# than as a list of questions: shown 8 of the Debian FAQ's real questions as a list, the 1.5B model copied one of
# them word for word in 4 of 12 need-first candidates, for passages about other things, and wrote questions where
# keywords were asked for (2026-12-06, bench/validity.py --mode need-first). A worked example is a different
# passage with its own question: copying it answers nothing the shown passage says.


# The reply's shape is spelled out in each worked example's turn too, not in the last turn only. Once only is 40-70
# prompt tokens fewer per new chunk and 1.09-1.10x accepted rows/min with the 1.5B model, but its rows labelled worse
# blind: 21 of 32 usable against 26 of 32, most rejects a quote of the wrong sentence (docs/benchmarks.md, issue 42).
FORMAT_IN_EXAMPLES = True


def build_messages(query_type: str, passage: str, shots: Optional[Sequence[tuple[str, str, str]]] = None,
                   style: Sequence[str] = ()) -> list[dict]:
    """Chat messages of a need-first request: the instruction (and, when the project has real queries without gold,
    a list of them as how people here ask), worked examples ``shots`` of (title, passage, query) as earlier turns
    (the built-in ones when None), then the passage."""
    system = SYSTEM.format(what="passage", task=TASKS[query_type])
    if style:
        system += "\n" + STYLE_INTRO + "\n" + "\n".join(f"- {q}" for q in style)
    messages = [{"role": "system", "content": system}]
    label = "Query" if query_type == "keyword" else "Question"
    reply = f"\n\nReply as:\n{label}: ...\nAnswer: (the sentence of the passage that answers it, copied exactly)"
    for _title, example, query in (shots if shots is not None else builtin_shots(query_type)):
        messages += [{"role": "user", "content": f"Passage:\n{example}" + (reply if FORMAT_IN_EXAMPLES else "")},
                     {"role": "assistant", "content": f"{label}: {query}\nAnswer: {example}"}]
    return messages + [{"role": "user", "content": f"Passage:\n{passage}{reply}"}]


# Asking about a passage's section as a whole (issue 39's candidate "the section as a whole"): the model is shown every
# chunk of the chunk's section (same document and heading) and gold is all of them, as a real FAQ question's gold is
# its whole answer. Off by default; bench/validity.py --section measures it. A section of more chunks than
# MAX_SECTION_CHUNKS is asked about chunk by chunk, as before: its whole would not fit a prompt with worked examples.
WHOLE_SECTION = False
MAX_SECTION_CHUNKS = 4
MAX_SECTION_CHARS = 4800  # about 1,200 tokens: with three worked examples and the reply inside n_ctx 4096


def passage_of(texts: Sequence[str], limit: int) -> str:
    """The text a need-first request shows: one chunk, or a section's chunks in document order joined without the
    words consecutive chunks share (chunking overlaps them), cut at ``limit`` characters at a word's end."""
    joined = texts[0]
    for text in texts[1:]:
        joined += "\n" + text[_overlap(joined, text):].lstrip()
    return cut_at_word(joined, limit)


def _overlap(before: str, after: str, longest: int = 1200) -> int:
    """How many leading characters of ``after`` end ``before`` (the chunks' shared words), 0 if none."""
    for size in range(min(longest, len(before), len(after)), 20, -1):
        if before.endswith(after[:size]):
            return size
    return 0


def builtin_shots(query_type: str) -> list[tuple[str, str, str]]:
    """The built-in worked examples (prompts.ANSWER_FIRST_SHOTS): passages about other things, each with the
    query of someone who has that need and has not read it."""
    return [(title, answer, queries[query_type]) for title, answer, queries in ANSWER_FIRST_SHOTS]


# A capable model asked again about the same passage at the same temperature writes the same question with
# another seed (three "How can I set up anti-spam exclusions in sendmail?" for one fetchmail chunk, each rejected
# alike): each retry samples hotter, up to a bound where replies stay on the passage.
RETRY_HEAT = 0.25
MAX_RETRY_TEMPERATURE = 1.2


def retry_temperature(temperature: float, attempt: int) -> float:
    return min(MAX_RETRY_TEMPERATURE, temperature + RETRY_HEAT * attempt) if attempt else temperature


def grammar(query_type: str, question_chars: int) -> str:
    """The reply's shape: the query line (a question of up to ``question_chars``, or keyword words), then the
    quote line, any text to the end of the line. A quote is bounded only by the reply's token budget: one cut
    there still locates every sentence it spelled whole (locate), so no candidate is lost to a length bound
    (issue 39: 22 of 42 free-mode rejections with a 1.5B model were answers cut at the small model's bound)."""
    if query_type == "keyword":
        head = '"Query: " kword (" " kword){1,%d} "\\n"' % (KEYWORD_GRAMMAR_WORDS - 1)
    else:
        head = '"Question: " [A-Z] unit{9,%d} "?\\n"' % (question_chars - 1)
    return f'\nroot ::= {head} "Answer: " quote "\\n"\nquote ::= [^\\n]+\n{_UNIT_RULE}\n{KEYWORD_WORD_RULE}\n'


_QUERY = re.compile(r"^\s*(?:Question|Query)\s*:\s*(\S[^\n]*)", re.I | re.M)
_QUOTE = re.compile(r"^\s*Answer(?:\s*(\d))?\s*:\s*(\S[^\n]*)", re.I | re.M)


def parse_query(raw: str) -> Optional[str]:
    """The query line of a need-first reply (its quote may not be written yet), or None."""
    query = _QUERY.search(raw or "")
    return query.group(1).strip().strip('"') if query else None


def parse(raw: str, parts: int = 1) -> Optional[tuple[str, list[str]]]:
    """(query, [quote per passage]) of a need-first reply, or None when a line is missing. A quote cut by the
    token budget (no end of line) is kept: locate finds its whole sentences."""
    query = parse_query(raw)
    quotes = [m.group(2).strip() for m in _QUOTE.finditer(raw or "")]
    if not query or len(quotes) < parts:
        return None
    return query, quotes[:parts]


def _norm(text: str) -> str:
    """Text as compared: curly quotes and dashes as ASCII, no backticks or asterisks, one space, lower case."""
    text = unicodedata.normalize("NFKC", text)
    text = text.translate(str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                                         "\u2013": "-", "\u2014": "-", "`": "", "*": ""}))
    return " ".join(text.lower().split())


def sentences(chunk_text: str) -> list[str]:
    """The chunk's sentences in order, as it spells them (one space between words)."""
    found = []
    for block in _BLOCK.split(chunk_text or ""):
        found += [s for s in _SENTENCE_END.split(" ".join(block.split())) if s.strip()]
    return found


QUOTE_MATCH = 0.85  # a sentence the quote spells at least this closely (difflib ratio) is quoted
MIN_PART_CHARS = 20  # a quoted part shorter than this names its sentence too loosely
MAX_REFERENCE_SENTENCES = 4


def _quoted(sentence: str, quote: str) -> bool:
    own = _norm(sentence)
    if len(own) >= MIN_PART_CHARS and own in quote:  # the whole sentence, inside a quote of several
        return True
    if len(quote) >= MIN_PART_CHARS and quote in own:  # a part of one sentence
        return True
    return SequenceMatcher(None, own, quote, autojunk=False).ratio() >= QUOTE_MATCH


# A reply that answers in its own words rather than quoting (the 1.5B model's first need-first candidate on the
# Debian FAQ did) is located by its words: the chunk's sentence holding the largest share of the answer's content
# words, when that share is at least this. The reference is still the chunk's own sentence.
MIN_ANSWER_WORDS_FOUND = 0.6
MIN_ANSWER_WORDS = 4


def locate(quote: str, chunk_text: str) -> Optional[str]:
    """The chunk's own sentences that the model's quote spells, joined in the chunk's order (the first
    MAX_REFERENCE_SENTENCES); for an answer in the model's own words, the sentence holding most of its content
    words (MIN_ANSWER_WORDS_FOUND); None when no sentence does (an answer the chunk does not give)."""
    wanted = _norm(quote).strip('"')
    if not wanted:
        return None
    said = sentences(chunk_text)
    found = [i for i, s in enumerate(said) if _quoted(s, wanted)][:MAX_REFERENCE_SENTENCES]
    return " ".join(said[i] for i in _with_what_follows(found, said)) or _by_words(quote, chunk_text)


# A quote that ends on a colon ("To identify the package that produced the file named foo execute either:") is the
# introduction of what answers (a list, a command): the model stops there. In four blind sets (issue 39) 17 of 365
# labelled rows had such a reference: 10 rejected ("reference is only the intro sentence"), none usable as is.
FOLLOWING_SENTENCES = 3


def _with_what_follows(found: list[int], said: list[str]) -> list[int]:
    """The located sentences, and when the last ends on a colon, the FOLLOWING_SENTENCES after it."""
    if not found or not said[found[-1]].rstrip().endswith(":"):
        return found
    return found + list(range(found[-1] + 1, min(len(said), found[-1] + 1 + FOLLOWING_SENTENCES)))


def _by_words(answer: str, chunk_text: str) -> Optional[str]:
    words = stems(answer)
    if len(words) < MIN_ANSWER_WORDS:  # "Use a switch statement.": too few words to place by them
        return None
    shares = [(len(words & stems(s)) / len(words), -i, s) for i, s in enumerate(sentences(chunk_text))]
    share, _, best = max(shares, default=(0.0, 0, None))
    return best if share >= MIN_ANSWER_WORDS_FOUND else None


def reference(quotes: Sequence[str], chunk_texts: Sequence[str]) -> Optional[str]:
    """The reference answer of a reply: each quote located in its own chunk, joined; None when one is not."""
    found = [locate(quote, text) for quote, text in zip(quotes, chunk_texts)]
    return " ".join(found) if found and all(found) else None
