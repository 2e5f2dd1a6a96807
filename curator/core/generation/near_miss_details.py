"""The things a near miss swaps (generation.unanswerable) and what the corpus says of them: the fixed
families of named things (DETAIL_FAMILIES, with their ALIASES) and the kinds learned from the corpus
(kinds.py), the details a text names, and the corpus counts every step asks for: how many chunks
mention a name, which chunks name a peer with what a text says (chunks_with), and what the corpus is
about (corpus_subject), each counted once per project connection and corpus.
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

import sqlite_utils

from curator.core.generation import kinds
from curator.core.queries.words import STOPWORDS, content_words, stem
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
_FAMILY_OF = {name: family for family, names in DETAIL_FAMILIES.items() for name in names}
# A name inside a longer name is not that name ("Linux" in "Arch Linux", "C" in "C++", "apt" in "apt-get").
_NAME = re.compile(r"(?<![\w+#/-])(" + "|".join(re.escape(n) for n in sorted(_FAMILY_OF, key=len, reverse=True))
                   + r")(?![\w+#/-])")


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


def _holds(text: str, term: str) -> bool:
    return re.search(r"(?<![\w+#/.-])" + re.escape(term) + r"(?![\w+#/-])", text, re.I) is not None


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
