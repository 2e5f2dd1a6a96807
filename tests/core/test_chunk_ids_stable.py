"""The fast chunker cuts exactly where the first one did, so no chunk id of an existing project moves.

tests/core/reference_chunking.py is the first chunker; every test here compares the two on the
same input: random text built from the characters that decide boundaries and tokens (every kind
of whitespace, sentence ends, non-ASCII word and punctuation characters), and real corpora.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from curator.core.corpus.chunking import _TokenCounter, chunk_document, count_tokens
from curator.core.corpus.loaders import LoadedDoc, Section, load_file

import reference_chunking as reference  # tests/core, beside this file

ROOT = Path(__file__).resolve().parents[2]
# what decides a boundary or a token: word characters of several scripts, each kind of whitespace
# (a newline, and ones that are not: form feed, no-break space, line separator, NEL, \x1c), the
# three sentence ends, other punctuation, an astral character and NUL
ALPHABET = (list("aZ_9é日ß") + [" ", " ", "\n", "\t", "\r", "\x0c", "\xa0", "\u2028", "\x85", "\x1c"]
            + list(".!?,-—'\"") + ["😀", "\x00"])


def _as_rows(chunks) -> list[tuple]:
    return [(c.id, c.ord, c.title, c.text, c.tokens) for c in chunks]


def _random_doc(rng: random.Random) -> LoadedDoc:
    sections = [Section(("Head",) * rng.randint(0, 1),
                        "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 160))))
                for _ in range(rng.randint(1, 4))]
    return LoadedDoc("docs/random.md", "Random", "md", sections)


@pytest.mark.parametrize("seed", range(4))
def test_random_text_chunks_exactly_as_the_reference(seed):
    rng = random.Random(seed)
    for _ in range(1500):
        doc = _random_doc(rng)
        size = rng.choice([16, 17, 24, 40, 64])
        overlap = rng.choice([0, 0, 1, 5, size // 2, size - 1])
        assert _as_rows(chunk_document(doc, size, overlap)) == _as_rows(reference.chunk_document(doc, size, overlap)), doc


def _real_docs() -> list[LoadedDoc]:
    """The sample corpus, the test data and the pydoc topics (prose, code, tables, reST)."""
    from pydoc_data.topics import topics

    docs = []
    for path in sorted([*(ROOT / "curator" / "resources" / "sample_corpus").rglob("*.*"), *(ROOT / "tests" / "data").glob("*.*")]):
        try:
            docs.extend(load_file(path, []))
        except Exception:  # the test data holds deliberately broken files
            continue
    docs += [LoadedDoc(f"topics/{name}.txt", name, "txt", [Section((), text)]) for name, text in topics.items()]
    return docs


@pytest.mark.parametrize("size, overlap", [(256, 32), (64, 8), (500, 0)])
def test_real_corpora_chunk_exactly_as_the_reference(size, overlap):
    docs = _real_docs()
    assert len(docs) > 100
    for doc in docs:
        assert _as_rows(chunk_document(doc, size, overlap)) == _as_rows(reference.chunk_document(doc, size, overlap)), doc.key


def test_token_counter_agrees_with_count_tokens_on_every_span_between_whitespace():
    text = "Grüße, Welt!  C++ и日本語\u2028naïve—café… 😀 x_1 \x00 end."
    counter = _TokenCounter(text)
    cuts = [0] + [i for i, ch in enumerate(text) if ch.isspace()] + [len(text)]
    starts, ends = zip(*[(a, b) for a in cuts for b in cuts if a <= b])
    assert counter.spans(list(starts), list(ends)) == [count_tokens(text[a:b]) for a, b in zip(starts, ends)]
    assert counter.spans([0], [len(text)]) == [count_tokens(text)] == [17]
