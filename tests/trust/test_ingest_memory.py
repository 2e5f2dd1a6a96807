"""A long one-line text file is chunked in memory proportional to its size (issue 32: availability).

A 50 MB one-line file needed 1.39 GB to ingest: the token counter kept a running sum over every
character (4 bytes each) and the sentence splitter a regex match object per token (~100 bytes).
"""

from __future__ import annotations

import importlib.util
import random
import tracemalloc
from pathlib import Path

import pytest

from curator.core.corpus import chunking
from curator.core.corpus.chunking import _TokenCounter, chunk_document, count_tokens
from curator.core.corpus.loaders import LoadedDoc, Section

_SPEC = importlib.util.spec_from_file_location(
    "reference_chunking", Path(__file__).resolve().parents[1] / "core" / "reference_chunking.py")
reference = importlib.util.module_from_spec(_SPEC)  # the first chunker: the definition of every chunk id
_SPEC.loader.exec_module(reference)


def _one_line(n_chars: int, sentences: bool) -> str:
    rng = random.Random(0)
    words = ["alpha", "beta", "keys", "rotate", "every", "ninety", "days", "café", "x_1", "C++", "—"]
    parts, size = [], 0
    while size < n_chars:
        part = " ".join(rng.choice(words) for _ in range(12)) + ("." if sentences else "")
        parts.append(part)
        size += len(part) + 1
    return " ".join(parts)


def _doc(text: str) -> LoadedDoc:
    return LoadedDoc("big.txt", "big", "txt", [Section((), text)])


@pytest.mark.parametrize("sentences", [False, True])
def test_a_one_line_file_is_chunked_in_a_few_times_its_size(sentences):
    text = _one_line(5_000_000, sentences)
    tracemalloc.start()
    try:
        chunks = chunk_document(_doc(text))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert chunks and sum(c.tokens for c in chunks) >= count_tokens(text)
    # before: 27x the text without full stops (1,339 MB for 50 MB), 12x with them
    assert peak < 6 * len(text), f"{peak / 1e6:.0f} MB for {len(text) / 1e6:.0f} MB of text"


def test_the_lean_chunker_cuts_long_units_exactly_as_the_reference():
    text = _one_line(200_000, sentences=False)
    for size, overlap in ((256, 32), (64, 8)):
        fast = [(c.id, c.text, c.tokens) for c in chunk_document(_doc(text), size, overlap)]
        assert fast == [(c.id, c.text, c.tokens) for c in reference.chunk_document(_doc(text), size, overlap)]


def test_token_counts_hold_across_block_boundaries(monkeypatch):
    monkeypatch.setattr(_TokenCounter, "BLOCK", 5)  # every word and "C++" cut by a block edge somewhere
    text = "Grüße, Welt!  C++ и日本語 naïve—café… 😀 x_1 end. abcdefghij klm"
    counter = _TokenCounter(text)
    cuts = [0] + [i for i, ch in enumerate(text) if ch.isspace()] + [len(text)]
    pairs = [(a, b) for a in cuts for b in cuts if a <= b]
    assert counter.spans([a for a, _ in pairs], [b for _, b in pairs]) == [count_tokens(text[a:b]) for a, b in pairs]
    assert chunking._TokenCounter.BLOCK == 5
