"""Unanswerable rows as near misses: a sentence of the corpus whose setting (the platform, editor,
init system, toolkit... it holds for) is swapped for one the corpus never mentions, and the question
that sentence answers, asked in the swapped setting (issue 28).

Why: asked to invent a question its passage does not answer, the bundled 135M model wrote nonsense
or a question the corpus does answer (2 of 9 and 0 of 9 usable in the labelled quality-bench runs).
So the model is no longer asked to invent. A chunk's answer sentence that names the setting of what
it says ("On Windows, use ...", "a Python mode for Emacs": SETTING_KINDS after a setting preposition,
not a thing "supported" or "built on") is picked, or any sentence of a chunk about one setting (its
name twice, once as a setting: the Python FAQ's Windows entries, the Debian FAQ's systemd entry);
the best-known thing of its kind that no chunk mentions is the replacement ("Emacs" -> "Vim",
"Windows" -> "ChromeOS"). The model writes the question the ORIGINAL sentence answers (the
answer-first factoid prompt: a real sentence, so a real question; its document title names the
setting, "Python on Windows"), and a rule puts the question in the swapped setting: the original's
name in it is replaced by the replacement's; a question about a sentence of a chunk about the
setting, which need not name it, gets the setting phrase added ("... on ChromeOS?"); a question
that leaves out the setting its own sentence names is rejected. So every near miss names the
replacement (asked to write from the swapped sentence, the model dropped it in 52 of 62 candidates),
and the model is judged on the question it wrote for a sentence it read (a shared word, the
likelihood gain), and the near miss must name what the corpus is about ("Python"). A sentence that
says its statement holds only in its setting ("winreg is only provided on Windows" answers "on
Android?": no) or in any is not used. A corpus that names no technical setting at all (a handbook)
swaps countries and languages instead (FALLBACK_KINDS).

The question stays one a user of this corpus could ask (same topic, a peer of its setting) while its
key detail is absent from the whole corpus, which full-text search shows. The evidence (the swap,
the replacement's zero mentions, the nearest chunks by full text and by the sentence embedder, and
whether they hold the original detail) is stored with the row in its quality signals, so a reviewer
sees why it is believed unanswerable; the reviewer still decides, since a corpus can answer a near
miss in general terms. The evidence is never a filter: the full-text and dense retrievers are the
ones under test.

Versions are not swapped (the labelled runs: a later version is answered by the corpus's "3.10 and
newer", an earlier one by "before 3.9" or never existed, "Python 2.9").
"""

from __future__ import annotations

import atexit
import random
import re
import weakref
from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import sqlite_utils

from curator.core.corpus.search import search_chunks
from curator.core.generation import kinds
from curator.core.queries.words import STOPWORDS, content_words, stem
from curator.core.generation.answers import MIN_ANSWER_GAIN, answer_sentences
from curator.core.store.stats import corpus_key

# Things of one kind a user might ask about, in the spelling a question uses. Only names that are
# not also everyday words ("Go", "R", "Edge", "dash" are left out): a swap must change the detail,
# and the corpus check must not miss a mention because the word means something else there.
# Each family lists its best-known members first: a replacement is the first one the corpus never
# mentions, so a near miss asks about a thing users of the corpus are likely to have (in the first
# labelled run a seeded random choice asked about "COBOL scripts" and "Julia objects" in the Python FAQ).
DETAIL_FAMILIES: dict[str, tuple[str, ...]] = {
    # Desktop systems before phones: a near miss of "start the installer from Windows" asks about a
    # peer ("from ChromeOS"), not a phone.
    "platform": ("Windows", "macOS", "Linux", "ChromeOS", "FreeBSD", "Android", "iOS", "WSL", "Solaris", "AIX",
                 "OpenBSD", "NetBSD", "HP-UX", "Haiku", "z/OS", "QNX", "Cygwin"),
    "language": ("JavaScript", "Java", "C++", "C#", "Rust", "PHP", "Ruby", "Kotlin", "Perl", "Scala", "Lua",
                 "Haskell", "Julia", "Erlang", "Fortran", "Tcl", "Pascal", "COBOL"),
    "python_implementation": ("CPython", "PyPy", "MicroPython", "Jython", "IronPython", "GraalPy", "Stackless"),
    "gui_toolkit": ("Tkinter", "PyQt", "PySide", "wxPython", "Kivy", "GTK", "Qt", "FLTK"),
    "editor": ("VS Code", "PyCharm", "Vim", "Emacs", "Sublime Text", "Notepad++", "IDLE", "Eclipse", "nano",
               "gedit", "Geany"),
    "shell": ("bash", "zsh", "PowerShell", "ksh", "tcsh", "csh"),
    "database": ("PostgreSQL", "MySQL", "SQLite", "MongoDB", "Redis", "MariaDB", "Oracle", "Cassandra"),
    "package_tool": ("pip", "conda", "apt", "apt-get", "Homebrew", "snap", "flatpak", "dnf", "yum", "pipx", "Poetry",
                     "aptitude", "dpkg", "rpm", "pacman", "zypper"),
    "desktop": ("GNOME", "KDE", "Xfce", "Cinnamon", "LXQt", "LXDE"),
    "init_system": ("systemd", "sysvinit", "OpenRC", "Upstart", "runit"),
    "bootloader": ("GRUB", "systemd-boot", "rEFInd", "SYSLINUX", "LILO"),
    "filesystem": ("ext4", "Btrfs", "XFS", "ZFS", "NTFS", "exFAT", "FAT32", "ext3", "ext2", "JFS", "ReiserFS"),
    "architecture": ("amd64", "arm64", "i386", "armhf", "riscv64", "ppc64el", "s390x", "armel", "mipsel", "loong64",
                     "PowerPC", "sparc64", "m68k", "Itanium"),
    # Newest first; only the release names that are not everyday words ("potato", "stretch", "buster").
    "debian_release": ("forky", "trixie", "bookworm", "bullseye", "jessie", "wheezy", "lenny", "sarge", "slink",
                       "hamm"),
    "distribution": ("Ubuntu", "Fedora", "Debian", "Arch Linux", "CentOS", "RHEL", "openSUSE", "Mint", "Alpine",
                     "Gentoo", "Slackware"),
    "browser": ("Chrome", "Firefox", "Safari", "Chromium", "Opera", "Konqueror", "Lynx"),
    "web_server": ("nginx", "Apache", "Caddy", "lighttpd", "Tomcat"),
    "mail_server": ("Postfix", "Exim", "Sendmail", "Dovecot", "qmail"),
    "version_control": ("git", "Mercurial", "Subversion", "CVS", "Bazaar"),
    "compiler": ("gcc", "clang", "MSVC", "MinGW", "icc"),
    "display_server": ("Wayland", "X11", "Mir"),
    "virtualization": ("Docker", "VirtualBox", "VMware", "QEMU", "KVM", "Xen", "LXC", "Podman", "Hyper-V"),
    # Settings of any corpus, technical or not (a handbook's "staff in Germany", a manual "available in
    # Spanish"): a corpus that names no software still gets near misses. Countries and languages whose
    # names are everyday words ("Turkey", "Chad", "Georgia") are left out.
    "country": ("United States", "Canada", "United Kingdom", "Germany", "France", "India", "Japan", "Australia",
                "Brazil", "Spain", "Italy", "Mexico", "Netherlands", "Sweden", "Switzerland", "Ireland",
                "South Korea", "Singapore", "New Zealand", "Austria", "Belgium", "Norway", "Denmark", "Finland",
                "Poland", "Portugal"),
    "human_language": ("English", "Spanish", "French", "German", "Chinese", "Japanese", "Portuguese", "Russian",
                       "Arabic", "Hindi", "Italian", "Korean", "Dutch", "Swedish", "Polish", "Turkish"),
}
# Other spellings of a name: a corpus that says "Visual Studio Code" mentions VS Code (the first
# labelled run's evidence said no chunk did).
ALIASES = {"VS Code": ("Visual Studio Code", "VSCode"), "macOS": ("Mac OS X", "OS X", "Macintosh"),
           "PostgreSQL": ("Postgres",), "Homebrew": ("brew install",), "PyQt": ("PyQt5", "PyQt6"),
           "PySide": ("PySide2", "PySide6"), "Tkinter": ("Tk",), "GTK": ("GTK+", "PyGObject", "PyGTK"),
           "WSL": ("Windows Subsystem for Linux",), "Chrome": ("Chromium",), "Upstart": ("upstart",),
           "Vim": ("vi",), "JavaScript": ("ECMAScript", "Node.js"), "Sublime Text": ("Sublime",),
           "X11": ("Xorg", "X Window System", "X.Org"), "KVM": ("libvirt",),
           "United States": ("USA", "U.S."), "United Kingdom": ("UK", "Britain")}
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
_FAMILY_OF = {name: family for family, names in DETAIL_FAMILIES.items() for name in names}
# A name inside a longer name is not that name ("Linux" in "Arch Linux", "C" in "C++", "apt" in "apt-get").
_NAME = re.compile(r"(?<![\w+#/-])(" + "|".join(re.escape(n) for n in sorted(_FAMILY_OF, key=len, reverse=True))
                   + r")(?![\w+#/-])")
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
NEAREST = 3  # nearest chunks kept as evidence, per retriever
DENSE_POOL = 8  # chunks full-text search finds, per text, among which the embedder's nearest are taken
# The question must be about its (swapped) sentence. H3's labelled runs measured this with MiniLM's
# cosine (0.7: below it near misses were muddled, "remove the ability to use micropython in
# Windows" at 0.58); MiniLM is the dense retriever under test, so the generating model's likelihood
# gain decides, at the answer-first floor (answers.MIN_ANSWER_GAIN), as it does for every row.
MIN_NEAR_MISS_GAIN = MIN_ANSWER_GAIN
# A name in this share of the chunks is the corpus's subject ("Debian" in the Debian FAQ), not a
# detail of one answer: swapped, it would ask about another product altogether (Fedora), which no
# user of this corpus asks it.
MAX_SUBJECT_SHARE = 0.2
SUBJECT_MIN_CHUNKS = 3  # and in more chunks than this (in a corpus of a few chunks every name is in 20%)


@dataclass(frozen=True)
class Detail:
    """A key detail of a sentence or question: its spelling and its kind (a DETAIL_FAMILIES key)."""

    text: str
    kind: str


def details(text: str) -> list[Detail]:
    """The named things of a known kind in a text, in order of appearance."""
    return list(dict.fromkeys(Detail(m.group(1), _FAMILY_OF[m.group(1)]) for m in _NAME.finditer(text or "")))


_MENTIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _corpus_cache(db: sqlite_utils.Database) -> dict:
    """What this module counted over the corpus (mentions, chunk total, subject, kinds), per project
    connection and corpus: an ingest on the same connection, as the window makes, starts it again."""
    key = corpus_key(db)
    stamp, cache = _MENTIONS.get(db, (None, {}))
    if stamp != key:
        cache = {}
        _MENTIONS[db] = (key, cache)
    return cache


def corpus_mentions(db: sqlite_utils.Database, term: str) -> int:
    """Active chunks that spell ``term`` or one of its ALIASES (summed: an overcount only makes a
    replacement look mentioned, never absent), counted once per project connection and corpus (an
    ingest on the same connection, as the window makes, counts again)."""
    cache = _corpus_cache(db)
    if term not in cache:
        cache[term] = sum(_count_mentions(db, t) for t in (term, *ALIASES.get(term, ())))
    return cache[term]


def _count_mentions(db: sqlite_utils.Database, term: str) -> int:
    """Active chunks that spell ``term`` (FTS5 phrase match, case-insensitive: '3.14' matches '3 14'
    too, which only ever overcounts, so a swap judged absent is absent)."""
    words = re.findall(r"\w+", term.lower())
    if not words:
        return 0
    phrase = '"' + " ".join(words) + '"'
    sql = ("SELECT COUNT(*) FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
           "WHERE chunks_fts MATCH ? AND c.active = 1")
    count = db.execute(sql, [phrase]).fetchone()[0]
    if count and not term.replace(".", "").isalnum():  # "C++" vs "C", "z/OS" vs "z os": check the spelling
        like = db.execute("SELECT COUNT(*) FROM chunks WHERE active = 1 AND instr(lower(text), ?) > 0",
                          [term.lower()]).fetchone()[0]
        return like
    return count


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


# Kinds learned from the corpus (kinds.py): names it lists together. Their peers are mentioned in the
# corpus, so a swap to one is kept only when no chunk names the peer with what is asked (absent_with).
LEARNED = "learned:"
# A chunk naming the peer and this many of the question's content words (or all of them, when it has
# fewer) may answer the swapped question: the peer is not kept.
MIN_SHARED_WITH_PEER = 2
SHARED_SHARE = 3  # or a third of them, whichever is more


def learned_kinds(db: sqlite_utils.Database) -> dict[str, frozenset[str]]:
    """The corpus's learned kinds (kinds.corpus_kinds; no name of a fixed family), once per corpus."""
    cache = _corpus_cache(db)
    if "\0learned" not in cache:
        cache["\0learned"] = kinds.corpus_kinds(db, frozenset(_FAMILY_OF))
    return cache["\0learned"]


def learned_details(db: sqlite_utils.Database, text: str) -> list[Detail]:
    """The names of a learned kind a text spells, as whole words, in order of appearance."""
    found = []
    for kind, names in learned_kinds(db).items():
        for name in names:
            for spelling in filter(None, (name, kinds.singular(name))):
                at = re.search(r"(?<![\w+#/.-])" + re.escape(spelling) + r"(?![\w+#/-])", text or "")
                if at and _ends_phrase(text, at.end()):
                    found.append((at.start(), Detail(spelling, kind)))
                    break
    return [d for _, d in sorted(found, key=lambda f: f[0])]


def _ends_phrase(text: str, end: int) -> bool:
    """Whether a name ends its noun phrase at ``end``: "from the GNU project" names a project, not GNU."""
    after = re.match(r"\s+([a-z]+)", text[end:])
    return not after or after.group(1) in STOPWORDS


def _question_stems(db: sqlite_utils.Database, text: str, leave_out: tuple[str, ...]) -> set[str]:
    """What a question asks, as stems: its content words but the setting's names, generic verbs and
    the corpus's subject ("debian" says nothing about which chunk answers)."""
    return _stems(text, leave_out) - {stem(corpus_subject(db))}


def chunks_with(db: sqlite_utils.Database, peer: str, text: str, leave_out: tuple[str, ...]) -> list[str]:
    """Active chunks that name ``peer`` and MIN_SHARED_WITH_PEER of ``text``'s content stems, or a
    third of them if more (all when it has fewer): chunks that may answer ``text`` asked of the peer. Full-text matching of
    the peer's name, then stems counted in Python (a co-occurrence count, not a retriever's ranking)."""
    cache = _corpus_cache(db)
    key = ("\0with", peer, text, leave_out)  # judge() and evidence() ask it of the same question
    if key not in cache:
        asked = _question_stems(db, text, leave_out + (peer,))
        # a long sentence shares a couple of words with any chunk of its corpus: a third of its words, there
        need = min(len(asked), max(MIN_SHARED_WITH_PEER, -(-len(asked) // SHARED_SHARE)))
        cache[key] = [cid for cid, stems in _chunks_naming(db, peer) if len(asked & stems) >= need]
    return cache[key]


def _chunks_naming(db: sqlite_utils.Database, peer: str) -> list[tuple[str, frozenset[str]]]:
    """The active chunks that spell ``peer`` (full-text match, then the spelling checked), each with
    its content stems; once per peer and corpus, since every sentence a peer is checked against asks
    the same chunks."""
    cache = _corpus_cache(db)
    key = ("\0naming", peer)
    if key not in cache:
        words = re.findall(r"\w+", peer.lower())
        rows = db.execute("SELECT c.id, c.text FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
                          "WHERE chunks_fts MATCH ? AND c.active = 1", ['"' + " ".join(words) + '"']).fetchall()
        cache[key] = [(cid, frozenset(_stems(chunk, ()))) for cid, chunk in rows if _holds(chunk, peer)]
    return cache[key]


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


# One sentence embedder per thread count for the life of the process: a run (and every later run of
# a GUI session or a bench) loads MiniLM once, not once per run.
_EVIDENCE_EMBEDDERS: dict = {}
atexit.register(_EVIDENCE_EMBEDDERS.clear)  # freed before interpreter teardown, when llama.cpp's frees still work


def evidence_embedder(n_threads: Optional[int] = None):
    """The sentence embedder (MiniLM on llama.cpp) that finds a near miss's nearest chunks, on
    ``n_threads`` threads: the generating engine's count (the cores other processes leave free), not
    MiniLM's own default of every core. With 2 threads on the 2-core machine at load 4-6, the evidence
    of 6 near misses took 4-51 s, against 3-11 s on 1 thread (ggml's OpenMP threads spin while one
    of them waits for a core; docs/generate.md, "Where an answer-first row's time goes").
    None without the MiniLM package."""
    from curator.core.embedding.embed import minilm_available

    if not minilm_available():
        return None
    key = n_threads or 0
    if key not in _EVIDENCE_EMBEDDERS:
        from curator.core.embedding.minilm_gguf import MiniLMLlamaEmbedder

        _EVIDENCE_EMBEDDERS[key] = MiniLMLlamaEmbedder(n_threads=n_threads)
    return _EVIDENCE_EMBEDDERS[key]


def _dense_nearest(db: sqlite_utils.Database, embedder, question: str, sentence: str) -> tuple[list, str]:
    """The chunks nearest the question in the sentence embedder, among those full-text search finds
    for the question or for its source sentence (embedding a whole corpus for the first near miss
    took minutes on a loaded laptop; these vectors are cached in the project), and that scope."""
    from curator.core.embedding.embed import embed_texts

    pool = {h["id"]: h["text"] for text in (question, sentence) for h in search_chunks(db, text, limit=DENSE_POOL)}
    if not pool:
        return [], "no chunk shares a word with the question"
    ids = list(pool)
    vectors = embed_texts(db, embedder, [pool[i] for i in ids])
    scores = vectors @ embedder.embed_batch([question])[0]
    nearest = [(ids[i], float(scores[i])) for i in np.argsort(-scores)[:NEAREST]]
    return nearest, f"the {len(ids)} chunks full-text search finds for the question or its source sentence"


def _chunk_says(db: sqlite_utils.Database, chunk_id: str, term: str) -> bool:
    text = db.execute("SELECT text FROM chunks WHERE id = ?", [chunk_id]).fetchone()
    return bool(text) and term.lower() in text[0].lower()


def evidence(db: sqlite_utils.Database, question: str, option: dict, embedder=None) -> dict:
    """Why the near miss is believed unanswerable, for the reviewer: the swap, how many chunks
    mention the replacement (0) and the original, and the nearest chunks by full text and by the
    sentence embedder, each marked with whether it holds the original detail (what it does answer)."""
    original = option["original"]
    fts = [{"chunk": h["id"], "bm25": round(h["score"], 2), "holds_original": _chunk_says(db, h["id"], original)}
           for h in search_chunks(db, question, limit=NEAREST)]
    nearest, scope = _dense_nearest(db, embedder, question, option["sentence"]) if embedder else ([], None)
    dense = [{"chunk": cid, "cosine": round(score, 3), "holds_original": _chunk_says(db, cid, original)}
             for cid, score in nearest]
    return {"method": "near miss: the question a sentence of the corpus answers, asked in a setting no chunk "
                      "mentions",
            "sentence": option["sentence"], "detail_kind": option["kind"], "original": original,
            "replacement": option["replacement"], "replacement_mentions": corpus_mentions(db, option["replacement"]),
            "original_mentions": corpus_mentions(db, original), "nearest_fts": fts, "nearest_dense": dense,
            "embedder": getattr(embedder, "id", None), "dense_scope": scope,
            **(_learned_evidence(db, question, option) if option["kind"].startswith(LEARNED) else {})}


def _learned_evidence(db: sqlite_utils.Database, question: str, option: dict) -> dict:
    """For a peer of a learned kind (which the corpus mentions): its kind's names and that no chunk
    names it with what the question asks."""
    return {"method": "near miss: the question a sentence of the corpus answers, asked of a peer the corpus "
                      "lists with its setting but never names with what is asked",
            "learned_kind": sorted(learned_kinds(db).get(option["kind"], ())),
            "replacement_with_question_words": len(chunks_with(db, option["replacement"], question,
                                                               (option["original"],)))}


def _holds(text: str, term: str) -> bool:
    return re.search(r"(?<![\w+#/.-])" + re.escape(term) + r"(?![\w+#/-])", text, re.I) is not None


def near_miss_question(question: str, option: dict) -> Optional[tuple[str, str]]:
    """The model's question (written for the original sentence) put in the swapped setting, and how:
    'swapped' when it named the original (every spelling replaced), 'kept' when it already named the
    replacement, 'added' when it names neither and its sentence comes from a chunk about the setting
    (scope 'chunk'; the setting phrase goes before the final '?'). None for a question that leaves
    out the setting its own sentence names: the model did not ask about it, and added it made 0 of
    10 labelled near misses usable ("was the 32-bit s390 port replaced on riscv64?"). Labelled
    (bench/quality_labels_issue28.jsonl, code issue28_v7): 8 of 9 usable when the question named the
    setting itself, 4 of 8 when a chunk's setting was added ("How to use non-blocking sockets with
    Python on ChromeOS?" is answered in general terms), so the model is shown the setting (title)."""
    detail = Detail(option["original"], option["kind"])
    if _holds(question, option["original"]):
        return swap_in(question, detail, option["replacement"], ignore_case=True), "swapped"
    if _holds(question, option["replacement"]):
        return question, "kept"
    if option.get("scope") != "chunk":
        return None
    body = question.rstrip().rstrip("?").rstrip()
    return f"{body} {option['setting']}?", "added"


# Words any how-to question and sentence share, which say nothing about what is asked ("How can I
# check if my home network is connected?" shared only "check" with a sentence about virus scanners).
GENERIC_WORDS = frozenset({"check", "checking", "use", "using", "used", "make", "get", "find", "know", "need",
                           "want", "try", "way", "work", "works", "new", "good", "best"})


def _stems(text: str, leave_out: tuple[str, ...]) -> set[str]:
    """Content words of ``text`` (crude stems: "scripts"/"script" meet) but generic ones and the words
    of ``leave_out``."""
    names = {w for name in leave_out for w in re.findall(r"\w+", name.lower())}
    return {stem(w) for w in content_words(text) if w not in names and w not in GENERIC_WORDS}


# Words frequent in any corpus that are not what it is about.
NOT_SUBJECTS = frozenset({"but", "have", "has", "more", "see", "other", "one", "not", "org", "https", "http", "www",
                          "com", "example", "also", "like", "each", "such", "most", "many", "must", "may", "used",
                          "following", "first", "default", "note"})


def corpus_subject(db: sqlite_utils.Database) -> str:
    """What the corpus is about, as one word: the content word in most active chunks ("python" in the
    Python FAQ, 37% of its chunks; "debian" in the Debian FAQ, 78%), counted once per connection."""
    cache = _corpus_cache(db)
    if "\0subject" not in cache:
        counts: dict[str, int] = {}
        for (text,) in db.execute("SELECT text FROM chunks WHERE active = 1"):
            for word in content_words(text):
                if len(word) > 3 and word.isalpha() and word not in NOT_SUBJECTS and word not in GENERIC_WORDS:
                    counts[word] = counts.get(word, 0) + 1
        cache["\0subject"] = max(sorted(counts), key=counts.get) if counts else ""
    return cache["\0subject"]


# What a user does that depends on where: a near miss about a technical setting must ask to do one
# of these ("How do I install Python on ChromeOS?"). Asked about anything else (opening a file,
# exiting a script, speed), the corpus answers it in general terms wherever it runs. Of the labelled
# near misses naming the corpus's subject (codes v6 to v9), on the Python FAQ 9 of the 12 asking one
# of these were usable, 8 of the 26 that did not; on the Debian FAQ 19 of 22 and 1 of 2. Counted on
# the rows the rule was read from; the fresh rows since are code issue28_v12. "run" is in too ("the
# server runs under systemd"), though it let in 3 usable and 4 rejected ones ("run a Python script on
# a ChromeOS laptop", answered in general terms).
SETTING_ACTIONS = frozenset({"install", "installs", "installed", "installing", "uninstall", "reinstall", "set",
                             "setup", "configure", "configuring", "start", "starts", "starting", "boot",
                             "enable", "disable", "upgrade", "upgrading", "remove", "removing", "run", "runs",
                             "running", "launch"})


def asks_setting_action(question: str) -> bool:
    return bool(SETTING_ACTIONS & set(re.findall(r"[a-z]+", question.lower())))


def names_subject(db: sqlite_utils.Database, question: str) -> bool:
    subject = corpus_subject(db)
    return not subject or stem(subject) in {stem(w) for w in content_words(question)}


def shared_words(question: str, option: dict) -> set[str]:
    """The stems the question shares with its sentence, the setting's names left out."""
    names = (option["original"], option["replacement"])
    return _stems(question, names) & _stems(option["sentence"], names)


# Two near misses whose content words (stems, generic words left out) differ by at most this many ask
# the same thing: "How do I install Python on ChromeOS?", "How can I install Python on my ChromeOS
# PC?", "How do I install the Python interpreter on ChromeOS?". The run's duplicate check saw only the
# model's question, written for the original setting, and its content-word Jaccard floor (0.8) lets a
# three-word question and its four-word variant through. By this rule the labelled near misses (code
# issue28_v12, six runs pooled) asked "install Python on ChromeOS" 5 times in 14 Python FAQ rows, and
# "install Debian on ChromeOS" 5 times and "install Debian with Upstart" 4 times in 14 Debian FAQ rows.
REPEAT_MAX_DIFFERENT_WORDS = 1


def repeated_near_miss(db: sqlite_utils.Database, question: str) -> Optional[str]:
    """An unanswerable row of the project (any source, any status) that asks what ``question`` asks,
    in other words (REPEAT_MAX_DIFFERENT_WORDS), or None."""
    asked = _stems(question, ())
    for (text,) in db.execute("SELECT text FROM queries WHERE query_type = 'unanswerable' ORDER BY created_at"):
        earlier = _stems(text, ())
        if asked and earlier and len(asked ^ earlier) <= REPEAT_MAX_DIFFERENT_WORDS:
            return text
    return None


def judge(db: sqlite_utils.Database, question: str, option: dict, answer_check=None,
          embedder=None) -> tuple[Optional[str], Optional[dict]]:
    """(None, evidence) for the question the model wrote from the original sentence, or (reason, None).

    The question must be about its sentence: share a word with it besides the setting and generic
    verbs (of 10 labelled near misses from two earlier runs, the 6 that shared none were 2 usable,
    the other 4 were 2 usable; "How can I check if my home network is connected on Android?" came
    from a sentence about virus scanners), and pass ``answer_check``, the generating model's likelihood gain of the sentence
    given the question, at least MIN_NEAR_MISS_GAIN (a near miss is only as plausible as the real
    question it mirrors). It must name what the corpus is about (corpus_subject): of the 46 near misses
    labelled before this rule (bench/quality_labels_issue28.jsonl, codes v1 to v6), 10 of the 17 that
    named it were usable ("How to install Python on Android?"), 2 of the 29 that did not ("How do I
    stop running Android in a bug report?"). It must not name another thing of the swapped kind ("on
    Windows or Linux": the corpus answers the other). The near miss is that question in the swapped
    setting (near_miss_question); it is in the evidence as "question", the model's own as
    "model_question". A near miss that asks what an earlier one of the project asks, in other
    words, is a repeat (repeated_near_miss). ``embedder`` only finds the nearest chunks shown as evidence."""
    named = learned_details(db, question) if option["kind"].startswith(LEARNED) else details(question)
    others = [d.text for d in named if d.kind == option["kind"]
              and d.text not in (option["original"], option["replacement"])]
    if others:
        return f"unanswerable: the question names another {option['kind']} ('{others[0]}')", None
    asked = near_miss_question(question, option)
    if asked is None:
        return f"unanswerable: the question left out its setting ('{option['original']}')", None
    near, made = asked
    if not shared_words(question, option):
        return "unanswerable: the question shares no word with its sentence besides the setting", None
    if not names_subject(db, near):
        return f"unanswerable: the question does not name what the corpus is about ('{corpus_subject(db)}')", None
    learned = option["kind"].startswith(LEARNED)
    if (option["kind"] in SETTING_KINDS or learned) and not asks_setting_action(near):
        return "unanswerable: the question asks nothing that depends on its setting (install, configure, start...)", None
    answering = chunks_with(db, option["replacement"], near, (option["original"],)) if learned else []
    if answering:
        return (f"unanswerable: a chunk names '{option['replacement']}' with what the question asks "
                f"({answering[0]})"), None
    earlier = repeated_near_miss(db, near)
    if earlier is not None:
        return f"unanswerable: asks what an earlier near miss asks ('{earlier}')", None
    gain = answer_check.gain(question, option["sentence"]) if answer_check is not None else None
    if gain is not None and gain < MIN_NEAR_MISS_GAIN:  # last: it costs a pass of the model
        return f"question does not lead to its answer sentence (likelihood gain {gain:.2f})", None
    found = evidence(db, near, option, embedder)
    found.update(question=near, model_question=question, setting_made=made, scope=option.get("scope"),
                 answer_gain=round(gain, 3) if gain is not None else None)
    return None, found


def explain(found: dict) -> str:
    """One line for the reviewer: what was swapped and what the corpus holds."""
    nearest = (found.get("nearest_dense") or found.get("nearest_fts") or [{}])[0]
    if found.get("learned_kind"):
        line = (f"near miss: '{found['original']}' swapped for '{found['replacement']}', listed with it in the corpus "
                f"but named by no chunk with what is asked (full text; '{found['replacement']}' is in "
                f"{found['replacement_mentions']} chunks)")
    else:
        line = (f"near miss: '{found['original']}' swapped for '{found['replacement']}', which no chunk mentions "
                f"(full text; '{found['original']}' is in {found['original_mentions']})")
    if nearest.get("chunk"):
        line += f"; nearest chunk {nearest['chunk']}" + (" speaks of the original" if nearest.get("holds_original") else "")
    return line
