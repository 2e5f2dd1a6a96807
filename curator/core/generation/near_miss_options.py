"""Which near misses a chunk offers (generation.unanswerable, the planning step): the kinds whose
swap changes a question's setting, the sentences whose setting may be swapped (swappable,
chunk_setting), the replacement the corpus never mentions, the swapped text (swap_in), and options(),
what an unanswerable task about a chunk may ask.
"""

from __future__ import annotations

import random
import re
from typing import Iterator, Optional

import sqlite_utils

from curator.core.generation import kinds
from curator.core.generation.answers import answer_sentences
from curator.core.generation.near_miss_details import (DETAIL_FAMILIES, LEARNED, Detail, _corpus_cache, _holds,
                                                       chunks_with, corpus_mentions, corpus_subject, details,
                                                       learned_details, learned_kinds)

# Kinds whose swap changes the setting of a question (where, in what, which release), not what it is
# about. In the labelled runs the usable near misses swapped an editor, a platform and an init
# system; swapping what the sentence is about (a language: "PHP scripts" in the Python FAQ; a package
# tool: "pass --log-option to pip" in the Debian FAQ; a mail server, a Python implementation) made
# 7 of the 9 rejected ones. Those kinds are still recognised (a sentence naming two things of one
# kind is refused) but never swapped. Versions are not details at all: a later version was answered by
# the corpus's "3.10 and newer" (3 of 4 version near misses in a run on the Python FAQ), an earlier
# one by "3.9 and older" or never existed ("Python 2.9"); the code that swapped them was removed.
SETTING_KINDS = frozenset({"platform", "gui_toolkit", "editor", "shell", "database", "desktop", "init_system",
                           "bootloader", "filesystem", "architecture", "debian_release", "browser", "web_server",
                           "compiler", "display_server", "virtualization"})
# Settings of any corpus, used only by one that names none of the above (a handbook, a policy): in
# the Debian FAQ a country was a fact about a thing, not a setting ("SPI is incorporated in the United
# States" gave "Who is the Software in the Public Interest in Canada?").
FALLBACK_KINDS = frozenset({"country", "human_language"})
# Names said with "the" ("in the United States"), so a swap to or from one keeps the sentence English.
NAMES_WITH_THE = frozenset({"United States", "United Kingdom", "Netherlands"})
# The sentence must hold FOR its detail, as its setting: the detail follows one of these ("On
# Windows, use ...", "a Python mode for Emacs", "installs with systemd"). A detail that is what the
# sentence is about made nonsense or answered swaps in the labelled runs: "Windows remember where the
# cursor was" (curses windows), "cause Windows to require the DLL" (an .exe on Android).
SETTING_PREPOSITIONS = ("on", "under", "in", "for", "with", "within", "inside", "from", "using", "to")
# After these the detail is what the sentence is about, not its setting: "support for the m68k
# architecture was dropped" gave "...replaced on riscv64?" in a trial run, "Eric is an IDE built on
# PyQt" answers "is Eric built on wxPython?" (no), "ported to FreeBSD", "replaced with s390x".
OBJECT_VERBS = frozenset({"support", "supports", "supported", "port", "ports", "ported", "porting", "replaced",
                          "built", "based", "written", "switched", "migrated", "moved", "converted"})
# How a question about a sentence of a chunk about a setting (scope 'chunk'), which need not name it,
# gets it: "How do I install a new Python interpreter on my computer" + " on ChromeOS?". One per kind,
# not the sentence's own preposition ("the first argument to systemd" gave "to Upstart").
SETTING_PHRASES = {"platform": "on", "gui_toolkit": "with", "editor": "in", "shell": "in", "database": "with",
                   "desktop": "in", "init_system": "with", "bootloader": "with", "filesystem": "on",
                   "architecture": "on", "debian_release": "in", "browser": "in", "web_server": "with",
                   "compiler": "with", "display_server": "with", "virtualization": "in", "country": "in",
                   "human_language": "in"}
# A chunk naming its setting this often is about it (chunk_setting), so its other sentences hold there.
CHUNK_SETTING_MENTIONS = 2
# A sentence saying its statement holds only in its setting, or in every one, answers the swapped
# question itself ("the winreg module is only provided on Windows": on Android, no; "works with any
# init system ... not just with systemd": with Upstart too).
EXCLUSIVE_WORDS = frozenset({"only", "just", "any", "all", "every", "except", "exclusively", "whichever",
                             "regardless", "unlike", "besides"})
# A name in this share of the chunks is the corpus's subject ("Debian" in the Debian FAQ), not a
# detail of one answer: swapped, it would ask about another product altogether (Fedora), which no
# user of this corpus asks it.
MAX_SUBJECT_SHARE = 0.2
SUBJECT_MIN_CHUNKS = 3  # and in more chunks than this (in a corpus of a few chunks every name is in 20%)


def replacements(db: sqlite_utils.Database, detail: Detail, avoid: str = "") -> list[str]:
    """Things of the same kind that no active chunk mentions (and ``avoid``, the sentence, does not
    hold), best-known first (DETAIL_FAMILIES' order; a learned kind's, learned_replacements)."""
    return list(_replacements(db, detail, avoid))


def replacement(db: sqlite_utils.Database, detail: Detail, avoid: str = "") -> Optional[str]:
    """The first of replacements(), or None; found once per detail and text (swappable, chunk_setting
    and _option all ask it of one sentence), and only as far as the first peer that fits (a learned
    kind's check runs a full-text search per peer)."""
    cache = _corpus_cache(db)
    key = ("\0replacement", detail, avoid)
    if key not in cache:
        cache[key] = next(_replacements(db, detail, avoid), None)
    return cache[key]


def _replacements(db: sqlite_utils.Database, detail: Detail, avoid: str) -> Iterator[str]:
    if detail.kind.startswith(LEARNED):
        return learned_replacements(db, detail, avoid)
    return (c for c in DETAIL_FAMILIES[detail.kind]
            if c != detail.text and c.lower() not in avoid.lower() and corpus_mentions(db, c) == 0)


def learned_replacements(db: sqlite_utils.Database, detail: Detail, sentence: str) -> Iterator[str]:
    """Peers of a learned kind that ``sentence`` does not name and that no chunk names with what the
    sentence says (chunks_with), the most mentioned first (the best-known in this corpus), checked
    one at a time as they are asked for."""
    names = learned_kinds(db).get(detail.kind, frozenset())
    if detail.text not in names:  # the original is a plural's singular ("CD"): so are its peers
        names = frozenset(kinds.singular(n) or n for n in names)
    peers = sorted(names, key=lambda n: (-corpus_mentions(db, n), n))
    return (p for p in peers if p != detail.text and not _holds(sentence, p)
            and not chunks_with(db, p, sentence, (detail.text,)))


def is_subject(db: sqlite_utils.Database, detail: Detail) -> bool:
    """Whether the detail is what the whole corpus is about (MAX_SUBJECT_SHARE of its chunks)."""
    total = _active_chunks(db)
    mentions = corpus_mentions(db, detail.text)
    return mentions > SUBJECT_MIN_CHUNKS and mentions > MAX_SUBJECT_SHARE * total


def _active_chunks(db: sqlite_utils.Database) -> int:
    cache = _corpus_cache(db)
    if "\0total" not in cache:
        cache["\0total"] = db.execute("SELECT COUNT(*) FROM chunks WHERE active = 1").fetchone()[0]
    return cache["\0total"]


def setting_kinds(db: sqlite_utils.Database) -> frozenset:
    """The kinds a near miss swaps in this corpus: SETTING_KINDS, or FALLBACK_KINDS when no chunk
    names any of their things (counted once per project connection)."""
    cache = _corpus_cache(db)
    if "\0kinds" not in cache:
        technical = any(corpus_mentions(db, name) for kind in sorted(SETTING_KINDS) for name in DETAIL_FAMILIES[kind])
        cache["\0kinds"] = SETTING_KINDS if technical else FALLBACK_KINDS
    return cache["\0kinds"]


def setting_preposition(text: str, detail: Detail) -> Optional[str]:
    """The preposition that makes the detail the setting of ``text`` ("on" in "On Windows, use ..."),
    lower-case, or None when the detail is not introduced by one (SETTING_PREPOSITIONS)."""
    words = "|".join(SETTING_PREPOSITIONS)
    pattern = r"(\w+\s+)?\b(" + words + r")\s+(?:the\s+|a\s+|an\s+)?(?:Microsoft\s+|Apple\s+)?" + re.escape(detail.text) + r"(?![\w+#/-])"
    for found in re.finditer(pattern, text, re.I):
        if (found.group(1) or "").strip().lower() not in OBJECT_VERBS:
            return found.group(2).lower()
    return None


def exclusive(text: str) -> bool:
    """Whether the sentence says its statement holds only in its setting, or in any (EXCLUSIVE_WORDS)."""
    return bool(EXCLUSIVE_WORDS & set(re.findall(r"[a-z]+", text.lower())))


def swappable(db: sqlite_utils.Database, text: str) -> list[Detail]:
    """Details of ``text`` a near miss may swap: the setting of what it says (after a setting
    preposition, in a sentence that does not say "only" or "any"), not the corpus's subject, with a
    replacement the corpus never mentions, and the only one of its kind in the text ("Windows or
    Linux": swapping one leaves the other, still answered)."""
    if exclusive(text):
        return []
    settings = setting_kinds(db)
    fixed = [d for d in details(text) if d.kind in settings]
    return _swappable_among(db, text, fixed) + _swappable_among(db, text, learned_details(db, text))


def _swappable_among(db: sqlite_utils.Database, text: str, found: list[Detail]) -> list[Detail]:
    """The details of ``found`` (all of ``text``'s of some kinds) that are swappable (swappable())."""
    return [d for d in found if sum(o.kind == d.kind for o in found) == 1 and setting_preposition(text, d)
            and not is_subject(db, d) and replacement(db, d, text)]


def spelled(name: str) -> str:
    """How a name is written after a preposition: "the United States", "Android"."""
    return f"the {name}" if name in NAMES_WITH_THE else name


def swap_in(text: str, detail: Detail, replacement: str, ignore_case: bool = False) -> str:
    """``text`` with every standalone spelling of the detail replaced (in any case for a model's
    question, which may write "windows"; a corpus sentence's "windows" may be another thing), with
    its "the" where one of the names takes it."""
    the = r"(?:\bthe\s+)?" if detail.text in NAMES_WITH_THE else ""
    found = re.compile(the + r"(?<![\w+#/.-])" + re.escape(detail.text) + r"(?![\w+#/-])", re.I if ignore_case else 0)
    return found.sub(lambda _: spelled(replacement), text)


def chunk_setting(db: sqlite_utils.Database, chunk: dict) -> Optional[Detail]:
    """The setting a whole chunk is about: a swappable detail its text names at
    least CHUNK_SETTING_MENTIONS times, once after a setting preposition ("How do I run a Python
    program under Windows?" and its answer), and no other thing of that kind. None otherwise: a
    chunk that names Windows once in passing is not about Windows, and its other sentences say what
    holds everywhere ("virtual environments ... on Android?": the corpus answers it)."""
    text = " ".join((chunk.get("text") or "").split())
    found = details(text)
    for detail in found:
        if detail.kind not in setting_kinds(db) or any(o.kind == detail.kind and o != detail for o in found):
            continue
        named = len(re.findall(r"(?<![\w+#/.-])" + re.escape(detail.text) + r"(?![\w+#/-])", text))
        if setting_preposition(text, detail) and named >= CHUNK_SETTING_MENTIONS \
                and not is_subject(db, detail) and replacement(db, detail, text):
            return detail
    return None


def _option(db: sqlite_utils.Database, chunk: dict, sentence: str, detail: Detail, scope: str) -> dict:
    """One near miss a chunk offers. "title" is the title the model is shown with the sentence, with
    the setting named ("Python on Windows", "Logging Cookbook > A Qt GUI for logging with Qt"), since
    a question that names its setting makes the best near miss (near_miss_question). In brackets,
    "Debian (Windows)", the model copied them: "How to install Debian (ChromeOS) on Ubuntu?". A file name
    ("entry-003") says nothing and the prompt leaves it out, so the corpus's subject stands in."""
    swapped_to = replacement(db, detail, sentence if scope == "sentence" else chunk["text"])
    phrase = SETTING_PHRASES.get(detail.kind) or setting_preposition(sentence, detail) or "in"
    return {"answer": sentence, "sentence": sentence, "swapped": swap_in(sentence, detail, swapped_to),
            "original": detail.text, "kind": detail.kind, "replacement": swapped_to, "scope": scope,
            "setting": f"{phrase} {spelled(swapped_to)}",
            "title": f"{_topic(db, chunk)} {phrase} {spelled(detail.text)}"}


def _topic(db: sqlite_utils.Database, chunk: dict) -> str:
    title = (chunk.get("title") or "").strip()
    return title if " " in title else corpus_subject(db).capitalize()


def options(db: sqlite_utils.Database, chunk: dict, seed: int) -> list[dict]:
    """What an unanswerable task about ``chunk`` may ask, in a seeded order: each answer sentence that
    names a swappable setting (scope 'sentence'), or, in a chunk about one setting (chunk_setting),
    each sentence that names none (scope 'chunk'); with the replacement the corpus never mentions and
    the setting phrase ("on Android") a question that leaves the setting out gets. The model is shown
    the original sentence ("answer"): it writes the question a real sentence answers, which judge()
    then puts in the swapped setting."""
    found = []
    setting = chunk_setting(db, chunk)
    for sentence in answer_sentences(chunk["text"]):
        usable = swappable(db, sentence)
        if usable:
            found.append(_option(db, chunk, sentence, usable[0], "sentence"))
        elif setting and not exclusive(sentence) and not any(d.kind == setting.kind for d in details(sentence)):
            found.append(_option(db, chunk, sentence, setting, "chunk"))
    random.Random(f"{seed}:{chunk['id']}:unanswerable").shuffle(found)
    return found
