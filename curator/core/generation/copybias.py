"""Steer answer-first questions away from copying their answer's rare words, at decoding time (issue 27).

A question written while reading its answer reuses the answer's rarer words ("backport", "pool",
"pronounced"), which users who have not read the document do not know; such rows are lexically easy,
so BM25 and hybrid retrieval find them more often than users' own questions. Rejecting them afterwards
(an IDF-weighted overlap cap) kept a tenth to a third of the usable rows. Here the model is instead
told, through a logit bias on the tokens that start those words, to say the need in other words.

Which words: the answer sentence's content words that are rare in the project's corpus (their stem in
at most ``RARE_SHARE`` of the active chunks), except

- the words of the heading the prompt shows (the subject the question may name), and
- with ``keep_names``, names: words in code or quote markup, with a digit or ``-_./`` inside, or
  capitalised inside the sentence ("Debian", "`dselect'", "os.path"): a user names the program they
  ask about, and the prompt tells the model to.

Which tokens: for each word, its usual spellings (" word", "word", " Word", "Word"), tokenized by the
loaded model's own tokenizer (so a user's GGUF gets its own ids). A spelling that is one token has
that token biased; one that splits has its first token biased only when that token spells at least
``MIN_PREFIX_CHARS`` letters and is no word of the corpus's own that is not rare (biasing " back" to
stop "backport" would stop "back" too). Everything here is a pure function of the sentence, the
heading and the corpus, so the same seed writes the same rows.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from curator.core.queries import words as qwords

# A stem in at most this share of the active chunks is rare. The diagnosis (docs/benchmarks.md, "Held-out
# corpus and why dense misses generated rows"): words usable generated rows shared with their chunk had a
# mean IDF of 2.30 against 1.72 for users' questions on the Debian FAQ (IDF ln((N+1)/(df+0.5))).
RARE_SHARE = 0.05
MIN_PREFIX_CHARS = 4
DEFAULT_BIAS = -10.0  # nats added to the logits of a biased token: below any other candidate, a ban in effect

MIN_WORD_CHARS = 3  # shorter content words ("os", "gb") are names or units more than wording
_CONTRACTION = re.compile(r"(\w+)['’](\w+)")
# A quote opens only where no word character precedes it and closes only where none follows: the
# apostrophe of "Debian's" or "won't" is no quote mark (it made "security team won" a quoted name).
_NAME_MARKUP = re.compile(r"(?<!\w)[`'\"‘“]([^`'\"’”]{1,40})[`'\"’”](?!\w)")
_WORDISH = re.compile(r"[\w.\-/]+")


@dataclass(frozen=True)
class CopyBias:
    """The settings a run steers with (kept in its run record)."""

    bias: float = DEFAULT_BIAS
    rare_share: float = RARE_SHARE
    keep_names: bool = True

    @classmethod
    def from_record(cls, record: dict) -> "CopyBias":
        """The settings a run record (describe()) kept, for a resumed run."""
        return cls(record["bias"], record["rare_share"], record["keep_names"])

    def describe(self) -> dict:
        return {"bias": self.bias, "rare_share": self.rare_share, "keep_names": self.keep_names,
                "words": "content words of the answer sentence whose stem is in at most rare_share of the active "
                         "chunks, not in the heading shown" + (", not names (code, quoted, capitalised inside "
                                                               "the sentence, with a digit or -_./)" if self.keep_names else ""),
                "tokens": "first token of ' word', 'word', ' Word', 'Word' by the model's tokenizer; a split "
                          f"spelling only when that token spells {MIN_PREFIX_CHARS}+ letters and is no common word"}


class CorpusWords:
    """Document frequency of every content-word stem over a project's active chunks (title and text)."""

    def __init__(self, texts: Iterable[str]):
        self.df: dict[str, int] = {}
        self.n = 0
        for text in texts:
            self.n += 1
            for stem in qwords.stems(text):
                self.df[stem] = self.df.get(stem, 0) + 1

    @classmethod
    def of_project(cls, db) -> "CorpusWords":
        return cls((row[0] or "") + " " + row[1] for row in
                   db.execute("SELECT title, text FROM chunks WHERE active = 1 ORDER BY id"))

    def idf(self, word: str) -> float:
        return self.stem_idf(qwords.stem(word))

    def stem_idf(self, stem: str) -> float:
        """ln((N+1)/(df+0.5)) of a stem (queries.words.stems' output), over the counted chunks."""
        return math.log((self.n + 1) / (self.df.get(stem, 0) + 0.5))

    def is_rare(self, word: str, share: float) -> bool:
        return self.df.get(qwords.stem(word), 0) <= share * self.n

    def is_common_word(self, text: str, share: float) -> bool:
        """Whether ``text`` is a word the corpus uses often (a prefix token not to bias)."""
        word = text.strip().lower()
        return word in qwords.STOPWORDS or (qwords.stem(word) in self.df and not self.is_rare(word, share))


def names_in(sentence: str) -> set[str]:
    """Lowercased content words of ``sentence`` that name a thing: in code or quote markup, with a digit or
    -_./ inside, or capitalised anywhere but the sentence's first word."""
    found: set[str] = set()
    for quoted in _NAME_MARKUP.findall(sentence):
        found |= qwords.content_words(quoted)
    for i, token in enumerate(_WORDISH.findall(sentence)):
        bare = token.strip(".-/")
        if re.search(r"\w[\d\-_./]\w|\d", bare) or (i > 0 and bare[:1].isupper()):
            found |= qwords.content_words(bare)
    return found


def avoided_words(sentence: str, heading: Optional[str], corpus: CorpusWords, settings: CopyBias) -> list[str]:
    """The answer sentence's words the question should not copy, in a fixed order (see the module docstring).
    ``heading``: the title the prompt shows (None when it shows none)."""
    kept = qwords.stems(heading or "")
    if settings.keep_names:
        kept |= {qwords.stem(w) for w in names_in(sentence)}
    fragments = _contraction_fragments(sentence)
    return sorted(w for w in qwords.content_words(sentence)
                  if len(w) >= MIN_WORD_CHARS and w not in fragments and not w.isdigit()
                  and corpus.is_rare(w, settings.rare_share) and qwords.stem(w) not in kept)


def _contraction_fragments(sentence: str) -> set[str]:
    """The halves of "shouldn't", "they're": not words a question copies, and " re" or " ve" biased would
    stop every word those tokens start."""
    return {part.lower() for pair in _CONTRACTION.findall(sentence) for part in pair}


def spellings(word: str) -> list[str]:
    return [" " + word, word, " " + word.capitalize(), word.capitalize()]


def token_bias(avoid: Iterable[str], tokenize: Callable[[str], list[int]], piece: Callable[[int], str],
               corpus: Optional[CorpusWords], settings: CopyBias) -> dict[int, float]:
    """{token id: bias} for the words in ``avoid``: ``tokenize`` is the model's (text -> ids, no BOS),
    ``piece`` a token's text. Which spellings' first tokens are biased: the module docstring."""
    biased: dict[int, float] = {}
    for word in avoid:
        for spelling in spellings(word):
            ids = tokenize(spelling)
            if not ids:
                continue
            if len(ids) > 1 and not _specific_prefix(piece(ids[0]), corpus, settings):
                continue
            biased[ids[0]] = settings.bias
    return dict(sorted(biased.items()))


def _specific_prefix(text: str, corpus: Optional[CorpusWords], settings: CopyBias) -> bool:
    letters = text.strip()
    if len(letters) < MIN_PREFIX_CHARS or not letters.isalpha():
        return False
    return corpus is None or not corpus.is_common_word(letters, settings.rare_share)


@dataclass(frozen=True)
class Avoid:
    """What one request is steered away from: carried on its ``Request`` to a backend that can bias logits."""

    words: tuple[str, ...]
    settings: CopyBias
    corpus: Optional[CorpusWords] = field(default=None, compare=False)  # the run's counts: same project, same counts

    def token_bias(self, tokenize: Callable[[str], list[int]], piece: Callable[[int], str]) -> dict[int, float]:
        return token_bias(self.words, tokenize, piece, self.corpus, self.settings)


class Steering:
    """A run's copy bias: its settings and the corpus's word counts, read once per run."""

    def __init__(self, db, settings: CopyBias, applied: bool = True):
        self.settings = settings
        self.applied = applied  # False on a backend that cannot bias its logits (an endpoint)
        # Not applied, no row is steered: the corpus is not counted, only the settings kept for the record.
        self.corpus: Optional[CorpusWords] = CorpusWords.of_project(db) if applied else None

    def describe(self) -> dict:
        """The run record's copy_bias: the settings, whether the backend applied them, and over how many
        chunks the words were counted (None when not applied: nothing was counted)."""
        return {**self.settings.describe(), "applied": self.applied,
                "chunks_counted": self.corpus.n if self.corpus else None}

    def warnings(self) -> list[str]:
        if self.applied:
            return []
        return ["copy bias not applied: it biases the model's own token ids, which an endpoint does not expose; "
                "questions may copy their answer's rare words (the overlap cap still applies)"]

    def avoid(self, sentence: str, heading: Optional[str]) -> Optional[Avoid]:
        """What a question about ``sentence`` is steered away from; None when nothing is, or when the
        backend cannot apply the bias (no words are computed for a request that would ignore them)."""
        if not self.applied:
            return None
        found = avoided_words(sentence, heading, self.corpus, self.settings)
        return Avoid(tuple(found), self.settings, self.corpus) if found else None
