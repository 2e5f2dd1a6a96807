"""Multi-hop rows that hold together: two chunks sharing a specific entity, one answer sentence from
each, and one question that needs both (issue 28).

Why: given two passages and asked for a question needing both, the bundled 135M model wrote a
question about one of them, or garble (0 of 3 and 0 of 4 usable in the labelled quality-bench runs;
a two-answer prompt tried earlier passed 4 of 42 candidates). Here the corpus supplies what holds
the row together before the model writes a word: chunk A's answer sentence names a specific entity
(a command, an option, a module, a product: code-like, capitalised or a known name) that another
chunk B also names, in an answer sentence of its own that adds facts A's does not. The reference
answer is both sentences, both chunks are gold. The model writes the question each sentence answers
(answer-first, two lines; prompts.MULTI_HOP_GRAMMAR) and they are joined into one two-part question.

A question is kept only when neither sentence alone answers it, measured two ways: its content
words must include words only sentence A holds and words only sentence B holds (so it asks about
both facts, beyond the entity they share), and each part must lead to its own sentence (the
generating model's likelihood gain at least MIN_SENTENCE_GAIN, the answer-first floor). Entity and
partner are found with the project's full-text index (the words themselves), never with a
retriever under test.
"""

from __future__ import annotations

import random
import re
from typing import Optional

import sqlite_utils

from curator.core import store
from curator.core.generation import filters
from curator.core.generation.answers import MIN_ANSWER_GAIN, answer_sentences
from curator.core.generation.prompts import parse_question_pair
from curator.core.generation.unanswerable import DETAIL_FAMILIES, corpus_mentions
from curator.core.queries.words import STOPWORDS, content_words, stems

_KNOWN_NAMES = {name for names in DETAIL_FAMILIES.values() for name in names}
# An entity: `code`, a dotted or underscored name, a call "f()", an option "--all", a CamelCase or
# ALLCAPS name, or a word with letters and digits ("ext4", "utf8").
_CODE = re.compile(r"`([^`\s]{2,40})`")
_ENTITY = re.compile(r"(?<![\w.-])(--?[a-z][\w-]+|[A-Za-z_]\w*(?:[._]\w+)+(?:\(\))?|[A-Za-z_]\w*\(\)"
                     r"|[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}[0-9]*|[a-z]+[0-9]+[a-z0-9]*)(?![\w-])")
_CAPITALISED = re.compile(r"(?<=\s)([A-Z][a-z]{2,})\b")
MAX_ENTITY_SHARE = 0.03  # an entity in more chunks than this share (or MIN_ENTITY_CAP) is too common to link two
MIN_ENTITY_CAP = 6
MIN_NEW_WORDS = 3  # content words sentence B must add to sentence A, and A to B, to be a second fact
MAX_SHARED = 0.5  # Jaccard of the two sentences' stems above which they say the same thing
MAX_OPTIONS = 6  # sentence pairs kept per chunk (each retry asks about the next)
PARTNER_CHUNKS = 8  # chunks naming the entity looked at, per entity
MIN_SENTENCE_GAIN = MIN_ANSWER_GAIN  # each question of the pair against its sentence, as an answer-first row


def entities(sentence: str) -> list[str]:
    """Specific names in a sentence, in order: code, dotted names, options, acronyms, known products."""
    found = [m.group(1) for m in _CODE.finditer(sentence)]
    found += [m.group(1) for m in _ENTITY.finditer(sentence)]
    # A capitalised word counts only as a known name ("Moreover", "United" after a bracket are not entities).
    found += [w for w in _CAPITALISED.findall(sentence) if w in _KNOWN_NAMES]
    return [e for e in dict.fromkeys(found) if len(e) >= 2 and e.lower() not in STOPWORDS]


def _specific(db: sqlite_utils.Database, entity: str, total: int) -> bool:
    """Named in at least two chunks (another one to link to) and in few enough to mean one thing."""
    mentions = corpus_mentions(db, entity)
    return 2 <= mentions <= max(MIN_ENTITY_CAP, MAX_ENTITY_SHARE * total)


def _chunks_naming(db: sqlite_utils.Database, entity: str, exclude: str) -> list[dict]:
    """Active chunks whose text spells the entity exactly, other than ``exclude``, by id."""
    words = re.findall(r"\w+", entity.lower())
    rows = store.rows(db, """SELECT c.id, c.doc_id, c.title, c.text FROM chunks_fts JOIN chunks c
                             ON c.rowid = chunks_fts.rowid WHERE chunks_fts MATCH ? AND c.active = 1 AND c.id != ?
                             ORDER BY c.id LIMIT ?""", ['"' + " ".join(words) + '"', exclude, PARTNER_CHUNKS * 4])
    return [r for r in rows if entity in r["text"]][:PARTNER_CHUNKS]


def second_fact(first: str, second: str) -> bool:
    """Whether ``second`` says something ``first`` does not, and the other way round."""
    a, b = stems(first), stems(second)
    if not a or not b or len(a & b) / len(a | b) > MAX_SHARED:
        return False
    return len(b - a) >= MIN_NEW_WORDS and len(a - b) >= MIN_NEW_WORDS


def options(db: sqlite_utils.Database, chunk: dict, seed: int) -> list[dict]:
    """Sentence pairs a multi-hop task may ask about: a sentence of ``chunk`` and one of another chunk
    naming the same specific entity, chunks of other documents first; seeded order."""
    total = db.execute("SELECT COUNT(*) FROM chunks WHERE active = 1").fetchone()[0]
    found = []
    for first in answer_sentences(chunk["text"]):
        for entity in (e for e in entities(first) if _specific(db, e, total)):
            partners = _chunks_naming(db, entity, chunk["id"])
            partners.sort(key=lambda p: p.get("doc_id") == chunk.get("doc_id"))
            for partner in partners:
                pair = next((s for s in answer_sentences(partner["text"]) if entity in s and second_fact(first, s)), None)
                if pair:
                    found.append({"answer": f"{first} {pair}", "sentences": [first, pair], "entity": entity,
                                  "partner": {"id": partner["id"], "title": partner["title"], "text": partner["text"]}})
                    break
    random.Random(f"{seed}:{chunk['id']}:multi_hop").shuffle(found)
    return found[:MAX_OPTIONS]


def join(first: str, second: str) -> str:
    """One two-part question: "How do I reset my router, and what is the Wi-Fi password afterwards?"."""
    return f"{first.rstrip(' ?')}, and {second[:1].lower()}{second[1:]}"


def joined(raw: str) -> Optional[str]:
    """The joined question of a multi-hop reply (two 'Question N:' lines), or None."""
    pair = parse_question_pair(raw)
    return join(*pair) if pair else None


def hits(question: str, sentences: list[str]) -> tuple[set[str], set[str]]:
    """The question's stems found only in the first sentence, and only in the second."""
    asked, (a, b) = stems(question), (stems(s) for s in sentences)
    return asked & (a - b), asked & (b - a)


def judge(raw: str, option: dict, answer_check=None) -> tuple[Optional[str], dict]:
    """(reason to reject or None, signals) of a multi-hop reply: each question of the pair must be
    about its own sentence (likelihood gain at least MIN_SENTENCE_GAIN), and the joined question must hold
    words only the first sentence holds and words only the second holds, so neither alone answers it."""
    parts = parse_question_pair(raw) or ("", "")
    first, second = hits(join(*parts), option["sentences"])
    signals = {"entity": option["entity"], "sentences": option["sentences"], "partner": option["partner"]["id"],
               "parts": list(parts), "words_only_in_first": sorted(first), "words_only_in_second": sorted(second)}
    if not first or not second:
        alone = "first" if first else "second" if second else "either"
        return (f"multi-hop: the question asks about the {alone} sentence only" if alone != "either"
                else "multi-hop: the question holds no word of either sentence beyond what they share"), signals
    if filters.jaccard(content_words(parts[0]), content_words(parts[1])) >= filters.NEAR_DUPLICATE_JACCARD:
        return "multi-hop: the two questions ask the same thing", signals
    if answer_check is not None:
        gains = [answer_check.gain(part, sentence) for part, sentence in zip(parts, option["sentences"])]
        signals["sentence_gains"] = [round(g, 3) for g in gains]
        if min(gains) < MIN_SENTENCE_GAIN:
            weaker = "first" if gains[0] < gains[1] else "second"
            return (f"multi-hop: the {weaker} question does not lead to its sentence "
                    f"(likelihood gain {min(gains):.2f})"), signals
    return None, signals


def explain(found: dict) -> str:
    """One line for the reviewer: what links the two gold chunks and what the question asks of each."""
    return (f"multi-hop via '{found['entity']}' (chunk {found['partner']}): asks "
            f"{', '.join(found['words_only_in_first'][:3])} of the first sentence and "
            f"{', '.join(found['words_only_in_second'][:3])} of the second")
